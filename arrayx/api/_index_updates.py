"""Writes through an index key: ``x[key] = v`` (``setitem``) and ``x.at[key].set/add/.../apply``
(``at_update``, ``at_apply``), computed with the indexing primitives of ``arrayx/api/indexing.py``
(``slice_update``, ``scatter``, ``dynamic_update_slice``) and, for arrays not written in place,
stored through ``arrayx/api/_views.py``'s ``functional_write``.
"""
from __future__ import annotations

import math

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import _SCALAR_OF_KIND, broadcast_shapes_for, cast, scalar_operand, with_article
from arrayx.api._index_keys import _Key, _concrete, basic_shape, gather_shape, parse_key
from arrayx.api._modes import is_strict
from arrayx.api._views import functional_write
from arrayx.api.indexing import (
    AT_OPS, SCATTER_MODES, _apply_key, _bind_checked, _check_in_bounds, _dynamic_window_args,
    _eager_native_key, _index_ndim, _mode_key, _prepare_indices, dynamic_slice_p, dynamic_update_slice_p, scatter_p, slice_p,
    slice_update_p,
)
from arrayx.core.primitives import _TRACE
from arrayx.core.tracers import is_weak


def _complex_into_real(src, dst) -> bool:
    return src.kind == "c" and dst.kind != "c"


def _lossy_scalar(fname: str, x: Array, value):
    """A Python scalar of a wider kind than x's dtype, as NumPy stores it (default mode): a float into
    an integer array is truncated toward zero (NaN and infinities refused, as NumPy does), any number
    into a bool array is its truth value; complex into a real array and everything in strict mode is
    refused (NumPy would drop the imaginary part with only a warning)."""
    if is_strict() or isinstance(value, complex):
        raise TypeError(f"{fname}: cannot store the Python {type(value).__name__} {value!r} into "
                        f"{with_article(x.dtype)} array" + (" (strict mode)" if is_strict() else ""))
    if x.dtype.kind == "b":
        return bool(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{fname}: cannot store {value!r} into {with_article(x.dtype)} array (as NumPy: "
                         f"an integer has no NaN or infinity)")
    return int(value)


def _value_operand(fname: str, x: Array, value):
    if isinstance(value, Array):
        if value.dtype != x.dtype:
            # a weakly typed value (a traced Python scalar) is stored as the scalar would be
            weak = is_weak(value) and value.ndim == 0
            ok = (_dtypes.scalar_result_dtype(x.dtype, _SCALAR_OF_KIND[value.dtype.kind]) if weak
                  else _dtypes.PROMOTION[value.dtype, x.dtype])
            if ok != x.dtype and (is_strict() or _complex_into_real(value.dtype, x.dtype)):
                raise TypeError(
                    f"{fname}: cannot store {value.dtype} values into {with_article(x.dtype)} array without "
                    f"losing information; cast with astype first"
                )
            value = cast(value, x.dtype)  # the default mode stores as NumPy does: astype's cast
        return value
    if isinstance(value, (bool, int, float, complex)):
        dt = _dtypes.scalar_result_dtype(x.dtype, value)
        if dt != x.dtype:
            value = _lossy_scalar(fname, x, value)
        return scalar_operand(fname, value, x.dtype)
    raise TypeError(f"{fname}: values must be an arrayx array or a Python scalar, got {type(value).__name__}")


def setitem(x: Array, key, value) -> None:
    """``x[key] = value``: in place on mutable executors, functional rebinding otherwise."""
    checked = _value_operand("__setitem__", x, value)
    if _TRACE.get() is None and x._ex.mutable and type(x) is Array and (
        not isinstance(checked, Array) or type(checked) is Array
    ):
        native = _eager_native_key("__setitem__", x, key)
        if native is None:
            native = _native_eager_key("__setitem__", x, key)
        buf = x._buf
        if native is not None and (getattr(buf, "flags", None) is None or buf.flags.writeable):
            try:
                buf[native] = checked._buf if isinstance(checked, Array) else checked
            except IndexError as e:  # an out-of-range index array (checks_index_bounds)
                raise IndexError(f"__setitem__: {e}") from None
            return
        # a read-only view (broadcast_to, linalg.diagonal, from_dlpack of an immutable
        # buffer): update functionally instead of failing
    # the original value: checked again; atomic, and seen by x's bases and views (see arrayx/api/_views.py)
    functional_write(x, lambda: _at_update("__setitem__", x, key, value, "set"), key)


def _native_eager_key(fname, x, key):
    """The executor's own key for an eager in-place write (index arrays bounds-checked), or None."""
    k = parse_key(fname, x, key)
    for (_, i), axis in zip(k.arrays, k.x_axes):
        c = _concrete(i)
        if c is None:
            return None
        _check_in_bounds(fname, c, x.shape[axis], axis)
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for e in key:
        if isinstance(e, Array):
            if e.__class__ is not Array:
                return None
            out.append(e._buf)
        elif isinstance(e, (list, np.ndarray)):
            return None  # converted by the functional path
        else:
            out.append(e)
    return tuple(out)


def _unique_known(indices) -> bool:
    """Whether known index arrays address no element twice."""
    from arrayx.api.manipulation import stack

    known = [_concrete(i) for i in indices]
    if any(c is None for c in known):
        return False
    rows = np.asarray(stack(known, axis=-1)) if len(known) > 1 else np.asarray(known[0])[..., None]
    rows = rows.reshape(-1, rows.shape[-1])
    return len(np.unique(rows, axis=0)) == len(rows)


def at_update(x: Array, key, values, op: str, mode: str | None = None, *,
              indices_are_sorted: bool = False, unique_indices: bool = False) -> Array:
    """A copy of x with ``x[key] op= values`` applied (repeated indices accumulate).

    ``mode`` is JAX's: None (IndexError for known out-of-range indices, updates dropped
    for symbolic ones), "promise_in_bounds", "clip", "drop" or "fill" (= "drop").
    ``indices_are_sorted`` is accepted for JAX compatibility; ``unique_indices=True``
    promises no repeats (derivatives of ``multiply`` need it when repeats are possible).
    """
    return _at_update(f"at[...].{op}", x, key, values, op, mode, unique_indices)


def _at_update(fname, x, key, values, op, mode=None, unique_indices=False) -> Array:
    if op not in AT_OPS:
        raise ValueError(f"at[...]: unknown update {op!r}; choose from {AT_OPS}")
    if mode not in SCATTER_MODES:
        raise ValueError(f"{fname}: unknown mode {mode!r}; choose from {SCATTER_MODES[1:]}")
    values = _value_operand(fname, x, values)
    k = parse_key(fname, x, _mode_key(x, key, mode))
    if op == "subtract":
        return _update(fname, x, k, _negate(values), "add", mode, unique_indices)
    if op in ("divide", "power"):
        # as in JAX: x / prod(values) (x ** prod(values)) over repeated indices
        from arrayx.api.creation import ones_like

        factors = _update(fname, ones_like(x), k, values, "multiply", mode, unique_indices)
        from arrayx.api import elementwise as ew

        return ew.divide(x, factors) if op == "divide" else ew.pow(x, factors)
    return _update(fname, x, k, values, op, mode, unique_indices)


def at_apply(x: Array, key, fn, mode: str | None = None, *, unique_indices: bool = False) -> Array:
    """A copy of x with the unary function ``fn`` applied at ``key``, once per time an element is
    indexed (JAX's ``x.at[key].apply(fn)``: ``fn`` is elementwise, a repeated index applies it again).

    ``mode`` as for the updates; ``fn``'s result must be storable in x's dtype."""
    fname = "at[...].apply"
    if not callable(fn):
        raise TypeError(f"{fname}: fn must be a unary function of an array, got {type(fn).__name__}")
    if mode not in SCATTER_MODES:
        raise ValueError(f"{fname}: unknown mode {mode!r}; choose from {SCATTER_MODES[1:]}")
    k = parse_key(fname, x, _mode_key(x, key, mode))
    if k.false_axes:  # a False entry: nothing is indexed
        from arrayx.api.creation import asarray

        return asarray(x, copy=True)
    if not k.arrays or unique_indices:  # each element at most once: fn of the region, stored back
        region = _apply_key(fname, x, k, "fill" if mode == "drop" else mode, None)
        return _update(fname, x, k, _value_operand(fname, x, fn(region)), "set", mode, unique_indices)
    # repeated indices: count the applications per element, then apply fn that many times
    from arrayx.api.creation import zeros
    from arrayx.api.searching import where
    from arrayx.api.statistical import max as amax

    from arrayx.api._device_dtypes import for_array

    count = for_array(x).integral  # int32 on a TPU: counts of repeated indices fit, no emulated int64
    counts = _update(fname, zeros(x.shape, dtype=count, device=x.device), k, 1, "add", mode, False)

    def step(j, y):
        return where(counts > j, _value_operand(fname, x, fn(y)), y)

    known = _concrete(counts)
    if known is not None:
        y = x
        for j in range(int(amax(known)) if known.size else 0):
            y = step(j, y)
        return y
    from arrayx.api._hooks import while_loop

    most = amax(counts)
    return while_loop(lambda c: c[0] < most, lambda c: (c[0] + 1, step(c[0], c[1])),
                      (zeros((), dtype=count, device=x.device), x))[1]


def _negate(v):
    return -v


_ELEMENTWISE = {"add": "add", "multiply": "multiply", "min": "minimum", "max": "maximum"}


def _combine(kind, old, new):
    from arrayx.api import elementwise as ew

    if kind == "set":
        return new
    return getattr(ew, _ELEMENTWISE[kind])(old, new)


def _update(fname, x, k: _Key, values, kind, mode, unique_indices) -> Array:
    if k.false_axes:  # a False entry: nothing is indexed
        from arrayx.api.creation import asarray

        return asarray(x, copy=True)
    v = _gather_layout_values(fname, x, k, values)
    static = k.needs_static()
    if not (k.arrays or k.mask is not None or k.dynamic) and kind == "set":
        return slice_update_p.bind(x, v, key=k.static)  # v: an array of the region's shape, or a scalar
    y = slice_p.bind(x, key=k.static) if static else x
    if k.arrays:
        idx, emode, _, native = _prepare_indices(fname, y, k.arrays, mode, scatter=True, x_axes=k.x_axes)
        axes = tuple(a for a, _ in k.arrays)
        if isinstance(v, Array):  # a scalar stays one: every executor broadcasts it
            v = _full_like_region(v, gather_shape(y.shape, idx[0].shape, axes), y)
        y = _bind_checked(fname, scatter_p, native, y, v, *idx, axes=axes, kind=kind, mode=emode,
                          unique_indices=bool(unique_indices))
    elif k.mask is not None:
        y = _mask_update(fname, y, k.mask, v, kind)
    elif k.dynamic:
        starts, sizes = _dynamic_window_args(y, k.dynamic)
        window = dynamic_slice_p.bind(y, *starts, sizes=sizes)
        y = dynamic_update_slice_p.bind(y, _full_like_region(_combine(kind, window, v), sizes, y), *starts)
    else:
        y = _full_like_region(_combine(kind, y, v), y.shape, y)
        if not static:
            return y
    return slice_update_p.bind(x, y, key=k.static) if static else y


def _gather_layout_values(fname, x, k: _Key, values):
    """``values`` broadcast to the shape of ``x[key]``, then laid out as gather's result (the
    index dimensions where gather puts them, no new axes), or a scalar as it is."""
    from arrayx.api.manipulation import broadcast_to, permute_dims, reshape

    if not isinstance(values, Array):
        return values
    shape = _indexed_shape(x, k)
    if any(d is None for d in shape):
        return values  # a data-dependent region (a mask on Dask): the executor broadcasts
    try:
        v = broadcast_to(values, shape)
    except ValueError:
        raise ValueError(
            f"{fname}: values of shape {values.shape} cannot be broadcast to the indexed region's "
            f"shape {shape}"
        ) from None
    if not (k.arrays or k.new_axes):
        return v
    m = _index_ndim(k)
    perm, new = k.layout(len(shape) - len(k.new_axes) - m, m)
    if new:
        v = reshape(v, tuple(d for i, d in enumerate(shape) if i not in new))
    inverse = tuple(int(i) for i in np.argsort(perm))
    return permute_dims(v, inverse) if inverse != tuple(range(v.ndim)) else v


def _indexed_shape(x, k: _Key) -> tuple:
    """The shape of ``x[key]`` (None where a mask makes it data-dependent)."""
    shape = list(basic_shape(x.shape, k.static))
    for axis, _, size in k.dynamic:
        shape[axis] = size
    m = 0
    if k.mask is not None:
        axis, mask = k.mask
        shape[axis:axis + mask.ndim] = [None]
    elif k.arrays:
        bshape = broadcast_shapes_for("indexing", *(i.shape for _, i in k.arrays))
        m = len(bshape)
        shape = list(gather_shape(tuple(shape), bshape, tuple(a for a, _ in k.arrays)))
    if k.arrays or k.new_axes:
        perm, new = k.layout(len(shape) - m, m)
        shape = [shape[p] for p in perm]
        for d in new:
            shape.insert(d, 1)
    return tuple(shape)


def _full_like_region(v, shape, like):
    """``v`` as an array of ``shape`` with ``like``'s dtype and device (a scalar is filled in)."""
    from arrayx.api.creation import full
    from arrayx.api.manipulation import broadcast_to

    shape = tuple(shape)
    if isinstance(v, Array):
        return v if v.shape == shape or any(d is None for d in shape) else broadcast_to(v, shape)
    return full(shape, v.item() if isinstance(v, np.generic) else v, dtype=like.dtype, device=like.device)


def _mask_update(fname, y, mask_entry, v, kind):
    """``y[mask] <kind>= v``: a select where v does not vary along the masked elements, else a
    scatter at ``nonzero(mask)`` (eager masks only)."""
    from arrayx.api.manipulation import reshape
    from arrayx.api.searching import where

    axis, mask = mask_entry
    m = mask.ndim
    rest = tuple(y.shape[axis + m:])
    r = len(rest)
    count_dim = v.shape[v.ndim - r - 1] if isinstance(v, Array) and v.ndim > r else 1
    if count_dim == 1:
        # the same values for every selected element: a select (lazy, and fine for traced masks)
        if isinstance(v, Array) and v.ndim > r:
            v = reshape(v, v.shape[:v.ndim - r - 1] + (1,) * m + rest)
        mb = reshape(mask, (1,) * axis + tuple(mask.shape) + (1,) * r)
        return where(mb, _combine(kind, y, v), y)
    known = _concrete(mask)
    if known is None:
        raise IndexError(
            f"{fname}: storing an array of values through a traced boolean index needs its number of "
            f"True elements; use arrayx.where(mask, values, x) with values of x's shape"
        )
    if m == 0 and count_dim == 0 and not bool(known):
        return y  # a 0-d False mask selects nothing: an empty update leaves y as it is
    from arrayx.api.searching import nonzero

    idx = nonzero(known)
    arrays = [(axis + j, i) for j, i in enumerate(idx)]
    shape = gather_shape(y.shape, idx[0].shape, tuple(a for a, _ in arrays))
    from arrayx.api.manipulation import broadcast_to

    v = broadcast_to(v, shape)
    return scatter_p.bind(y, v, *idx, axes=tuple(a for a, _ in arrays), kind=kind, mode="promise_in_bounds",
                          unique_indices=True)
