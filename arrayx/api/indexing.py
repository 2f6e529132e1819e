"""Indexing: ``x[key]``, ``x[key] = v``, ``x.at[key].op(v)`` and the standard's
"Indexing Functions" category (``take``, ``take_along_axis``).

A key is parsed here, once, into operations on internal primitives, so executors
never see a key format of arrayx's own:

- ``slice``: ints, slices with static bounds and None (a static basic key, the
  cheap case: ``buf[key]`` on every executor), and ``slice_update`` its write;
- ``gather`` / ``scatter``: integer index arrays (NumPy's advanced indexing: the
  index arrays' broadcast dimensions replace the indexed axes when those are
  adjacent, else they come first), scatter's update kinds being
  set/add/multiply/min/max;
- ``dynamic_slice`` / ``dynamic_update_slice``: slices whose start is only known
  symbolically (``x[i:i + 2]`` under staging), with JAX's clamping;
- ``boolean_mask``: a boolean array index (its result size depends on values).

Out-of-range indices (NumPy's rule, on every executor): an integer, an integer
index array, ``take`` and ``take_along_axis`` raise IndexError naming the index
and the size whenever the indices are known values (eagerly, under grad, and for
constants under staging).  Where they are only known symbolically (staged inputs)
indices are clamped into range, as JAX does; updates through out-of-range
indices are dropped.  ``x.at[key]`` takes JAX's ``mode=`` to choose otherwise; with
a mode, out-of-range integers follow it too (``x.at[11].get(mode="fill")``).

Views (NumPy's semantics on every executor, see ``arrayx/api/_views.py``): ``x[basic key]`` of an
array whose buffer cannot be written in place (JAX, Dask, a tracer) remembers ``x`` and
the key, so a write through it reaches ``x`` and every other live view of ``x``; writes
to one array (and its views) are serialised by a lock, so writes from several threads
all land.

This module holds the primitives, index-array bounds and modes, ``x[key]`` and the
standard's functions; the writes (``x[key] = v``, ``x.at[key].set/add/.../apply``) are in
``arrayx/api/_index_updates.py``, the views in ``arrayx/api/_views.py``.
"""
from __future__ import annotations

import operator

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import array_arg, broadcast_shapes_for, cast, normalize_axis
from arrayx.core.primitives import Primitive, _TRACE, _object_new, _wrap
from arrayx.core import primitives as _prims
from arrayx.api._index_keys import _Key, _concrete, _consecutive, basic_shape, gather_shape, parse_key  # noqa: F401

__all__ = ["take", "take_along_axis"]

slice_p = Primitive("slice")
slice_update_p = Primitive("slice_update")
gather_p = Primitive("gather")
scatter_p = Primitive("scatter")
dynamic_slice_p = Primitive("dynamic_slice")
dynamic_update_slice_p = Primitive("dynamic_update_slice")
boolean_mask_p = Primitive("boolean_mask")
take_along_axis_p = Primitive("take_along_axis")

#: the updates of ``x.at[key]``: scatter's kinds set/add/multiply/min/max, and subtract
#: (add of -v), divide and power (of the product of the values, as JAX does) written with them
AT_OPS = ("set", "add", "subtract", "multiply", "divide", "power", "min", "max")
GATHER_MODES = (None, "promise_in_bounds", "clip", "fill", "drop")  # get: "drop" is "fill", as in JAX
SCATTER_MODES = (None, "promise_in_bounds", "clip", "drop", "fill")


# The primitives' contracts (each executor's table implements them; NumPy-like buffers share
# the implementations of ``arrayx.executors.common.indexing``; an executor without entries runs the
# generic ones of ``arrayx/api/_indexing_generic.py``, written in the standard):
#   slice(x, key)                         x[key], key a static basic key (ints, None, (start, stop, step))
#   slice_update(x, v, key)               a copy of x with x[key] = v (v broadcasts to x[key])
#   gather(x, *idx, axes)                 x[k], k[axes[j]] = idx[j] and full slices elsewhere; the
#                                         idx share one shape, values in [-n, n)
#   scatter(x, u, *idx, axes, kind, mode, unique_indices)
#                                         a copy of x with x[k] <kind>= u, repeats accumulating; u has
#                                         gather's result shape; mode "drop" skips updates at indices
#                                         outside [-n, n), "promise_in_bounds" has none
#   dynamic_slice(x, *starts, sizes)      x[s:s + size] per axis, each start clamped to [0, n - size]
#   dynamic_update_slice(x, u, *starts)   a copy of x with that window (u's shape) replaced by u
#   boolean_mask(x, mask, axis)           x[(slice(None),) * axis + (mask,)]
#   take_along_axis(x, indices, axis)     the standard's, indices in [-n, n)


# -- index arrays: bounds and modes ----------------------------------------------------------------


def _check_in_bounds(fname: str, index: Array, n, axis: int) -> None:
    """IndexError naming the index and the size when a known index is outside [-n, n)."""
    if n is None or index.size == 0:
        return
    lo, hi = index._ex.index_range(index._buf)
    bad = hi if hi >= n else lo if lo < -n else None
    if bad is not None:
        raise IndexError(
            f"{fname}: index {bad} is out of bounds for axis {axis} with size {n}; pass mode='clip' "
            f"or mode='fill' to x.at[...] to choose another behaviour"
        )


def _normalised(i: Array, n: int) -> Array:
    from arrayx.api.searching import where

    if i.dtype.kind == "u":
        return i
    return where(i < 0, i + n, i)


def _clipped(i: Array, n: int) -> Array:
    from arrayx.api.elementwise import clip

    return clip(_normalised(i, n), 0, max(n - 1, 0))


def _in_range(indices, ns) -> Array | None:
    valid = None
    for i, n in zip(indices, ns):
        ok = (i >= -n) & (i < n) if i.dtype.kind != "u" else i < n
        valid = ok if valid is None else valid & ok
    return valid


def _prepare_indices(fname: str, y: Array, arrays, mode: str | None, *, scatter: bool, x_axes=None) -> tuple:
    """(broadcast index arrays, executor mode, validity mask or None, native check) for ``mode``.

    None (the default) checks known indices (IndexError) and clamps (gather) or drops
    (scatter) symbolic ones, as JAX does under jit.  Eagerly, on an executor whose own
    indexing raises for out-of-range indices, the check is left to it (``native check``:
    the caller names the function in its error).
    """
    if len(arrays) == 1:
        axes = (arrays[0][0],)
        idx = [arrays[0][1]]
    else:
        from arrayx.api.manipulation import broadcast_arrays

        axes = tuple(a for a, _ in arrays)
        idx = list(broadcast_arrays(*(i for _, i in arrays)))
    if mode is None:
        known = [i if i.__class__ is Array else _concrete(i) for i in idx]
        if all(c is not None for c in known):
            if _TRACE.get() is None and y._ex.checks_index_bounds:
                return idx, "promise_in_bounds", None, True
            for c, a, xa in zip(known, axes, x_axes or axes):
                _check_in_bounds(fname, c, y.shape[a], xa)
            return idx, "promise_in_bounds", None, False
        mode = "drop" if scatter else "clip"
    if mode == "promise_in_bounds":
        return idx, mode, None, False
    ns = [y.shape[a] for a in axes]
    if mode == "clip":
        return [_clipped(i, n) for i, n in zip(idx, ns)], "promise_in_bounds", None, False
    # fill (gather) / drop, fill (scatter)
    if scatter:
        return idx, "drop", None, False
    from arrayx.api.searching import where

    valid = _in_range(idx, ns)
    return [where(valid, i, 0) for i in idx], "promise_in_bounds", valid, False


def _bind_checked(fname, prim, native_check, *args, **params):
    """``prim.bind``; an IndexError of the executor's own bounds check names ``fname``."""
    if not native_check:
        return prim.bind(*args, **params)
    try:
        return prim.bind(*args, **params)
    except IndexError as e:
        raise IndexError(f"{fname}: {e}") from None


def _default_fill(dtype):
    if _dtypes.kind_of(dtype) in "fc":  # (bfloat16's NumPy kind is "V")
        return float("nan")
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return True


def _broadcast_valid(valid: Array, out_shape: tuple, lead: int) -> Array:
    """The validity mask of the index dimensions (at ``lead``) broadcast against gather's result."""
    from arrayx.api.manipulation import reshape

    shape = (1,) * lead + tuple(valid.shape) + (1,) * (len(out_shape) - lead - valid.ndim)
    return reshape(valid, shape)


def gather_checked(fname, y, arrays, mode=None, fill_value=None, x_axes=None) -> Array:
    """``gather`` of ``y`` at the index arrays [(axis, Array)], in ``mode`` (see the module doc);
    ``x_axes`` name the axes in errors."""
    idx, emode, valid, native = _prepare_indices(fname, y, arrays, mode, scatter=False, x_axes=x_axes)
    axes = tuple(a for a, _ in arrays)
    out = _bind_checked(fname, gather_p, native, y, *idx, axes=axes)
    if valid is not None:
        from arrayx.api.searching import where

        fill = _default_fill(y.dtype) if fill_value is None else fill_value
        lead = axes[0] if _consecutive(axes) else 0
        out = where(_broadcast_valid(valid, out.shape, lead), out, _fill_operand(fname, y, fill))
    return out


def _fill_operand(fname, y, fill):
    """A fill value for ``mode="fill"`` as a scalar of y's dtype (an array is cast)."""
    if isinstance(fill, Array):
        return cast(fill, y.dtype)
    return y.dtype.type(fill)


# -- getitem -------------------------------------------------------------------------------------


class _BasicIndex:
    """Stands for an eager ``x[key]`` of a basic key in the eager hook (the fast path binds no
    primitive; the slices the other path binds do not say which dimensions were taken whole)."""

    name = "basic_index"
    multiple_results = False


_BASIC_INDEX = _BasicIndex()


def _basic_index_sharding(ex, buf, key, out):
    """``out`` (``buf[key]``) given the sharding the eager hook gives it (issue #42 point 3: the
    sharding layer gives JAX's; no hook, no sharded array, nothing done)."""
    return _prims.eager_hook(_BASIC_INDEX, ex, (buf,), {"key": key}, out)


def getitem(x: Array, key, mode: str | None = None, fill_value=None, view: bool = True) -> Array:
    """``x[key]`` (basic and advanced indexing as the standard describes it).

    With ``view`` (``x[key]``, not ``x.at[key].get()``) and a basic key, the result of an array
    that is not written in place is linked to ``x`` as a view (see ``arrayx/api/_views.py``)."""
    if x.__class__ is Array and mode is None and _TRACE.get() is None and not x._ex.unknown_shapes:
        # eager fast path: ints and slices (bounds checked here: JAX would clamp) straight to the
        # executor's own indexing, which has NumPy's rules; integer arrays through _eager_native_key
        buf = x._buf
        if key.__class__ is slice and key.step != 0 and buf.ndim:  # the commonest key: one slice
            ex = x._ex
            if not ex.mutable and view:
                return _view(x, key)
            index = ex.basic_index
            out = index(buf, key) if index is not None else None
            if out is None:
                out = buf[key]
            new = _object_new(Array)  # _wrap, spelled out on the commonest path
            new._buf = out if out.__class__ is ex.array_type else ex.coerce(out)
            new._ex = ex
            if _prims.eager_hook is not None:  # some array is sharded: the result's sharding (jax's)
                new._buf = _basic_index_sharding(ex, buf, key, new._buf)
            return new
        entries = key if key.__class__ is tuple else (key,)
        shape = buf.shape
        ndim = len(shape)
        i = 0  # the axis the next int or slice indexes (None adds an axis of its own)
        for e in entries:
            c = e.__class__
            if c is int:
                if i >= ndim or not -shape[i] <= e < shape[i]:
                    break
                i += 1
            elif c is slice and e.step != 0:
                if i >= ndim:
                    break
                i += 1
            elif e is None:  # x[:, None], x[1, 2, None]: NumPy's newaxis, a view
                continue
            else:
                if len(entries) <= ndim:
                    native = _eager_native_key("__getitem__", x, key)
                    if native is not None:
                        return _native_getitem(x, native)
                break
        else:
            ex = x._ex
            if not ex.mutable and view and _is_view_key(key, len(shape)):
                return _view(x, key)
            index = ex.basic_index
            out = index(buf, key) if index is not None else None
            if out is None:
                out = buf[key]
            out = out if out.__class__ is ex.array_type else ex.coerce(out)
            if _prims.eager_hook is not None:  # some array is sharded: the result's sharding (jax's)
                out = _basic_index_sharding(ex, buf, key, out)
            return _wrap(out, ex)
    if view and mode is None and (x.__class__ is not Array or not x._ex.mutable or _TRACE.get() is not None) \
            and _is_view_key(key, x.ndim):
        return _view(x, key)
    fname = "__getitem__" if mode is None and fill_value is None else "at[...].get"
    if mode not in GATHER_MODES:
        raise ValueError(f"at[...].get: unknown mode {mode!r}; choose from {GATHER_MODES[1:]}")
    if mode == "drop":
        mode = "fill"
    key = _mode_key(x, key, mode)
    k = parse_key(fname, x, key)
    out = _apply_key(fname, x, k, mode, fill_value)
    if _prims.eager_hook is not None and x.__class__ is Array and out.__class__ is Array and mode is None \
            and _TRACE.get() is None and _plain_basic(key):
        out._buf = _basic_index_sharding(x._ex, x._buf, key, out._buf)
    return out


def _plain_basic(key) -> bool:
    """Whether ``key`` holds only Python/NumPy ints, slices of ints, None and Ellipsis."""
    for e in (key if key.__class__ is tuple else (key,)):
        if e is None or e is Ellipsis or isinstance(e, (int, np.integer)) and not isinstance(e, bool):
            continue
        if isinstance(e, slice) and all(v is None or isinstance(v, (int, np.integer)) for v in (e.start, e.stop, e.step)):
            continue
        return False
    return True


def at_get(x: Array, key, mode: str | None = None, fill_value=None) -> Array:
    """``x.at[key].get()``: ``x[key]`` as a new array, never a view (JAX's), whatever the executor."""
    out = getitem(x, key, mode, fill_value, view=False)
    if out.__class__ is Array and out._ex.mutable and _is_view_key(key, x.ndim):
        from arrayx.api.creation import asarray

        return asarray(out, copy=True)  # the executor's own basic indexing shares x's memory
    return out


def _mode_key(x: Array, key, mode):
    """``key`` with its integer entries as 0-d index arrays when one is out of range and ``mode``
    says what to do with it ("clip", "fill", "drop": JAX's rule for integers too), else ``key``.

    A 0-d index array removes its axis as an integer does (and integers among index arrays are
    index arrays already), so the result's layout is the same."""
    if mode not in ("clip", "fill", "drop"):
        return key
    entries = key if isinstance(key, tuple) else (key,)
    kinds = [_int_entry(e) for e in entries]
    if not any(kinds):
        return key
    # the axis each entry indexes: an Ellipsis stands for the axes no other entry takes
    takes = [_axes_taken(e) for e in entries]
    shape = x.shape
    axis, out, out_of_range = 0, [], False
    for e, k, t in zip(entries, kinds, takes):
        if k:
            i = operator.index(e)
            n = shape[axis] if axis < len(shape) else None
            out_of_range |= n is not None and not -n <= i < n
            # any index past an end selects as the one just past it (clip and fill alike): then it
            # fits the device's index dtype (int32 on a TPU) whatever its size
            out.append(i if n is None else max(-n - 1, min(n, i)))
        else:
            out.append(e)
        axis += len(shape) - sum(takes) if e is Ellipsis else t
    if not out_of_range:
        return key
    from arrayx.api.creation import asarray

    from arrayx.api._device_dtypes import for_array

    index = for_array(x).index
    return tuple(asarray(e, dtype=index, device=x.device) if k else e for e, k in zip(out, kinds))


def _axes_taken(e) -> int:
    """How many axes of x a key entry indexes (a boolean mask: its ndim; None, Ellipsis, a bool: 0)."""
    if e is None or e is Ellipsis or isinstance(e, (bool, np.bool_)):
        return 0
    if isinstance(e, (Array, np.ndarray, list)):
        kind = e.dtype.kind if isinstance(e, (Array, np.ndarray)) else np.asarray(e).dtype.kind
        return (e.ndim if not isinstance(e, list) else np.ndim(e)) if kind == "b" else 1
    return 1


def _int_entry(e) -> bool:
    """Whether a key entry is a Python (or NumPy) integer: not a bool, not an array."""
    c = e.__class__
    if c is int:
        return True
    return not isinstance(e, (bool, np.bool_, Array, np.ndarray, list, slice)) and e is not None \
        and e is not Ellipsis and hasattr(c, "__index__")


def _native_getitem(x: Array, native) -> Array:
    ex = x._ex
    try:
        out = x._buf[native]
    except IndexError as e:  # an out-of-range index array (checks_index_bounds)
        raise IndexError(f"__getitem__: {e}") from None
    return _wrap(out if out.__class__ is ex.array_type else ex.coerce(out), ex)


def _eager_native_key(fname, x: Array, key):
    """For an eager key of ints, slices of ints, and concrete integer or boolean arrays of x's
    executor, the key for the executor's own indexing (NumPy's rules), index arrays bounds
    checked unless the executor checks them itself (JAX would clamp, CuPy wrap); else None."""
    entries = key if key.__class__ is tuple else (key,)
    shape = x._buf.shape
    ndim = len(shape)
    native = None
    checked = x._ex.checks_index_bounds
    axis = 0
    for pos, e in enumerate(entries):
        if axis >= ndim:
            return None
        c = e.__class__
        if c is int:
            n = shape[axis]
            if not -n <= e < n:
                return None  # parse_key raises the error
        elif c is slice:
            if e.step == 0:
                return None
        elif c is Array and e._ex is x._ex and e._buf.__class__ is x._ex.array_type \
                and not getattr(x._ex, "general_eager_keys", False):  # else the primitives (jax)
            kind = e.dtype.kind
            if kind == "b":
                if e.ndim == 0 or e.shape != shape[axis:axis + e.ndim]:
                    return None  # parse_key explains (or handles 0-d masks)
                axis += e.ndim - 1
            elif kind not in "iu":
                return None
            elif not checked and e._buf.size:
                _check_in_bounds(fname, e, shape[axis], axis)
            if native is None:
                native = list(entries)
            native[pos] = e._buf
        else:
            return None
        axis += 1
    if native is None:
        return key
    return tuple(native)


def _index_ndim(k: _Key) -> int:
    return len(broadcast_shapes_for("indexing", *(i.shape for _, i in k.arrays))) if k.arrays else 0


def _apply_key(fname, x, k: _Key, mode, fill_value):
    from arrayx.api.manipulation import expand_dims, permute_dims

    y = slice_p.bind(x, key=k.static) if k.needs_static() else x
    if k.dynamic:
        y = _dynamic_slice(y, k.dynamic)
    m = 0
    if k.mask is not None:
        axis, mask = k.mask
        y = boolean_mask_p.bind(y, mask, axis=axis)
    elif k.arrays:
        y = gather_checked(fname, y, k.arrays, mode, fill_value, k.x_axes)
        m = _index_ndim(k)
    if k.arrays or k.new_axes:
        perm, new = k.layout(y.ndim - m, m)
        if perm != tuple(range(y.ndim)):
            y = permute_dims(y, perm)
        for d in new:
            y = expand_dims(y, axis=d)
        if k.false_axes:
            empty = {d if d < k.index_at or not k.arrays else d + m for d in k.false_axes}
            y = slice_p.bind(y, key=tuple((0, 0, None) if d in empty else (None, None, None) for d in range(y.ndim)))
    return y


def _dynamic_slice(y, dynamic):
    starts, sizes = _dynamic_window_args(y, dynamic)
    return dynamic_slice_p.bind(y, *starts, sizes=sizes)


def _dynamic_window_args(y, dynamic):
    starts = [0] * y.ndim
    sizes = list(y.shape)
    for axis, start, size in dynamic:
        starts[axis] = _normalised_start(start, y.shape[axis])
        sizes[axis] = size
    return starts, tuple(sizes)


def _normalised_start(start, n):
    """A negative start counts from the end once, then dynamic_slice clamps (JAX's rule)."""
    if isinstance(start, Array):
        return _normalised(start, n)
    return start + n if start < 0 else start


# -- take, take_along_axis -------------------------------------------------------------------------


def take(x, indices, /, *, axis: int | None = None) -> Array:
    """Elements of x at the 1-D integer ``indices`` along ``axis`` (optional when x is 1-D).

    Negative indices count from the end; an index outside [-n, n) raises IndexError (a
    symbolic one under staging is clamped, as in JAX).
    """
    x = array_arg("take", x)
    indices = array_arg("take", indices, "indices")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"take: indices must have an integer dtype, got {indices.dtype}")
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be 1-D, got shape {indices.shape}")
    if x.ndim == 0:
        raise ValueError("take: x must have at least one dimension, got a 0-d array")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for a {x.ndim}-D array (shape {x.shape})")
        axis = 0
    axis = normalize_axis("take", axis, x.ndim)
    return gather_checked("take", x, [(axis, indices)])


def take_along_axis(x, indices, /, *, axis: int = -1) -> Array:
    """Values of x at ``indices`` along ``axis``; elsewhere x and indices broadcast together.

    Out-of-range indices raise IndexError (symbolic ones under staging are clamped)."""
    x = array_arg("take_along_axis", x)
    indices = array_arg("take_along_axis", indices, "indices")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"take_along_axis: indices must have an integer dtype, got {indices.dtype}")
    if indices.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis: x and indices must have the same number of dimensions, got shapes "
            f"{x.shape} and {indices.shape}"
        )
    if x.ndim == 0:
        raise ValueError("take_along_axis: x must have at least one dimension, got a 0-d array")
    axis = normalize_axis("take_along_axis", axis, x.ndim)
    xs, js = list(x.shape), list(indices.shape)
    xs[axis] = js[axis] = 1
    batch = broadcast_shapes_for("take_along_axis", tuple(xs), tuple(js))
    n = x.shape[axis]
    known = _concrete(indices)
    if known is not None:
        _check_in_bounds("take_along_axis", known, n, axis)
    elif n is not None:
        indices = _clipped(indices, n)
    if _TRACE.get() is not None:  # the primitive sees operands broadcast outside ``axis``
        from arrayx.api.manipulation import broadcast_to

        def _to(a):
            shape = batch[:axis] + (a.shape[axis],) + batch[axis + 1:]
            return a if a.shape == shape else broadcast_to(a, shape)

        x, indices = _to(x), _to(indices)
    return take_along_axis_p.bind(x, indices, axis=axis)


# at the end (they build on the names above): the views getitem makes, and through them the writes
# (see arrayx/api/__init__, "Import cycles")
from arrayx.api._views import _is_view_key, _view  # noqa: E402
from arrayx.api import _indexing_generic  # noqa: E402,F401  (the primitives' GENERIC entries)
