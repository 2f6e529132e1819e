"""The function table of the differential suite: every function of the standard and the operators.

Each ``Fn`` says how its arguments are drawn: ``signature`` names a strategy of SIGNATURES
(the positional arguments), ``dtypes`` the dtype category of the array inputs, ``values``
the value kind (``strategies.VALUE_KINDS``), ``kw`` the keyword arguments as names of
DOMAINS (each draws valid values for the input it is given: axes in range, keepdims, dtypes,
...), ``tolerance`` the comparison class (``compare.TOLERANCES``) and ``view`` the unique
quantities compared for results that are unique only up to sign or phase (VIEWS).
"""
from __future__ import annotations

import math
import operator
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


def _binary(draw, fn):
    s1, s2 = draw(S.broadcast_pair())
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.booleans()) else _dt(draw, fn)
    v1, v2 = fn.params.get("pair", (fn.values, fn.values))
    a = draw(S.inputs(d1, s1, v1))
    b = _operand(draw, fn, d2, s2, v2)
    if isinstance(b, Input) and draw(st.integers(0, 5)) == 0 and fn.params.get("scalars", True):
        return (draw(S.python_scalar(d1, v1)), b), {}
    return (a, b), {}


def _inplace(draw, fn):
    """x op= y: y broadcasts to x's shape."""
    s1, s2 = draw(S.broadcast_pair())
    s1 = np.broadcast_shapes(s1, s2)
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.integers(0, 2)) else _dt(draw, fn)
    v1, v2 = fn.params.get("pair", (fn.values, fn.values))
    return (draw(S.inputs(d1, s1, v1)), _operand(draw, fn, d2, s2, v2)), {}


def _matmul(draw, fn):
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    batch = draw(S.shapes(0, 2))
    left = draw(st.sampled_from([(k,), (m, k), batch + (m, k)]))
    right = draw(st.sampled_from([(k,), (k, n), batch[len(batch) // 2:] + (k, n)]))
    d1, d2 = _dt(draw, fn), _dt(draw, fn)
    return (draw(S.inputs(d1, left, fn.values)), draw(S.inputs(d2, right, fn.values))), {}


def _vecdot(draw, fn):
    s1, s2 = draw(S.broadcast_pair(min_dims=1))
    k = draw(st.integers(0, 3))
    s1, s2 = s1[:-1] + (k,), s2[:-1] + (k,)
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.booleans()) else _dt(draw, fn)
    kw = {"axis": -1} if draw(st.booleans()) else {}
    return (draw(S.inputs(d1, s1, fn.values)), draw(S.inputs(d2, s2, fn.values))), kw


def _tensordot(draw, fn):
    a = draw(S.shapes(0, 3))
    n = draw(st.integers(0, len(a)))
    b = a[len(a) - n:] + draw(S.shapes(0, 2))
    d1, d2 = _dt(draw, fn), _dt(draw, fn)
    kw = {"axes": n} if draw(st.booleans()) or n != 2 else {}
    return (draw(S.inputs(d1, a, fn.values)), draw(S.inputs(d2, b, fn.values))), kw


_MATRIX_KINDS = {
    "finite": lambda a, n: a,
    "bounded": lambda a, n: a,
    "wellcond": lambda a, n: a + 2 * max(n, 1) * np.eye(*a.shape[-2:]),
    "spd": lambda a, n: a @ np.conj(np.swapaxes(a, -1, -2)) + max(n, 1) * np.eye(n),
    "hermitian": lambda a, n: (a + np.conj(np.swapaxes(a, -1, -2))) / 2,
}


def _matrix(draw, fn, square):
    dt = _dt(draw, fn)
    batch = draw(S.shapes(0, 2))
    m = draw(st.integers(0, 4))
    n = m if square else draw(st.integers(0, 4))
    shape = batch + (m, n)
    kind = fn.values if fn.values in _MATRIX_KINDS else "bounded"
    x = draw(S.inputs(dt, shape, "bounded" if kind in ("finite", "bounded") else "unit"))
    if kind not in ("finite", "bounded") and np.dtype(dt).kind in "fc":
        v = _MATRIX_KINDS[kind](x.values.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64), n)
        x = Input(v.astype(dt), x.layout)
    return (x,), {}


def _solve(draw, fn):
    (a,), _ = _matrix(draw, fn, square=True)
    n = a.values.shape[-1]
    b_shape = draw(st.sampled_from([(n,), a.values.shape[:-1] + (draw(st.integers(0, 3)),)]))
    return (a, draw(S.inputs(_dt(draw, fn), b_shape, "bounded"))), {}


def _matrix_power(draw, fn):
    (a,), _ = _matrix(draw, fn, square=True)
    return (a, draw(st.integers(-2, 3))), {}


def _cross(draw, fn):
    s1, s2 = draw(S.broadcast_pair(0, 2))
    d1 = _dt(draw, fn)
    d2 = d1 if draw(st.booleans()) else _dt(draw, fn)
    return (draw(S.inputs(d1, s1 + (3,), fn.values)), draw(S.inputs(d2, s2 + (3,), fn.values))), {}


def _outer(draw, fn):
    return (draw(S.inputs(_dt(draw, fn), (draw(st.integers(0, 4)),), fn.values)),
            draw(S.inputs(_dt(draw, fn), (draw(st.integers(0, 4)),), fn.values))), {}


def _fft_nd(draw, fn):
    dt = _dt(draw, fn)
    x = draw(S.inputs(dt, draw(S.shapes(1, 3)), fn.values))
    nd = x.values.ndim
    kw = {}
    if draw(st.booleans()):
        axes = tuple(draw(st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd)))
        kw["axes"] = axes
        if draw(st.booleans()):
            kw["s"] = tuple(draw(st.integers(1, 5)) for _ in axes)
    return (x,), kw


def _freq(draw, fn):
    kw = {"d": draw(st.sampled_from([1.0, 0.5, 2.0]))} if draw(st.booleans()) else {}
    if draw(st.booleans()):
        kw["dtype"] = np.dtype(draw(st.sampled_from(["float32", "float64"])))
    return (draw(st.integers(1, 9)),), kw


def _concat(draw, fn):
    base = draw(S.shapes(1, 3))
    axis = draw(st.integers(-len(base), len(base) - 1))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        shape = list(base)
        shape[axis] = draw(st.integers(0, 3))
        parts.append(draw(S.inputs(_dt(draw, fn), tuple(shape), fn.values)))
    kw = {"axis": axis} if axis != 0 or draw(st.booleans()) else {}
    if draw(st.integers(0, 4)) == 0:
        kw = {"axis": None}
    return (tuple(parts),), kw


def _stack(draw, fn):
    shape = draw(S.shapes(0, 2))
    dt = _dt(draw, fn)
    parts = tuple(draw(S.inputs(dt if draw(st.booleans()) else _dt(draw, fn), shape, fn.values))
                  for _ in range(draw(st.integers(1, 3))))
    return (parts,), {"axis": draw(st.integers(-len(shape) - 1, len(shape)))}


def _indices(draw, length, shape, kind="int64"):
    """Valid indices into an axis of ``length`` (negative ones too, for signed index dtypes)."""
    lo = 0 if np.dtype(kind).kind == "u" else -length
    n = int(np.prod(shape))
    values = draw(st.lists(st.integers(lo, length - 1), min_size=n, max_size=n)) if length else [0] * n
    return Input(np.asarray(values, dtype=kind).reshape(shape))


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


def _clip(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    dt = x.values.dtype.name
    kw = {}
    for key in ("min", "max"):
        choice = draw(st.integers(0, 2))
        if choice == 1:
            kw[key] = draw(S.python_scalar(dt))
        elif choice == 2:
            kw[key] = draw(S.inputs(dt, x.values.shape[draw(st.integers(0, x.values.ndim)):], fn.values))
    return (x,), kw


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


def _repeat(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    nd = x.values.ndim
    axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1))) if nd else None
    n = x.values.size if axis is None else x.values.shape[axis]
    if draw(st.booleans()):
        reps = draw(st.integers(0, 3))
    else:
        reps = Input(np.asarray(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64))
    return (x, reps), ({} if axis is None else {"axis": axis})


def _reshape(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    size = x.values.size
    divisors = [d for d in range(1, 5) if size % d == 0] if size else [0, 1, 2]
    first = draw(st.sampled_from(divisors))
    shape = draw(st.sampled_from([(size,), (first, -1) if first else (0, 3), (-1,), ((1,) * 2 + (size,))]))
    return (x, shape), ({"copy": draw(st.sampled_from([None, True]))} if draw(st.booleans()) else {})


def _tile(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    return (x, tuple(draw(st.lists(st.integers(0, 3), max_size=4)))), {}


def _broadcast_to(draw, fn):
    small, big = draw(S.broadcast_pair())
    big = np.broadcast_shapes(small, big)
    return (draw(S.inputs(_dt(draw, fn), small, fn.values)), big), {}


def _broadcast_arrays(draw, fn):
    s1, s2 = draw(S.broadcast_pair())
    return (draw(S.inputs(_dt(draw, fn), s1, fn.values)), draw(S.inputs(_dt(draw, fn), s2, fn.values))), {}


def _broadcast_shapes(draw, fn):
    s1, s2 = draw(S.broadcast_pair())
    return (s1, s2), {}


def _expand_dims(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    nd = x.values.ndim + 1
    axes = tuple(draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=1)))
    return (x,), {"axis": axes[0] if draw(st.booleans()) else axes}


def _moveaxis(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    nd = x.values.ndim
    k = draw(st.integers(1, nd))
    src = draw(st.permutations(range(nd)))[:k]
    dst = draw(st.permutations(range(nd)))[:k]
    return (x, tuple(src) if k > 1 else src[0], tuple(dst) if k > 1 else dst[0]), {}


def _permute_dims(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    return (x, tuple(draw(st.permutations(range(x.values.ndim))))), {}


def _squeeze(draw, fn):
    shape = draw(S.shapes(1, 3))
    shape = tuple(1 if draw(st.booleans()) else n for n in shape)
    x = draw(S.inputs(_dt(draw, fn), shape, fn.values))
    ones = [i for i, n in enumerate(shape) if n == 1] or [0]
    return (x,), {"axis": tuple(draw(st.lists(st.sampled_from(ones), unique=True, min_size=1)))}


def _roll(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    nd = x.values.ndim
    if nd and draw(st.booleans()):
        axes = tuple(draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd)))
        shift = tuple(draw(st.integers(-5, 5)) for _ in axes)
        return (x,), {"shift": shift if len(axes) > 1 else shift[0], "axis": axes if len(axes) > 1 else axes[0]}
    return (x,), {"shift": draw(st.integers(-5, 5))}


def _meshgrid(draw, fn):
    dt = _dt(draw, fn)
    return tuple(draw(S.inputs(dt, (draw(st.integers(0, 3)),), fn.values)) for _ in range(draw(st.integers(0, 3)))), {}


def _unstack(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    return (x,), {"axis": draw(st.integers(-x.values.ndim, x.values.ndim - 1))}


def _getitem(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    index = []
    for n in x.values.shape[: draw(st.integers(0, x.values.ndim))]:
        choice = draw(st.integers(0, 3))
        if choice == 0 and n:
            index.append(draw(st.integers(-n, n - 1)))
        elif choice == 1:
            index.append(slice(draw(st.one_of(st.none(), st.integers(-4, 4))), draw(st.one_of(st.none(), st.integers(-4, 4))),
                               draw(st.sampled_from([None, 1, 2, -1, -2]))))
        elif choice == 2:
            index.append(None)
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


def _like(draw, fn):
    (x,), _ = _unary(draw, fn)
    kw = {"dtype": np.dtype(draw(st.sampled_from(S.DTYPES)))} if draw(st.booleans()) else {}
    if fn.name == "full_like":
        kw["fill_value"] = draw(S.python_scalar(kw.get("dtype", x.values.dtype).name))
    return (x,), kw


def _astype(draw, fn):
    (x,), _ = _unary(draw, fn)
    return (x, np.dtype(draw(st.sampled_from(S.DTYPES)))), ({"copy": draw(st.booleans())} if draw(st.booleans()) else {})


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


SIGNATURES = {
    "unary": _unary, "unary1": _min_rank(1), "matrix_rank2": _min_rank(2), "binary": _binary, "inplace": _inplace,
    "matmul": _matmul, "vecdot": _vecdot, "tensordot": _tensordot,
    "matrix": lambda draw, fn: _matrix(draw, fn, square=False), "square": lambda draw, fn: _matrix(draw, fn, square=True),
    "solve": _solve, "matrix_power": _matrix_power, "cross": _cross, "outer": _outer,
    "fft_nd": _fft_nd, "freq": _freq, "concat": _concat, "stack": _stack, "take": _take,
    "take_along_axis": _take_along_axis, "where": _where, "searchsorted": _searchsorted, "isin": _isin,
    "clip": _clip, "diff": _diff, "repeat": _repeat, "reshape": _reshape, "tile": _tile,
    "broadcast_to": _broadcast_to, "broadcast_arrays": _broadcast_arrays, "broadcast_shapes": _broadcast_shapes,
    "expand_dims": _expand_dims, "moveaxis": _moveaxis, "permute_dims": _permute_dims, "squeeze": _squeeze,
    "roll": _roll, "meshgrid": _meshgrid, "unstack": _unstack, "getitem": _getitem, "getitem_array": _getitem_array,
    "setitem": _setitem, "like": _like, "astype": _astype, "creation": _creation, "arange": _arange,
    "linspace": _linspace, "eye": _eye, "tri": _tri, "asarray": _asarray, "dtype_pair": _dtypes_pair,
    "result_type": _result_type, "finfo": _one_dtype("floating"), "iinfo": _one_dtype("integer"),
    "isdtype": _isdtype, "none": _no_args,
}


# -- views: the unique quantities of results unique only up to sign or phase --------------------------


def _mH(xp, a):
    t = xp.matrix_transpose(a)
    return xp.conj(t) if xp.isdtype(a.dtype, "complex floating") else t


def _eigh_view(xp, r):
    w, q = r
    return w, (q * w[..., None, :]) @ _mH(xp, q)


def _svd_view(xp, r):
    u, s, vh = r
    k = s.shape[-1]
    return s, (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], u.shape, vh.shape


def _qr_view(xp, r):
    q, rr = r
    k = min(q.shape[-1], rr.shape[-2])
    return q @ rr, xp.abs(xp.linalg.diagonal(rr)), _mH(xp, q[..., :, :k]) @ q[..., :, :k], q.shape, rr.shape


VIEWS = {"eigh": _eigh_view, "svd": _svd_view, "qr": _qr_view}


# -- the table --------------------------------------------------------------------------------------

TABLE: list[Fn] = []


def add(name, signature="unary", dtypes="numeric", values="mixed", kw=(), tolerance="elementwise", view=None, **params):
    TABLE.append(Fn(name, signature, dtypes, values, tuple(kw), tolerance, view, params))


# elementwise, one argument: name -> dtype category (the standard's), value kind
UNARY = {
    "abs": "numeric", "acos": "floating", "acosh": "floating", "asin": "floating", "asinh": "floating",
    "atan": "floating", "atanh": "floating", "bitwise_invert": "integer or bool", "ceil": "real numeric",
    "conj": "numeric", "cos": "floating", "cosh": "floating", "exp": "floating", "expm1": "floating",
    "floor": "real numeric", "imag": "numeric", "isfinite": "numeric", "isinf": "numeric", "isnan": "numeric",
    "log": "floating", "log1p": "floating", "log2": "floating", "log10": "floating", "logical_not": "bool",
    "negative": "numeric", "positive": "numeric", "real": "numeric", "reciprocal": "floating",
    "round": "numeric", "sign": "numeric", "signbit": "real floating", "sin": "floating", "sinh": "floating",
    "square": "numeric", "sqrt": "floating", "tan": "floating", "tanh": "floating", "trunc": "real numeric",
}
for _name, _cat in UNARY.items():
    add(_name, dtypes=_cat)

# elementwise, two arguments: name -> (dtype category, value kinds of x1 and x2)
BINARY = {
    "add": ("numeric", None), "atan2": ("real floating", None), "bitwise_and": ("integer or bool", None),
    "bitwise_left_shift": ("integer", ("mixed", "shift")), "bitwise_or": ("integer or bool", None),
    "bitwise_right_shift": ("integer", ("mixed", "shift")), "bitwise_xor": ("integer or bool", None),
    "copysign": ("real floating", None), "divide": ("floating", None), "equal": ("any", None),
    # the standard leaves integer division by zero unspecified: integer divisors are nonzero
    "floor_divide": ("real numeric", ("mixed", "nonzero_int")), "greater": ("real numeric", None),
    "greater_equal": ("real numeric", None), "hypot": ("real floating", None), "less": ("real numeric", None),
    "less_equal": ("real numeric", None), "logaddexp": ("real floating", None), "logical_and": ("bool", None),
    "logical_or": ("bool", None), "logical_xor": ("bool", None), "maximum": ("real numeric", None),
    "minimum": ("real numeric", None), "multiply": ("numeric", None), "nextafter": ("real floating", None),
    "not_equal": ("any", None),
    # negative integer powers are unspecified for integers: exponents are small and non-negative
    "pow": ("numeric", ("mixed", "pow_exponent")),
    "remainder": ("real numeric", ("mixed", "nonzero_int")), "subtract": ("numeric", None),
}
for _name, (_cat, _values) in BINARY.items():
    add(_name, "binary", _cat, **({"pair": _values} if _values else {}))

# the operators: the array object's dunders, each with the domain of its function
OPERATORS = {
    "__add__": "add", "__sub__": "subtract", "__mul__": "multiply", "__truediv__": "divide",
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow", "__and__": "bitwise_and",
    "__or__": "bitwise_or", "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
    "__rshift__": "bitwise_right_shift", "__eq__": "equal", "__ne__": "not_equal", "__lt__": "less",
    "__le__": "less_equal", "__gt__": "greater", "__ge__": "greater_equal",
}
UNARY_OPERATORS = {"__neg__": "negative", "__pos__": "positive", "__abs__": "abs", "__invert__": "bitwise_invert"}
INPLACE = ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__", "__and__",
           "__or__", "__xor__", "__lshift__", "__rshift__")
#: dunder -> the operator module's function that calls it (reflected operands included)
OPERATOR_FUNCTIONS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul, "__truediv__": operator.truediv,
    "__floordiv__": operator.floordiv, "__mod__": operator.mod, "__pow__": operator.pow, "__and__": operator.and_,
    "__or__": operator.or_, "__xor__": operator.xor, "__lshift__": operator.lshift, "__rshift__": operator.rshift,
    "__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
    "__gt__": operator.gt, "__ge__": operator.ge, "__neg__": operator.neg, "__pos__": operator.pos,
    "__abs__": operator.abs, "__invert__": operator.invert, "__matmul__": operator.matmul,
    "__iadd__": operator.iadd, "__isub__": operator.isub, "__imul__": operator.imul,
    "__itruediv__": operator.itruediv, "__ifloordiv__": operator.ifloordiv, "__imod__": operator.imod,
    "__ipow__": operator.ipow, "__iand__": operator.iand, "__ior__": operator.ior, "__ixor__": operator.ixor,
    "__ilshift__": operator.ilshift, "__irshift__": operator.irshift, "__imatmul__": operator.imatmul,
}
for _dunder, _func in OPERATORS.items():
    _cat, _values = BINARY[_func]
    add(f"array.{_dunder}", "binary", _cat, **({"pair": _values} if _values else {}))
for _dunder, _func in UNARY_OPERATORS.items():
    add(f"array.{_dunder}", dtypes=UNARY[_func])
for _dunder in INPLACE:
    _cat, _values = BINARY[OPERATORS[_dunder]]
    add(f"array.__i{_dunder[2:]}", "inplace", _cat, **({"pair": _values} if _values else {}))
add("array.__matmul__", "matmul", "numeric", "bounded", tolerance="reduction")
add("array.__imatmul__", "matmul", "numeric", "bounded", tolerance="reduction")
add("array.__getitem__", "getitem", "any")
add("array.__getitem__[array]", "getitem_array", "any")
add("array.__setitem__", "setitem", "any")
add("array.mT", "matrix_rank2", "any", tolerance="exact")

add("clip", "clip", "real numeric")

# creation
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

# data types
add("astype", "astype", "any")
add("can_cast", "dtype_pair", tolerance="exact")
add("finfo", "finfo", tolerance="exact")
add("iinfo", "iinfo", tolerance="exact")
add("isdtype", "isdtype", tolerance="exact")
add("result_type", "result_type", tolerance="exact")

# indexing, main-namespace linear algebra
add("take", "take", "any", tolerance="exact")
add("take_along_axis", "take_along_axis", "any", tolerance="exact")
add("matmul", "matmul", "numeric", "bounded", tolerance="reduction")
add("matrix_transpose", "matrix_rank2", "any", tolerance="exact")
add("tensordot", "tensordot", "numeric", "bounded", tolerance="reduction")
add("vecdot", "vecdot", "numeric", "bounded", tolerance="reduction")

# manipulation
add("broadcast_arrays", "broadcast_arrays", "any", tolerance="exact")
add("broadcast_shapes", "broadcast_shapes", tolerance="exact")
add("broadcast_to", "broadcast_to", "any", tolerance="exact")
add("concat", "concat", "any", tolerance="exact")
add("expand_dims", "expand_dims", "any", tolerance="exact")
add("flip", "unary", "any", kw=("axes",), tolerance="exact")
add("moveaxis", "moveaxis", "any", tolerance="exact")
add("permute_dims", "permute_dims", "any", tolerance="exact")
add("repeat", "repeat", "any", tolerance="exact")
add("reshape", "reshape", "any", tolerance="exact")
add("roll", "roll", "any", tolerance="exact")
add("squeeze", "squeeze", "any", tolerance="exact")
add("stack", "stack", "any", tolerance="exact")
add("tile", "tile", "any", tolerance="exact")
add("unstack", "unstack", "any", tolerance="exact")

# searching, sets, sorting
add("argmax", "unary", "real numeric", kw=("axis", "keepdims"), tolerance="exact")
add("argmin", "unary", "real numeric", kw=("axis", "keepdims"), tolerance="exact")
add("count_nonzero", "unary", "any", kw=("axes", "keepdims"), tolerance="exact")
add("nonzero", "unary1", "any", tolerance="exact")
add("searchsorted", "searchsorted", "real numeric", "moderate", kw=("side",), tolerance="exact")
add("where", "where", "any", tolerance="exact")
add("isin", "isin", "real numeric", kw=("invert",), tolerance="exact")
add("unique_all", "unary", "real numeric", tolerance="exact")
add("unique_counts", "unary", "real numeric", tolerance="exact")
add("unique_inverse", "unary", "real numeric", tolerance="exact")
add("unique_values", "unary", "real numeric", tolerance="exact")
# argsort stays stable (the default): the order of ties is unspecified otherwise
add("argsort", "unary", "real numeric", kw=("axis_int", "descending"), tolerance="exact")
add("sort", "unary", "real numeric", kw=("axis_int", "descending", "stable"), tolerance="exact")

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
add("__array_namespace_info__", "none", tolerance="exact")

# linalg
add("linalg.cholesky", "square", "floating", "spd", kw=("upper",), tolerance="linalg")
add("linalg.cross", "cross", "numeric", "bounded", kw=("axis_int",), tolerance="reduction")
add("linalg.det", "square", "floating", "wellcond", tolerance="linalg")
add("linalg.diagonal", "matrix", "any", kw=("offset",), tolerance="exact")
add("linalg.eigh", "square", "floating", "hermitian", tolerance="linalg", view="eigh")
add("linalg.eigvalsh", "square", "floating", "hermitian", tolerance="linalg")
add("linalg.inv", "square", "floating", "wellcond", tolerance="linalg")
add("linalg.matmul", "matmul", "numeric", "bounded", tolerance="reduction")
add("linalg.matrix_norm", "matrix", "floating", "bounded", kw=("keepdims", "matrix_ord"), tolerance="linalg")
add("linalg.matrix_power", "matrix_power", "floating", "wellcond", tolerance="linalg")
add("linalg.matrix_rank", "matrix", "floating", "bounded", kw=("rtol",), tolerance="exact")
add("linalg.matrix_transpose", "matrix_rank2", "any", tolerance="exact")
add("linalg.outer", "outer", "numeric", "bounded", tolerance="elementwise")
add("linalg.pinv", "matrix", "floating", "wellcond", kw=("rtol",), tolerance="linalg")
add("linalg.qr", "matrix", "floating", "wellcond", kw=("qr_mode",), tolerance="linalg", view="qr")
add("linalg.slogdet", "square", "floating", "wellcond", tolerance="linalg")
add("linalg.solve", "solve", "floating", "wellcond", tolerance="linalg")
add("linalg.svd", "matrix", "floating", "bounded", kw=("full_matrices",), tolerance="linalg", view="svd")
add("linalg.svdvals", "matrix", "floating", "bounded", tolerance="linalg")
add("linalg.tensordot", "tensordot", "numeric", "bounded", tolerance="reduction")
add("linalg.trace", "matrix", "numeric", "bounded", kw=("offset", "trace_dtype"), tolerance="reduction")
add("linalg.vecdot", "vecdot", "numeric", "bounded", tolerance="reduction")
add("linalg.vector_norm", "unary", "floating", "bounded", kw=("axes", "keepdims", "vector_ord"), tolerance="linalg")

# fft
for _name, _cat in (("fft", "floating"), ("ifft", "floating"), ("rfft", "real floating"), ("irfft", "floating"),
                    ("hfft", "floating"), ("ihfft", "real floating")):
    add(f"fft.{_name}", "unary1", _cat, "bounded", kw=("fft_n", "fft_axis", "norm"), tolerance="fft")
for _name, _cat in (("fftn", "floating"), ("ifftn", "floating"), ("rfftn", "real floating"), ("irfftn", "floating")):
    add(f"fft.{_name}", "fft_nd", _cat, "bounded", kw=("norm",), tolerance="fft")
add("fft.fftfreq", "freq", tolerance="fft")
add("fft.rfftfreq", "freq", tolerance="fft")
add("fft.fftshift", "unary", "numeric", kw=("axes",), tolerance="exact")
add("fft.ifftshift", "unary", "numeric", kw=("axes",), tolerance="exact")

BY_NAME = {f.name: f for f in TABLE}
assert len(BY_NAME) == len(TABLE), "duplicate names in the differential table"


def standard_name(fn: Fn) -> str:
    """The standard function (or array member) an entry exercises: ``array.__getitem__[array]`` -> ``array.__getitem__``."""
    return fn.name.split("[")[0]


@st.composite
def examples(draw, fn: Fn):
    """``(args, kwargs)`` for one call of ``fn``."""
    args, kw = SIGNATURES[fn.signature](draw, fn)
    kw = dict(kw)
    for domain in fn.kw:
        kw.update(DOMAINS[domain](draw, args[0] if args else None))
    return tuple(args), kw
