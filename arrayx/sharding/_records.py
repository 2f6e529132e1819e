"""The sharding of arrays whose executor has no sharded buffers of its own (numpy, numba, dask).

A record belongs to one buffer (the executor's array object, not the arrayx Array wrapping it): it
is dropped with the buffer (a weak reference's callback), every Array holding that buffer reads it,
and an Array rebound to another buffer (an in-place update) no longer does.  Keyed by buffer so
that the eager paths (``core.run_eager*``), which see buffers only, can read their operands'
shardings.  JAX arrays carry their sharding in the buffer and need no record.

While at least one record exists the eager hook (``core.eager_hook``) is installed, so that an
eager op of sharded operands gives its result a sharding (``_propagate.eager_result``); with no
record left it is removed again: unsharded programs pay one ``is None`` test per eager op.
"""
from __future__ import annotations

import weakref

from arrayx.core import primitives as _core  # at import: a callback at interpreter exit cannot import

_RECORDS: dict = {}  # id(buffer) -> (weak reference to the buffer, sharding)


def attach_buffer(buf, sharding) -> None:
    """``buf`` (an executor buffer) holds the blocks ``sharding`` describes."""
    key = id(buf)

    def gone(ref, key=key):
        rec = _RECORDS.get(key)
        if rec is not None and rec[0] is ref:
            del _RECORDS[key]
            if not _RECORDS:
                _set_hook(None)

    if not _RECORDS:
        from arrayx.sharding._propagate import eager_result

        _set_hook(eager_result)
    _RECORDS[key] = (weakref.ref(buf, gone), sharding)


def attach(array, sharding) -> None:
    attach_buffer(array._buf, sharding)


def lookup_buffer(buf):
    rec = _RECORDS.get(id(buf))
    if rec is None or rec[0]() is not buf:
        return None
    return rec[1]


def lookup(array):
    return lookup_buffer(array._buf)


def active() -> bool:
    return bool(_RECORDS)


def _set_hook(fn) -> None:
    _core.eager_hook = fn
