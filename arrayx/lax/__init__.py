"""``arrayx.lax``: the operations model code needs beyond the standard, with ``jax.lax``'s signatures.

- convolution: ``conv_general_dilated``, ``conv`` (one primitive, native on every executor: XLA on
  jax, blocked im2col + BLAS on numpy/numba/dask/cupy; ``_conv.py``);
- windows: ``reduce_window``, ``max_pool``, ``min_pool``, ``avg_pool``, ``sum_pool`` (``_windows.py``);
- slicing: ``dynamic_slice(_in_dim)``, ``dynamic_update_slice(_in_dim)``, ``dynamic_index_in_dim``;
  functional updates ``index_update/add/min/max`` over ``x.at[idx]``; ``top_k``, ``sort_key_val``
  (``_slicing.py``);
- control flow, the same functions as ``arrayx.cond`` ...: ``cond``, ``switch``, ``while_loop``,
  ``fori_loop``, ``scan``, ``map``;
- collectives over a named axis of ``pmap``/``vmap`` (the same functions as ``arrayx.psum`` ...):
  ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``axis_index``.
"""
from __future__ import annotations

from arrayx.lax._conv import ConvDimensionNumbers, conv, conv_dimension_numbers, conv_general_dilated  # noqa: F401
from arrayx.api._slicing import (  # noqa: F401
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    index_add,
    index_max,
    index_min,
    index_update,
    sort_key_val,
    top_k,
)
from arrayx.lax._windows import avg_pool, max_pool, min_pool, reduce_window, sum_pool  # noqa: F401
from arrayx.transforms.control_flow import cond, fori_loop, map, scan, switch, while_loop  # noqa: F401,A004
from arrayx.sharding import ppermute, psum_scatter, with_sharding_constraint  # noqa: F401,E402
from arrayx.transforms.parallel import all_gather, axis_index, pmax, pmean, pmin, psum  # noqa: F401

__all__ = [
    "conv_general_dilated", "conv", "ConvDimensionNumbers", "conv_dimension_numbers",
    "reduce_window", "max_pool", "min_pool", "avg_pool", "sum_pool",
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
    "dynamic_index_in_dim", "index_update", "index_add", "index_min", "index_max", "top_k", "sort_key_val",
    "cond", "switch", "while_loop", "fori_loop", "scan", "map",
    "with_sharding_constraint", "ppermute", "psum_scatter",
    "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index",
]
