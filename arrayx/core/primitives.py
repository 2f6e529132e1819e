"""Primitives, ``bind`` and the trace context.

Every public function of the namespace checks and promotes its arguments, then
binds a :class:`Primitive`.  With no transform active (the common case) ``bind``
is one ContextVar read followed by a direct call of the executor's function.
Under a transform the current trace (held in a ContextVar, so each thread and
asyncio task has its own) processes the primitive: JVP and batching traces apply
the primitive's rules, the staging trace records it into a Graph.

Traces are stackless: a trace knows its parent and evaluates rules with the
parent installed as current, and it only unboxes tracers that carry its own tag
(no perturbation confusion).

This module sits in ``arrayx.core`` with ``array`` (:class:`~arrayx.core.array.Array`'s layout,
which eager results are wrapped in) and ``tracers``, which builds on it:

- :class:`~arrayx.core.tracers.Tracer`, the Array subclass whose ``_buf`` holds a trace's state
  (anything with ``trace``, ``shape`` and ``dtype``); its ``_ex`` is a sentinel
  executor (``_TRACER_EXECUTOR``, here), so a tracer that escapes its transform fails loudly
  in eager code;
- :class:`~arrayx.core.tracers.ShapeDtypeStruct` and ``abstract_eval`` (shape/dtype of a
  primitive's result without computing it), used by staging;
- :class:`~arrayx.core.tracers.CallPrimitive`, call-like primitives (custom derivatives,
  checkpoint, jit's ``call``, ``cond``/``while_loop``/``scan``): their params carry a
  function or closed sub-graphs, and every trace handles them in
  ``process_call`` (the protocol below);
- ``bind_with``, binding on an explicit trace (how a trace hands a
  primitive it does not own to its parent).

The call protocol (what every trace implements)
-----------------------------------------------
``CallPrimitive.bind(*args, **params)`` goes to ``trace.process_call(prim, args,
params)`` (eagerly to ``prim.eager(args, params)``).  ``args`` are the operands
(arrays), ``params`` hold the sub-computations: Python functions of the operands
(``fun`` of custom_jvp/custom_vjp/checkpoint, before staging) or closed
:class:`~arrayx.core.graph.Graph` objects (callable like the functions they
replace: flat arrays in, flat list out), plus rule callables (a custom jvp, fwd,
bwd).  Results are always a tuple.

- eager (no trace): ``prim.eager(args, params)`` runs the computation on the
  arrays (jit's call compiles its graph for the operands' executor);
- JVP trace: applies ``prim.jvp`` like any primitive's rule; a rule may inline
  (differentiate the sub-computation's body) or bind a new call primitive;
- staging trace: ``prim.stage(trace, args, params)`` when the primitive has a
  staging rule (partial evaluation: jit's call splits its graph into the part
  computable now and the part recorded); otherwise it records ONE equation whose
  params hold closed sub-graphs: the names in ``prim.fun_params`` are staged into
  Graphs, and values the functions captured (tracers of this or enclosing traces,
  constants) become explicit leading operands, counted by the ``num_consts`` param,
  so params never hold tracers.  Rule callables are kept as they are;
- batching trace: applies ``prim.batch``.

A trace never decides what to do by testing a tracer's class: it asks whether a
value is one of its own (``x._buf.trace is self``) and otherwise hands the
primitive to its parent with :func:`bind_with`.
"""
from __future__ import annotations

import contextlib
import itertools
from contextvars import ContextVar
from typing import Any, Callable

from arrayx.core.array import Array

__all__ = [
    "Primitive",
    "Trace",
    "UnexpectedTracerError",
    "ConcretizationError",
    "DataDependentShapeError",
    "eval_eager",
    "run_eager",
    "current_trace",
    "set_trace",
    "new_tag",
    "primitives",
]

# The trace of the innermost active transform; None means plain eager evaluation.
_TRACE: ContextVar = ContextVar("arrayx_trace", default=None)

_tags = itertools.count(1)

# name -> Primitive, for introspection (rule coverage reports, graph printing).
primitives: dict[str, "Primitive"] = {}

#: names of the elementwise primitives, filled by ``api.elementwise`` from its dtype-category
#: tables: executors that treat them alike (Dask's one-chunk path) read it here, below the api
ELEMENTWISE: set = set()


def new_tag() -> int:
    """A fresh identity for one transform application."""
    return next(_tags)


def current_trace():
    return _TRACE.get()


@contextlib.contextmanager
def set_trace(trace):
    """Install ``trace`` (or None for eager) as the current trace for the block."""
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


class Trace:
    """Base class of the interpreters a transform installs.

    ``parent`` is the trace that was current when this one was created; rules
    run with the parent installed.  ``tag`` identifies the transform
    application that owns this trace's tracers.  ``alive`` turns False when
    the transform application returns (its tracers then fail loudly), and
    ``transform`` names it in error messages.

    A subclass implements ``process_primitive`` and ``process_call`` (see the
    module docstring): primitives without one of its own tracers among the
    operands go to ``bind_with(self.parent, ...)``.
    """

    __slots__ = ("parent", "tag", "alive", "transform", "rebound")

    def __init__(self, parent=None, transform: str = "a transform"):
        self.parent = parent
        self.tag = new_tag()
        self.alive = True  # set False when the transform application returns
        self.transform = transform  # for error messages: "grad", "jvp", "make_graph", ...
        self.rebound = None  # id -> (array, class, _buf, _ex) before in-place code rebound it

    def remember(self, x) -> None:
        """Keep ``x``'s value from before its first in-place update under this trace."""
        if self.rebound is None:
            self.rebound = {}
        self.rebound.setdefault(id(x), (x, x.__class__, x._buf, x._ex))

    def finish(self, outs=None):
        """End this transform application: its tracers die and every array that in-place code
        rebound gets its old value back.  ``outs`` (a list of the function's output leaves, or
        None) comes back with each rebound array replaced by a new wrapper of its traced value,
        so a function may return the array it updated."""
        self.alive = False
        rebound, self.rebound = self.rebound, None
        if not rebound:
            return outs
        if outs is not None:
            outs = [_wrapper_of(o) if rebound.get(id(o), (None,))[0] is o else o for o in outs]
        for x, cls, buf, ex in rebound.values():
            x.__class__ = cls
            x._buf = buf
            x._ex = ex
        return outs

    def run(self, fun, args):
        """``fun(*args)`` (flat leaves in, a list of leaves out) with this trace current; the trace
        is finished afterwards, also when ``fun`` raises."""
        outs = None
        token = _TRACE.set(self)
        try:
            outs = fun(*args)
        finally:
            _TRACE.reset(token)
            outs = self.finish(outs)
        return outs

    def process_primitive(self, prim: "Primitive", args: tuple, params: dict):
        raise NotImplementedError(f"{type(self).__name__} does not define process_primitive")

    def process_call(self, prim: "Primitive", args: tuple, params: dict):
        raise NotImplementedError(f"{type(self).__name__} does not define process_call (call-like primitives)")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} #{self.tag} of {self.transform}{'' if self.alive else ' (finished)'}>"


class Primitive:
    """One operation of the namespace, named after the standard function it serves.

    Its operands are already promoted and broadcast (the public function did
    that), its params are hashable Python values.  Rule tables live on the
    primitive so that a rule sits next to its primitive's definition:

    - ``abstract_eval(*avals, **params) -> aval | tuple of avals``
    - ``jvp(primals, tangents, **params) -> (out, out_tangent)``
    - ``transpose(cotangent, *args, **params)`` for linear primitives
    - ``batch(args, dims, **params) -> (out, out_dim)``
    - ``composition``: the primitive written in arrayx operations, which an executor without an
      implementation (a third party's) runs; ``lowerings[executor_name]`` the jit lowering.

    Implementations are not kept here: per-executor ones are entries of that executor's table
    (``arrayx/executors/<name>/``), generic ones (over any standard namespace's buffers) entries of
    ``arrayx.core.executor.GENERIC``; ``Executor.resolve`` says the order.
    """

    __slots__ = (
        "name", "impl_name", "multiple_results", "abstract_eval", "jvp",
        "transpose", "batch", "lowerings", "data_dependent", "composition", "__weakref__",
    )

    #: call-like primitives (:class:`CallPrimitive`) go to ``Trace.process_call``
    call_like = False

    def __init__(self, name: str, *, multiple_results: bool = False, impl_name: str | None = None):
        self.name = name
        self.impl_name = impl_name or name
        self.multiple_results = multiple_results
        self.abstract_eval: Callable | None = None
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        self.lowerings: dict[str, Callable] = {}
        #: None, or (for ops whose result size depends on operand values: masks, nonzero,
        #: unique_*) the alternative to name when such an op is staged on traced values
        self.data_dependent: str | None = None
        #: None, or the primitive written in arrayx operations (``fn(*arrays, **params)``): the
        #: implementation an executor gets for free where neither its table nor its namespace has
        #: one (a third party's executor runs ``lax.conv`` or ``nn.erf`` through it)
        self.composition: Callable | None = None
        if name in primitives:
            raise ValueError(f"primitive {name!r} is defined twice")
        primitives[name] = self

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args, **params):
        trace = _TRACE.get()
        if trace is None:
            return eval_eager(self, args, params)
        return trace.process_primitive(self, args, params)

    def composed_impl(self, ex) -> Callable:
        """``composition`` as an implementation over ``ex``'s buffers: they are wrapped as Arrays
        of ``ex``, the arrayx operations run eagerly on ``ex``, the results are unwrapped."""
        composition, multiple = self.composition, self.multiple_results
        atype = ex.array_type

        def impl(*bufs, **params):
            args = [_wrap(b, ex) if b.__class__ is atype else b for b in bufs]
            token = _TRACE.set(None)  # the buffers are concrete: eager, whatever trace runs the caller
            try:
                out = composition(*args, **params)
            finally:
                _TRACE.reset(token)
            return tuple(o._buf for o in out) if multiple else out._buf

        impl.__name__ = f"{self.name}_composed"
        return impl


def eval_eager(prim: Primitive, args: tuple, params: dict):
    """Run ``prim`` on concrete arrays: pick their (common) executor, then :func:`run_eager`."""
    ex = None
    bufs = []
    append = bufs.append
    for a in args:
        if a.__class__ is Array:
            if ex is None:
                ex = a._ex
            elif a._ex is not ex and a._ex != ex:  # identity first; a copy (unpickled) compares by name
                moved = _scalars_moved(args)
                if moved is None:
                    raise _mixed_executors(prim.name, ex, a._ex)
                return eval_eager(prim, moved, params)
            append(a._buf)
        elif isinstance(a, Array):
            return eval_eager(prim, _read_outside(prim.name, args), params)
        else:
            append(a)
    if ex is None:
        ex = _executor_of_params(prim, params)
    elif not params and not prim.multiple_results and len(bufs) == len(args):
        # every operand a buffer and no params (ufuncs, matmul): the paths that choose by size
        if len(bufs) == 2:
            return run_eager2(prim, ex, bufs[0], bufs[1])
        if len(bufs) == 1:
            return run_eager1(prim, ex, bufs[0])
    return run_eager(prim, ex, bufs, params)


def _scalars_moved(args: tuple):
    """``args`` with its 0-d arrays of the default executor, where that is a host one (NumPy, Numba:
    NumPy buffers), moved to the one executor every other array operand lives on; None when that does
    not settle the executors (the caller raises its error naming both).

    Like PyTorch's 0-d CPU tensors, which combine with tensors on any device: such an array is what
    ``asarray(scalar)`` without ``device=`` makes, so a client that creates one beside arrays it was
    given on another executor (SciPy: ``xp.asarray(popmean)``, ``xp.asarray(n == 2)`` next to inputs
    on ``numba:cpu``) gets its result on the inputs' executor.  Arrays of one element or more, 0-d
    arrays of other executors and 0-d results on a non-default executor are never moved.  A lazy
    buffer whose host value its executor kept when it was made from host data (attribute
    ``_arrayx_host``: Dask's ``asarray(0.5)``) counts as a host one: moving it computes nothing.
    """
    import numpy as np

    from arrayx.core.executor import get, get_executor  # beside the primitives, loaded lazily

    default = get_executor()

    def host_of(a):
        buf = a._buf
        if buf.__class__ is np.ndarray:
            return buf if buf.ndim == 0 else None
        host = getattr(buf, "_arrayx_host", None)
        return host if host.__class__ is np.ndarray and host.ndim == 0 and buf.ndim == 0 else None

    def movable(a):
        return (a._ex is default or a._ex == default) and host_of(a) is not None

    targets = {a._ex.name: a._ex for a in args if a.__class__ is Array and not movable(a)}
    if len(targets) != 1:
        return None
    (target,) = targets.values()
    out = []
    for a in args:
        if a.__class__ is Array and a._ex is not target and a._ex != target:
            new = _object_new(Array)
            host = a._buf if a._buf.__class__ is np.ndarray else None
            new._buf = (target.from_foreign(host, a._ex) if host is not None
                        else target.from_foreign(host_of(a), get("numpy")))
            new._ex = target
            a = new
        out.append(a)
    return tuple(out)


def _executor_of_params(prim: Primitive, params: dict):
    """The executor of a primitive without array operands (creation functions): its ``device`` param's."""
    device = params.get("device")
    if device is None:
        raise TypeError(f"{prim.name}: no array operand and no device to choose an executor from")
    from arrayx.core.executor import get  # the executor layer sits beside the core, loaded lazily

    return get(device.executor)


def run_eager(prim: Primitive, ex, bufs, params: dict):
    """The one eager dispatch path: ``prim``'s implementation on executor ``ex``'s buffers, wrapped.

    ``bind`` reaches it through :func:`eval_eager`; a public function whose operands are
    already known to be concrete Arrays of ``ex`` (no trace active) may call it directly.
    This is the hot path of every eager operation: keep it free of calls that are not
    needed (no isinstance chains, no kwargs parsing, no wrappers).
    """
    fn = ex.impls.get(prim) or ex.resolve(prim)
    out = fn(*bufs, **params)
    atype = ex.array_type
    if prim.multiple_results:
        out = tuple(o if o.__class__ is atype else ex.coerce(o) for o in out)
        if eager_hook is not None:
            out = eager_hook(prim, ex, bufs, params, out)
        return tuple(_wrap(o, ex) for o in out)
    if out.__class__ is not atype:  # e.g. NumPy returns scalars for 0-d results
        out = ex.coerce(out)
    if eager_hook is not None:
        out = eager_hook(prim, ex, bufs, params, out)
    new = _object_new(Array)
    new._buf = out
    new._ex = ex
    return new


# run_eager for one and two buffers and no params, spelled out: packing ``*bufs, **params``
# costs ~0.17 us, a sixth of the eager budget, on the elementwise functions.  They also choose
# by size, without a call, between the executor's function and the one that writes a large result
# into reused memory (``ex.pool_min_bytes``: 0 for executors without a buffer pool).

def run_eager1(prim: Primitive, ex, buf):
    """:func:`run_eager` of a single-result primitive on one buffer, without params."""
    m = ex.pool_min_bytes
    if m and buf.nbytes >= m:
        fn = ex.large_impls.get(prim) or ex.resolve_large(prim)
    else:
        fn = ex.impls.get(prim) or ex.resolve(prim)
    out = fn(buf)
    if out.__class__ is not ex.array_type:
        out = ex.coerce(out)
    if eager_hook is not None:
        out = eager_hook(prim, ex, (buf,), None, out)
    new = _object_new(Array)
    new._buf = out
    new._ex = ex
    return new


def run_eager2(prim: Primitive, ex, buf1, buf2):
    """:func:`run_eager` of a single-result primitive on two buffers, without params."""
    m = ex.pool_min_bytes
    # the result (elementwise, broadcast or matmul) has at most size1 * size2 elements; one
    # shape and a small first operand is a small result
    if m and buf1.size * buf2.nbytes >= m and (buf1.nbytes >= m or buf1.shape != buf2.shape):
        fn = ex.large_impls.get(prim) or ex.resolve_large(prim)
    else:
        fn = ex.impls.get(prim) or ex.resolve(prim)
    out = fn(buf1, buf2)
    if out.__class__ is not ex.array_type:
        out = ex.coerce(out)
    if eager_hook is not None:
        out = eager_hook(prim, ex, (buf1, buf2), None, out)
    new = _object_new(Array)
    new._buf = out
    new._ex = ex
    return new


_object_new = object.__new__

#: None, or (set by ``arrayx.sharding`` while some buffer has a sharding record) a function
#: ``(prim, ex, bufs, params, out) -> out`` giving an eager result the sharding of its operands
eager_hook = None


def _wrap(buf, ex):
    new = _object_new(Array)
    new._buf = buf
    new._ex = ex
    return new


def _wrapper_of(x):
    new = _object_new(x.__class__)
    new._buf = x._buf
    new._ex = x._ex
    return new


class UnexpectedTracerError(RuntimeError):
    """A traced value was used outside the transform that created it."""


class ConcretizationError(TypeError):
    """A Python value (bool, int, float, an index) was asked of a value only known symbolically."""


class DataDependentShapeError(ConcretizationError):
    """The size of an op's result depends on operand values that are only known symbolically."""


class _TracerExecutor:
    """The ``_ex`` of every tracer: eager code that reaches a tracer fails with a clear message."""

    name = "<tracer>"
    unknown_shapes = False
    mutable = False
    array_type = type(None)
    impls: dict = {}

    def resolve(self, prim):
        raise UnexpectedTracerError(
            f"{prim.name}: got a tracer outside the transform that created it; a traced value "
            f"escaped its function (e.g. stored in a global or a closure). Return it instead"
        )

    def __repr__(self) -> str:
        return "<tracer executor>"


_TRACER_EXECUTOR = _TracerExecutor()


def _read_outside(fname, args) -> tuple:
    """``args`` with each tracer that has a value for code outside its transform replaced by it (an
    ``arrayx.lazy()`` value read from another thread or a suspended generator's caller:
    ``_read_outside``); any other tracer escaped its transform: raises."""
    out = []
    for a in args:
        if isinstance(a, Array) and a.__class__ is not Array:
            read = getattr(a, "_read_outside", None)
            if read is None:
                raise _escaped_tracer(fname, a)
            a = read(fname)
        out.append(a)
    return tuple(out)


def _escaped_tracer(fname, tracer):
    state = getattr(tracer, "_buf", None)
    trace = getattr(state, "trace", None)
    what = f" from {trace.transform} (#{trace.tag})" if trace is not None else ""
    return UnexpectedTracerError(
        f"{fname}: got a tracer ({type(tracer).__name__}{what}) from a transform that has already "
        f"finished; a traced value escaped its function (e.g. stored in a global, a closure or an "
        f"array updated in place). Return it from the transformed function instead"
    )


def _mixed_executors(fname, ex1, ex2):
    if ex1 is _TRACER_EXECUTOR or ex2 is _TRACER_EXECUTOR:
        return UnexpectedTracerError(
            f"{fname}: got a tracer from a transform that has already finished; a traced value "
            f"escaped its function (e.g. stored in a global or a closure). Return it from the "
            f"transformed function instead"
        )
    return TypeError(
        f"{fname}: arrays live on different executors ({ex1.name!r} and {ex2.name!r}); "
        f"move one with x.to_device(...) or arrayx.asarray(x, device=...) first"
    )
