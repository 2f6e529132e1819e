"""Creation functions."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.strategies import Input
from conformance.differential.table._core import SIGNATURES, _dt, _unary, add


def _like(draw, fn):
    (x,), _ = _unary(draw, fn)
    kw = {"dtype": np.dtype(draw(st.sampled_from(S.DTYPES)))} if draw(st.booleans()) else {}
    if fn.name == "full_like":
        kw["fill_value"] = draw(S.python_scalar(kw.get("dtype", x.values.dtype).name))
    return (x,), kw


def _creation(draw, fn):
    shape = draw(S.shapes())
    dt = draw(st.one_of(st.none(), st.sampled_from(S.DTYPES).map(np.dtype)))
    kw = {} if dt is None else {"dtype": dt}
    if fn.name == "full":
        return (shape, draw(S.python_scalar((dt or np.dtype("float64")).name))), kw
    return (shape,), kw


def _arange(draw, fn):
    kind = draw(st.sampled_from(["int", "float"]))
    num = st.integers(-6, 6) if kind == "int" else st.sampled_from([-2.5, -1.0, 0.0, 0.5, 1.25, 3.0])
    step = draw(st.sampled_from([1, 2, -1, 3] if kind == "int" else [0.5, 1.0, -0.75, 0.25]))
    args = (draw(num), draw(num), step)[: draw(st.integers(1, 3))]
    kw = {"dtype": np.dtype(draw(st.sampled_from(["int32", "int64", "float32", "float64"])))} if draw(st.booleans()) else {}
    return args, kw


def _linspace(draw, fn):
    num = st.sampled_from([-2.0, -1, 0, 0.5, 1, 3.0, 1 + 2j])
    kw = {"endpoint": draw(st.booleans())}
    if draw(st.booleans()):
        kw["dtype"] = np.dtype(draw(st.sampled_from(["float32", "float64", "complex128"])))
    return (draw(num), draw(num), draw(st.integers(0, 6))), kw


def _eye(draw, fn):
    args = (draw(st.integers(0, 4)),)
    kw = {}
    if draw(st.booleans()):
        kw["n_cols"] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        kw["k"] = draw(st.integers(-3, 3))
    if draw(st.booleans()):
        kw["dtype"] = np.dtype(draw(st.sampled_from(S.DTYPES)))
    return args, kw


def _tri(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(2, 3)), fn.values))
    return (x,), ({"k": draw(st.integers(-3, 3))} if draw(st.booleans()) else {})


def _asarray(draw, fn):
    x = draw(S.arrays(_dt(draw, fn), draw(S.shapes()), fn.values))
    obj = draw(st.sampled_from(["list", "array", "scalar"])) if x.ndim == 0 else draw(st.sampled_from(["list", "array"]))
    value = x.tolist() if obj == "list" else (x.item() if obj == "scalar" else Input(x))
    kw = {"dtype": np.dtype(draw(st.sampled_from(S.DTYPES)))} if draw(st.integers(0, 2)) == 0 else {}
    return (value,), kw


def _meshgrid(draw, fn):
    dt = _dt(draw, fn)
    return tuple(draw(S.inputs(dt, (draw(st.integers(0, 3)),), fn.values)) for _ in range(draw(st.integers(0, 3)))), {}


SIGNATURES.update(like=_like, creation=_creation, arange=_arange, linspace=_linspace, eye=_eye, tri=_tri,
                  asarray=_asarray, meshgrid=_meshgrid)

add("arange", "arange", tolerance="exact")
add("asarray", "asarray", "any", tolerance="exact")
add("empty", "creation", tolerance="meta")
add("empty_like", "like", "any", tolerance="meta")
add("eye", "eye", tolerance="exact")
add("from_dlpack", "unary", "any", tolerance="exact")
add("full", "creation", tolerance="exact")
add("full_like", "like", "any", tolerance="exact")
add("linspace", "linspace")
add("meshgrid", "meshgrid", "any", kw=("indexing",), tolerance="exact")
add("ones", "creation", tolerance="exact")
add("ones_like", "like", "any", tolerance="exact")
add("tril", "tri", "any", tolerance="exact")
add("triu", "tri", "any", tolerance="exact")
add("zeros", "creation", tolerance="exact")
add("zeros_like", "like", "any", tolerance="exact")
