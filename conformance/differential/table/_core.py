"""What every category module of the table builds on: ``Fn``, the keyword DOMAINS, the shared
argument strategies, and the registries (SIGNATURES, VIEWS, TABLE) the category modules fill.

``add(name, signature, dtypes, values, kw, tolerance, view, **params)`` appends one entry;
a category module registers its own signatures with ``SIGNATURES.update(...)`` next to them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.strategies import Input


@dataclass(frozen=True)
class Fn:
    name: str                   # "sin", "linalg.inv", "fft.rfft", "array.__add__", "array.__iadd__"
    signature: str = "unary"    # SIGNATURES key: how the positional arguments are drawn
    dtypes: str = "numeric"     # dtype category of the array inputs
    values: str = "mixed"       # value kind of the array inputs
    kw: tuple = ()              # DOMAINS keys, each drawing some keyword arguments
    tolerance: str = "elementwise"
    view: str | None = None     # VIEWS key
    params: dict = field(default_factory=dict, hash=False, compare=False)  # signature-specific


# -- keyword domains: (draw, x) -> keyword arguments ---------------------------------------------------

OMIT = {}


def _axis(draw, x, allow_none=True):
    nd = x.values.ndim if isinstance(x, Input) else 0
    if nd == 0:
        return None
    choices = st.integers(-nd, nd - 1)
    return draw(st.one_of(st.none(), choices)) if allow_none else draw(choices)


def _axes(draw, x):
    nd = x.values.ndim
    if draw(st.booleans()):
        return None
    picked = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd)) if nd else []
    neg = draw(st.booleans())
    axes = tuple(a - nd if neg else a for a in picked)
    return axes[0] if len(axes) == 1 and draw(st.booleans()) else axes


#: dtype= choices for sums and products by input kind: floats are not cast to integers there
#: (an out-of-range float -> int cast is unspecified; astype's own entry covers casts)
_ACCUMULATORS = {
    "b": S.CATEGORIES["numeric"], "i": S.CATEGORIES["numeric"], "u": S.CATEGORIES["numeric"],
    "f": S.CATEGORIES["floating"], "c": S.CATEGORIES["complex floating"],
}


def _maybe(draw, key, strategy):
    return {key: draw(strategy)} if draw(st.booleans()) else OMIT


DOMAINS = {
    "axis": lambda draw, x: {"axis": _axis(draw, x)},
    "axis_int": lambda draw, x: {} if x.values.ndim == 0 else {"axis": _axis(draw, x, allow_none=False)},
    "axis_cumulative": lambda draw, x: {"axis": _axis(draw, x, allow_none=False)} if x.values.ndim > 1
    else _maybe(draw, "axis", st.sampled_from([None] + list(range(-x.values.ndim, x.values.ndim)))),
    "axes": lambda draw, x: {"axis": _axes(draw, x)},
    "keepdims": lambda draw, x: _maybe(draw, "keepdims", st.booleans()),
    "sum_dtype": lambda draw, x: _maybe(draw, "dtype", st.sampled_from(_ACCUMULATORS[x.values.dtype.kind]).map(np.dtype)),
    "correction": lambda draw, x: _maybe(draw, "correction", st.sampled_from([0, 1, 0.5, 2.0])),
    "descending": lambda draw, x: _maybe(draw, "descending", st.booleans()),
    "stable": lambda draw, x: _maybe(draw, "stable", st.booleans()),
    "include_initial": lambda draw, x: _maybe(draw, "include_initial", st.booleans()),
    "norm": lambda draw, x: _maybe(draw, "norm", st.sampled_from(["backward", "ortho", "forward"])),
    "fft_n": lambda draw, x: _maybe(draw, "n", st.integers(1, 6)),
    "fft_axis": lambda draw, x: {"axis": _axis(draw, x, allow_none=False)},
    "offset": lambda draw, x: _maybe(draw, "offset", st.integers(-3, 3)),
    "trace_dtype": lambda draw, x: _maybe(draw, "dtype", st.sampled_from(_ACCUMULATORS[x.values.dtype.kind]).map(np.dtype)),
    "upper": lambda draw, x: _maybe(draw, "upper", st.booleans()),
    "full_matrices": lambda draw, x: _maybe(draw, "full_matrices", st.booleans()),
    "qr_mode": lambda draw, x: _maybe(draw, "mode", st.sampled_from(["reduced", "complete"])),
    "rtol": lambda draw, x: _maybe(draw, "rtol", st.sampled_from([None, 1e-3, 0.5])),
    "matrix_ord": lambda draw, x: _maybe(draw, "ord", st.sampled_from(["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])),
    "vector_ord": lambda draw, x: _maybe(draw, "ord", st.sampled_from([2, 1, 0, 3, 0.5, math.inf, -math.inf, -1])),
    "side": lambda draw, x: _maybe(draw, "side", st.sampled_from(["left", "right"])),
    "invert": lambda draw, x: _maybe(draw, "invert", st.booleans()),
    "indexing": lambda draw, x: _maybe(draw, "indexing", st.sampled_from(["xy", "ij"])),
}


# -- positional arguments: composite strategies (draw, fn) -> (args, extra keywords) -------------------

def _dt(draw, fn, category=None):
    return draw(S.dtypes(category or fn.dtypes))


def _unary(draw, fn):
    dt = _dt(draw, fn)
    return (draw(S.inputs(dt, draw(S.shapes()), fn.values)),), {}


def _min_rank(k):
    def sig(draw, fn):
        dt = _dt(draw, fn)
        return (draw(S.inputs(dt, draw(S.shapes(min_dims=k)), fn.values)),), {}
    return sig


def _operand(draw, fn, dtype, shape, kind):
    """An array operand, or (binary functions and operators allow it) a Python scalar."""
    if fn.params.get("scalars", True) and draw(st.integers(0, 5)) == 0:
        return draw(S.python_scalar(dtype, kind))
    return draw(S.inputs(dtype, shape, kind))


def _indices(draw, length, shape, kind="int64"):
    """Valid indices into an axis of ``length`` (negative ones too, for signed index dtypes)."""
    lo = 0 if np.dtype(kind).kind == "u" else -length
    n = int(np.prod(shape))
    values = draw(st.lists(st.integers(lo, length - 1), min_size=n, max_size=n)) if length else [0] * n
    return Input(np.asarray(values, dtype=kind).reshape(shape))


# -- the registries ------------------------------------------------------------------------------

#: signature name -> (draw, fn) -> (args, extra keywords); filled by the category modules
SIGNATURES: dict = {"unary": _unary, "unary1": _min_rank(1), "matrix_rank2": _min_rank(2)}
#: VIEWS key -> (xp, result) -> the unique quantities compared (results unique up to sign or phase)
VIEWS: dict = {}
TABLE: list[Fn] = []


def add(name, signature="unary", dtypes="numeric", values="mixed", kw=(), tolerance="elementwise", view=None, **params):
    TABLE.append(Fn(name, signature, dtypes, values, tuple(kw), tolerance, view, params))
