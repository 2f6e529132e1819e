"""The Dask executor's entries for ``arrayx.lax``: the NumPy executor's implementations
(``executors/numpy/lax.py``) per block: ``conv`` per block of images (``blockwise``; the image axis
keeps its chunks, the others are one chunk), the window reduction and its derivative per block with
the windowed axes in one chunk each.  The primitives, their rules and compositions:
``arrayx/lax/_conv.py`` and ``arrayx/lax/_window_prims.py``."""
from __future__ import annotations

import numpy as np

from arrayx.executors.common.windows import conv_shape, window_out_shape
from arrayx.executors.numpy import lax as _numpy_lax

__all__ = ["TABLE"]


def _conv_canonical(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups):
    import dask.array as da

    d = lhs.ndim - 2
    lhs = lhs.rechunk({i: -1 for i in range(1, lhs.ndim)})  # one task per block of images
    rhs = rhs.rechunk(-1)
    out_shape = conv_shape(lhs.shape, rhs.shape, strides, padding, lhs_dilation, rhs_dilation)
    params = dict(strides=strides, padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                  groups=groups)
    a_in, k_in, a_out = [f"s{i}" for i in range(d)], [f"k{i}" for i in range(d)], [f"y{i}" for i in range(d)]
    return da.blockwise(
        lambda x, w: _numpy_lax.conv_canonical(x, w, **params), ["n", "o"] + a_out, lhs, ["n", "c"] + a_in, rhs,
        ["o", "i"] + k_in, new_axes={y: size for y, size in zip(a_out, out_shape[2:])}, concatenate=True,
        dtype=np.result_type(lhs.dtype, rhs.dtype), meta=np.empty((0,) * (d + 2), dtype=lhs.dtype),
    )


def conv(lhs, rhs, *, dimension_numbers, **params):
    return _numpy_lax.in_layout(_conv_canonical, lhs, rhs, dimension_numbers, params)


def _windowed_axes(window, strides, padding) -> tuple:
    return tuple(a for a, (k, s, p) in enumerate(zip(window, strides, padding)) if k != 1 or s != 1 or p != (0, 0))


def _dask_blocks(fn, out_of, *operands, dtype, **params):
    """``fn`` per block, the windowed axes of every operand in one chunk (the others chunked alike)."""
    import dask.array as da

    axes = _windowed_axes(params["window"], params["strides"], params["padding"])
    x = operands[0].rechunk({a: -1 for a in axes})
    rest = [v.rechunk(tuple(-1 if a in axes else c for a, c in enumerate(x.chunks))) for v in operands[1:]]
    out_shape = out_of(x.shape)
    chunks = tuple((out_shape[a],) if a in axes else c for a, c in enumerate(x.chunks))
    return da.map_blocks(lambda *bufs: fn(*bufs, **params), x, *rest, chunks=chunks, dtype=dtype,
                         meta=np.empty((0,) * x.ndim, dtype=dtype))


def _pooled_shape_of(params):
    return lambda shape: window_out_shape(shape, params["window"], params["strides"], params["padding"],
                                          params["window_dilation"])


def reduce_window(x, **params):
    return _dask_blocks(_numpy_lax.reduce_window, _pooled_shape_of(params), x, dtype=x.dtype, **params)


def window_select(x, t, **params):
    return _dask_blocks(_numpy_lax.window_select, _pooled_shape_of(params), x, t, dtype=t.dtype, **params)


def window_scatter(x, ct, **params):
    return _dask_blocks(_numpy_lax.window_scatter, lambda shape: shape, x, ct, dtype=ct.dtype, **params)


#: primitive name -> Dask's implementation (merged into ``DaskExecutor.overrides``)
TABLE = {
    "conv": conv,
    "reduce_window": reduce_window,
    "window_select": window_select,
    "window_scatter": window_scatter,
}
