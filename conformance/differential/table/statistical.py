"""Statistical and utility functions."""
from __future__ import annotations

from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.table._core import SIGNATURES, _dt, add


def _diff(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    nd = x.values.ndim
    kw = {}
    if draw(st.booleans()):
        kw["axis"] = draw(st.integers(-nd, nd - 1))
    if draw(st.booleans()):
        kw["n"] = draw(st.integers(0, 3))
    for key in ("prepend", "append"):
        if draw(st.integers(0, 3)) == 0:
            shape = list(x.values.shape)
            shape[kw.get("axis", -1)] = draw(st.integers(0, 2))
            kw[key] = draw(S.inputs(x.values.dtype.name, tuple(shape), fn.values))
    return (x,), kw


SIGNATURES.update(diff=_diff)

# statistics and utility
add("cumulative_sum", "unary", "numeric", "moderate", kw=("axis_cumulative", "sum_dtype", "include_initial"),
    tolerance="reduction")
add("cumulative_prod", "unary", "numeric", "moderate", kw=("axis_cumulative", "sum_dtype", "include_initial"),
    tolerance="reduction")
add("max", "unary", "real numeric", kw=("axes", "keepdims"), tolerance="exact")
add("min", "unary", "real numeric", kw=("axes", "keepdims"), tolerance="exact")
add("mean", "unary", "floating", "moderate", kw=("axes", "keepdims"), tolerance="reduction")
add("prod", "unary", "numeric", "moderate", kw=("axes", "keepdims", "sum_dtype"), tolerance="reduction")
add("std", "unary", "real floating", "moderate", kw=("axes", "keepdims", "correction"), tolerance="reduction")
add("sum", "unary", "numeric", "moderate", kw=("axes", "keepdims", "sum_dtype"), tolerance="reduction")
add("var", "unary", "real floating", "moderate", kw=("axes", "keepdims", "correction"), tolerance="reduction")
add("all", "unary", "any", kw=("axes", "keepdims"), tolerance="exact")
add("any", "unary", "any", kw=("axes", "keepdims"), tolerance="exact")
add("diff", "diff", "numeric", "moderate")
