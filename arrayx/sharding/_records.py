"""The sharding of arrays whose executor has no sharded buffers of its own (numpy, numba, dask).

A record belongs to one Array and one buffer: it is dropped with the Array, and ignored once the
Array holds another buffer (an in-place update rebinds it).  JAX arrays carry their sharding in the
buffer and need no record.
"""
from __future__ import annotations

import weakref

_RECORDS: dict = {}  # id(Array) -> (buffer, sharding)


def attach(array, sharding) -> None:
    key = id(array)
    if key not in _RECORDS:
        weakref.finalize(array, _RECORDS.pop, key, None)
    _RECORDS[key] = (array._buf, sharding)


def lookup(array):
    rec = _RECORDS.get(id(array))
    if rec is None or rec[0] is not array._buf:
        return None
    return rec[1]


def active() -> bool:
    return bool(_RECORDS)
