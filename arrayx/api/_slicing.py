"""Dynamic slices, functional index updates, top_k and sort_key_val, with JAX's signatures.

Dynamic slices bind the namespace's ``dynamic_slice`` / ``dynamic_update_slice`` primitives
(the ones ``x[i:i + 2]`` uses under staging), whose rules and executor implementations already
exist; starts follow ``jax.lax``: with ``allow_negative_indices`` (the default) a negative start
counts from the end once, then every start is clamped so the window fits in the operand.  The
others are compositions of the standard's functions (grad/vmap/jit come from their rules).
"""
from __future__ import annotations

import operator

from arrayx.api._array import Array
from arrayx.api._checks import array_arg, normalize_axis
from arrayx.api.indexing import _normalised, dynamic_slice_p, dynamic_update_slice_p

__all__ = [
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
    "dynamic_index_in_dim", "index_update", "index_add", "index_min", "index_max", "top_k", "sort_key_val",
]


def _starts(fname: str, x, start_indices, allow_negative_indices) -> list:
    if isinstance(start_indices, Array):  # a 1-d array of starts (possibly traced): its entries
        starts = [start_indices[i] for i in range(start_indices.shape[0])] if start_indices.ndim == 1 else [None]
    else:
        starts = list(start_indices)
    if len(starts) != x.ndim:
        raise ValueError(f"{fname}: got {len(starts)} start indices for an operand of {x.ndim} dimension(s) "
                         f"(shape {x.shape}); give one per dimension")
    negative = allow_negative_indices if isinstance(allow_negative_indices, (tuple, list)) \
        else (allow_negative_indices,) * x.ndim
    out = []
    for s, n, neg in zip(starts, x.shape, negative):
        if isinstance(s, Array):
            if s.ndim != 0 or s.dtype.kind not in "iu":
                raise TypeError(f"{fname}: a start index must be a 0-d integer array or a Python int, got "
                                f"{s.dtype} of shape {s.shape}")
            out.append(_normalised(s, n) if neg else s)
        else:
            s = operator.index(s)
            out.append(s + n if neg and s < 0 else s)
    return out


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """``operand[s0:s0 + n0, s1:s1 + n1, ...]`` with starts that may be traced (``jax.lax.dynamic_slice``).

    Starts are clamped so that the window lies inside the operand (never an error, as in JAX).
    """
    fname = "dynamic_slice"
    operand = array_arg(fname, operand, "operand")
    sizes = tuple(operator.index(n) for n in slice_sizes)
    if len(sizes) != operand.ndim or any(not 0 <= n <= d for n, d in zip(sizes, operand.shape)):
        raise ValueError(f"{fname}: slice_sizes {sizes} must give one size per dimension of the operand "
                         f"(shape {operand.shape}), each between 0 and that dimension")
    starts = _starts(fname, operand, start_indices, allow_negative_indices)
    return dynamic_slice_p.bind(operand, *starts, sizes=sizes)


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *, allow_negative_indices=True):
    """``dynamic_slice`` along one axis (``jax.lax.dynamic_slice_in_dim``)."""
    operand = array_arg("dynamic_slice_in_dim", operand, "operand")
    axis = normalize_axis("dynamic_slice_in_dim", axis, operand.ndim)
    starts = [0] * operand.ndim
    starts[axis] = start_index
    sizes = list(operand.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *, allow_negative_indices=True):
    """One slice along ``axis`` at a possibly traced ``index`` (``jax.lax.dynamic_index_in_dim``)."""
    from arrayx import api as ax

    out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
    return out if keepdims else ax.squeeze(out, axis=normalize_axis("dynamic_index_in_dim", axis, operand.ndim))


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """A copy of ``operand`` with the window at ``start_indices`` replaced by ``update``
    (``jax.lax.dynamic_update_slice``); starts are clamped so that the update fits."""
    fname = "dynamic_update_slice"
    operand = array_arg(fname, operand, "operand")
    update = array_arg(fname, update, "update")
    if update.dtype != operand.dtype:
        raise TypeError(f"{fname}: update has dtype {update.dtype} but operand {operand.dtype}; cast the update "
                        f"with astype(update, operand.dtype)")
    if update.ndim != operand.ndim or any(u > n for u, n in zip(update.shape, operand.shape)):
        raise ValueError(f"{fname}: update of shape {update.shape} does not fit in operand of shape "
                         f"{operand.shape} (same number of dimensions, none larger)")
    starts = _starts(fname, operand, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *starts)


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *, allow_negative_indices=True):
    """``dynamic_update_slice`` along one axis (``jax.lax.dynamic_update_slice_in_dim``)."""
    operand = array_arg("dynamic_update_slice_in_dim", operand, "operand")
    axis = normalize_axis("dynamic_update_slice_in_dim", axis, operand.ndim)
    starts = [0] * operand.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow_negative_indices)


# -- functional index updates (jax.ops' old helpers) over x.at[idx] -------------------------------------


def _at(fname, method, x, idx, y, indices_are_sorted, unique_indices):
    update = getattr(array_arg(fname, x).at[idx], method)
    return update(y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_update(x, idx, y, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``x.at[idx].set(y)``: a copy of x with ``x[idx] = y``."""
    return _at("index_update", "set", x, idx, y, indices_are_sorted, unique_indices)


def index_add(x, idx, y, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``x.at[idx].add(y)`` (repeated indices accumulate)."""
    return _at("index_add", "add", x, idx, y, indices_are_sorted, unique_indices)


def index_min(x, idx, y, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``x.at[idx].min(y)``."""
    return _at("index_min", "min", x, idx, y, indices_are_sorted, unique_indices)


def index_max(x, idx, y, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``x.at[idx].max(y)``."""
    return _at("index_max", "max", x, idx, y, indices_are_sorted, unique_indices)


# -- sorting ---------------------------------------------------------------------------------------------


def top_k(operand, k: int, *, axis: int = -1):
    """(values, int32 indices) of the ``k`` largest entries along ``axis``, largest first; of equal
    entries the lower index comes first (``jax.lax.top_k``).  NaN ranks above every number, as in
    JAX; -0.0 and 0.0 are equal here (the standard's ``argsort`` order), where ``jax.lax.top_k``
    ranks 0.0 first: ``top_k([-0.0, 0.0], 1)`` gives index 0 on every executor, JAX's gives 1."""
    from arrayx import api as ax

    fname = "top_k"
    operand = array_arg(fname, operand, "operand")
    if operand.ndim == 0:
        raise ValueError(f"{fname}: operand must have at least one dimension, got a 0-d array")
    axis = normalize_axis(fname, axis, operand.ndim)
    k = operator.index(k)
    if not 0 <= k <= operand.shape[axis]:
        raise ValueError(f"{fname}: k={k} must be between 0 and the size of axis {axis} ({operand.shape[axis]})")
    order = ax.argsort(operand, axis=axis, descending=True, stable=True)
    order = order[(slice(None),) * axis + (slice(0, k),)]
    return ax.take_along_axis(operand, order, axis=axis), ax.astype(order, ax.int32)  # int32 indices, as JAX


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """(keys sorted along ``dimension``, values in the same order) (``jax.lax.sort_key_val``)."""
    from arrayx import api as ax

    fname = "sort_key_val"
    keys = array_arg(fname, keys, "keys")
    values = array_arg(fname, values, "values")
    if tuple(keys.shape) != tuple(values.shape):
        raise ValueError(f"{fname}: keys and values need the same shape, got {keys.shape} and {values.shape}")
    axis = normalize_axis(fname, dimension, keys.ndim)
    order = ax.argsort(keys, axis=axis, stable=bool(is_stable))
    return ax.take_along_axis(keys, order, axis=axis), ax.take_along_axis(values, order, axis=axis)
