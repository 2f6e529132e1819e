"""Hypothesis strategies for the differential suite: dtypes, shapes, values, layouts, scalars.

Inputs are drawn on the host as NumPy arrays (``Input``), each with the layout it is built
with on an executor: ``"contiguous"``, ``"strided"`` (every other row of a larger array),
``"transposed"`` (a transpose of a contiguous array) or ``"reversed"`` (a ``[::-1]`` view).
Values mix ordinary numbers with the special ones each dtype has: NaN, +-inf, +-0 and
subnormals for floating dtypes (in the real and the imaginary part), the extremes for integers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)
#: the standard's dtype categories (the domains of the function table)
CATEGORIES = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integer": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "integer or bool": ("bool",) + ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "floating": ("float32", "float64", "complex64", "complex128"),
    "real numeric": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"),
    "numeric": DTYPES[1:],
    "any": DTYPES,
}
LAYOUTS = ("contiguous", "strided", "transposed", "reversed")
#: how often an input's dtype is drawn outside the function's domain (errors must agree too)
OFF_DOMAIN = 0.05


@dataclass(frozen=True)
class Input:
    """One array argument: its values (host) and the layout it is built with on the executor."""

    values: np.ndarray
    layout: str = "contiguous"

    @classmethod
    def complex(cls, re: np.ndarray, im: np.ndarray, layout: str = "contiguous") -> "Input":
        """The complex input with exactly these parts (what ``repr`` writes when a literal would lose them)."""
        return cls(_complex(np.asarray(re), np.asarray(im), np.asarray(re).dtype), layout)

    def __repr__(self) -> str:
        """Python that rebuilds the input bit for bit (with ``np``, ``Input`` and numpy's ``inf``/``nan``)."""
        v = self.values
        if v.dtype.kind == "c" and v.size and (np.any(~np.isfinite(v)) or np.any((v.real == 0) & np.signbit(v.real))
                                               or np.any((v.imag == 0) & np.signbit(v.imag))):
            # a complex literal such as -0.+1j or 1-0j or inf+nanj does not evaluate to these parts
            return f"Input.complex({_array_literal(v.real)}, {_array_literal(v.imag)}, {self.layout!r})"
        return f"Input({_array_literal(v)}, {self.layout!r})"


def _array_literal(v: np.ndarray) -> str:
    body = " ".join(np.array2string(v, separator=", ", threshold=40, floatmode="unique", max_line_width=10**6).split())
    shape = f".reshape({v.shape})" if v.size == 0 and v.ndim != 1 else ""
    return f"np.asarray({body}, dtype={v.dtype.name!r}){shape}"


# -- dtypes ---------------------------------------------------------------------------------------


def dtypes(category: str) -> st.SearchStrategy[str]:
    """A dtype name of ``category``, now and then (``OFF_DOMAIN``) any of the 13."""
    inside = st.sampled_from(CATEGORIES[category])
    if category == "any":
        return inside
    return st.one_of(inside, st.sampled_from(DTYPES)) if OFF_DOMAIN else inside


# -- shapes ---------------------------------------------------------------------------------------

_SIDES = st.sampled_from((0, 1, 2, 2, 3, 3))  # 3 spans two Dask chunks; few shapes, few compilations


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0) -> st.SearchStrategy[tuple]:
    """Small shapes (0-d, size 0, sides 1..3): few distinct shapes, so compiled kernels are reused."""
    side = _SIDES.filter(lambda n: n >= min_side) if min_side else _SIDES
    return st.lists(side, min_size=min_dims, max_size=max_dims).map(tuple)


@st.composite
def broadcast_pair(draw, min_dims: int = 0, max_dims: int = 3) -> tuple[tuple, tuple]:
    """Two shapes that broadcast: equal sides, sides of 1, and a shorter rank on either side."""
    full = draw(shapes(min_dims, max_dims))
    one = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n for n in full)
    other = one[draw(st.integers(0, len(one))):] if len(one) >= min_dims else one
    return (full, other) if draw(st.booleans()) else (other, full)


# -- values ---------------------------------------------------------------------------------------


def _float_specials(dtype: np.dtype) -> list[float]:
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    return [np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, 3 * tiny, float(info.smallest_normal) / 2,
            float(info.max), -float(info.max), float(info.eps), 1.0, -1.0, 0.5, -0.5]


def _int_specials(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    return sorted({int(info.min), int(info.min) + 1, int(info.max), int(info.max) - 1, 0, 1, -1 if info.min else 2})


VALUE_KINDS = ("mixed", "moderate", "finite", "bounded", "positive", "small", "unit", "nonzero", "shift", "nonzero_int",
               "pow_exponent")
#: kinds that differ for integers only: what they are for floating dtypes
_FLOAT_KIND = {"nonzero_int": "mixed", "pow_exponent": "mixed", "shift": "mixed"}


def _real_values(draw, dtype: np.dtype, n: int, kind: str) -> np.ndarray:
    """``n`` float64 (or exact int) values of ``kind`` for a real ``dtype``."""
    if dtype.kind == "b":
        return np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = {"small": (0, 3), "positive": (1, 10), "shift": (0, info.bits - 1), "unit": (0, 1),
                  "pow_exponent": (0, 3)}.get(kind, (-10, 10))
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        plain = st.integers(lo, hi)
        if kind in ("mixed", "finite", "moderate", "bounded", "nonzero_int"):
            plain = st.one_of(plain, st.sampled_from(_int_specials(dtype)))
        if kind in ("nonzero", "nonzero_int"):
            plain = plain.filter(bool)
        return np.asarray(draw(st.lists(plain, min_size=n, max_size=n)), dtype=dtype)
    kind = _FLOAT_KIND.get(kind, kind)
    ordinary = st.floats(-10, 10, width=dtype.itemsize * 8)
    if kind == "mixed":
        plain = st.one_of(ordinary, ordinary, st.sampled_from(_float_specials(dtype)))
    elif kind == "moderate":  # no values near the overflow threshold: sums in any order agree
        plain = st.one_of(ordinary, ordinary, st.sampled_from([v for v in _float_specials(dtype) if not abs(v) > 1e30]))
    elif kind == "bounded":  # finite, no values near overflow: contractions and transforms sum products
        plain = st.one_of(ordinary, st.sampled_from([v for v in _float_specials(dtype) if np.isfinite(v) and abs(v) < 1e30]))
    elif kind == "finite":
        plain = st.one_of(ordinary, st.sampled_from([v for v in _float_specials(dtype) if np.isfinite(v)]))
    elif kind == "positive":
        plain = st.floats(0.25, 8.0)
    elif kind == "unit":
        plain = st.floats(-0.99, 0.99)
    elif kind == "nonzero":
        plain = st.one_of(st.floats(0.25, 8.0), st.floats(-8.0, -0.25))
    else:  # "small"
        plain = st.integers(0, 3).map(float)
    return np.asarray(draw(st.lists(plain, min_size=n, max_size=n)), dtype=np.float64)


@st.composite
def arrays(draw, dtype: str, shape: tuple, kind: str = "mixed") -> np.ndarray:
    """A host array of ``dtype`` and ``shape`` with values of ``kind`` (VALUE_KINDS)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "c":
        part = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        re, im = _real_values(draw, part, n, kind), _real_values(draw, part, n, kind)
        out = re.astype(part) + 1j * im.astype(part) if kind != "mixed" else _complex(re, im, part)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            out = _real_values(draw, dt, n, kind).astype(dt)
    return np.asarray(out, dtype=dt).reshape(shape)


def _complex(re: np.ndarray, im: np.ndarray, part: np.dtype) -> np.ndarray:
    """Complex values from the parts exactly (``re + 1j*im`` would turn inf parts into NaN)."""
    out = np.empty(re.shape, np.complex64 if part == np.float32 else np.complex128)
    out.real, out.imag = re.astype(part), im.astype(part)
    return out


@st.composite
def inputs(draw, dtype: str, shape: tuple, kind: str = "mixed", layouts=LAYOUTS) -> Input:
    values = draw(arrays(dtype, shape, kind))
    layout = draw(st.sampled_from(layouts)) if values.ndim else "contiguous"
    return Input(values, layout)


def python_scalar(dtype: str, kind: str = "mixed"):
    """A Python scalar of the kind the standard allows next to an array of ``dtype`` (value ``kind``)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = {"shift": (0, info.bits - 1), "pow_exponent": (0, 3), "positive": (1, 10)}.get(kind, (-100, 100))
        ints = st.integers(max(int(info.min), lo), min(int(info.max), hi))
        return ints.filter(bool) if kind in ("nonzero", "nonzero_int") else ints
    floats = st.one_of(st.floats(-10, 10), st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 0.0]))
    if dt.kind == "c":
        return st.one_of(floats, st.builds(complex, st.floats(-10, 10), st.floats(-10, 10)))
    return st.one_of(floats, st.integers(-10, 10))


# -- building an input on an executor ---------------------------------------------------------------


#: executors whose buffers have no layout, and why: there every layout builds the same buffer as
#: "contiguous", so it is built that way (skipping one compiled slice/transpose per example)
LAYOUT_FREE = {
    "jax": "XLA buffers are dense and immutable: a slice, transpose or reversal is a new dense array, "
           "the one asarray of its values gives",
}


def build(xp, item, device: str):
    """``item`` (an Input, or a plain argument) as the executor's array with the Input's layout."""
    if not isinstance(item, Input):
        return item
    v = item.values
    if device in LAYOUT_FREE:
        return xp.asarray(v, device=device)
    if item.layout == "strided":
        base = np.zeros((2 * v.shape[0],) + v.shape[1:], v.dtype)
        base[::2] = v
        return xp.asarray(base, device=device)[::2]
    if item.layout == "transposed":
        order = tuple(reversed(range(v.ndim)))
        return xp.permute_dims(xp.asarray(np.ascontiguousarray(np.transpose(v, order)), device=device), order)
    if item.layout == "reversed":
        return xp.asarray(np.ascontiguousarray(v[::-1]), device=device)[::-1]
    return xp.asarray(v, device=device)
