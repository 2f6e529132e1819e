"""Writing an elementwise result into an operand's own buffer, on executors whose buffers are
written in place (NumPy, Numba): ``x op= y`` (`_into`, called by ``Array._inplace``) and a large
temporary's ``t op y`` (`_elide`, called by ``Array.__mul__`` and friends).  Split from
``arrayx/api/_array.py``, whose operators call them.
"""
from __future__ import annotations

import sys

import numpy as np

from arrayx.api import _dtypes
from arrayx.core import primitives as _core
from arrayx.core.array import Array

#: public binary function -> (its primitive, the dtype category of its eager fast path): the functions
#: whose in-place form is their NumPy ufunc with ``out=``; filled by ``arrayx/api/elementwise.py``
#: (pow and divide of integers take other paths there: floats only)
INTO_PRIMS: dict = {}


def _into(self: Array, fn, other) -> bool:
    """``self op= other`` written straight into self's buffer, where that is exactly what the
    out-of-place path would compute and then copy (or rebind) there: eager, the executor's function
    for the op a NumPy ufunc or saying which one it is on real operands (``real_ufunc``: the NumPy
    executor's divide, the Numba executor's kernels), self's buffer a writeable ndarray, ``other`` what ``fn``'s eager
    fast path takes as it is (an array of the same executor and dtype, or a Python scalar with a
    floating self, cast to self's dtype), and the result of self's dtype and shape.  NumPy's ufuncs
    handle overlapping operands as if they had been copied first.  False: the caller's general path.
    Saves a temporary the size of self (and the page faults of fresh memory) on every ``x -= m``."""
    entry = INTO_PRIMS.get(fn)
    buf = self._buf
    ex = self._ex
    if entry is None or buf.__class__ is not np.ndarray or not buf.flags.writeable or _core.eager_hook is not None:
        return False
    prim, category = entry
    dt = buf.dtype
    if dt not in _dtypes.CATEGORIES[category]:
        return False
    if other.__class__ is Array:
        b2 = other._buf
        if other._ex is not self._ex or b2.__class__ is not np.ndarray or b2.dtype != dt:
            return False
        if b2.shape != buf.shape:
            try:
                if np.broadcast_shapes(buf.shape, b2.shape) != buf.shape:
                    return False
            except ValueError:
                return False
    elif (other.__class__ is float or other.__class__ is int) and dt.kind in "fc":
        b2 = dt.type(other)
    else:
        return False
    impl = ex.impls.get(prim)
    if impl is None:
        try:
            impl = ex.resolve(prim)
        except NotImplementedError:
            return False
    if impl.__class__ is not np.ufunc:  # an executor function that is exactly a ufunc on real operands says so
        impl = getattr(impl, "real_ufunc", None) if dt.kind != "c" else None
        if impl is None:
            return False
    if impl.nin != 2 or impl.nout != 1:
        return False
    try:
        if impl.resolve_dtypes((dt, b2.dtype, None))[-1] != dt:
            return False
    except TypeError:  # no loop for these dtypes: the general path raises its error
        return False
    into = getattr(ex, "ufunc_into", None)  # (an executor of NumPy buffers not built on NumpyExecutor has none)
    if into is None:
        impl(buf, b2, out=buf)
    else:  # (Numba: a large buffer in pieces on several threads)
        into(impl, buf, b2)
    return True


# -- temporary elision: ``-2 * (X @ Y.T)``, ``(X - m) / s`` reuse the temporary's buffer ------------
#
# NumPy writes ``a * 2`` into ``a``'s memory when ``a`` is a large temporary of the expression (no
# name refers to it: the interpreter's stack holds its only reference) and nothing else reaches that
# memory; that saves a fresh result (page faults above malloc's mmap threshold, cache misses below).
# The arithmetic operators of ``Array`` (api/_array.py) do the same for eager arrays of executors
# whose buffers are written in place, under three checks, all of which must hold:
# - the reference count of ``self`` inside the operator is what a temporary has (`_TEMPORARY`,
#   measured on a probe class at import: a named operand has one more, from its name);
# - the caller is Python code executing a binary operator (not C code, such as ``operator.mul`` or a
#   Cython function, which may hold a reference the count cannot see): the caller frame's current
#   instruction is BINARY_OP;
# - nothing but the array reaches its buffer (``Executor.sole_holder``: no view, no export).
# Then `_into` computes the in-place op exactly as ``x op= y`` does (same ufunc, same dtype, the
# temporary's shape).  Only from `_ELIDE_MIN_BYTES` (as NumPy, which elides from 256 KiB): below it a
# fresh result is cheap.  Python 3.14's borrowed stack references make a named operand look like a
# temporary, so elision is off there (the probe would also find it).

_getrefcount = getattr(sys, "getrefcount", lambda _: -2)  # no refcounts (PyPy): never a temporary
_ELIDE_MIN_BYTES = 1 << 20
_BINARY_OP = __import__("dis").opmap.get("BINARY_OP")


def _caller_binary_op(depth: int = 2) -> bool:
    """Whether the Python frame ``depth`` levels up is executing a binary operator."""
    try:
        f = sys._getframe(depth)
        return f.f_code.co_code[f.f_lasti] == _BINARY_OP
    except (AttributeError, ValueError, IndexError):
        return False


class _Probe:
    seen: list = []

    def __mul__(self, other):
        _Probe.seen.append((_getrefcount(self), _caller_binary_op()))
        return self


def _measure_temporary() -> int:
    """The reference count an operand has inside its operator when it is a temporary, or -1 where
    that cannot be told from a named operand (or the caller's instruction cannot be read)."""
    if not hasattr(sys, "getrefcount") or _BINARY_OP is None or sys.version_info >= (3, 14):
        return -1
    _Probe.seen = []
    _Probe() * 1
    named = _Probe()
    named * 1
    import operator

    operator.mul(_Probe(), 1)  # C code calling the operator: its frame check must refuse
    (temp, temp_op), (name, name_op), (_, c_op) = _Probe.seen
    _Probe.seen = []
    if not (temp_op and name_op) or c_op or name <= temp:
        return -1
    return temp


_TEMPORARY = _measure_temporary()


def _elide(self: Array, fn, other) -> bool:
    """``self op other`` written into self's buffer where self is a temporary (see above)."""
    buf = self._buf
    if buf.__class__ is not np.ndarray or buf.nbytes < _ELIDE_MIN_BYTES or self.__class__ is not Array \
            or not self._ex.mutable or _core._TRACE.get() is not None or not _caller_binary_op(3):
        return False
    del buf  # our own reference would count as another holder
    return self._ex.sole_holder(self) and _into(self, fn, other)
