"""A pool of large host buffers for the NumPy executor's results (as CuPy's memory pool is for GPUs).

Why: a NumPy result above glibc's mmap threshold is a fresh mapping on every call, and the kernel
zero-fills each of its pages on first touch.  For ``vmap(grad)`` of an MLP (342 MB of per-example
gradients per call) that fill is a third of the call; a result written into memory the process
already touched skips it.  ``min_bytes`` is 1 MiB: from there glibc does not reliably recycle freed
results either (it trims and maps afresh as a client's arrays come and go: scikit-learn's
``euclidean_distances`` of 500 x 1000 paid ~2,000 page faults, 5 ms of 8, per call with 4 MiB, none
with 1 MiB; benchmarks/bench_clients.py); below it malloc's free lists recycle memory and the op is
too cheap to pay for a pool.

How a buffer is known to be free: the pool owns one flat ``uint8`` ndarray per buffer and hands out
views of it.  NumPy points every view (slices, reshapes, transposes, ``np.asarray``, buffer-protocol
exports, DLPack capsules) at the array that owns the memory, so while anything outside the pool
can reach the memory the owner's reference count is above the pool's own references; only then is
it handed out again.  The pool's own count is measured once, by the same function that scans.

Layout: a pooled result has the layout NumPy would give it: C order, or, where the full-shape
operands are Fortran-ordered (``X.T - mean``, ``exp(X.T)``), Fortran order (the transpose of a
pooled buffer of the reversed shape), so that the ufunc writes it in one contiguous pass.

Limits: ``limit_bytes`` caps what the pool owns (least recently used free buffers are dropped to
make room; a result that still does not fit is an ordinary ``np.empty``), ``0`` turns it off.
On by default, and free for small operands: the eager paths (``core.run_eager1/2``) and jit's
lowering compare the operands' (or the staged result's) size with ``min_bytes`` and call NumPy's
own function below it; only a result that may be large goes through the functions of ``pooled``.
``ARRAYX_BUFFER_POOL=0`` (or ``NumpyExecutor.set_buffer_pool(False)``) turns it off;
``ARRAYX_BUFFER_POOL_LIMIT`` sets the cap in bytes, ``ARRAYX_BUFFER_POOL_MIN_BYTES`` the size from
which results are pooled.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import weakref
from collections import OrderedDict

import numpy as np

from arrayx.core import config as _config

_SIZE_CLASS = 1 << 20  # buffers are whole MiB, so a result a few bytes larger still fits one
_POOLED_KINDS = frozenset("biufc")  # plain numeric/bool memory; object/string arrays never come from raw bytes
_getrefcount = sys.getrefcount


def _default_limit() -> int:
    """An eighth of physical memory, at most 1 GiB: room for a few large results, not a cache."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        ram = 8 << 30
    return min(1 << 30, ram // 8)


def _env_int(name: str, default: int) -> int:
    value = _config.get(name)
    return default if value is None else value


def _first_free(buffers, free_refs: int):
    """The first of ``buffers`` (a bucket or the LRU table's values) nothing outside the pool holds."""
    for buf in buffers:
        if _getrefcount(buf) == free_refs:
            return buf
    return None


def _count_free(buffers, free_refs: int) -> int:
    """How many of ``buffers`` nothing outside the pool holds (the same loop as `_first_free`)."""
    n = 0
    for buf in buffers:
        if _getrefcount(buf) == free_refs:
            n += 1
    return n


class BufferPool:
    """Reusable flat buffers for large results; see the module docstring for the rules.

    ``empty(shape, dtype)`` is ``np.empty`` for results that go through the pool.  ``stats()`` tells
    what it did, ``clear()`` drops every buffer nothing references.  Thread-safe.
    """

    def __init__(self, limit_bytes: int | None = None, min_bytes: int | None = None):
        self.limit_bytes = _env_int("ARRAYX_BUFFER_POOL_LIMIT", _default_limit()) if limit_bytes is None else limit_bytes
        self.min_bytes = _env_int("ARRAYX_BUFFER_POOL_MIN_BYTES", 1 << 20) if min_bytes is None else min_bytes
        self._lock = threading.Lock()
        _POOLS.add(self)
        self._by_size: dict[int, list] = {}  # size class -> its buffers
        self._lru: OrderedDict = OrderedDict()  # id(buffer) -> buffer, least recently handed out first
        self._owned = 0
        self._hits = self._misses = self._evicted = self._unpooled = 0

    def empty(self, shape: tuple, dtype) -> np.ndarray:
        """An uninitialised array of ``shape`` and ``dtype``, from a free pooled buffer if there is one."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.min_bytes or dtype.kind not in _POOLED_KINDS or nbytes > self.limit_bytes:
            return np.empty(shape, dtype)
        size = -(-nbytes // _SIZE_CLASS) * _SIZE_CLASS
        with self._lock:
            bucket = self._by_size.get(size)
            buf = _first_free(bucket, _FREE_REFS) if bucket else None
            if buf is not None:
                self._hits += 1
                self._lru.move_to_end(id(buf))
            else:
                buf = self._new_buffer(size)
                if buf is None:
                    self._unpooled += 1
                    return np.empty(shape, dtype)
            # the view's base is ``buf`` itself (NumPy collapses view chains onto the owner)
            return buf[:nbytes].view(dtype).reshape(shape)

    def _new_buffer(self, size: int):
        """A new owned buffer of ``size`` bytes, dropping least recently used free ones to make
        room under the limit; None where the buffers in use leave no room."""
        while self._owned + size > self.limit_bytes:
            victim = _first_free(self._lru.values(), _FREE_REFS)  # least recently used first
            if victim is None:
                return None
            self._drop(victim)
        buf = np.empty(size, np.uint8)
        self._by_size.setdefault(size, []).append(buf)
        self._lru[id(buf)] = buf
        self._owned += size
        self._misses += 1
        return buf

    def _drop(self, buf) -> None:
        del self._lru[id(buf)]
        bucket = self._by_size[buf.size]
        del bucket[next(i for i, b in enumerate(bucket) if b is buf)]  # by identity: list.remove compares arrays
        if not bucket:
            del self._by_size[buf.size]
        self._owned -= buf.size
        self._evicted += 1

    def clear(self) -> int:
        """Drop every buffer nothing outside the pool references; the bytes released."""
        with self._lock:
            before = self._owned
            while (victim := _first_free(self._lru.values(), _FREE_REFS)) is not None:
                self._drop(victim)
                del victim
            return before - self._owned

    def stats(self) -> dict:
        """Owned bytes and buffers, how many are in use, and the counts of hits, new buffers,
        evictions and results too large for the room left."""
        with self._lock:
            in_use = len(self._lru) - _count_free(self._lru.values(), _FREE_REFS)
            return {"limit_bytes": self.limit_bytes, "min_bytes": self.min_bytes, "owned_bytes": self._owned,
                    "buffers": len(self._lru), "in_use": in_use, "hits": self._hits, "new": self._misses,
                    "evicted": self._evicted, "unpooled": self._unpooled}


_POOLS: weakref.WeakSet = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):  # a parent thread may have held a pool's lock: it is not here
        pool._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _measure_free_refs() -> int:
    """The count `_first_free` and `_count_free` see on a buffer only a pool holds (its bucket, its
    LRU table and the scan itself), measured on a probe pool: it differs between Python versions."""
    probe = BufferPool(limit_bytes=_SIZE_CLASS, min_bytes=0)
    probe._new_buffer(_SIZE_CLASS)
    bucket = probe._by_size[_SIZE_CLASS]
    refs = next(c for c in range(1, 64) if _first_free(bucket, c) is not None)
    if _first_free(probe._lru.values(), refs) is None or _count_free(bucket, refs) != 1:
        raise RuntimeError("arrayx buffer pool: reference counts of pooled buffers are not what the pool expects")
    return refs


_FREE_REFS = _measure_free_refs()


# -- whether a result's memory is reached by one array only (temporary elision) ---------------------

def _refs_of(holder) -> tuple:
    """(references to ``holder._buf``, to its ``.base`` or -1, whether the base is pooled) as seen
    from here; `sole_holder` compares them with the counts of a probe measured by this same code."""
    buf = holder._buf
    base = buf.base
    if base is None:
        return _getrefcount(buf), -1, False
    return _getrefcount(buf), _getrefcount(base), any(id(base) in pool._lru for pool in list(_POOLS))


class _Holder:
    __slots__ = ("_buf",)


def _measure_sole_refs() -> tuple:
    """The counts `_refs_of` sees on a holder's private array that owns its memory, and on one that
    is the only view of a pooled buffer (measured: they differ between Python versions)."""
    h = _Holder()
    h._buf = np.empty(4)
    own = _refs_of(h)[0]
    probe = BufferPool(limit_bytes=_SIZE_CLASS, min_bytes=0)
    h._buf = probe.empty((4,), np.float64)
    view, base, pooled = _refs_of(h)
    if not pooled:
        raise RuntimeError("arrayx buffer pool: a pooled buffer is not recognised as one")
    other = h._buf[1:]  # a second view: the base's count goes up, so the check refuses it
    if _refs_of(h)[1] == base:
        raise RuntimeError("arrayx buffer pool: reference counts of pooled views are not what the pool expects")
    del other, probe
    return own, view, base


_SOLE_OWN, _SOLE_VIEW, _SOLE_BASE = _measure_sole_refs()


def sole_holder(holder) -> bool:
    """Whether nothing but ``holder`` (an object whose ``_buf`` is an ndarray, referenced once there)
    reaches the memory of ``holder._buf``: it owns its memory and nothing else references it, or it
    is the only view of a pooled buffer.  Then writing the buffer in place is seen by nobody else:
    what NumPy's temporary elision checks before it reuses an operand of ``a * 2 + 1``."""
    counts = _refs_of(holder)
    if counts[1] == -1:
        return counts[0] == _SOLE_OWN
    return counts[2] and counts[0] == _SOLE_VIEW and counts[1] == _SOLE_BASE


# -- the NumPy functions that write their result into a pooled buffer -------------------------------

def _out_dtype(ufunc, *dtypes):
    return ufunc.resolve_dtypes((*dtypes, None))[-1]


def _transposed(x) -> bool:
    """Whether x is Fortran-ordered and not C-ordered (``X.T`` of a C array): NumPy gives such an
    operand of the result's shape a result of its layout, and the pool gives one too (`_empty_f`)."""
    flags = x.flags
    return flags.f_contiguous and not flags.c_contiguous


def _empty_f(pool: BufferPool, shape: tuple, dtype) -> np.ndarray:
    """A pooled result of ``shape`` in Fortran order: the transpose of a C-ordered pooled buffer of
    the reversed shape (writing ``X.T - mean`` into a C-ordered buffer would be a strided transpose,
    ~4x slower, and change the result's strides from NumPy's)."""
    return pool.empty(shape[::-1], dtype).T


def _pooled_unary(ufunc, pool: BufferPool, min_bytes: int):
    def run(x, /):
        try:
            if x.nbytes < min_bytes:
                return ufunc(x)
            dtype = _out_dtype(ufunc, x.dtype)
            # NumPy gives a transposed x a transposed result: so does the pool
            out = _empty_f(pool, x.shape, dtype) if _transposed(x) else pool.empty(x.shape, dtype)
        except (AttributeError, TypeError):  # a Python scalar; a dtype without a loop (NumPy's error below)
            return ufunc(x)
        return ufunc(x, out=out)

    return run


def _pooled_binary(ufunc, pool: BufferPool, min_bytes: int):
    def run(x1, x2, /):
        try:
            # surely small: the broadcast result has at most size1 * size2 elements
            if x1.size * x2.nbytes < min_bytes or (x1.nbytes < min_bytes and x1.shape == x2.shape):
                return ufunc(x1, x2)
            shape = np.broadcast_shapes(x1.shape, x2.shape)
            full1, full2 = x1.shape == shape, x2.shape == shape
            t1, t2 = full1 and _transposed(x1), full2 and _transposed(x2)
            if t1 or t2:
                # NumPy's result is transposed like its transposed full operand (X.T - mean); with a
                # full operand of the other layout beside it NumPy's choice is left to NumPy
                if (full1 and not t1 and x1.ndim > 1) or (full2 and not t2 and x2.ndim > 1):
                    return ufunc(x1, x2)
                out = _empty_f(pool, shape, _out_dtype(ufunc, x1.dtype, x2.dtype))
            else:
                out = pool.empty(shape, _out_dtype(ufunc, x1.dtype, x2.dtype))
        except (AttributeError, TypeError, ValueError):  # Python scalars; NumPy's own error below
            return ufunc(x1, x2)
        return ufunc(x1, x2, out=out)

    return run


def _pooled_matmul(pool: BufferPool, min_bytes: int):
    matmul = np.matmul

    def run(x1, x2, /):
        try:
            s1, s2 = x1.shape, x2.shape
            # small results (Gram matrices, projections onto a few components) go straight to NumPy,
            # no bookkeeping: rows x columns x 16 (the widest itemsize, complex128) under the pool's size
            if len(s1) < 2 or len(s2) < 2 or (len(s1) == 2 and len(s2) == 2 and s1[0] * s2[1] * 16 < min_bytes):
                return matmul(x1, x2)  # (vector operands: NumPy drops their axis)
            if x1.size * x2.nbytes < min_bytes:  # surely small: at most size1 * size2 elements
                return matmul(x1, x2)
            out = pool.empty((*np.broadcast_shapes(s1[:-2], s2[:-2]), s1[-2], s2[-1]),
                             _out_dtype(matmul, x1.dtype, x2.dtype))
        except (AttributeError, TypeError, ValueError):
            return matmul(x1, x2)
        return matmul(x1, x2, out=out)

    return run


def pooled(fn, pool: BufferPool):
    """``fn`` writing its large results into ``pool``'s buffers where it is a NumPy function with an
    ``out=`` of a shape known beforehand (elementwise ufuncs, matmul); ``fn`` itself otherwise."""
    if fn is np.matmul:
        return _pooled_matmul(pool, pool.min_bytes)
    loaded = getattr(fn, "ufunc_when_loaded", None)  # a stand-in that imports its ufunc late (numpy/nn.py)
    if loaded is not None:
        fn = loaded()
    if not isinstance(fn, np.ufunc) or fn.signature is not None or fn.nout != 1:
        return fn
    make = {1: _pooled_unary, 2: _pooled_binary}.get(fn.nin)
    return fn if make is None else make(fn, pool, pool.min_bytes)


POOL = BufferPool()
def enabled_by_environment() -> bool:
    """On unless ``ARRAYX_BUFFER_POOL`` is 0, false, no or off."""
    return _config.get("ARRAYX_BUFFER_POOL")


ENABLED = enabled_by_environment()
