"""Indexing: ``x[key]``, ``x[key] = v``, ``x.at[key].op(v)`` and the standard's
"Indexing Functions" category (``take``, ``take_along_axis``).

A key is encoded as a hashable tuple (the primitive's ``key`` param); index
arrays travel as operands so that transforms see them:

    int -> ("i", k)      slice -> ("s", start, stop, step)     None -> ("n",)
    ... -> ("e",)         bool scalar -> ("b", v)               array -> ("a", operand position)
"""
from __future__ import annotations

import operator

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import array_arg, cast, with_article
from arrayx.transforms.core import Primitive, _TRACE, _wrap

__all__ = ["take", "take_along_axis"]

getitem_p = Primitive("getitem")
at_update_p = Primitive("at_update")

AT_OPS = ("set", "add", "subtract", "multiply", "divide", "power", "min", "max")


def encode_key(fname: str, x: Array, key) -> tuple[tuple, list]:
    """(hashable key, index arrays) for ``x[key]``; validates against x's shape."""
    if not isinstance(key, tuple):
        key = (key,)
    entries = []
    arrays: list = []
    ndim = x.ndim
    consumed = 0
    ellipsis = False
    for k in key:
        if k is None:
            entries.append(("n",))
        elif k is Ellipsis:
            if ellipsis:
                raise IndexError(f"{fname}: an index can only have a single ellipsis ('...')")
            ellipsis = True
            entries.append(("e",))
        elif isinstance(k, slice):
            entries.append(("s", _index_or_none(fname, k.start), _index_or_none(fname, k.stop),
                            _index_or_none(fname, k.step)))
            if k.step == 0:
                raise ValueError(f"{fname}: slice step cannot be zero")
            consumed += 1
        elif isinstance(k, (bool, np.bool_)):
            entries.append(("b", bool(k)))
        elif isinstance(k, Array):
            if k.dtype == _dtypes.bool:
                consumed += k.ndim
            elif k.dtype.kind in "iu":
                consumed += 1
            else:
                raise IndexError(f"{fname}: index arrays must be integer or boolean, got {k.dtype}")
            entries.append(("a", len(arrays)))
            arrays.append(k)
        elif isinstance(k, (list, np.ndarray)):
            from arrayx.api.creation import asarray

            a = asarray(k, device=x.device)
            return encode_key(fname, x, tuple(a if kk is k else kk for kk in key))
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise IndexError(
                    f"{fname}: invalid index {k!r} of type {type(k).__name__}; use ints, slices, "
                    f"None, ..., or integer/boolean arrays"
                ) from None
            axis = consumed if not ellipsis else None
            if axis is not None and axis < ndim:
                n = x.shape[axis]
                if n is not None and not -n <= i < n:
                    raise IndexError(f"{fname}: index {i} is out of bounds for axis {axis} with size {n}")
            entries.append(("i", i))
            consumed += 1
    if consumed > ndim:
        raise IndexError(f"{fname}: too many indices for an array with {ndim} dimension(s) (key {key!r})")
    if ellipsis and consumed < ndim:
        pass
    elif not ellipsis:
        pass
    # integer indices after an ellipsis are bounds-checked by the executor
    return tuple(entries), arrays


def _index_or_none(fname, v):
    if v is None:
        return None
    try:
        return operator.index(v)
    except TypeError:
        raise IndexError(f"{fname}: slice bounds must be ints or None, got {v!r}") from None


def decode_key(key: tuple, arrays) -> tuple:
    """The executor-level key (slices, ints, arrays) for an encoded key."""
    out = []
    for e in key:
        tag = e[0]
        if tag == "i":
            out.append(e[1])
        elif tag == "s":
            out.append(slice(e[1], e[2], e[3]))
        elif tag == "n":
            out.append(None)
        elif tag == "e":
            out.append(Ellipsis)
        elif tag == "b":
            out.append(e[1])
        else:
            out.append(arrays[e[1]])
    return tuple(out)


def _getitem_any(buf, *index_bufs, key):
    return buf[decode_key(key, index_bufs)]


getitem_p.impls["*"] = _getitem_any


def getitem(x: Array, key) -> Array:
    """``x[key]`` (basic and advanced indexing as the standard describes it)."""
    if x.__class__ is Array and _TRACE.get() is None and not x._ex.unknown_shapes:
        # eager fast path for keys of ints and slices (bounds checked here: JAX would clamp)
        entries = key if key.__class__ is tuple else (key,)
        buf = x._buf
        shape = buf.shape
        if len(entries) <= len(shape):
            for i, e in enumerate(entries):
                c = e.__class__
                if c is int:
                    if not -shape[i] <= e < shape[i]:
                        break
                elif c is not slice or e.step == 0:
                    break
            else:
                ex = x._ex
                out = buf[key]
                return _wrap(out if out.__class__ is ex.array_type else ex.coerce(out), ex)
    enc, arrays = encode_key("__getitem__", x, key)
    return getitem_p.bind(x, *arrays, key=enc)


def _value_operand(fname: str, x: Array, value):
    if isinstance(value, Array):
        if value.dtype != x.dtype:
            if _dtypes.PROMOTION[value.dtype, x.dtype] != x.dtype:
                raise TypeError(
                    f"{fname}: cannot store {value.dtype} values into {with_article(x.dtype)} array without "
                    f"losing information; cast with astype first"
                )
            value = cast(value, x.dtype)
        return value
    if isinstance(value, (bool, int, float, complex)):
        from arrayx.api._checks import scalar_operand

        dt = _dtypes.scalar_result_dtype(x.dtype, value)
        if dt != x.dtype:
            raise TypeError(f"{fname}: cannot store the Python {type(value).__name__} {value!r} into {with_article(x.dtype)} array")
        return scalar_operand(fname, value, x.dtype)
    raise TypeError(f"{fname}: values must be an arrayx array or a Python scalar, got {type(value).__name__}")


def setitem(x: Array, key, value) -> None:
    """``x[key] = value``: in place on mutable executors, functional rebinding otherwise."""
    checked = _value_operand("__setitem__", x, value)
    if _TRACE.get() is None and x._ex.mutable and type(x) is Array and (
        not isinstance(checked, Array) or type(checked) is Array
    ):
        enc, arrays = encode_key("__setitem__", x, key)
        k = decode_key(enc, [a._buf for a in arrays])
        buf = x._buf
        if getattr(buf, "flags", None) is None or buf.flags.writeable:
            buf[k] = checked._buf if isinstance(checked, Array) else checked
            return
        # a read-only view (broadcast_to, linalg.diagonal, from_dlpack of an immutable
        # buffer): update functionally instead of failing
    x._become(at_update(x, key, value, "set"))  # the original value: at_update checks it again


def _at_update_numpy_like(buf, value, *index_bufs, key, op):
    k = decode_key(key, index_bufs)
    out = buf.copy()
    if op == "set":
        out[k] = value
        return out
    mod = type(buf).__module__.split(".")[0]
    lib = np if mod == "numpy" else __import__(mod)
    ufunc = {"add": lib.add, "subtract": lib.subtract, "multiply": lib.multiply, "divide": lib.divide,
             "power": lib.power, "min": lib.minimum, "max": lib.maximum}[op]
    if any(not isinstance(i, (int, slice, type(None), type(Ellipsis), bool)) for i in k):
        ufunc.at(out, k, value)  # unbuffered: repeated indices accumulate
    else:
        out[k] = ufunc(out[k], value)
    return out


at_update_p.impls["*"] = _at_update_numpy_like


def at_update(x: Array, key, values, op: str) -> Array:
    """A copy of x with ``x[key] op= values`` applied (repeated indices accumulate)."""
    if op not in AT_OPS:
        raise ValueError(f"at[...]: unknown update {op!r}; choose from {AT_OPS}")
    values = _value_operand(f"at[...].{op}", x, values)
    enc, arrays = encode_key(f"at[...].{op}", x, key)
    return at_update_p.bind(x, values, *arrays, key=enc, op=op)


take_p = Primitive("take")
take_along_axis_p = Primitive("take_along_axis")


def take(x, indices, /, *, axis: int | None = None) -> Array:
    """Elements of x at the 1-D integer ``indices`` along ``axis`` (optional when x is 1-D).

    Negative indices count from the end; out-of-bounds behaviour is the executor's.
    """
    from arrayx.api._checks import normalize_axis

    array_arg("take", x)
    array_arg("take", indices, "indices")
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
    return take_p.bind(x, indices, axis=axis)


def take_along_axis(x, indices, /, *, axis: int = -1) -> Array:
    """Values of x at ``indices`` along ``axis``; elsewhere x and indices broadcast together."""
    from arrayx.api._checks import broadcast_shapes_for, normalize_axis

    array_arg("take_along_axis", x)
    array_arg("take_along_axis", indices, "indices")
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
    if _TRACE.get() is not None:  # the primitive sees operands broadcast outside ``axis``
        from arrayx.api.manipulation import broadcast_to

        def _to(a):
            shape = batch[:axis] + (a.shape[axis],) + batch[axis + 1:]
            return a if a.shape == shape else broadcast_to(a, shape)

        x, indices = _to(x), _to(indices)
    return take_along_axis_p.bind(x, indices, axis=axis)
