"""Indexing functions and the index strategies of ``x[...]`` and ``x[...] = v``."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.table._core import SIGNATURES, _dt, _indices, add


def _take(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    axis = draw(st.integers(-x.values.ndim, x.values.ndim - 1))
    n = x.values.shape[axis]
    m = draw(st.integers(0, 4)) if n else 0
    idx = _indices(draw, n, (m,), draw(st.sampled_from(["int64", "int32", "int16", "uint8"])))
    kw = {"axis": axis} if x.values.ndim > 1 or draw(st.booleans()) else {}
    return (x, idx), kw


def _take_along_axis(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    axis = draw(st.integers(-x.values.ndim, x.values.ndim - 1))
    shape = list(x.values.shape)
    n = shape[axis]
    shape[axis] = draw(st.integers(0, 3)) if n else 0
    return (x, _indices(draw, n, tuple(shape))), {"axis": axis}


def _getitem(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    index = []
    for n in x.values.shape[: draw(st.integers(0, x.values.ndim))]:
        choice = draw(st.integers(0, 3))
        if choice == 2:  # a new axis uses none of x's: the entry for axis n follows it
            index.append(None)
            choice = draw(st.sampled_from([0, 1, 3]))
        if choice == 0 and n:
            index.append(draw(st.integers(-n, n - 1)))
        elif choice == 1:
            index.append(slice(draw(st.one_of(st.none(), st.integers(-4, 4))), draw(st.one_of(st.none(), st.integers(-4, 4))),
                               draw(st.sampled_from([None, 1, 2, -1, -2]))))
        else:
            index.append(slice(None))
    if draw(st.booleans()):
        index.append(Ellipsis)
    return (x, tuple(index)), {}


def _getitem_array(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    if draw(st.booleans()):
        k = draw(st.integers(1, x.values.ndim))
        return (x, draw(S.inputs("bool", x.values.shape[:k]))), {}
    n = x.values.shape[0]
    return (x, _indices(draw, n, draw(S.shapes(0, 2)) if n else (0,))), {}


def _setitem(draw, fn):
    (x, index), _ = _getitem(draw, fn)
    target = np.empty(x.values.shape)[index].shape
    shape = target[draw(st.integers(0, len(target))):]
    dt = x.values.dtype.name
    value = draw(S.python_scalar(dt)) if draw(st.booleans()) else draw(S.inputs(dt, shape, fn.values))
    return (x, index, value), {}


SIGNATURES.update(take=_take, take_along_axis=_take_along_axis, getitem=_getitem, getitem_array=_getitem_array,
                  setitem=_setitem)

add("take", "take", "any", tolerance="exact")
add("take_along_axis", "take_along_axis", "any", tolerance="exact")
