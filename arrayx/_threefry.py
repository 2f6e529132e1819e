"""The bit generator under ``arrayx.random``: threefry2x32 over uint32 arrayx operations, counters.

A draw of ``n`` values hashes the counters ``0 .. n-1`` with the key (``_hash_range``), in JAX's
partitionable layout by default (``threefry_partitionable``: each value's bits depend on its own
index only, so any slice of a draw can be computed alone: Dask chunks, eager slices of
``_CHUNK`` elements); ``_draw`` evaluates a sampler over a shape that way, one task per chunk on
Dask (``arrayx.executors.dask.random``).  The samplers and keys are ``arrayx.random``'s.
"""
from __future__ import annotations

import contextlib
import math
from contextvars import ContextVar

import numpy as np

from arrayx import api as xp
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.core.primitives import current_trace

__all__ = ["threefry2x32", "threefry_partitionable"]

_U32 = _dtypes.uint32
_U64 = _dtypes.uint64
_UINT_OF_BITS = {8: _dtypes.uint8, 16: _dtypes.uint16, 32: _U32, 64: _U64}

# -- bit layout switch ---------------------------------------------------------------------------

_PARTITIONABLE: ContextVar = ContextVar("arrayx_threefry_partitionable", default=True)


@contextlib.contextmanager
def threefry_partitionable(enabled: bool = True):
    """Within the block (this thread / task), lay out random bits as JAX does with
    ``jax_threefry_partitionable=enabled``; the default (True) is JAX 0.10's default.
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"threefry_partitionable: enabled must be True or False, got {enabled!r}")
    token = _PARTITIONABLE.set(enabled)
    try:
        yield enabled
    finally:
        _PARTITIONABLE.reset(token)


# -- the hash --------------------------------------------------------------------------------------

# Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA


def _rotate_left(x: Array, r: int) -> Array:
    return (x << r) | (x >> (32 - r))


def threefry2x32(k1, k2, x1, x2) -> tuple:
    """The Threefry-2x32 block cipher: the key words ``(k1, k2)`` encrypt the counter words ``(x1, x2)``.

    All four are ``uint32`` arrays (``x1`` may also be the Python int 0) that
    broadcast together; returns the two ``uint32`` output words.  Whole-array
    operations only: 20 rounds of add / rotate / xor plus 5 key injections.
    """
    ks = (k1, k2, k1 ^ k2 ^ _KEY_PARITY)
    x1 = x1 + ks[0]
    x2 = x2 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = x1 + x2
            x2 = _rotate_left(x2, r) ^ x1
        x1 = x1 + ks[(i + 1) % 3]
        x2 = x2 + (ks[(i + 2) % 3] + (i + 1))  # the injection constant folds into the 0-d key word
    return x1, x2


def _hash_pairs(key: Array, x1, x2) -> tuple:
    return threefry2x32(key[0], key[1], x1, x2)


def _hash_range(key: Array, start, count) -> tuple:
    """The two output words for the flat element indices [start, start + count): counter i is (i >> 32, i & 0xffffffff).

    ``start`` may instead be an array of the flat indices (uint32 or uint64; ``count`` unused):
    a Dask chunk's (``_draw``).
    """
    if isinstance(start, Array):
        if start.dtype == _U32:
            return _hash_pairs(key, 0, start)
        return _hash_pairs(key, xp.astype(start >> 32, _U32), xp.astype(start, _U32))
    stop = start + count
    if stop <= 2**32:
        return _hash_pairs(key, 0, xp.arange(start, stop, dtype=_U32, device=key.device))
    index = xp.arange(start, stop, dtype=_U64, device=key.device)
    return _hash_pairs(key, xp.astype(index >> 32, _U32), xp.astype(index, _U32))


def _bits_range(key: Array, bit_width: int, start, count) -> Array:
    """Random bits of the flat elements [start, start + count) of a draw, as a 1-D array."""
    if not _PARTITIONABLE.get():
        assert start == 0, "the original layout depends on the whole draw; _draw does not split it"
        return _random_bits_flat(key, bit_width, (count,))
    y1, y2 = _hash_range(key, start, count)
    if bit_width == 64:
        return (xp.astype(y1, _U64) << 32) | xp.astype(y2, _U64)
    if bit_width == 32:
        return y1 ^ y2
    return xp.astype(y1 ^ y2, _UINT_OF_BITS[bit_width])


# Eagerly on executors that run on host memory (``Executor.eager_on_host``: NumPy, Numba), a draw is computed in slices of _CHUNK elements:
# the ~150 whole-array passes then stay in cache (3-6x faster for 1e7 values).  Element i
# depends only on counter i, so the values are the same; under a transform the draw is one
# slice.  (JAX and CuPy prefer whole arrays: per-call dispatch dominates.)  On Dask a draw is one
# blockwise task per chunk, each running the NumPy executor's sampler on the chunk's counters
# (executors/dask/random.py): the same values, and no graph of ~150 operations per draw.
_CHUNK = 1 << 16


def values_partitionable(values):
    """``values`` computing in partitionable mode: what a Dask chunk's task runs."""
    def run(ops, start, count):
        with threefry_partitionable(True):
            return values(ops, start, count)

    return run


def _draw(key: Array, shape: tuple, values, *operands) -> Array:
    """``values(ops, start, count)`` (1-D, elementwise in the counter) evaluated over ``shape``.

    ``ops`` is ``(key, *operands)``: every array the sampler reads comes through it (not through
    its closure), so that a Dask chunk can run it on the NumPy executor with its own blocks.
    """
    size = math.prod(shape)
    ops = (key, *operands)
    if _PARTITIONABLE.get() and current_trace() is None and size and key._ex.name == "dask" and all(
            v._ex is key._ex for v in operands if isinstance(v, Array)):
        from arrayx.executors.dask.random import draw

        return Array._new(draw(shape, values_partitionable(values), ops), key._ex)
    if (size > _CHUNK and _PARTITIONABLE.get() and current_trace() is None
            and key._ex.eager_on_host):
        flat = xp.concat([values(ops, start, min(_CHUNK, size - start)) for start in range(0, size, _CHUNK)])
    else:
        flat = values(ops, 0, size)
    return xp.reshape(flat, shape)


def _random_bits(key: Array, bit_width: int, shape: tuple) -> Array:
    """Random unsigned integers of ``bit_width`` bits and the given shape (no argument checks)."""
    return _draw(key, shape, lambda ops, start, count: _bits_range(ops[0], bit_width, start, count))


# JAX's original layout (jax_threefry_partitionable=False).

def _hash_flat(key: Array, counts: Array) -> Array:
    """JAX's original layout: hash a flat ``uint32`` counter array as (first half, second half) pairs."""
    n = counts.shape[0]
    if n % 2:
        counts = xp.concat([counts, xp.zeros((1,), dtype=_U32, device=key.device)])
    half = counts.shape[0] // 2
    y1, y2 = _hash_pairs(key, counts[:half], counts[half:])
    return xp.concat([y1, y2])[:n]


def _random_bits_flat(key: Array, bit_width: int, shape: tuple) -> Array:
    size = math.prod(shape)
    n_words = -(-bit_width * size // 32)
    if n_words >= 2**32 - 1:
        raise NotImplementedError(
            f"random bits: {size} values of {bit_width} bits need more than 2**32 counters; "
            f"use the default threefry_partitionable(True) layout"
        )
    words = _hash_flat(key, xp.arange(n_words, dtype=_U32, device=key.device))
    if bit_width == 64:
        half = n_words // 2
        out = (xp.astype(words[:half], _U64) << 32) | xp.astype(words[half:], _U64)
    elif bit_width == 32:
        out = words
    else:  # the little-endian bytes / half-words of each word, in order
        per_word = 32 // bit_width
        parts = [(words >> (bit_width * j)) & (2**bit_width - 1) for j in range(per_word)]
        out = xp.astype(xp.reshape(xp.stack(parts, axis=1), (-1,))[:size], _UINT_OF_BITS[bit_width])
    return xp.reshape(out, shape)
