"""The jax executor's eager operations: each primitive as one ``jax.jit`` program per set of params,
called with arrayx's 64-bit types on, in as few Python steps as a tiny operation allows.

``jax.numpy`` functions dispatch each of their internal steps separately when called eagerly; one
compiled call per operation is several times cheaper (benchmarks/bench_executors_jax.py).  A
primitive compiles once per operand shape/dtype and set of params, as JAX's own eager mode does per
internal step (:class:`Jitted`); a primitive whose trace needs a concrete value falls back to
op-by-op ``jax.numpy`` for good.  Primitives with data-dependent result shapes or value-like params
(:data:`EAGER_ONLY`) always run op by op.

Per call (:func:`direct`, what the executor's ``impls`` table holds): when the operands are plain
``jax.Array`` values or scalars (no deferred transpose, ``permuted.Permuted``, and no recorded
chain, ``fused.Pending``), small enough that neither the recording of large elementwise chains
(``fused.py``) nor the BLAS route of large float64 products (``blas.py``) could take them, and no
matmul precision is named, the call is: the 64-bit switch on (``x64.swap``), the compiled program of
these params, the switch back, and a look at the result's size for the pool of large results
(``recycle.py``).  Everything else takes the general path, the same callables as before
(``x64.Scoped`` around ``Jitted``, ``blas.Routed``, ...), so values are the same either way.

The params select the program through a dictionary (:func:`params_key`: equal keys only for equal
values of the same types, so ``full((), -0.0)`` never gets the program of ``0.0``, nor ``True`` that
of ``1``), not through ``jax.jit``'s static arguments, whose hashing and comparison call back into
Python on each call.  Measured on CPU (2 shared cores, JAX 0.10.2; benchmarks/bench_jax_dispatch.py,
results/jax_dispatch*.json), CPU time of an eager operation on 8 float32 against ``jax.numpy`` on the
same arrays: ``x + y`` 12.5 -> 6.8 us (``jax.numpy`` 6.8 us), ``exp`` 9.3 -> 6.0 us (4.4), ``sum`` 12.0 ->
8.1 us (5.8); with an accelerator's settings (no pool, recording or BLAS route) ``x + y`` 9.1 -> 6.7 us
(6.7).  What stays above ``jax.numpy``'s one ``jax.jit`` call: arrayx's own dispatch above the
executor (~1-1.4 us), the 64-bit scope (~0.3 us), the checks here (~0.5 us; ~0.25 us more on one CPU
device for the pool, recording and BLAS gates; params: their key, ~0.4 us).
"""
from __future__ import annotations

import math

import numpy as np

from arrayx.core.keys import AVAL_KEYED, exact_key
from arrayx.core.precision import current as _precision
from arrayx.executors.jax import blas as _blas, fused as _fused, recycle as _recycle, x64 as _x64
from arrayx.executors.jax.fused import Pending
from arrayx.executors.jax.permuted import Permuted, plain as _plain

__all__ = ["EAGER_ONLY", "OWN_PROGRAMS", "Jitted", "direct", "SameDtypeShares", "SquareForTwo", "params_key", "load"]

# Primitives run op-by-op through jax.numpy rather than one ``jax.jit`` per op: those whose result
# shape depends on operand values (JAX cannot trace them) and those whose params take values that
# change from call to call (an index, a fill value, a shift), which would compile once per value.
EAGER_ONLY = frozenset({
    "nonzero", "unique_all", "unique_counts", "unique_inverse", "unique_values", "repeat",
    "boolean_mask", "full_like", "roll", "debug_callback",
})

#: primitives run op by op eagerly because their implementation compiles its own program there, with
#: the params that change from call to call as its arguments (``slice_update``: the window's starts,
#: indexing.py), so that one program serves every index
OWN_PROGRAMS = frozenset({"slice_update"})

#: operands whose element counts multiply to less than this take the direct path when sizes matter
#: (their result is under 1 MiB: fused.MIN_BYTES and recycle.MIN_BYTES at 16 bytes an element, and
#: an (m, k) @ (k, n) product of them has m*k*n below blas.MIN_MACS)
SMALL = 1 << 16
#: the most programs (sets of params) one primitive keeps; beyond, they are dropped and made again
MAX_PROGRAMS = 512

_ARRAY = None  # jaxlib's ArrayImpl, set by ``load``
_NEEDS_CONCRETE: tuple = ()
_prod = math.prod


def load(jax, array_type) -> None:
    global _ARRAY, _NEEDS_CONCRETE
    _ARRAY = array_type
    AVAL_KEYED.add(array_type)  # jit's cache-hit key reads its aval
    _NEEDS_CONCRETE = (jax.errors.ConcretizationTypeError, jax.errors.NonConcreteBooleanIndexError,
                       jax.errors.TracerArrayConversionError, jax.errors.TracerIntegerConversionError)


#: classes whose values ``==`` tells apart exactly within the class (NumPy dtypes are added as met)
_EXACT_BY_EQ = {int, bool, str, type(None)}


def params_key(params: dict):
    """A key for ``params``, equal only for the same names with equal values of the same classes
    (the names, then each value and its class): a float, a complex, or a tuple holding anything
    but ints makes the key of ``core.keys.exact_key`` instead (``-0.0 == 0.0``, ``True == 1``)."""
    key = [*params]
    for v in params.values():
        c = v.__class__
        if c not in _EXACT_BY_EQ:
            if c is tuple:
                for e in v:
                    if e.__class__ is not int:
                        return _exact(params)
            elif isinstance(v, np.dtype):
                _EXACT_BY_EQ.add(c)
            else:
                return _exact(params)
        key.append(v)
        key.append(c)
    return tuple(key)


def _exact(params: dict):
    # a pair: never equal to the other form, whose length is a multiple of three
    return "exact", tuple((k, exact_key(v)) for k, v in params.items())


class Jitted:
    """Runs one primitive's implementation ``fn`` as a ``jax.jit`` program per set of params (a
    ``recycle.Recycling``: a large result on CPU is written into a dropped earlier one).  The general
    path of a call (deferred transposes, recorded chains, what falls back to op by op)."""

    __slots__ = ("fn", "programs", "fast", "eager", "on_permuted", "record")

    def __init__(self, fn):
        self.fn = fn
        #: params_key(params) -> the program of those params
        self.programs: dict = {}
        #: the same keys -> the program's ``jax.jit`` itself, while the program has seen no large
        #: result (then ``Recycling`` decides per call) and the primitive runs compiled (the direct path)
        self.fast: dict = {}
        self.eager = False
        #: None, or what records the call as a :class:`fused.Pending` (large elementwise chains on CPU)
        self.record = None
        #: None, or what takes a call with a :class:`Permuted` operand (elementwise operations,
        #: reductions, matmul: ``permuted.Deferring.take``); otherwise a Permuted enters the compiled call
        #: as its base, transposed inside the program (a pytree, permuted.py)
        self.on_permuted = None

    def program(self, params: dict, key):
        """The program of ``params`` (made on first use)."""
        programs = self.programs
        out = programs.get(key)
        if out is None:
            if len(programs) >= MAX_PROGRAMS:
                programs.clear()
                self.fast.clear()
            fn = self.fn
            values = dict(params)
            out = programs[key] = _recycle.Recycling(lambda *bufs: fn(*bufs, **values))
            self.fast[key] = out.plain
        return out

    def __call__(self, *bufs, **params):
        on = self.on_permuted
        if on is not None:
            for b in bufs:
                if b.__class__ is Permuted:
                    return on(bufs, params)
        record = self.record
        if record is not None and not params:
            out = record(bufs)
            if out is not None:
                return out
        for b in bufs:
            if b.__class__ is Pending:  # recorded elementwise operations: computed now (fused.py)
                bufs = tuple(_fused.plain(b) for b in bufs)
                break
        if self.eager:
            return self.fn(*(_plain(b) for b in bufs), **params)
        key = params_key(params) if params else ()
        program = self.program(params, key)
        try:
            out = program(*bufs)
        except _NEEDS_CONCRETE:
            self.eager = True
            self.fast.clear()
            return self.fn(*(_plain(b) for b in bufs), **params)
        if program.results is not None:  # large results seen: each call goes through Recycling now
            self.fast.pop(key, None)
        return out


def direct(general, jitted: Jitted, gated: bool, routed: bool = False):
    """What the executor's table holds for a primitive that runs as ``jitted``: ``general`` (the
    implementation, e.g. a ``blas.Routed`` around the Jitted) in arrayx's 64-bit scope, with the
    direct path of the module docstring first.  ``gated``: operands of :data:`SMALL` elements or more
    take the general path (a primitive that ``fused.py`` records); ``routed``: matmul, which
    ``blas.py`` may route (large operands while ``blas.ENABLED``, any with ``blas.FORCE``).

    After the call, a result that may be large goes to the pool of large results (``recycle.py``):
    one of a call with params, or of operands of :data:`SMALL` elements or more (the primitives
    without params give at most the product of their operands' element counts: elementwise with
    broadcasting, matmul, reductions, ``where``).

    A function, not an object with ``__call__`` (0.13 us less per call); ``.general`` and
    ``.jitted`` are its attributes."""
    fast = jitted.fast
    call_scoped = _x64.call_scoped
    swap = _x64.swap
    restore = _x64.restore
    precision = _precision

    if not (gated or (routed and _blas.ENABLED) or _recycle.ENABLED):  # sizes decide nothing (accelerators)
        def run(*bufs, **params):
            for b in bufs:
                c = b.__class__
                if c is Permuted or c is Pending:
                    return call_scoped(general, bufs, params)
            program = fast.get(params_key(params) if params else ())
            if program is None or precision() is not None:
                return call_scoped(general, bufs, params)
            prev = swap(True)
            try:
                out = program(*bufs)
            except _NEEDS_CONCRETE:
                out = None  # the general path marks the primitive op-by-op and runs it so
            finally:
                restore(prev)
            return call_scoped(general, bufs, params) if out is None else out
    else:
        def run(*bufs, **params):
            n = 1
            for b in bufs:
                c = b.__class__
                if c is _ARRAY:
                    n *= _prod(b.aval.shape)
                elif c is Permuted or c is Pending:
                    return call_scoped(general, bufs, params)
            if n >= SMALL and (gated or (routed and _blas.ENABLED)) or (routed and _blas.FORCE):
                return call_scoped(general, bufs, params)
            key = params_key(params) if params else ()
            program = fast.get(key)
            if program is None:
                # the program has given large results (recycle.py decides those calls); small operands
                # without params give a small result, which the program's own jax.jit computes
                recycling = None if params or n >= SMALL or jitted.eager else jitted.programs.get(key)
                if recycling is None:
                    return call_scoped(general, bufs, params)
                program = recycling.plain
            if precision() is not None:
                return call_scoped(general, bufs, params)
            prev = swap(True)
            try:
                out = program(*bufs)
            except _NEEDS_CONCRETE:
                out = None
            finally:
                restore(prev)
            if out is None:
                return call_scoped(general, bufs, params)
            if (params or n >= SMALL) and _recycle.ENABLED and out.__class__ is _ARRAY \
                    and _prod(out.aval.shape) >= SMALL:
                recycling = jitted.programs.get(key)
                if recycling is not None:
                    recycling.first_result(bufs, (), out)
                    if recycling.results is not None:  # from now on Recycling decides each call
                        fast.pop(key, None)
            return out

    run.general = general
    run.jitted = jitted
    run.__qualname__ = run.__name__ = f"direct({getattr(general, '__name__', type(general).__name__)})"
    return run


class SameDtypeShares:
    """``astype`` to the dtype a buffer already has gives the buffer itself: jax buffers are immutable
    (writes rebind the arrayx wrapper), so a copy could not be told apart, and XLA's copy of a 50 MB
    operand (scikit-learn's ``check_array`` asks for one per call) cost 30-100 ms."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, buf, **params):
        if buf.dtype == params["dtype"]:
            return buf
        return self.fn(buf, **params)


class SquareForTwo:
    """``pow(x, 2.0)`` of a real floating array by a host scalar exponent (the eager path passes a
    Python scalar as a NumPy scalar) is ``x * x``, as NumPy computes it: XLA's pow of a traced
    exponent is the general exp/log routine, 10-30x the cost of a multiply (scikit-learn's
    variance squares 50 MB of deviations this way)."""

    __slots__ = ("fn", "square")

    def __init__(self, fn):
        self.fn = fn
        self.square = None

    def __call__(self, x1, x2):
        if x1.__class__ is Pending:
            x1 = x1.materialize()
        if x2.__class__ in _HOST_FLOATS and x2 == 2.0 and getattr(x1, "dtype", None) is not None \
                and x1.dtype.kind == "f" and x1.dtype == x2.dtype:
            if self.square is None:
                self.square = _recycle.Recycling(lambda x: x * x)
            return self.square(x1)
        return self.fn(x1, x2)


_HOST_FLOATS = (np.float64, np.float32, np.float16)
