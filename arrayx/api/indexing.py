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

Views (NumPy's semantics on every executor, see "views" below): ``x[basic key]`` of an
array whose buffer cannot be written in place (JAX, Dask, a tracer) remembers ``x`` and
the key, so a write through it reaches ``x`` and every other live view of ``x``; writes
to one array (and its views) are serialised by a lock, so writes from several threads
all land.
"""
from __future__ import annotations

import math

import operator
import threading
import weakref

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._modes import is_strict
from arrayx.api._checks import (
    _SCALAR_OF_KIND, array_arg, broadcast_shapes_for, cast, normalize_axis, scalar_operand, with_article,
)
from arrayx.core.primitives import Primitive, _TRACE, _object_new, _wrap
from arrayx.core.tracers import Tracer
from arrayx.core.tracers import is_weak
from arrayx.api._index_keys import _Key, _concrete, _consecutive, basic_shape, gather_shape, parse_key

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
# the implementations of ``arrayx.executors.common.indexing``):
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
    if dtype.kind in "fc":
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


def getitem(x: Array, key, mode: str | None = None, fill_value=None, view: bool = True) -> Array:
    """``x[key]`` (basic and advanced indexing as the standard describes it).

    With ``view`` (``x[key]``, not ``x.at[key].get()``) and a basic key, the result of an array
    that is not written in place is linked to ``x`` as a view (see "views" below)."""
    if x.__class__ is Array and mode is None and _TRACE.get() is None and not x._ex.unknown_shapes:
        # eager fast path: ints and slices (bounds checked here: JAX would clamp) straight to the
        # executor's own indexing, which has NumPy's rules; integer arrays through _eager_native_key
        buf = x._buf
        if key.__class__ is slice and key.step != 0 and buf.ndim:  # the commonest key: one slice
            ex = x._ex
            if not ex.mutable and view:
                return _view(x, key)
            out = buf[key]
            new = _object_new(Array)  # _wrap, spelled out on the commonest path
            new._buf = out if out.__class__ is ex.array_type else ex.coerce(out)
            new._ex = ex
            return new
        entries = key if key.__class__ is tuple else (key,)
        shape = buf.shape
        if len(entries) <= len(shape):
            for i, e in enumerate(entries):
                c = e.__class__
                if c is int:
                    if not -shape[i] <= e < shape[i]:
                        break
                elif c is not slice or e.step == 0:
                    native = _eager_native_key("__getitem__", x, key)
                    if native is not None:
                        return _native_getitem(x, native)
                    break
            else:
                ex = x._ex
                if not ex.mutable and view and _is_view_key(key, len(shape)):
                    return _view(x, key)
                out = buf[key]
                return _wrap(out if out.__class__ is ex.array_type else ex.coerce(out), ex)
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
    return _apply_key(fname, x, k, mode, fill_value)


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
            out.append(i)
        else:
            out.append(e)
        axis += len(shape) - sum(takes) if e is Ellipsis else t
    if not out_of_range:
        return key
    from arrayx.api.creation import asarray

    return tuple(asarray(e, dtype=_dtypes.int64, device=x.device) if k else e for e, k in zip(out, kinds))


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
        elif c is Array and e._ex is x._ex:
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


# -- views ------------------------------------------------------------------------------------
#
# On NumPy (and Numba, CuPy) ``x[basic key]`` shares x's memory, so a write through either is seen
# by both.  JAX and Dask buffers cannot be written, and under a transform every write is
# functionalised: ``x[k] = v`` computes a new value and rebinds x's wrapper (``Array._become``).  To
# keep NumPy's semantics there, ``x[key]`` with a basic key (ints, slices, Ellipsis, None: what makes
# a NumPy view) of such an array links its result to x: the view's ``_view_of`` is ``(x, key)`` (a
# strong reference: as in NumPy a view keeps its base alive) and x's ``_views`` holds a weak
# reference to it.  A write through an array with either link (``functional_write``: setitem and the
# in-place operators) carries the new value up to the root (``base[key] = view``, functionally), then
# re-slices every live view of the root from its new base, so later reads of the base and of every
# view see the write.  Under a transform the rebound arrays are put back when it ends, as for any
# in-place code there (``Trace.remember``).  Cost: one list append and a weak reference per basic
# getitem on such arrays, a slice per live view on each write; arrays written in place pay nothing
# but one attribute read on getitem.
#
# The read-modify-write of a functional update holds a lock, as does the making of a view, so writes
# from several threads all land and a view is never sliced from a value that a concurrent write is
# replacing.  One reentrant lock for all arrays: a write runs arrayx code that may make views of other
# arrays (temporaries of matmul, ...), so per-array (or striped) locks could be taken in opposite
# orders by two threads and deadlock.  It serialises only these functional updates, whose work is
# Python dispatch under the GIL anyway (JAX computes asynchronously, Dask lazily).
#
# One case stays apart: a view made eagerly on NumPy, Numba or CuPy (a memory view, not linked) and
# written inside a transform: the write is functionalised there, so the base does not see it inside
# the transform (after it, both are as they were, as for any in-place code under a transform).
#
# Views of all of the base through a function and its inverse link the same way (``whole_view``):
# ``x.T`` and ``x.mT``, always views in NumPy.  The manipulation functions (reshape, permute_dims,
# expand_dims, squeeze, ...) return new arrays on these executors: the standard leaves view-or-copy
# unspecified, and NumPy's own choice for reshape depends on memory layout, which JAX and Dask
# arrays do not have.

_LOCK = threading.RLock()


def _is_view_key(key, ndim: int) -> bool:
    """Whether NumPy's ``x[key]`` (x with ``ndim`` dimensions) is a view: ints (not 0-d arrays),
    slices, Ellipsis and None only, and not an int for every axis (NumPy's scalar, a copy)."""
    entries = key if key.__class__ is tuple else (key,)
    ints = 0
    for e in entries:
        c = e.__class__
        if c is slice or e is None or e is Ellipsis:
            continue
        if c is int or _int_entry(e):
            ints += 1
        else:
            return False
    return ints != ndim or ints != len(entries)


def _view(x: Array, key) -> Array:
    """``x[key]`` for a basic key, linked to x as its view."""
    with _LOCK:
        y = getitem(x, key, view=False)
        if y is x:  # x[:] and x[...] may give x itself: a view is another array
            y = _object_new(x.__class__)
            y._buf = x._buf
            y._ex = x._ex
        _link(x, y, key)
    return y


def _link(x: Array, y: Array, key) -> None:
    """Record ``y`` as the view ``x[key]`` (key: a basic key or a :class:`_Whole`)."""
    y._view_of = (x, key)
    views = getattr(x, "_views", None)
    if views is None:
        x._views = [weakref.ref(y)]
    else:
        views.append(weakref.ref(y))
        n = len(views)
        if n >= 16 and not n & (n - 1):  # at each power of two: drop the dead (amortised O(1))
            x._views = [r for r in views if r() is not None]


class _Whole:
    """The link of a view of all of its base through a function (``.T``: a transpose): ``forward``
    makes the view's value from the base's, ``backward`` the base's from the view's."""

    __slots__ = ("forward", "backward")

    def __init__(self, forward, backward):
        self.forward = forward
        self.backward = backward


def whole_view(x: Array, forward, backward) -> Array:
    """``forward(x)``, linked to x as a view when x is not written in place (as getitem's views
    are): a function that NumPy answers with a view of all of x (a transpose) calls this."""
    if x.__class__ is Array and x._ex.mutable and _TRACE.get() is None:
        return forward(x)  # the executor's own view
    with _LOCK:
        y = forward(x)
        if y is x:
            y = _object_new(x.__class__)
            y._buf = x._buf
            y._ex = x._ex
        _link(x, y, _Whole(forward, backward))
    return y


def functional_write(x: Array, compute, key=None) -> None:
    """Rebind ``x`` to ``compute()`` (a new value computed from x, differing from it at most in
    ``x[key]``; None: anywhere), atomically for x's root; x's bases and live views then see the new
    value (see "views")."""
    with _LOCK:
        x._become(compute())
        if getattr(x, "_view_of", None) is not None or getattr(x, "_views", None):
            _propagate(x, key)


def _propagate(x: Array, key) -> None:
    written = {id(x): key}  # the arrays that hold their new value -> the key of the region written in each
    node = x
    link = getattr(node, "_view_of", None)
    while link is not None:
        base, key = link
        base._become(key.backward(node) if key.__class__ is _Whole else
                     _at_update("__setitem__", base, key, node, "set"))
        written[id(base)] = key
        node = base
        link = getattr(node, "_view_of", None)
    _refresh(node, written, written[id(node)])


def _refresh(node: Array, written: dict, region) -> None:
    """Re-slice the live views below ``node`` from their bases: those that may overlap ``region``
    (the key written in node; None: all of it).  Those in ``written`` hold their new value."""
    views = getattr(node, "_views", None)
    if not views:
        return
    live = []
    for ref in list(views):
        w = ref()
        if w is None or (isinstance(w, Tracer) and not w._buf.trace.alive):  # gone, or escaped its transform
            continue
        live.append(ref)
        if id(w) in written:
            _refresh(w, written, written[id(w)])
        elif region is None or not _disjoint(region, w._view_of[1], node.shape):
            key = w._view_of[1]
            w._become(key.forward(node) if key.__class__ is _Whole else getitem(node, key, view=False))
            _refresh(w, written, None)
    node._views = live


def _disjoint(k1, k2, shape) -> bool:
    """Whether two keys certainly address different elements: both start with a different integer
    (rows of a matrix, iterating over an array); False when unsure."""
    if k1.__class__ is _Whole or k2.__class__ is _Whole:
        return False
    e1 = k1[0] if k1.__class__ is tuple and k1 else k1
    e2 = k2[0] if k2.__class__ is tuple and k2 else k2
    if not (_int_entry(e1) and _int_entry(e2)) or not shape or shape[0] is None:
        return False
    n = shape[0]
    i, j = operator.index(e1), operator.index(e2)
    return (i + n if i < 0 else i) != (j + n if j < 0 else j)


# -- updates ------------------------------------------------------------------------------------



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
    # the original value: checked again; atomic, and seen by x's bases and views (see "views")
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

    counts = _update(fname, zeros(x.shape, dtype=_dtypes.int64, device=x.device), k, 1, "add", mode, False)

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
                      (zeros((), dtype=_dtypes.int64, device=x.device), x))[1]


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


def _index_ndim(k: _Key) -> int:
    return len(broadcast_shapes_for("indexing", *(i.shape for _, i in k.arrays))) if k.arrays else 0


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
