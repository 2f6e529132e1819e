"""Manipulation functions (the standard's "Manipulation Functions" category).

Each function validates and normalises its arguments (axes become sorted or
ordered tuples of non-negative ints, shapes become tuples with ``-1`` resolved
where the size is known), promotes dtypes where several arrays meet (``concat``,
``stack``), then binds the primitive of the same name.  ``broadcast_shapes`` is
pure Python.  Primitives whose standard signature takes a sequence of arrays or
names a parameter differently from the libraries (``concat``, ``stack``,
``tile``) carry a generic impl that calls the buffer's own namespace.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import (
    array_arg, array_args, broadcast_shapes_for, cast, check_size, normalize_axis, normalize_axes, promote_dtypes,
    traced_value_error,
)
from arrayx.core import executor as _exec
from arrayx.core import primitives as _prims
from arrayx.core.primitives import _TRACE, Primitive, _object_new, run_eager
from arrayx.core.executor import GENERIC

_trace_now = _TRACE.get  # the active trace, None when eager (bound once: the fast paths call it)

__all__ = [
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip",
    "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
]


# -- helpers shared by this category (and by searching/statistical/utility) ------------

_NAMESPACE_OF_TYPE: dict = {}


def buffer_namespace(buf):
    """The standard namespace (``executor.xp``) of the executor whose buffers have ``type(buf)``.

    Generic impls (``arrayx.core.executor.GENERIC``) receive bare buffers; this finds the
    namespace to call once per buffer type.
    """
    t = type(buf)
    ns = _NAMESPACE_OF_TYPE.get(t)
    if ns is None:
        for name in _exec.registered():
            ex = _exec.get(name)
            if isinstance(buf, ex.array_type) and ex.available():
                ns = ex.xp
                break
        else:
            import array_api_compat

            ns = array_api_compat.array_namespace(buf)
        _NAMESPACE_OF_TYPE[t] = ns
    return ns


def _int_tuple(fname: str, value, name: str) -> tuple:
    """``value`` (an int or a sequence of ints) as a tuple of Python ints."""
    if value.__class__ is tuple and all(v.__class__ is int for v in value):
        return value  # the common case, checked cheaply
    if isinstance(value, (tuple, list)):
        items = value
    else:
        items = (value,)
    out = []
    for v in items:
        if isinstance(v, bool):
            raise TypeError(f"{fname}: {name} must contain ints, got the bool {v!r}")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise traced_value_error(fname, name, v) or TypeError(
                f"{fname}: {name} must be an int or a tuple of ints, got {type(v).__name__} {v!r}"
            ) from None
    return tuple(out)


def _ordered_axes(fname: str, axes, ndim: int, name: str) -> tuple:
    """Axes normalised to non-negative ints, order kept, duplicates refused."""
    out = tuple(normalize_axis(fname, a, ndim, name) for a in _int_tuple(fname, axes, name))
    if len(set(out)) != len(out):
        raise ValueError(f"{fname}: {name} {axes} contains repeated axes")
    return out


def _arrays_arg(fname: str, arrays) -> list:
    if isinstance(arrays, Array) or not isinstance(arrays, (tuple, list)):
        raise TypeError(
            f"{fname}: arrays must be a tuple or list of arrayx arrays, got {type(arrays).__name__}"
        )
    if not arrays:
        raise ValueError(f"{fname}: needs at least one array")
    # a Python scalar among them is weak (default mode, as JAX): stack([float32_array, 2.0]) is float32
    return array_args(fname, arrays, [f"arrays[{i}]" for i in range(len(arrays))])


def _promote_all(arrays: list, fname: str) -> list:
    dt = promote_dtypes(fname, [a.dtype for a in arrays])  # strict mode: the standard's pairs only
    return [cast(a, dt) for a in arrays]


def _shape_tuple(fname: str, shape, name: str = "shape") -> tuple:
    err = traced_value_error(fname, name, shape)
    if err is not None:
        raise err
    if isinstance(shape, Array):
        raise TypeError(f"{fname}: {name} must be a tuple of ints, got an array; pass tuple(int(d) for d in ...)")
    return _int_tuple(fname, shape, name)


# -- broadcasting ------------------------------------------------------------------

broadcast_arrays_p = Primitive("broadcast_arrays", multiple_results=True)
broadcast_to_p = Primitive("broadcast_to")


def broadcast_shapes(*shapes) -> tuple:
    """The shape that arrays of ``shapes`` broadcast to (ValueError when they do not)."""
    checked = []
    for i, s in enumerate(shapes):
        if not isinstance(s, (tuple, list)):
            raise TypeError(f"broadcast_shapes: shapes[{i}] must be a tuple of ints, got {type(s).__name__}")
        dims = []
        for d in s:
            if d is not None:
                if isinstance(d, bool):
                    raise TypeError(f"broadcast_shapes: shape entries must be ints or None, got {d!r} in {tuple(s)}")
                try:
                    d = operator.index(d)
                except TypeError:
                    raise TypeError(
                        f"broadcast_shapes: shape entries must be ints or None, got {d!r} in {tuple(s)}"
                    ) from None
                if d < 0:
                    raise ValueError(f"broadcast_shapes: negative dimension {d} in shape {tuple(s)}")
            dims.append(d)
        checked.append(tuple(dims))
    return broadcast_shapes_for("broadcast_shapes", *checked)


def broadcast_arrays(*arrays: Array) -> tuple:
    """The arrays broadcast against each other (a tuple, possibly of views)."""
    # each converted on its own (a Python scalar gets its default dtype), as NumPy and JAX do
    arrays = tuple(array_arg("broadcast_arrays", a, f"arrays[{i}]") for i, a in enumerate(arrays))
    if not arrays:
        return ()
    broadcast_shapes_for("broadcast_arrays", *(a.shape for a in arrays))
    return tuple(broadcast_arrays_p.bind(*arrays))


def broadcast_to(x, /, shape) -> Array:
    """x broadcast to ``shape`` (x's dimensions must be 1 or equal to the trailing ones of shape)."""
    x = array_arg("broadcast_to", x)
    shape = _shape_tuple("broadcast_to", shape)
    if shape == x.shape:
        return x
    check_size("broadcast_to", shape, x.dtype)
    xs = x.shape
    ok = len(xs) <= len(shape) and all(d is None or d == 1 or d == t for d, t in zip(xs[::-1], shape[::-1]))
    if not ok or any(d < 0 for d in shape):
        raise ValueError(
            f"broadcast_to: an array of shape {xs} cannot be broadcast to shape {shape}; every "
            f"dimension of x must be 1 or equal to the matching trailing dimension of shape"
        )
    return broadcast_to_p.bind(x, shape=shape)


# -- joining and splitting --------------------------------------------------------------

concat_p = Primitive("concat")
stack_p = Primitive("stack")
unstack_p = Primitive("unstack", multiple_results=True)


def _concat_any(*bufs, axis):
    return buffer_namespace(bufs[0]).concat(bufs, axis=axis)


def _stack_any(*bufs, axis):
    return buffer_namespace(bufs[0]).stack(bufs, axis=axis)


GENERIC[concat_p.name] = _concat_any
GENERIC[stack_p.name] = _stack_any


def concat(arrays, /, *, axis: int | None = 0) -> Array:
    """Join arrays along an existing axis (``axis=None`` flattens them first); dtypes are promoted."""
    if (arrays.__class__ is list or arrays.__class__ is tuple) and arrays and axis.__class__ is int \
            and _TRACE.get() is None and arrays[0].__class__ is Array:
        # eager fast path (4.3 -> ~2 us): arrays of one executor and dtype, shapes that match off the
        # axis, straight to the executor's concat; anything else takes the checks below
        a0 = arrays[0]
        ex, dt, first = a0._ex, a0.dtype, a0.shape
        ndim = len(first)
        if ndim and -ndim <= axis < ndim:
            axis %= ndim
            before, after = first[:axis], first[axis + 1:]
            for a in arrays:
                if a.__class__ is not Array or a._ex is not ex or a.dtype != dt:
                    break
                s = a.shape
                if len(s) != ndim or s[:axis] != before or s[axis + 1:] != after or None in s:
                    break
            else:
                return run_eager(concat_p, ex, [a._buf for a in arrays], {"axis": axis})
    arrays = _promote_all(_arrays_arg("concat", arrays), "concat")
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("concat: zero-dimensional arrays cannot be concatenated along an axis; use stack or axis=None")
    axis = normalize_axis("concat", axis, ndim)
    first = arrays[0].shape
    for i, a in enumerate(arrays[1:], 1):
        s = a.shape
        if len(s) != ndim or any(
            j != axis and d != e and d is not None and e is not None for j, (d, e) in enumerate(zip(s, first))
        ):
            raise ValueError(
                f"concat: arrays[{i}] has shape {s}, arrays[0] has shape {first}; all shapes must "
                f"match except along axis {axis}"
            )
    return concat_p.bind(*arrays, axis=axis)


def stack(arrays, /, *, axis: int = 0) -> Array:
    """Join arrays of one shape along a new axis; dtypes are promoted."""
    arrays = _promote_all(_arrays_arg("stack", arrays), "stack")
    first = arrays[0].shape
    for i, a in enumerate(arrays[1:], 1):
        if a.shape != first:
            raise ValueError(f"stack: all arrays must have the same shape, arrays[0] has {first}, arrays[{i}] has {a.shape}")
    axis = normalize_axis("stack", axis, len(first) + 1)
    return stack_p.bind(*arrays, axis=axis)


def unstack(x, /, *, axis: int = 0) -> tuple:
    """The slices of x along ``axis``, as a tuple of arrays."""
    x = array_arg("unstack", x)
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least one dimension, got a 0-d array")
    axis = normalize_axis("unstack", axis, x.ndim)
    return tuple(unstack_p.bind(x, axis=axis))


# -- shape changes -------------------------------------------------------------------

expand_dims_p = Primitive("expand_dims")
squeeze_p = Primitive("squeeze")
reshape_p = Primitive("reshape")


def expand_dims(x, /, axis) -> Array:
    """x with singleton dimensions inserted at ``axis`` (an int or a tuple of output positions)."""
    x = array_arg("expand_dims", x)
    raw = _int_tuple("expand_dims", axis, "axis")
    out_ndim = x.ndim + len(raw)
    axes = tuple(sorted(normalize_axis("expand_dims", a, out_ndim) for a in raw))
    if len(set(axes)) != len(axes):
        raise ValueError(f"expand_dims: axis {axis} resolves to repeated positions {axes}")
    return expand_dims_p.bind(x, axis=axes)


def squeeze(x, /, axis) -> Array:
    """x without the singleton dimensions ``axis``."""
    x = array_arg("squeeze", x)
    axes = normalize_axes("squeeze", axis, x.ndim)
    shape = x.shape
    for a in axes:
        if shape[a] != 1 and shape[a] is not None:  # None: unknown until computed (Dask)
            raise ValueError(
                f"squeeze: axis {a} has size {shape[a]}, only singleton (size-1) axes can be removed "
                f"(x has shape {shape})"
            )
    return squeeze_p.bind(x, axis=axes)


def reshape(x, /, shape, *, copy: bool | None = None) -> Array:
    """x with a new shape of the same size (one entry may be -1); ``copy`` as in ``asarray``."""
    if x.__class__ is Array and shape.__class__ is tuple and copy is None and _trace_now() is None:
        # eager fast path: a shape of non-negative ints (one may be -1) with the array's size
        buf = x._buf
        size = 1
        free = False  # a -1 entry seen
        for d in shape:
            if d.__class__ is not int:
                break
            if d >= 0:
                size *= d
            elif d != -1 or free:
                break
            else:
                free = True
        else:
            n = buf.size
            if free and size and n and not n % size:  # xp.reshape(m, (-1,)), (-1, 1), ...
                i = shape.index(-1)
                shape = (*shape[:i], n // size, *shape[i + 1:])
                size = n
            # (an empty result takes the checked path: its other dimensions may exceed any buffer)
            ex = x._ex
            if size == n and size and not ex.unknown_shapes:
                if shape == buf.shape:
                    return x
                # run_eager, spelled out with the params as keywords (``fn(*bufs, **params)`` costs ~0.2 us)
                fn = ex.impls.get(reshape_p) or ex.resolve(reshape_p)
                out = fn(buf, shape=shape, copy=None)
                if out.__class__ is not ex.array_type:
                    out = ex.coerce(out)
                if _prims.eager_hook is not None:
                    out = _prims.eager_hook(reshape_p, ex, (buf,), {"shape": shape, "copy": None}, out)
                new = _object_new(Array)
                new._buf = out
                new._ex = ex
                return new
    x = array_arg("reshape", x)
    shape = _shape_tuple("reshape", shape)
    if copy is not None and copy is not True and copy is not False:
        raise TypeError(f"reshape: copy must be True, False or None, got {copy!r}")
    xshape = x.shape
    if shape == xshape and not copy:
        return x
    n_unknown = shape.count(-1)
    if n_unknown > 1:
        raise ValueError(f"reshape: only one dimension can be -1, got shape {shape}")
    check_size("reshape", tuple(d for d in shape if d != -1), x.dtype)
    if min(shape, default=0) < -1:
        raise ValueError(f"reshape: invalid dimension in shape {shape}; dimensions must be >= 0 (or one -1)")
    if None not in xshape:
        size = math.prod(xshape)
        known = math.prod(shape)
        if n_unknown:
            known = -known
            if known == 0 or size % known:
                raise ValueError(
                    f"reshape: cannot reshape an array of shape {xshape} (size {size}) into shape {shape}"
                )
            shape = tuple(size // known if d == -1 else d for d in shape)
        elif known != size:
            raise ValueError(
                f"reshape: cannot reshape an array of shape {xshape} (size {size}) into shape {shape}"
            )
    return reshape_p.bind(x, shape=shape, copy=copy)


# -- reordering --------------------------------------------------------------------------

flip_p = Primitive("flip")
moveaxis_p = Primitive("moveaxis")
permute_dims_p = Primitive("permute_dims")
roll_p = Primitive("roll")


def flip(x, /, *, axis=None) -> Array:
    """x with the order of elements reversed along ``axis`` (all axes when None)."""
    x = array_arg("flip", x)
    if axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = normalize_axes("flip", axis, x.ndim)
    return flip_p.bind(x, axis=axes)


def moveaxis(x, source, destination, /) -> Array:
    """x with axes ``source`` moved to positions ``destination`` (the others keep their order).

    Bad axes raise NumPy's errors with NumPy's wording after the function name (clients' tests
    match it): an out-of-range axis ``numpy.exceptions.AxisError`` (a ValueError and an IndexError),
    "source: axis 3 is out of bounds for array of dimension 2".
    """
    x = array_arg("moveaxis", x)
    src = _moveaxis_axes(source, x.ndim, "source")
    dst = _moveaxis_axes(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: `source` and `destination` arguments must have the same number of elements "
            f"(source {source}, destination {destination})"
        )
    return moveaxis_p.bind(x, source=src, destination=dst)


def _moveaxis_axes(axes, ndim: int, name: str) -> tuple:
    out = []
    for a in _int_tuple("moveaxis", axes, name):
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"moveaxis: {name}: axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"moveaxis: repeated axis in `{name}` argument ({name} {axes})")
    return tuple(out)


def permute_dims(x, /, axes) -> Array:
    """x with its axes reordered: output axis i is input axis ``axes[i]``."""
    x = array_arg("permute_dims", x)
    perm = _ordered_axes("permute_dims", axes, x.ndim, "axes")
    if len(perm) != x.ndim:
        raise ValueError(
            f"permute_dims: axes {axes} must be a permutation of all {x.ndim} axes of x (shape {x.shape})"
        )
    if x._ex.mutable and _TRACE.get() is None:
        return permute_dims_p.bind(x, axes=perm)  # NumPy's own view
    # a view, as NumPy's, on JAX/Dask and under transforms: writes through it reach x (SciPy's
    # overlap-add writes through swapaxes(x)[a:b] and reads x)
    from arrayx.api import _views

    inverse = tuple(int(i) for i in np.argsort(perm))
    return _views.whole_view(x, lambda v: permute_dims_p.bind(v, axes=perm),
                             lambda v: permute_dims_p.bind(v, axes=inverse))


def roll(x, /, shift, *, axis=None) -> Array:
    """x with elements shifted by ``shift`` along ``axis`` (the flattened array when None)."""
    x = array_arg("roll", x)
    if axis is None:
        if isinstance(shift, (tuple, list)):
            raise TypeError("roll: shift must be an int when axis is None; pass axis=(...) for per-axis shifts")
        (shift,) = _int_tuple("roll", shift, "shift")
        return roll_p.bind(x, shift=shift, axis=None)
    axes = tuple(normalize_axis("roll", a, x.ndim) for a in _int_tuple("roll", axis, "axis"))
    shifts = _int_tuple("roll", shift, "shift")
    if isinstance(shift, (tuple, list)):
        if not isinstance(axis, (tuple, list)) or len(shifts) != len(axes):
            raise ValueError(
                f"roll: shift {shift} and axis {axis} must be tuples of the same length"
            )
    else:
        shifts = shifts * len(axes)
    return roll_p.bind(x, shift=shifts, axis=axes)


# -- repetition --------------------------------------------------------------------------

repeat_p = Primitive("repeat")
tile_p = Primitive("tile")


def _tile_any(buf, *, repetitions):
    return buffer_namespace(buf).tile(buf, repetitions)


GENERIC[tile_p.name] = _tile_any


def repeat(x, repeats, /, *, axis: int | None = None) -> Array:
    """Each element of x repeated ``repeats`` times (an int, or a 1-D integer array of counts)."""
    x = array_arg("repeat", x)
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    elif x.ndim == 0:
        raise ValueError("repeat: x is 0-dimensional; pass axis=None")
    axis = normalize_axis("repeat", axis, x.ndim)
    if isinstance(repeats, Array):
        if repeats.dtype.kind not in "iu":
            raise TypeError(f"repeat: repeats must have an integer dtype, got {repeats.dtype}")
        n = x.shape[axis]
        if repeats.ndim != 1 or repeats.shape[0] not in (1, n, None):
            raise ValueError(
                f"repeat: a repeats array must be 1-D of length 1 or {n} (the size of axis {axis}), "
                f"got shape {repeats.shape}"
            )
        from arrayx.api._device_dtypes import for_array

        return repeat_p.bind(x, cast(repeats, for_array(x).index), axis=axis)  # the device's index dtype
    if isinstance(repeats, bool):
        raise TypeError("repeat: repeats must be an int or an integer array, got a bool")
    try:
        repeats = operator.index(repeats)
    except TypeError:
        raise TypeError(f"repeat: repeats must be an int or an integer array, got {type(repeats).__name__}") from None
    if repeats < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
    return repeat_p.bind(x, repeats=repeats, axis=axis)


def tile(x, repetitions, /) -> Array:
    """x repeated ``repetitions[i]`` times along each axis i (shorter side padded with 1s in front)."""
    x = array_arg("tile", x)
    if not isinstance(repetitions, (tuple, list)):
        raise TypeError(f"tile: repetitions must be a tuple of ints, got {type(repetitions).__name__}")
    reps = _int_tuple("tile", repetitions, "repetitions")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got {reps}")
    reps = (1,) * (x.ndim - len(reps)) + reps
    return tile_p.bind(x, repetitions=reps)
