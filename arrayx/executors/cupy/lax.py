"""The CuPy executor's entries for ``arrayx.lax``: the host implementations of
``executors/numpy/lax.py`` over CuPy (im2col in large blocks: a GPU wants few, large GEMMs).  The
primitives, their rules and compositions: ``arrayx/lax/_conv.py`` and ``arrayx/lax/_window_prims.py``."""
from __future__ import annotations

from arrayx.executors.numpy.lax import add_at_inplace, conv_columns, in_layout, reduce_host, scatter_host, select_host

__all__ = ["TABLE"]

_COLUMN_BYTES = 256 << 20  # a GPU wants few, large GEMMs


def _conv_canonical(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups):
    import cupy

    return conv_columns(cupy, cupy.lib.stride_tricks.as_strided, lhs, rhs, strides, padding, lhs_dilation,
                        rhs_dilation, groups, _COLUMN_BYTES)


def conv(lhs, rhs, *, dimension_numbers, **params):
    return in_layout(_conv_canonical, lhs, rhs, dimension_numbers, params)


def reduce_window(x, **params):
    import cupy

    return reduce_host(cupy, x, **params)


def window_select(x, t, **params):
    import cupy

    return select_host(cupy, reduce_window, x, t, **params)


def window_scatter(x, ct, **params):
    import cupy

    return scatter_host(cupy, reduce_window, add_at_inplace, x, ct, **params)


#: primitive name -> CuPy's implementation (merged into ``CupyExecutor.overrides``)
TABLE = {
    "conv": conv,
    "reduce_window": reduce_window,
    "window_select": window_select,
    "window_scatter": window_scatter,
}
