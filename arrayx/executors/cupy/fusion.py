"""jit on the CuPy executor: a staged graph's fusible regions become generated CUDA kernels.

``fuse(executor, graph)`` partitions the graph with the regions shared by every fusing lowering
(``executors.common.fusion``, with this module's table ``FUSIBLE``): elementwise equations of one shape
(arithmetic, comparisons, transcendentals, ``where``, ``clip``, casts, creation primitives,
broadcasts of values from outside), ended by reductions over one block of axes.  An elementwise
region is one ``cupy.ElementwiseKernel`` writing the values used outside it; a region with
reductions is one ``cupy.ReductionKernel`` whose accumulator is a struct with a field per reduction
(var/std: count, mean and squared deviations, joined with Chan's update), so ``mean`` and ``var``
of one array are one pass, and whose map also writes the region's values used outside it (into
full-shape arrays passed as writable inputs, CuPy's ``_non_const``): one pass over memory either
way.  Everything else runs between the kernels as the executor's ordinary implementations
(``_lowering.straight_line``).

The kernels' code is C that compiles as CUDA C++ (NVRTC, through CuPy) and as C (the tests
compile it with the system C compiler and run it on the CPU against the NumPy executor: see
``tests/executors/cuda_on_cpu.py``): ``PRELUDE`` holds the typedefs and helpers both share, each
region adds a ``values`` function (its element's statements) and the small functions the kernels'
expressions call.  Semantics are NumPy's: float32 stays float32 (``expf``, not ``exp``), literals are
kernel arguments cast to their operands' dtype (never text), integer arithmetic wraps (computed in
unsigned types: signed overflow is undefined in C and CUDA), shifts outside [0, bits) give NumPy's
0 / -1, max/min and maximum/minimum propagate NaN, float sums and means accumulate in float64.  The
kernels are compiled with ``--fmad=false``: no contraction into fused multiply-adds, so every
operation rounds as it does eagerly.

The source is built from this module's tables, dtype names and positions only (``a3``, ``v7``);
names of functions and kernels come from the hash of the region's code, so no user-supplied string
reaches it.  CuPy compiles a kernel on its first launch and keeps the binary in its own disk cache.
"""
from __future__ import annotations

import hashlib
import math
import re
from typing import NamedTuple

import numpy as np

from arrayx.executors.common.fusion import (
    RegionPlaceholder,
    operand_slots,
    region_inputs,
    rewrite_regions,
    _BROADCASTS,
    _CASTS,
    _WHERE_LIKE,
    NULLARY,
    REDUCERS,
    Region,
    _dtype_of,
    _expanded,
    _literal_dtype,
    regions_of,
)
from arrayx.executors.common.fusion import acc_dtype as _acc_dtype
from arrayx.core.graph import Equation, Graph, Literal, Var, uses_of

__all__ = ["FUSIBLE", "PRELUDE", "fuse", "plan", "ElementwiseSpec", "ReductionSpec", "CupyKernels"]

_FLOAT = "f"
_REAL = "iuf"
_ALL = "biuf"

#: compile options of every fused kernel: no fused multiply-adds (each operation rounds as eagerly)
NVRTC_OPTIONS = ("--fmad=false",)
#: largest reduction accumulator (bytes): CuPy's reduction keeps 512 of them in shared memory (48 KB);
#: a region whose reductions need more runs op by op
ACC_BYTES_MAX = 96

# -- the C both compilers read ----------------------------------------------------------------------

PRELUDE = r"""/* arrayx fused kernels: CUDA C++ (NVRTC) and C (the CPU check) read the same code */
#ifndef AX_PRELUDE
#define AX_PRELUDE
#if defined(__CUDACC__) || defined(__HIPCC__)
#define AX_FN __device__ __forceinline__
#define AX_INF_32 __int_as_float(0x7f800000)
#define AX_INF_64 __longlong_as_double(0x7ff0000000000000LL)
#else
#include <math.h>
#include <stdbool.h>
#define AX_FN static inline
#define AX_INF_32 ((float)INFINITY)
#define AX_INF_64 ((double)INFINITY)
#endif
typedef bool ax_bool;
typedef signed char ax_i8;
typedef short ax_i16;
typedef int ax_i32;
typedef long long ax_i64;
typedef unsigned char ax_u8;
typedef unsigned short ax_u16;
typedef unsigned int ax_u32;
typedef unsigned long long ax_u64;
typedef float ax_f32;
typedef double ax_f64;
/* count, mean and sum of squared deviations of a part (var/std), joined with Chan's update */
typedef struct { ax_f64 n, mean, m2; } ax_moments;
AX_FN ax_moments ax_moment(ax_f64 v) { ax_moments t; t.n = 1; t.mean = v; t.m2 = 0; return t; }
AX_FN ax_moments ax_no_moments(void) { ax_moments t; t.n = 0; t.mean = 0; t.m2 = 0; return t; }
AX_FN ax_moments ax_chan(ax_moments x, ax_moments y) {
    ax_moments t;
    ax_f64 d, w;
    if (x.n == 0) return y;
    if (y.n == 0) return x;
    t.n = x.n + y.n;
    w = y.n / t.n;
    d = y.mean - x.mean;
    t.mean = x.mean + d * w;
    t.m2 = x.m2 + y.m2 + d * d * x.n * w;
    return t;
}
#endif
"""

#: dtype -> its C type (PRELUDE's typedefs; CuPy's for the dtype name are the same types)
CTYPES = {np.dtype(k): v for k, v in {
    "bool": "ax_bool", "int8": "ax_i8", "int16": "ax_i16", "int32": "ax_i32", "int64": "ax_i64",
    "uint8": "ax_u8", "uint16": "ax_u16", "uint32": "ax_u32", "uint64": "ax_u64",
    "float32": "ax_f32", "float64": "ax_f64"}.items()}


class CudaOp(NamedTuple):
    kinds: str  # dtype kinds of the first operand fused (x1 for where); others run between kernels
    result: str  # "same" (the operand dtype) or "bool"
    exprs: dict  # dtype kinds -> C expression of a, b, c (see _c_expr for {T}, {U}, {F}, {bits})


def _wrapping(op: str) -> dict:
    """a op b: floats as they are, integers in the unsigned type (wraps as NumPy does)."""
    return {"f": f"a {op} b", "iu": f"({{T}})(({{U}})a {op} ({{U}})b)"}


_MATH1 = ("ceil", "floor", "trunc", "sqrt", "sin", "cos", "tan", "exp", "expm1", "log", "log1p", "log2",
          "log10", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh")
_MATH2 = ("copysign", "atan2", "hypot", "pow")
# NumPy's shifts: a count outside [0, bits) gives 0 (a negative value shifted right: -1)
_SHIFT_LEFT = {"i": "((b >= 0) && (b < {bits})) ? ({T})(({U})a << b) : ({T})0", "u": "(b < {bits}) ? ({T})(({U})a << b) : ({T})0"}
_SHIFT_RIGHT = {"i": "((b >= 0) && (b < {bits})) ? ({T})(a >> b) : (a < 0 ? ({T})-1 : ({T})0)",
                "u": "(b < {bits}) ? ({T})(a >> b) : ({T})0"}

#: primitive name -> CudaOp
FUSIBLE: dict[str, CudaOp] = {
    **{name: CudaOp(_FLOAT, "same", {"f": f"{name}{{F}}(a)"}) for name in _MATH1},
    **{name: CudaOp(_FLOAT, "same", {"f": f"{name}{{F}}(a, b)"}) for name in _MATH2},
    "abs": CudaOp(_REAL, "same", {"f": "fabs{F}(a)", "i": "(a < 0 ? ({T})(({U})0 - ({U})a) : a)", "u": "a"}),
    "bitwise_invert": CudaOp("iu", "same", {"iu": "({T})~({U})a"}),
    "round": CudaOp(_FLOAT, "same", {"f": "rint{F}(a)"}),  # the default rounding mode: ties to even
    "isfinite": CudaOp(_FLOAT, "bool", {"f": "fabs{F}(a) < AX_INF_{bits}"}),
    "isinf": CudaOp(_FLOAT, "bool", {"f": "fabs{F}(a) == AX_INF_{bits}"}),
    "isnan": CudaOp(_FLOAT, "bool", {"f": "a != a"}),
    "logical_not": CudaOp("b", "bool", {"b": "!a"}),
    "negative": CudaOp(_REAL, "same", {"f": "-a", "iu": "({T})(({U})0 - ({U})a)"}),
    "positive": CudaOp(_REAL, "same", {_REAL: "a"}),
    "reciprocal": CudaOp(_FLOAT, "same", {"f": "({T})1 / a"}),
    # NumPy's sign of a float: +0 for either zero, NaN for NaN
    "sign": CudaOp(_FLOAT, "same", {"f": "a > 0 ? ({T})1 : (a < 0 ? ({T})-1 : (a == a ? ({T})0 : a))"}),
    "signbit": CudaOp(_FLOAT, "bool", {"f": "copysign{F}(({T})1, a) < 0"}),
    "square": CudaOp(_REAL, "same", {"f": "a * a", "iu": "({T})(({U})a * ({U})a)"}),
    "add": CudaOp(_REAL, "same", _wrapping("+")),
    "subtract": CudaOp(_REAL, "same", _wrapping("-")),
    "multiply": CudaOp(_REAL, "same", _wrapping("*")),
    "divide": CudaOp(_FLOAT, "same", {"f": "a / b"}),
    "bitwise_and": CudaOp("biu", "same", {"biu": "({T})(a & b)"}),
    "bitwise_or": CudaOp("biu", "same", {"biu": "({T})(a | b)"}),
    "bitwise_xor": CudaOp("biu", "same", {"biu": "({T})(a ^ b)"}),
    "bitwise_left_shift": CudaOp("iu", "same", _SHIFT_LEFT),
    "bitwise_right_shift": CudaOp("iu", "same", _SHIFT_RIGHT),
    **{name: CudaOp(_ALL, "bool", {_ALL: f"a {op} b"}) for name, op in {
        "equal": "==", "not_equal": "!=", "greater": ">", "greater_equal": ">=", "less": "<",
        "less_equal": "<="}.items()},
    "logical_and": CudaOp("b", "bool", {"b": "a && b"}),
    "logical_or": CudaOp("b", "bool", {"b": "a || b"}),
    "logical_xor": CudaOp("b", "bool", {"b": "a != b"}),
    # NumPy's maximum/minimum: NaN from either side wins, on ties the second operand
    "maximum": CudaOp(_REAL, "same", {_REAL: "((a > b) || (a != a)) ? a : b"}),
    "minimum": CudaOp(_REAL, "same", {_REAL: "((a < b) || (a != a)) ? a : b"}),
    "where": CudaOp(_ALL, "same", {_ALL: "a ? b : c"}),
    "select": CudaOp(_ALL, "same", {_ALL: "a ? b : c"}),
}

# clip(x, lo, hi) as the NumPy executor's: with both bounds x is kept on ties and a NaN bound gives
# NaN; with one bound it is maximum/minimum (NaN from either wins)
_CLIP = {
    (True, True): "(b != b) ? b : ((c != c) ? c : ((((a < b) ? b : a) > c) ? c : ((a < b) ? b : a)))",
    (True, False): "((a > b) || (a != a)) ? a : b",
    (False, True): "((a < c) || (a != a)) ? a : c",
}


def _c_expr(template: str, names: dict, dtype: np.dtype) -> str:
    """``template`` with a/b/c renamed and {T} (dtype's C type), {U} (the unsigned type its
    integer arithmetic wraps in), {F} (the float32 suffix of math functions) and {bits} filled."""
    expr = re.sub(r"\b[abc]\b", lambda m: names[m.group(0)], template)
    unsigned = "ax_u64" if dtype.itemsize == 8 else "ax_u32"
    return (expr.replace("{T}", CTYPES[dtype]).replace("{U}", unsigned)
            .replace("{F}", "f" if dtype == np.float32 else "").replace("{bits}", str(dtype.itemsize * 8)))


def _for_kind(exprs: dict, dtype: np.dtype) -> str:
    return next(e for kinds, e in exprs.items() if dtype.kind in kinds)


# -- reductions: one accumulator field each ------------------------------------------------------------

#: reduction -> how two partial results a, b join (in the accumulator's dtype; var/std: ax_chan)
_JOINS = {"sum": _wrapping("+"), "mean": _wrapping("+"), "prod": _wrapping("*"),
          "max": FUSIBLE["maximum"].exprs, "min": FUSIBLE["minimum"].exprs,
          "any": FUSIBLE["logical_or"].exprs, "all": FUSIBLE["logical_and"].exprs}


def _identity(name: str, acc: np.dtype) -> str:
    """The start of a fold, as C (from this table only)."""
    t = CTYPES[acc]
    if name in ("var", "std"):
        return "ax_no_moments()"
    if name in ("any", "all"):
        return "false" if name == "any" else "true"
    if name in ("sum", "mean", "prod"):
        return f"({t}){int(name == 'prod')}"
    if acc.kind == "f":
        return f"{'-' if name == 'max' else ''}AX_INF_{acc.itemsize * 8}"
    info = np.iinfo(acc)
    value = int(info.min if name == "max" else info.max)
    if value == -(1 << 63):
        return "(ax_i64)(-9223372036854775807LL - 1)"  # no literal for it in C
    return f"({t}){value}{'ULL' if acc.kind == 'u' else 'LL'}"


# -- the kernels a region becomes ---------------------------------------------------------------------

class ElementwiseSpec(NamedTuple):
    """A ``cupy.ElementwiseKernel``: writes the region's values used outside it."""
    name: str
    code: str  # the preamble: PRELUDE and the region's functions
    in_params: tuple  # (name, dtype) per operand (an array or a scalar)
    out_params: tuple  # (name, dtype) per stored value
    operation: str


class ReductionSpec(NamedTuple):
    """A ``cupy.ReductionKernel``: every reduction of the region in one pass (a struct accumulator)."""
    name: str
    code: str
    # the operands, ("xe", int64): the element's flat index where it is needed, the stored values
    # ("s0", ...: arrays of the region's shape the map writes), and ("xn", float64): the count reduced
    # (means; it also keeps CuPy off its CUB path, which takes one input and one output)
    in_params: tuple
    written: tuple  # names of the in_params the map writes (CuPy's ``_non_const``)
    out_params: tuple  # (name, dtype) per reduction result
    map_expr: str
    reduce_expr: str
    post_map_expr: str
    identity: str
    reduce_type: str


class _Operand(NamedTuple):
    var: object  # the Var (or Literal) passed
    expand: tuple | None  # a broadcast source's shape with the region's rank (its buffer is reshaped to it)
    value: object  # a Literal's value cast to its dtype (None for a Var)
    dtype: np.dtype


class _Plan(NamedTuple):
    shape: tuple
    axes: tuple | None  # the reductions' axes
    operands: tuple
    stored: tuple  # Vars written elementwise (by the elementwise kernel, or the reduction's map)
    reductions: tuple  # Vars, results of the reduction kernel
    index: bool  # the reduction kernel takes the element's flat index (an int64 array) as "xe"
    elementwise: ElementwiseSpec | None
    reduction: ReductionSpec | None


def _params(entries) -> str:
    return ", ".join(entries)


def plan(region: Region, uses: dict, graph_outputs: set) -> _Plan | None:
    """The kernels of ``region`` (see the module doc): operands, the body, stores, the reduction
    struct; None when the struct would exceed ``ACC_BYTES_MAX``."""
    shape = region.shape
    operands: list[_Operand] = []
    index: dict = {}
    names: dict = {}  # Var -> its C name in the body
    body: list[str] = []
    uses_index = False

    def operand(a, expand=None, dtype=None) -> str:
        """The body name of a value from outside the region (a kernel argument)."""
        if a.__class__ is Var and a in names:
            return names[a]
        key = (a, expand) if a.__class__ is Var else (id(a), dtype)
        if key not in index:
            if a.__class__ is Literal:
                dt = np.dtype(dtype or _dtype_of(a))
                operands.append(_Operand(a, None, np.asarray(a.value).astype(dt)[()], dt))
            else:
                operands.append(_Operand(a, expand, None, a.aval.dtype))
            index[key] = len(operands) - 1
        return f"a{index[key]}"

    def constant(value, dtype) -> str:
        """A kernel argument holding ``value`` (a shape or parameter: never text in the source)."""
        return operand(Literal(value), dtype=np.dtype(dtype))

    def axis_index(axis: int) -> str:
        """The element's index along ``axis``, from its flat (C-order) index e."""
        stride = math.prod(shape[axis + 1:])
        e = "e" if stride == 1 else f"(e / {constant(stride, np.int64)})"
        return e if axis == 0 else f"({e} % {constant(shape[axis], np.int64)})"

    n = 0
    reductions = []  # (Var, primitive name, the value's C name, its dtype, params)
    for eqn in region.eqns:
        name, out = eqn.prim.name, eqn.outputs[0]
        dt = out.aval.dtype
        if name in REDUCERS:
            x = eqn.inputs[0]
            reductions.append((out, name, names[x] if x in names else operand(x), x.aval.dtype, eqn.params))
            continue
        if name in _BROADCASTS:
            src = eqn.inputs[0]
            names[out] = names[src] if src.__class__ is Var and src in names else operand(src, _expanded(eqn))
            continue
        if name == "full_like" or name == "full":
            fill = eqn.params.get("fill_value")
            names[out] = constant(0 if fill is None else fill, dt)
            continue
        if name in NULLARY:
            uses_index = True
            expr = _nullary_expr(eqn, axis_index, constant)
        else:
            args = [names[a] if a.__class__ is Var and a in names else
                    ("" if a.__class__ is Literal and a.value is None else operand(a, dtype=_literal_dtype(eqn, k)))
                    for k, a in enumerate(eqn.inputs)]
            ab = dict(zip("abc", args))
            expr = _expression(eqn, ab)
        names[out] = f"v{n}"
        body.append(f"{CTYPES[dt]} v{n} = ({CTYPES[dt]})({expr});")
        n += 1

    members = {id(e) for e in region.eqns}
    order = {e.outputs[0]: i for i, e in enumerate(region.eqns)}
    stored = tuple(sorted((v for v in region.values if v in graph_outputs
                           or any(id(e) not in members for e in uses.get(v, ()))), key=order.__getitem__))
    if sum(24 if name in ("var", "std") else 8 for _, name, *_ in reductions) > ACC_BYTES_MAX:
        return None
    # a variance's correction (a constant the post-map reads)
    finals = [constant(float(params.get("correction", 0.0)), np.float64) if name in ("var", "std") else None
              for _, name, _, _, params in reductions]
    array_operands = any(op.value is None for op in operands)
    index_input = bool(reductions) and (uses_index or not array_operands)  # (no array: xe gives the shape)
    ew, red = _kernel_code(operands, names, body, stored, reductions, finals, uses_index, index_input)
    return _Plan(shape, region.axes, tuple(operands), stored, tuple(r[0] for r in reductions), index_input, ew, red)


def _expression(eqn, ab: dict) -> str:
    """The C expression of one elementwise equation of its operands' names ``ab``."""
    name = eqn.prim.name
    dt = eqn.outputs[0].aval.dtype
    if name in _CASTS:
        src = _dtype_of(eqn.inputs[0])
        return f"{ab['a']} != 0" if dt.kind == "b" and src.kind != "b" else ab["a"]  # (the statement casts)
    if name == "clip":
        has = tuple(not (a.__class__ is Literal and a.value is None) for a in eqn.inputs[1:3])
        return _c_expr(_CLIP[has], ab, dt)
    if name == "pow" and eqn.inputs[1].__class__ is Literal and float(eqn.inputs[1].value) == 2.0:
        return f"{ab['a']} * {ab['a']}"  # NumPy's fast path for x**2 (exact either way)
    in_dt = _dtype_of(eqn.inputs[1] if name in _WHERE_LIKE else eqn.inputs[0])
    return _c_expr(_for_kind(FUSIBLE[name].exprs, in_dt), ab, in_dt)


def _nullary_expr(eqn, axis_index, constant) -> str:
    """A creation primitive's value at element e."""
    p = eqn.params
    name = eqn.prim.name
    if name == "iota":
        return axis_index(p["dimension"])
    if name == "eye":
        return f"({axis_index(1)} - {axis_index(0)} == {constant(p['k'], np.int64)}) ? 1 : 0"
    if eqn.outputs[0].aval.dtype.kind in "iu":  # arange
        return f"{constant(p['start'], np.int64)} + e * {constant(p['step'], np.int64)}"
    after = p["start"] + p["step"]  # NumPy's float arange: start + i * delta, element 1 is start + step
    start, delta = constant(p["start"], np.float64), constant(after - p["start"], np.float64)
    return f"e == 1 ? {constant(after, np.float64)} : (ax_f64)e * {delta} + {start}"


def _kernel_code(operands, names, body, stored, reductions, finals, uses_index, index_input):
    """(ElementwiseSpec or None, ReductionSpec or None) of a planned region.  The code's own
    names start with ``@R@``, replaced by ``ax`` and the hash of the code (``ax<hash>_values``)."""
    ins = [f"{CTYPES[op.dtype]} a{i}" for i, op in enumerate(operands)]
    e_param = ["ax_i64 e"] if uses_index else []
    s_params = [f"{CTYPES[v.aval.dtype]} *s{k}" for k, v in enumerate(stored)]
    r_params = [f"{CTYPES[x_dt]} *r{k}" for k, (_, _, _, x_dt, _) in enumerate(reductions)]
    stores = [f"*s{k} = {names[v]};" for k, v in enumerate(stored)]
    stores += [f"*r{k} = {value};" for k, (_, _, value, _, _) in enumerate(reductions)]
    lines = [f"AX_FN void @R@_values({_params(e_param + ins + s_params + r_params)}) {{",
             *(f"    {s}" for s in body + stores), "}"]
    xs = [f"x{i}" for i in range(len(operands))]
    ew = red = None
    if stored and not reductions:
        op_args = ["i"] * uses_index + xs + [f"&o{k}" for k in range(len(stored))]
        ew = (tuple((x, op.dtype) for x, op in zip(xs, operands)),
              tuple((f"o{k}", v.aval.dtype) for k, v in enumerate(stored)), f"@R@_values({_params(op_args)});")
    if reductions:
        fields, maps, joins, inits, posts = [], [], [], [], []
        post_params, post_args = [], []
        for k, ((out, name, _, x_dt, _), final) in enumerate(zip(reductions, finals)):
            acc = _acc_dtype(name, x_dt, out.aval.dtype)
            o_t = CTYPES[out.aval.dtype]
            if name in ("var", "std"):
                fields.append(f"    ax_moments g{k};")
                maps.append(f"    t.g{k} = ax_moment((ax_f64)_r{k});")
                joins.append(f"    t.g{k} = ax_chan(x.g{k}, y.g{k});")
                ratio = f"t.g{k}.m2 / (t.g{k}.n - {final})"
                posts.append(f"    *o{k} = ({o_t})({'sqrt(' + ratio + ')' if name == 'std' else ratio});")
            else:
                a_t = CTYPES[acc]
                fields.append(f"    {a_t} g{k};")
                maps.append(f"    t.g{k} = " + (f"_r{k} != 0;" if name in ("any", "all") else f"({a_t})_r{k};"))
                join = _c_expr(_for_kind(_JOINS[name], acc), {"a": f"x.g{k}", "b": f"y.g{k}"}, acc)
                joins.append(f"    t.g{k} = ({a_t})({join});")
                posts.append(f"    *o{k} = ({o_t})(t.g{k} / n);" if name == "mean" else f"    *o{k} = ({o_t})t.g{k};")
            inits.append(f"    t.g{k} = {_identity(name, acc)};")
            if final is not None:
                post_params.append(f"ax_f64 {final}")
                post_args.append("x" + final[1:])
        # the map also writes the stored values (the kernel's writable full-shape inputs s0, s1 ...)
        locals_ = [f"    {CTYPES[x_dt]} _r{k};" for k, (_, _, _, x_dt, _) in enumerate(reductions)]
        call = ["e"] * uses_index + [f"a{i}" for i in range(len(operands))]
        call += [f"s{k}" for k in range(len(stored))] + [f"&_r{k}" for k in range(len(reductions))]
        map_params = (["ax_i64 e"] if index_input else []) + ins + s_params
        lines += ["typedef struct {", *fields, "} @R@_acc;",
                  f"AX_FN @R@_acc @R@_map({_params(map_params)}) {{", *locals_, "    @R@_acc t;",
                  f"    @R@_values({_params(call)});", *maps, "    return t;", "}",
                  "AX_FN @R@_acc @R@_join(@R@_acc x, @R@_acc y) {", "    @R@_acc t;", *joins, "    return t;", "}",
                  "AX_FN @R@_acc @R@_identity(void) {", "    @R@_acc t;", *inits, "    return t;", "}",
                  f"AX_FN void @R@_post({_params(['@R@_acc t', 'ax_f64 n'] + post_params + [f'{CTYPES[r[0].aval.dtype]} *o{k}' for k, r in enumerate(reductions)])}) {{",
                  *posts, "}"]
        written = tuple((f"s{k}", v.aval.dtype) for k, v in enumerate(stored))
        red_ins = (tuple((x, op.dtype) for x, op in zip(xs, operands)) + ((("xe", np.dtype(np.int64)),) if index_input else ())
                   + written + (("xn", np.dtype(np.float64)),))
        map_args = (["xe"] if index_input else []) + xs + [f"&{n}" for n, _ in written]
        red = (tuple(red_ins), tuple(n for n, _ in written), tuple((f"o{k}", r[0].aval.dtype) for k, r in enumerate(reductions)),
               f"@R@_map({_params(map_args)})", "@R@_join(a, b)",
               f"@R@_post({_params(['a', 'xn'] + post_args + [f'&o{k}' for k in range(len(reductions))])})",
               "@R@_identity()", "@R@_acc")
    code = "\n".join(lines) + "\n"
    prefix = "ax" + hashlib.sha256(code.encode()).hexdigest()[:16]
    fill = lambda s: s.replace("@R@", prefix)  # noqa: E731
    code = PRELUDE + fill(code)
    if ew is not None:
        ew = ElementwiseSpec(f"{prefix}_e", code, ew[0], ew[1], fill(ew[2]))
    if red is not None:
        red = ReductionSpec(f"{prefix}_r", code, red[0], red[1], red[2], *(fill(s) for s in red[3:]))
    return ew, red


# -- launching ------------------------------------------------------------------------------------------

def params_text(params, written=()) -> str:
    """A kernel's parameter list as CuPy reads it (``"float32 x0, _non_const bool s0"``)."""
    return ", ".join(f"{'_non_const ' if name in written else ''}{np.dtype(dt).name} {name}" for name, dt in params)


class CupyKernels:
    """Launches regions' kernels with CuPy: one ``ElementwiseKernel``/``ReductionKernel`` per spec,
    made once per process (CuPy compiles each on its first launch and caches the binary on disk)."""

    def __init__(self, cupy):
        self.xp = cupy
        self.compile_errors = (cupy.cuda.compiler.CompileException,)
        self._kernels: dict = {}

    def prepare(self, spec) -> None:
        if spec.name in self._kernels:
            return
        cp = self.xp
        if spec.__class__ is ElementwiseSpec:
            kernel = cp.ElementwiseKernel(params_text(spec.in_params), params_text(spec.out_params), spec.operation,
                                          name=spec.name, preamble=spec.code, options=NVRTC_OPTIONS)
        else:
            kernel = cp.ReductionKernel(params_text(spec.in_params, spec.written), params_text(spec.out_params), spec.map_expr,
                                        spec.reduce_expr, spec.post_map_expr, spec.identity, name=spec.name,
                                        reduce_type=spec.reduce_type, preamble=spec.code, options=NVRTC_OPTIONS)
        self._kernels[spec.name] = kernel

    def elementwise(self, spec: ElementwiseSpec, args: list, outs: list) -> None:
        self._kernels[spec.name](*args, *outs)

    def reduction(self, spec: ReductionSpec, args: list, outs: list, axes: tuple) -> None:
        self._kernels[spec.name](*args, *outs, axis=axes)


_REGION = RegionPlaceholder("cupy_fused_region")  # an equation of it runs its RegionRunner


class RegionRunner:
    """Runs one region's kernels on buffers; op by op (``fallback``) if a kernel does not compile,
    which is recorded in the executor's ``failed``."""

    def __init__(self, ex, plan_: _Plan, kernels, fallback):
        self.ex = ex
        self.plan = plan_
        self.kernels = kernels
        self.fallback = fallback
        self.failed: str | None = None
        self.ran = 0  # calls that ran the kernels
        self.positions = operand_slots(plan_.operands, _inputs(plan_))
        for spec in (plan_.elementwise, plan_.reduction):
            if spec is not None:
                kernels.prepare(spec)

    @property
    def specs(self) -> tuple:
        return tuple(s for s in (self.plan.elementwise, self.plan.reduction) if s is not None)

    def __call__(self, *bufs):
        if self.failed is not None:
            return self.fallback(*bufs)
        p = self.plan
        xp = self.kernels.xp
        args = []
        for op, pos in zip(p.operands, self.positions):
            if pos is None:
                args.append(op.value)
            else:
                b = bufs[pos]
                args.append(b if op.expand is None else b.reshape(op.expand))
        try:
            outs = [xp.empty(p.shape, v.aval.dtype) for v in p.stored]
            if p.elementwise is not None:
                self.kernels.elementwise(p.elementwise, args, outs)
            results = []
            if p.reduction is not None:
                # every array at the region's shape (views): the reduction runs over it, not a broadcast of less
                red_args = [a if pos is None else xp.broadcast_to(a, p.shape) for a, pos in zip(args, self.positions)]
                if p.index:
                    red_args.append(xp.arange(math.prod(p.shape), dtype=np.int64).reshape(p.shape))
                red_args += outs  # written by the map: one pass
                red_args.append(np.float64(math.prod(p.shape[i] for i in p.axes)))
                kept = tuple(d for i, d in enumerate(p.shape) if i not in p.axes)
                results = [xp.empty(kept, v.aval.dtype) for v in p.reductions]
                self.kernels.reduction(p.reduction, red_args, results, p.axes)
        except self.kernels.compile_errors as e:
            first = str(e).strip().splitlines()
            self.failed = f"{type(e).__name__}: {first[0] if first else ''}"
            self.ex.failed["fused region", "reduction" if p.reduction is not None else "elementwise"] = self.failed
            return self.fallback(*bufs)
        self.ran += 1
        return outs + [r.reshape(v.aval.shape) for r, v in zip(results, p.reductions)]


def _inputs(plan_: _Plan) -> tuple:
    """The region's input Vars, each once (``region_inputs`` of its operands)."""
    return region_inputs(plan_.operands)


def fuse(ex, graph: Graph, kernels=None, min_size: int | None = None):
    """The executable of ``graph`` on ``ex``: regions as fused kernels launched by ``kernels``
    (``CupyKernels``; the tests pass one that runs the same code on the CPU), the rest as ``ex``'s
    implementations (a straight-line Python function of the input buffers).  ``fn.regions`` holds
    the RegionRunners (their ``plan``, ``specs``, ``failed``); regions under ``min_size`` elements
    (default: the executor's ``fusion_min_size``) run op by op."""
    from arrayx.core.lowering import straight_line

    if kernels is None:
        kernels = ex.fused_kernels()
    steps = regions_of(graph, ex.fusion_min_size if min_size is None else min_size, FUSIBLE)
    uses = uses_of(graph)
    graph_outputs = {o for o in graph.outputs if o.__class__ is Var}
    runners = []

    def lower_region(step, before):
        plan_ = plan(step, uses, graph_outputs)
        if plan_ is None:
            return None  # op by op
        ins = _inputs(plan_)
        outs = plan_.stored + plan_.reductions
        fallback = straight_line(ex, Graph(ins, (), (), step.eqns, outs, device=graph.device))
        runner = RegionRunner(ex, plan_, kernels, fallback)
        runners.append(runner)
        return [Equation(_REGION, ins, {"runner": runner}, outs)]

    fn = straight_line(ex, rewrite_regions(graph, steps, lower_region))
    fn.regions = runners
    return fn
