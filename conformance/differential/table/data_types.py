"""Data type functions, and the inspection API (``__array_namespace_info__``)."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.table._core import SIGNATURES, _unary, add


def _astype(draw, fn):
    (x,), _ = _unary(draw, fn)
    return (x, np.dtype(draw(st.sampled_from(S.DTYPES)))), ({"copy": draw(st.booleans())} if draw(st.booleans()) else {})


def _dtypes_pair(draw, fn):
    return (np.dtype(draw(st.sampled_from(S.DTYPES))), np.dtype(draw(st.sampled_from(S.DTYPES)))), {}


def _result_type(draw, fn):
    items = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 2))
        dt = draw(st.sampled_from(S.DTYPES))
        items.append(np.dtype(dt) if kind == 0 else draw(S.python_scalar(dt)) if kind == 1
                     else draw(S.inputs(dt, (2,), "small")))
    return tuple(items), {}


def _one_dtype(category):
    def sig(draw, fn):
        return (np.dtype(draw(st.sampled_from(S.CATEGORIES[category]))),), {}
    return sig


def _isdtype(draw, fn):
    kinds = st.sampled_from(["bool", "signed integer", "unsigned integer", "integral", "real floating",
                             "complex floating", "numeric"])
    kind = draw(st.one_of(kinds, st.sampled_from(S.DTYPES).map(np.dtype), st.tuples(kinds, kinds)))
    return (np.dtype(draw(st.sampled_from(S.DTYPES))), kind), {}


def _no_args(draw, fn):
    return (), {}


SIGNATURES.update(astype=_astype, dtype_pair=_dtypes_pair, result_type=_result_type, finfo=_one_dtype("floating"),
                  iinfo=_one_dtype("integer"), isdtype=_isdtype, none=_no_args)

add("astype", "astype", "any")
add("can_cast", "dtype_pair", tolerance="exact")
add("finfo", "finfo", tolerance="exact")
add("iinfo", "iinfo", tolerance="exact")
add("isdtype", "isdtype", tolerance="exact")
add("result_type", "result_type", tolerance="exact")
add("__array_namespace_info__", "none", tolerance="exact")
