"""The NumPy and Numba executors' ``fft`` functions: NumPy's pocketfft transforms, with

- large results written into the buffer pool (``executors/common/buffer_pool.py``), as ufunc
  results are: a transform's output is as large as its input, and a fresh allocation of that size
  costs a page fault per 4 KiB page on first touch;
- on the Numba executor (``threads`` > 1), a batch of 1-D transforms split between threads: the
  array is cut along its longest axis that is not transformed, and each piece is transformed by
  NumPy's own function into its part of the output (pocketfft releases the GIL).  Every row is
  transformed by the same code as in one NumPy call, so results are bit-identical to NumPy's.
  A single 1-D signal has no batch to split and runs on one thread.

The n-dimensional transforms are NumPy's sequences of 1-D transforms, in NumPy's order (so the
bits match too).
"""
from __future__ import annotations

import numpy as np

from arrayx.executors.common import buffer_pool as _buffer_pool, threads as _threads

#: fewest input elements of a call that is split between threads, and fewest per piece (a piece
#: below ~64K elements costs more in hand-off than its transform takes)
PARALLEL_MIN = 1 << 17
PIECE_MIN = 1 << 16

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _one() -> int:
    return 1


def _out(shape: tuple, dtype):
    """The result buffer: pooled when the pool is on (None: NumPy allocates it)."""
    if not _buffer_pool.ENABLED:
        return None
    return _buffer_pool.POOL.empty(shape, dtype)


def _hermitian(x, n, axis, norm, out):  # hfft: irfft of the conjugate, the norm's direction swapped
    return np.fft.irfft(np.conjugate(x), n=n, axis=axis, norm=_SWAP[norm], out=out)


def _ihermitian(x, n, axis, norm, out):  # ihfft: the conjugate of rfft, the norm's direction swapped
    out = np.fft.rfft(x, n=n, axis=axis, norm=_SWAP[norm], out=out)
    return np.conjugate(out, out=out)


def _numpy(name: str):
    fn = getattr(np.fft, name)
    return lambda x, n, axis, norm, out: fn(x, n=n, axis=axis, norm=norm, out=out)


def _half(n: int) -> int:
    return n // 2 + 1


#: kind -> (the 1-D function(x, n, axis, norm, out), output length from n, output is real)
_KINDS = {
    "fft": (_numpy("fft"), None, False),
    "ifft": (_numpy("ifft"), None, False),
    "rfft": (_numpy("rfft"), _half, False),
    "irfft": (_numpy("irfft"), None, True),
    "hfft": (_hermitian, None, True),
    "ihfft": (_ihermitian, _half, False),
}


def transform(kind: str, x: np.ndarray, n: int, axis: int, norm: str, threads=_one) -> np.ndarray:
    """The 1-D transform ``kind`` of ``x`` along ``axis`` with ``n`` points; split between
    ``threads()`` threads where the batch is large enough (see the module docstring)."""
    fn, length, real = _KINDS[kind]
    axis = axis % x.ndim
    shape = x.shape[:axis] + ((length(n) if length else n),) + x.shape[axis + 1:]
    dtype = np.result_type(x.real.dtype, 1.0) if real else np.result_type(x.dtype, 1j)
    out = _out(shape, dtype)
    if x.size < PARALLEL_MIN or (threads := threads()) <= 1:
        return fn(x, n, axis, norm, out)
    # the longest axis that is not transformed carries the pieces
    split = max((d for d in range(x.ndim) if d != axis), key=lambda d: x.shape[d], default=None)
    pieces = 0 if split is None else min(x.shape[split], _threads.piece_count(x.size, threads, PIECE_MIN))
    if pieces < 2:
        return fn(x, n, axis, norm, out)
    if out is None:
        out = np.empty(shape, dtype)
    lead = (slice(None),) * split

    def work(start, stop):
        key = lead + (slice(start, stop),)
        fn(x[key], n, axis, norm, out[key])

    _threads.run_pieces(work, x.shape[split], pieces, threads)
    return out


def transform_nd(kind: str, x: np.ndarray, s: tuple, axes: tuple, norm: str, threads=_one) -> np.ndarray:
    """fftn / ifftn / rfftn / irfftn as NumPy composes them from 1-D transforms (``axes`` not empty:
    ``api/fft.py`` gives a copy for none)."""
    if kind in ("fftn", "ifftn"):
        one = kind[:-1]
        for size, axis in reversed(tuple(zip(s, axes))):
            x = transform(one, x, size, axis, norm, threads)
        return x
    if kind == "rfftn":
        x = transform("rfft", x, s[-1], axes[-1], norm, threads)
        for i in range(len(axes) - 2, -1, -1):
            x = transform("fft", x, s[i], axes[i], norm, threads)
        return x
    for i in range(len(axes) - 1):  # irfftn
        x = transform("ifft", x, s[i], axes[i], norm, threads)
    return transform("irfft", x, s[-1], axes[-1], norm, threads)


def table(threads) -> dict:
    """The fft table entries of an executor whose transforms use ``threads()`` threads."""

    def one_dim(kind):
        def run(x, /, *, n, axis, norm):
            return transform(kind, x, n, axis, norm, threads)

        run.__name__ = run.__qualname__ = kind
        return run

    def n_dim(kind):
        def run(x, /, *, s, axes, norm):
            return transform_nd(kind, x, tuple(s), tuple(axes), norm, threads)

        run.__name__ = run.__qualname__ = kind
        return run

    out = {kind: one_dim(kind) for kind in _KINDS}
    out.update({kind: n_dim(kind) for kind in ("fftn", "ifftn", "rfftn", "irfftn")})
    return out


#: the NumPy executor's entries: one thread
TABLE = table(_one)

__all__ = ["transform", "transform_nd", "table", "TABLE", "PARALLEL_MIN", "PIECE_MIN"]
