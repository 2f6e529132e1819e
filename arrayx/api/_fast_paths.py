"""Eager fast paths written into a single frame: the elementwise functions and the binary operators.

An eager elementwise call used to pass through three or four Python frames (``x + y`` ->
``Array.__add__`` -> ``add`` -> ``_binary`` -> ``run_eager2``), about 50 ns each on the project's
machines, when the work itself (NumPy's ufunc on 8 elements) takes 300 ns.  The functions built
here do the whole eager path in the frame the caller calls:

- :func:`unary` / :func:`binary` wrap a public function of ``arrayx/api/elementwise.py`` (whose
  body, ``_unary(prim, x)`` / ``_binary(prim, x1, x2)``, stays the checked path): concrete Arrays
  of one executor and an accepted dtype, outside any transform, run the executor's function on the
  buffers (``run_eager1`` / ``run_eager2`` of ``arrayx/core/primitives.py``, spelled out);
  everything else (tracers, lazy() scopes, Python or NumPy operands, other dtypes, errors) calls
  the wrapped function, unchanged.
- :func:`operator` builds ``Array.__add__`` and the other binary operators the same way, with the
  temporary elision of ``arrayx/api/_inplace.py`` kept for the results that can use it (from
  ``_ELIDE_MIN_BYTES``), which take the operator's general path.

The accepted dtypes are elementwise's ``_ACCEPTED[prim]`` (built from its ``UNARY``/``BINARY``
tables), read on each call.  Cost: ``benchmarks/bench_eager.py`` (results/eager.json).
"""
from __future__ import annotations

import functools

from arrayx.api import _inplace
from arrayx.api import elementwise as _ew  # (partly loaded here: its tables are read on each call)
from arrayx.core import primitives as _prims
from arrayx.core.array import Array

__all__ = ["unary", "binary", "operator"]

_trace_now = _prims._TRACE.get  # (the ContextVar of the active trace; bound once: one call per op)
_object_new = object.__new__
_run_eager2 = _prims.run_eager2
_getrefcount = _inplace._getrefcount
_elide = _inplace._elide
_TEMPORARY = _inplace._TEMPORARY
_ELIDE_MIN_BYTES = _inplace._ELIDE_MIN_BYTES


def unary(checked):
    """``checked`` (an elementwise function ``f(x)`` of ``UNARY``) with its eager fast path in front:
    a concrete Array of an accepted dtype outside any transform runs ``run_eager1``, spelled out."""
    prim = _prims.primitives[checked.__name__]

    def fast(x, /):
        # (the class, buffer and executor read with no call between them, so no other thread runs in
        # between: a lazy() scope in another thread may change x's class and buffer; then the trace)
        if x.__class__ is Array:
            buf = x._buf
            ex = x._ex
            if buf.dtype in _ew._ACCEPTED[prim] and _trace_now() is None:
                m = ex.pool_min_bytes
                if m and buf.nbytes >= m:
                    fn = ex.large_impls.get(prim) or ex.resolve_large(prim)
                else:
                    try:
                        fn = ex.impls[prim]
                    except KeyError:
                        fn = ex.resolve(prim)
                out = fn(buf)
                if out.__class__ is not ex.array_type:
                    out = ex.coerce(out)
                if _prims.eager_hook is not None:
                    out = _prims.eager_hook(prim, ex, (buf,), None, out)
                new = _object_new(Array)
                new._buf = out
                new._ex = ex
                return new
        return checked(x)

    return functools.wraps(checked)(fast)


def binary(checked):
    """``checked`` (an elementwise function ``f(x1, x2)`` of ``BINARY``) with its eager fast path in
    front: two concrete Arrays of one executor and an accepted dtype outside any transform run
    ``run_eager2``, spelled out; a floating Array with a Python float or int calls it (the scalar
    cast to the array's dtype)."""
    prim = _prims.primitives[checked.__name__]

    def fast(x1, x2, /):
        # (class, buffers and executors read with no call between them: see ``unary``)
        if x1.__class__ is Array:
            b1 = x1._buf
            dt = b1.dtype
            if x2.__class__ is Array:
                b2 = x2._buf
                ex = x1._ex
                if x2._ex is ex and (dt is b2.dtype or dt == b2.dtype) and dt in _ew._ACCEPTED[prim] \
                        and _trace_now() is None:
                    # the executor broadcasts; where it refuses, the checked path raises the error naming
                    # the function and the shapes (ops have no side effects, so trying first is safe)
                    try:
                        m = ex.pool_min_bytes
                        # the result has at most size1 * size2 elements; one shape and a small first
                        # operand is a small result
                        if m and b1.size * b2.nbytes >= m and (b1.nbytes >= m or b1.shape != b2.shape):
                            fn = ex.large_impls.get(prim) or ex.resolve_large(prim)
                        else:
                            try:
                                fn = ex.impls[prim]
                            except KeyError:
                                fn = ex.resolve(prim)
                        out = fn(b1, b2)
                        if out.__class__ is not ex.array_type:
                            out = ex.coerce(out)
                        if _prims.eager_hook is not None:
                            out = _prims.eager_hook(prim, ex, (b1, b2), None, out)
                        new = _object_new(Array)
                        new._buf = out
                        new._ex = ex
                        return new
                    except (ValueError, TypeError):
                        pass
            elif (x2.__class__ is float or x2.__class__ is int) and dt.kind in "fc" \
                    and dt in _ew._ACCEPTED[prim] and _trace_now() is None:
                # array (op) Python scalar on a floating array: the scalar takes the array's dtype
                return _run_eager2(prim, x1._ex, b1, dt.type(x2))
        return checked(x1, x2)

    return functools.wraps(checked)(fast)


def operator(name: str, elides: bool, dunder: str):
    """``Array.<dunder>``: ``x <op> y`` for the public binary function ``name`` of
    ``arrayx/api/elementwise.py``.

    Two concrete Arrays of one executor and an accepted dtype (or a floating Array and a Python float
    or int) whose result is small run ``run_eager2``'s small path here.  The rest call the function
    (looked up on its module on each such call); with ``elides`` a large temporary ``x`` first gets
    the result written into its buffer where ``_inplace._elide`` allows it: the reference count of
    ``x`` is read in this frame, the operator's, as that module measured it, and a small result
    (under the pool's threshold when that is below ``_ELIDE_MIN_BYTES``) never elides.
    """
    prim = _prims.primitives[name]

    def op(self, other, /):
        if self.__class__ is Array:
            b1 = self._buf
            dt = b1.dtype
            ex = self._ex
            if other.__class__ is Array:
                b2 = other._buf
                if other._ex is ex and (dt is b2.dtype or dt == b2.dtype) and dt in _ew._ACCEPTED[prim] \
                        and _trace_now() is None:
                    m = ex.pool_min_bytes
                    if b1.size * b2.nbytes < m <= _ELIDE_MIN_BYTES if m else \
                            not elides or not ex.mutable or b1.nbytes < _ELIDE_MIN_BYTES:
                        try:
                            try:
                                fn = ex.impls[prim]
                            except KeyError:
                                fn = ex.resolve(prim)
                            out = fn(b1, b2)
                            if out.__class__ is not ex.array_type:
                                out = ex.coerce(out)
                            if _prims.eager_hook is not None:
                                out = _prims.eager_hook(prim, ex, (b1, b2), None, out)
                            new = _object_new(Array)
                            new._buf = out
                            new._ex = ex
                            return new
                        except (ValueError, TypeError):  # the function's checked path names the error
                            pass
                b2 = None
            elif (other.__class__ is float or other.__class__ is int) and dt.kind in "fc" \
                    and dt in _ew._ACCEPTED[prim] and _trace_now() is None:
                m = ex.pool_min_bytes
                if b1.nbytes < m <= _ELIDE_MIN_BYTES if m else \
                        not elides or not ex.mutable or b1.nbytes < _ELIDE_MIN_BYTES:
                    return _run_eager2(prim, ex, b1, dt.type(other))
            b1 = None  # (elision counts the references to self's buffer: hold none)
        if elides and _getrefcount(self) == _TEMPORARY and _elide(self, getattr(_ew, name), other):
            return self
        return getattr(_ew, name)(self, other)

    op.__name__ = dunder
    op.__qualname__ = f"Array.{dunder}"
    return op
