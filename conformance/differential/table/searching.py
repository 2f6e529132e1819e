"""Searching, set and sorting functions."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.strategies import Input
from conformance.differential.table._core import SIGNATURES, _dt, _operand, add


def _where(draw, fn):
    s1, s2 = draw(S.broadcast_pair())
    cond = draw(S.inputs("bool", s1))
    dt = _dt(draw, fn)
    a = draw(S.inputs(dt, s2, fn.values))
    b = _operand(draw, fn, dt if draw(st.booleans()) else _dt(draw, fn), draw(st.sampled_from([s1, s2, ()])), fn.values)
    return (cond, a, b), {}


def _searchsorted(draw, fn):
    dt = _dt(draw, fn)
    x1 = draw(S.arrays(dt, (draw(st.integers(0, 5)),), fn.values))
    with np.errstate(invalid="ignore"):
        x1 = np.sort(x1)
    x2 = draw(S.inputs(dt if draw(st.integers(0, 3)) else _dt(draw, fn), draw(S.shapes(0, 2)), fn.values))
    return (Input(x1), x2), {}


def _isin(draw, fn):
    dt = _dt(draw, fn)
    x1 = draw(S.inputs(dt, draw(S.shapes()), fn.values))
    x2 = _operand(draw, fn, dt if draw(st.booleans()) else _dt(draw, fn), draw(S.shapes(0, 2)), fn.values)
    return (x1, x2), {}


SIGNATURES.update(where=_where, searchsorted=_searchsorted, isin=_isin)

# every entry is compared exactly (unique: up to the sign of its zero): results are positions, counts, and elements picked or sorted
for _name in ("argmax", "argmin"):
    add(_name, "unary", "real numeric", kw=("axis", "keepdims"), tolerance="exact")
add("count_nonzero", "unary", "any", kw=("axes", "keepdims"), tolerance="exact")
add("nonzero", "unary1", "any", tolerance="exact")
add("searchsorted", "searchsorted", "real numeric", "moderate", kw=("side",), tolerance="exact")
add("where", "where", "any", tolerance="exact")
add("isin", "isin", "real numeric", kw=("invert",), tolerance="exact")
# unique: +0 and -0 are one element, and the standard leaves to the implementation which one stands for it
for _name in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
    add(_name, "unary", "real numeric", tolerance="unique")
# argsort stays stable (the default): the order of ties is unspecified otherwise
add("argsort", "unary", "real numeric", kw=("axis_int", "descending"), tolerance="exact")
add("sort", "unary", "real numeric", kw=("axis_int", "descending", "stable"), tolerance="exact")
