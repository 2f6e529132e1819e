"""Large eager results of the jax executor on CPU written into memory the process already touched.

Why: XLA on CPU allocates each result buffer with ``posix_memalign(64, n)``.  glibc serves that
request by taking ``n + 64 + 32`` bytes and giving the ends back as small free blocks, which its
per-thread caches keep; so a freed result is a free block of exactly ``n`` bytes that the next
request of the same size (``n + 96``) cannot use until it merges with a freed neighbour, and a
large eager result often lands in memory the process has not touched, or has handed back
(``executors/common/heap.py``'s trimming): one page fault per 4 KiB page, about 2.7 us each on the
2-core test machine (a fresh 128 MiB: 88 ms of CPU time).  Measured on 2,000 x 4,000 and
60,000 x 129 results (benchmarks/bench_clients.py's large sizes): from 0 to 30,234 faults per
call depending on which results were alive when (a 124 MB ``rfft`` result that faulted cost
72-77 ms of CPU time, 33 ms written into a donated one; NumPy's whole ``rfft`` 38 ms).

How: a result of :data:`MIN_BYTES` or more of an eager operation (``Recycling``: the per-op
``jax.jit`` programs of ``eager.Jitted``, the folded transposed ``matmul`` of ``permuted.py``, the
programs of recorded chains in ``fused.py``) is also kept by :data:`SPARES`.  Once nothing else
references it (its Python reference count is the pool's own: the arrayx array that held it was
dropped or rebound, as ``x += y`` does), the next
call of an operation whose result has its shape and dtype *donates* it: the call runs a second
program of the same operation that takes the spare as an unused, donated argument
(``keep_unused``), and XLA writes the result into the spare's memory instead of allocating.
Values are those of the plain program (the same operation traced the same way; the spare is
never read).  JAX refuses to reuse a buffer that something outside Python's reference count
holds (a NumPy view of it, a DLPack capsule): it then allocates, as without the pool.

Limits: only on a process whose JAX default backend is a single CPU device (elsewhere XLA's own
allocators reuse device memory); the pool keeps at most ``heap.keep_bound()`` bytes (an eighth of
the physical memory, at most 1 GiB), oldest entries dropped first; a result it holds stays in
memory after the user drops it until it is reused or dropped (:func:`clear` drops every spare).
``ARRAYX_JAX_REUSE_MEMORY=0`` turns it off with the heap settings.  Each operation compiles its
donating program once per result shape, on the first call that finds a spare.
"""
from __future__ import annotations

import math
import sys
import threading
from collections import OrderedDict

__all__ = ["Recycling", "SPARES", "MIN_BYTES", "clear", "stats"]

#: results from this size (bytes) are kept as spares (below it malloc's free lists recycle them)
MIN_BYTES = 1 << 20
#: the most (operand kinds, params) -> result entries one operation remembers
_MAX_KEYS = 256

_jax = None
_ARRAY = None  # jaxlib's ArrayImpl, set by ``load``
ENABLED = False
_getrefcount = sys.getrefcount
_prod = math.prod


def load(jax, array_type, enabled: bool) -> None:
    """Take JAX from the executor; ``enabled``: one CPU device and ARRAYX_JAX_REUSE_MEMORY on."""
    global _jax, _ARRAY, ENABLED
    _jax, _ARRAY = jax, array_type
    ENABLED = bool(enabled)


class _Spares:
    """Large results kept for reuse, oldest first; a spare is one nothing but the pool references."""

    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        self._lock = threading.Lock()
        self._held: OrderedDict = OrderedDict()  # id(buf) -> (buf, (shape, dtype))
        self._bytes = 0
        self.hits = self.kept = self.dropped = 0

    def offer(self, buf) -> None:
        """Keep ``buf`` (a fresh result) for reuse once it is dropped."""
        n = buf.nbytes
        if n > self.limit_bytes // 2:
            return
        with self._lock:
            held = self._held
            while self._bytes + n > self.limit_bytes and held:
                _, (old, _) = held.popitem(last=False)
                self._bytes -= old.nbytes
                self.dropped += 1
                del old
            held[id(buf)] = (buf, (buf.shape, buf.dtype))
            self._bytes += n
            self.kept += 1

    def take(self, aval, free_refs: int | None = None):
        """A held buffer of ``aval`` (shape, dtype) that nothing else references, removed from the
        pool (the caller donates it), or None."""
        free_refs = _FREE_REFS if free_refs is None else free_refs
        with self._lock:
            for key, entry in self._held.items():
                if entry[1] == aval and _getrefcount(entry[0]) == free_refs:
                    buf = entry[0]
                    del self._held[key], entry
                    self._bytes -= buf.nbytes
                    if buf.is_deleted():  # donated by the user's own program, or deleted
                        return None
                    self.hits += 1
                    return buf
        return None

    def clear(self) -> int:
        """Drop every held buffer; the bytes the pool held."""
        with self._lock:
            n = self._bytes
            self._held.clear()
            self._bytes = 0
            return n

    def stats(self) -> dict:
        with self._lock:
            return {"limit_bytes": self.limit_bytes, "held_bytes": self._bytes, "held": len(self._held),
                    "hits": self.hits, "kept": self.kept, "dropped": self.dropped}


def _limit() -> int:
    from arrayx.executors.common.heap import keep_bound

    return keep_bound()


SPARES = _Spares(_limit())


def _measure_free_refs() -> int:
    """The reference count ``_Spares.take`` sees on a buffer only the pool holds, measured on a probe
    (plain objects count references as jax.Array does; the count differs between Python versions)."""
    class _Probe:
        nbytes = 0
        shape = ()
        dtype = None

        def is_deleted(self):
            return False

    probe = _Spares(1 << 20)
    probe.offer(_Probe())
    for refs in range(1, 16):
        if probe.take(((), None), refs) is not None:
            return refs
    raise RuntimeError("arrayx jax executor: reference counts of spare buffers are not what recycle.py expects")


_FREE_REFS = _measure_free_refs()


def clear() -> int:
    return SPARES.clear()


def stats() -> dict:
    return SPARES.stats()


def _nbytes(out) -> int:
    """``out.nbytes`` of a ``jax.Array`` from its aval (jax.Array's ``nbytes`` goes through
    ``numpy.size``: 0.75 us, a tenth of a tiny eager operation)."""
    aval = out.aval
    return _prod(aval.shape) * aval.dtype.itemsize


def _operand_key(b):
    if b.__class__ is _ARRAY:
        return b.shape, b.dtype, b.weak_type
    shape = getattr(b, "shape", None)
    if shape is None:  # a Python scalar: its type decides the result's type, not its value
        return (b.__class__,)
    return b.__class__, shape, getattr(b, "dtype", None), getattr(b, "axes", None)


class Recycling:
    """``jax.jit(fn, static_argnames=statics)`` whose large single-array result is written into a
    dropped earlier result (a spare, donated) where :data:`SPARES` holds one of its shape and dtype."""

    __slots__ = ("fn", "statics", "plain", "donating", "results", "__weakref__")

    def __init__(self, fn, static_argnames=()):
        self.fn = fn
        self.statics = tuple(static_argnames)
        self.plain = _jax.jit(fn, static_argnames=self.statics)
        self.donating = None
        #: None until a call gives a large result; then (operand kinds, statics) -> its (shape, dtype),
        #: or False where the result is not one fresh array
        self.results = None

    def __call__(self, *bufs, **statics):
        results = self.results
        if results is not None:
            key = (tuple(_operand_key(b) for b in bufs), *statics.values())
            aval = results.get(key)
            if aval:
                spare = SPARES.take(aval)
                if spare is not None:
                    program = self.donating
                    if program is None:
                        fn = self.fn
                        program = self.donating = _jax.jit(lambda spare, *bufs, **kw: fn(*bufs, **kw),
                                                           static_argnames=self.statics, donate_argnums=(0,),
                                                           keep_unused=True)
                    out = program(spare, *bufs, **statics)
                    SPARES.offer(out)
                    return out
            out = self.plain(*bufs, **statics)
            if aval is None:
                self._learn(key, bufs, out)
            elif aval:
                SPARES.offer(out)
            return out
        out = self.plain(*bufs, **statics)
        if ENABLED and out.__class__ is _ARRAY and _nbytes(out) >= MIN_BYTES:
            self.first_result(bufs, statics.values(), out)
        return out

    def first_result(self, bufs, static_values, out) -> None:
        """Start remembering result kinds with ``out``, the first large result (of ``plain``, on
        ``bufs`` and statics of ``static_values``); below :data:`MIN_BYTES` nothing happens."""
        if self.results is None and _nbytes(out) >= MIN_BYTES:
            self.results = {}
            self._learn((tuple(_operand_key(b) for b in bufs), *static_values), bufs, out)

    def _learn(self, key, bufs, out) -> None:
        """Remember the result kind of ``key``; keep ``out`` when it is a large fresh array."""
        results = self.results
        if len(results) >= _MAX_KEYS:
            results.clear()
        fresh = out.__class__ is _ARRAY and out.nbytes >= MIN_BYTES and len(out.devices()) == 1
        if fresh:
            ptr = out.unsafe_buffer_pointer()
            for b in bufs:
                base = getattr(b, "base", b)  # a Permuted operand enters as its base
                if base.__class__ is _ARRAY and base.unsafe_buffer_pointer() == ptr:
                    fresh = False  # the program gave an operand back: nothing to write into
        results[key] = (out.shape, out.dtype) if fresh else False
        if fresh:
            SPARES.offer(out)

    def __getattr__(self, name):  # jax.jit's own attributes (lower, trace, _cache_size, ...)
        if name in ("fn", "statics", "plain", "donating", "results"):
            raise AttributeError(name)
        return getattr(self.plain, name)
