"""Parsing an index key (``x[key]``, ``x[key] = v``, ``x.at[key]``) for ``arrayx/api/indexing.py``.

``parse_key`` reads a key once into a :class:`_Key`: its static basic part (ints, slices
with static bounds, None, Ellipsis expanded), integer index arrays with the axes they index,
boolean masks, and slices whose start is only known symbolically (dynamic slices); the
shape helpers give the result shapes of NumPy's basic and advanced indexing.
"""
from __future__ import annotations

import operator

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.core.primitives import ConcretizationError

def _consecutive(axes) -> bool:
    return axes[-1] - axes[0] == len(axes) - 1


def gather_shape(x_shape: tuple, index_shape: tuple, axes: tuple) -> tuple:
    """``gather``'s result shape: NumPy's rule for index arrays at ``axes`` (sorted)."""
    rest = [d for a, d in enumerate(x_shape) if a not in axes]
    if _consecutive(axes):
        return tuple(rest[:axes[0]]) + tuple(index_shape) + tuple(rest[axes[0]:])
    return tuple(index_shape) + tuple(rest)


def basic_shape(x_shape: tuple, key: tuple) -> tuple:
    """``slice``'s result shape for a static basic key (ints, None, (start, stop, step))."""
    out = []
    axis = 0
    for e in key:
        if e is None:
            out.append(1)
            continue
        n = x_shape[axis]
        axis += 1
        if e.__class__ is tuple:
            out.append(None if n is None else len(range(*slice(*e).indices(n))))
    return tuple(out) + tuple(x_shape[axis:])


# -- parsing a key ----------------------------------------------------------------------------------


def _concrete(a):
    """The concrete Array behind ``a`` (an Array or a tracer with a known value), else None."""
    if a.__class__ is Array:
        return a
    try:
        return a._concrete("indexing")
    except ConcretizationError:
        return None


class _Key:
    """A key for ``x`` resolved against x's shape.

    ``static`` is the basic key applied first (ints and (start, stop, step); full slices
    where an index array, a mask or a dynamic slice acts).  The other parts act on its
    result ``y``:

    - ``arrays``: [(axis of y, integer index Array)], axes increasing (``x_axes``: x's axes);
    - ``mask``: (axis of y, boolean Array) or None;
    - ``dynamic``: [(axis of y, start, size)] for slices with symbolic starts;
    - ``new_axes``: dimensions that None / True / False entries add, and ``false_axes``
      those of them that are empty (False);
    - ``index_at``: where NumPy puts the index arrays' dimensions.

    Positions in ``new_axes``, ``false_axes`` and ``index_at`` count the dimensions of
    ``x[key]`` without the index arrays' dimensions.
    """

    __slots__ = ("static", "arrays", "x_axes", "mask", "dynamic", "new_axes", "false_axes", "index_at",
                 "_needs_static")

    def needs_static(self) -> bool:
        """Whether ``static`` does anything (else y is x)."""
        if self._needs_static is None:
            self._needs_static = any(e != (None, None, None) for e in self.static)
        return self._needs_static

    def layout(self, rest: int, m: int) -> tuple:
        """(permutation from gather's layout to NumPy's, where the new axes go in it), for
        ``rest`` other dimensions and ``m`` index dimensions."""
        ys = [a for a, _ in self.arrays]
        natural = (ys[0] if _consecutive(ys) else 0) if ys else 0
        at = self.index_at if ys else 0
        before = at - sum(1 for d in self.new_axes if d < at)  # other dims ahead of the index dims

        def gather_pos(j):
            return j if j < natural else j + m

        perm = [gather_pos(j) for j in range(before)] + list(range(natural, natural + m)) + \
            [gather_pos(j) for j in range(before, rest)]
        new = tuple(d if d < at else d + m for d in self.new_axes)
        return tuple(perm), new


def _entry_kind(fname, k):
    if k is None:
        return "none"
    if k is Ellipsis:
        return "ellipsis"
    if isinstance(k, slice):
        return "slice"
    if isinstance(k, (bool, np.bool_)):
        return "bool"
    if isinstance(k, Array):
        if k.dtype == _dtypes.bool:
            return "mask"
        if k.dtype.kind in "iu":
            return "array"
        raise IndexError(f"{fname}: index arrays must be integer or boolean, got {k.dtype}")
    return "int"


def _as_index_int(fname, k):
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError(
            f"{fname}: invalid index {k!r} of type {type(k).__name__}; use ints, slices, "
            f"None, ..., or integer/boolean arrays"
        ) from None


def _slice_bound(fname, v):
    """A slice bound as an int, None, or a symbolic 0-d integer array."""
    if v is None:
        return None
    if isinstance(v, Array):
        c = _concrete(v)
        if c is None:
            if v.ndim != 0 or v.dtype.kind not in "iu":
                raise IndexError(f"{fname}: slice bounds must be ints, got an array of shape {v.shape} and dtype {v.dtype}")
            return v
        v = c
    try:
        return operator.index(v)
    except TypeError:
        raise IndexError(f"{fname}: slice bounds must be ints or None, got {v!r}") from None


def parse_key(fname: str, x: Array, key) -> _Key:
    """Resolve ``key`` against x's shape (validating it), see :class:`_Key`."""
    if isinstance(key, Array) and key.dtype.kind in "iu" and x.ndim:  # x[idx], x.at[idx]: the common case
        k = _Key()
        k.static = ((None, None, None),)
        k.arrays = [(0, key)]
        k.x_axes = (0,)
        k.mask = None
        k.dynamic = k.new_axes = k.false_axes = ()
        k.index_at = 0
        k._needs_static = False
        return k
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, (list, np.ndarray)) for k in key):
        from arrayx.api.creation import asarray

        key = tuple(asarray(k, device=x.device) if isinstance(k, (list, np.ndarray)) else k for k in key)
    kinds = [_entry_kind(fname, k) for k in key]
    if kinds.count("ellipsis") > 1:
        raise IndexError(f"{fname}: an index can only have a single ellipsis ('...')")
    consumed = sum(key[i].ndim if t == "mask" else t in ("int", "slice", "array") for i, t in enumerate(kinds))
    ndim = x.ndim
    if consumed > ndim:
        raise IndexError(f"{fname}: too many indices for an array with {ndim} dimension(s) (key {key!r})")
    if "ellipsis" in kinds:
        at = kinds.index("ellipsis")
        fill = ndim - consumed
        key = key[:at] + (slice(None),) * fill + key[at + 1:]
        kinds = kinds[:at] + ["slice"] * fill + kinds[at + 1:]

    # an eager boolean index mixed with integer arrays is its nonzero() (NumPy's rule)
    if "mask" in kinds and ("array" in kinds or kinds.count("mask") > 1):
        key, kinds = _masks_as_arrays(fname, key, kinds)

    shape = x.shape
    k = _Key()
    k._needs_static = None
    static, arrays, dynamic, new_axes, false_axes, x_axes = [], [], [], [], [], []
    k.mask = None
    axis = 0  # axis of x
    ydim = 0  # dimension of y (the result of the static part, without None entries)
    out_dim = 0  # dimension of x[key]
    advanced_pos, first_lead = [], None
    has_arrays = "array" in kinds
    for pos, (e, t) in enumerate(zip(key, kinds)):
        if t == "none" or t == "bool":
            if t == "bool" and not e:
                false_axes.append(out_dim)
            new_axes.append(out_dim)
            out_dim += 1
            continue
        if t == "int":
            i = _as_index_int(fname, e)
            n = shape[axis]
            if n is not None and not -n <= i < n:
                raise IndexError(f"{fname}: index {i} is out of bounds for axis {axis} with size {n}")
            static.append(i)
            if has_arrays:
                advanced_pos.append(pos)
                if first_lead is None:
                    first_lead = out_dim
            axis += 1
        elif t == "slice":
            start, stop, step = (_slice_bound(fname, v) for v in (e.start, e.stop, e.step))
            if step == 0:
                raise ValueError(f"{fname}: slice step cannot be zero")
            if isinstance(start, Array) or isinstance(stop, Array) or isinstance(step, Array):
                dynamic.append((ydim, *_dynamic_bounds(fname, start, stop, step, shape[axis])))
                static.append((None, None, None))
            else:
                static.append((start, stop, step))
            axis += 1
            ydim += 1
            out_dim += 1
        elif t == "array":
            arrays.append((ydim, e))
            x_axes.append(axis)
            advanced_pos.append(pos)
            if first_lead is None:
                first_lead = out_dim
            static.append((None, None, None))
            axis += 1
            ydim += 1
        else:  # mask
            if k.mask is not None:
                raise IndexError(f"{fname}: only one boolean index array is supported (got several)")
            covered = shape[axis:axis + e.ndim]
            if any(m is not None and n is not None and m not in (n, 0) for m, n in zip(e.shape, covered)):
                raise IndexError(
                    f"{fname}: boolean index of shape {e.shape} does not match the indexed axes "
                    f"{tuple(covered)} (axis {axis} on)"
                )
            k.mask = (ydim, e)
            static.extend([(None, None, None)] * e.ndim)
            axis += e.ndim
            ydim += e.ndim
            out_dim += 1
    k.static = tuple(static)
    k.arrays = arrays
    k.x_axes = tuple(x_axes)
    k.dynamic = dynamic
    k.new_axes = tuple(new_axes)
    k.false_axes = tuple(false_axes)
    # NumPy puts the index arrays' dimensions where the first advanced entry is when the advanced
    # entries (index arrays, and ints among them) are adjacent in the key, else in front
    adjacent = bool(advanced_pos) and advanced_pos[-1] - advanced_pos[0] == len(advanced_pos) - 1
    k.index_at = first_lead if adjacent else 0
    return k


def _masks_as_arrays(fname, key, kinds):
    from arrayx.api.searching import nonzero

    new_key, new_kinds = [], []
    for e, t in zip(key, kinds):
        if t == "mask":
            if _concrete(e) is None:
                raise IndexError(
                    f"{fname}: a traced boolean index mixed with other index arrays has a data-dependent "
                    f"size; index with arrayx.nonzero(mask, size=...) results or use arrayx.where"
                )
            parts = nonzero(_concrete(e)) if e.ndim else ()
            if e.ndim == 0:
                raise IndexError(f"{fname}: a 0-d boolean index mixed with index arrays is not supported")
            new_key.extend(parts)
            new_kinds.extend(["array"] * len(parts))
        else:
            new_key.append(e)
            new_kinds.append(t)
    return tuple(new_key), new_kinds


def _dynamic_bounds(fname, start, stop, step, n):
    """(start, size) of a slice with a symbolic bound: ``x[i:i + size]`` with a static size."""
    if step not in (None, 1):
        raise IndexError(f"{fname}: a slice with a traced bound must have step 1, got {step!r}")
    if n is None:
        raise IndexError(f"{fname}: a slice with a traced bound needs an axis of known size")
    if start is None:
        start = 0
    if isinstance(stop, int) and not isinstance(start, Array):
        raise IndexError(f"{fname}: slice bounds must be ints or None, got {stop!r}")
    size = None
    if isinstance(stop, Array):
        size = _static_offset(start, stop)
        if size is None:
            size = _shared_offset(start, stop)
    if size is None or not 0 <= size <= n:
        raise IndexError(
            f"{fname}: a slice with a traced start needs a stop of start + a static size "
            f"(x[i:i + 2]); a traced size gives a data-dependent shape. Write the window as "
            f"arrayx's dynamic_slice(x, start, size): x[i:i + size] with a Python int size"
        )
    return start, size


def _same_trace(a, b) -> bool:
    trace = getattr(getattr(a, "_buf", None), "trace", None)
    return trace is not None and trace is getattr(getattr(b, "_buf", None), "trace", None) and hasattr(a, "_inner")


def _shared_offset(start, stop):
    """``stop - start`` when every vmap member has the same one (eager vmap: values are known), else None."""
    from arrayx.core.primitives import ConcretizationError

    d = stop - start
    if not hasattr(d, "_shared_host_value"):
        return None
    try:
        return operator.index(d._shared_host_value("__getitem__").item())
    except (ConcretizationError, TypeError):
        return None


def _static_offset(start, stop):
    """``k`` when the symbolic ``stop`` was computed as ``start + k`` (k a Python int), else None.

    Reads the equation that produced ``stop`` in the staging trace that owns it, one level
    below any vmap/jvp trace that holds both bounds (jit of vmap).
    """
    while _same_trace(start, stop) and stop._inner() is not None and start._inner() is not None:
        start, stop = start._inner(), stop._inner()
    state = getattr(stop, "_buf", None)
    var = getattr(state, "var", None)
    trace = getattr(state, "trace", None)
    if var is None or not hasattr(trace, "equations"):
        return None
    start_var = getattr(getattr(start, "_buf", None), "var", None)
    for eqn in reversed(trace.equations):
        if var in getattr(eqn, "outputs", ()):
            break
    else:
        return None
    if eqn.prim.name not in ("add", "subtract") or len(eqn.inputs) != 2:
        return None
    a, b = eqn.inputs
    if isinstance(start, int) and eqn.prim.name == "add":  # stop = k + i with a static start
        return None
    if a is not start_var:
        if eqn.prim.name == "add" and b is start_var:
            a, b = b, a
        else:
            return None
    value = getattr(b, "value", None)  # a Literal
    if value is None:
        return None
    try:
        k = operator.index(value.item() if hasattr(value, "item") else value)
    except TypeError:
        return None
    return k if eqn.prim.name == "add" else -k
