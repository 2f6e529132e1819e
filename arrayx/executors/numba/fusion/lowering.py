"""jit on the Numba executor: a staged graph's fusible regions become generated ``@njit`` kernels.

``fuse(executor, graph)`` partitions the graph into **regions** (``executors.common.fusion``, shared with
the CuPy and Dask lowerings): maximal runs of elementwise equations of one shape (the table
``FUSIBLE``: arithmetic, comparisons, transcendentals, ``where``, ``clip``, casts, and
``broadcast_to`` of values from outside), ended by reductions
over one block of consecutive axes (``REDUCERS``: sum/prod/max/min/any/all/mean/var/std).
Each region runs as one kernel: one pass over memory, values kept in registers, only what is
used outside the region stored.  Everything else (matmul, sort, linalg, fft, gather/scatter,
control flow ...) runs between the kernels as the executor's ordinary implementations, through
the same straight-line lowering as the NumPy executor (``_lowering.straight_line``).

A region of shape S is viewed as (outer, mid, inner), with ``mid`` the block of axes that its
reductions reduce (or along which a broadcast operand repeats).  Its operands are, by shape:
full (S: flat, C-contiguous), kept (S with ones on the block: one value per (outer, inner)),
along (ones off the block: one value per position in mid), or scalar (one element, passed by
value: literals are cast to their operands' dtype); any other broadcast, or a non-contiguous
array, is copied to full first (except transposed full operands: ``RegionRunner._run_transposed``).
Work items are (outer row, split of mid); ``mid`` runs in blocks whose values go to a small
buffer folded by ``numba.fusion.fold`` (float sums accumulate in float64, var/std combine blocks
with Chan's update: one pass).
Every kernel runs chunks of its range that the threads entering it claim (``numba.team``: the
caller and a team of workers, each entering once per call), and asks for 512-bit vector loops where
the CPU runs them at full speed (``numba.vectors``).
Kernels are compiled without fast-math flags: every operation rounds as it does eagerly (no
contraction into fused multiply-adds), which keeps code that emulates exact arithmetic (the
random module's float conversions) bit-identical under jit; the math functions they call keep
their own flags.  The one contraction is explicit: where the CPU has FMA, ``numba.fusion.contract``
first replaces the random module's exact fma emulations by ``numba_fma`` (``llvm.fma``).

The generated source is built from this module's templates, primitive names of the table and
dtype names only: values are named from positions (``a3``, ``v7``), literals are kernel
arguments, never text, so no user-supplied string reaches it.  A kernel's file is named from
the hash of its source (``fused_<hash>``), so its source *is* its region's signature (ops,
dtypes, operand layouts, outputs), and Numba's disk cache next to it (``numba.kernels``)
loads it in a new process without compiling; the cache keeps the newest ``CACHE_MAX_KERNELS``
fused kernels (``ARRAYX_NUMBA_FUSED_KERNELS``), older ones are removed.
"""
from __future__ import annotations

import math
import re
import textwrap
from typing import NamedTuple

import numpy as np

from arrayx.executors.numba.fusion.run import (  # noqa: F401 (kernel_stats, _prune: used from here)
    _FUSED,
    CACHE_MAX_KERNELS,
    RegionRunner,
    _Plan,
    _inputs,
    _prune,
    kernel_stats,
)
from arrayx.executors.common.fusion import (  # noqa: F401 (the partition, shared with the CuPy and Dask lowerings)
    _BROADCASTS,
    _CASTS,
    _DTYPES,
    _WHERE_LIKE,
    NULLARY,
    REDUCERS,
    Aliases,
    Region,
    _dtype_of,
    _expanded,
    _literal_dtype,
)
from arrayx.executors.common.fusion import acc_dtype as _acc_dtype
from arrayx.executors.common.fusion import regions_of as _regions_of
from arrayx.executors.common.fusion import rewrite_regions
from arrayx.core.graph import Equation, Graph, Literal, Var, uses_of

__all__ = ["FUSIBLE", "REDUCERS", "fuse", "regions_of", "kernel_stats", "CACHE_MAX_KERNELS"]

_FLOAT = "f"
_ALL = "biuf"


class FusedOp(NamedTuple):
    kinds: str  # dtype kinds of the operands fused (others: the op runs between kernels)
    result: str  # "same" (the operand dtype) or "bool"
    expr: str  # of a, b, c (the operands); T(...) is the operand dtype; {bits} its width


def _fusible_table() -> dict:
    """primitive name -> FusedOp: the eager kernels' expressions, plus libm-backed float functions."""
    from arrayx.executors.numba import kernels as K

    table = {name: FusedOp(kinds, res, expr) for name, (kinds, res, expr) in {**K.UNARY, **K.BINARY}.items()}
    libm = {  # Numba's math module: the C library, one element at a time (correct, not vectorised)
        "sin": "math.sin(a)", "cos": "math.cos(a)", "tan": "math.tan(a)", "log": "math.log(a)",
        "log1p": "math.log1p(a)", "log2": "math.log2(a)", "log10": "math.log10(a)",
        "sinh": "math.sinh(a)", "cosh": "math.cosh(a)", "asin": "math.asin(a)", "acos": "math.acos(a)",
        "atan": "math.atan(a)", "asinh": "math.asinh(a)", "acosh": "math.acosh(a)",
        "atanh": "math.atanh(a)", "atan2": "math.atan2(a, b)", "hypot": "math.hypot(a, b)",
        "pow": "a ** b",
    }
    table.update({name: FusedOp(_FLOAT, "same", expr) for name, expr in libm.items()})
    # where(cond, x1, x2): kinds are x1's; clip has its own expressions (see _clip_expr)
    table["where"] = table["select"] = FusedOp(_ALL, "same", "b if a else c")
    # NumPy's shifts: a count outside [0, bits) gives 0 (right shift of a negative value: -1)
    in_range = "(b >= T(0)) & (b < T({bits}))"
    table["bitwise_left_shift"] = FusedOp("iu", "same", f"T(a << b) if {in_range} else T(0)")
    table["bitwise_right_shift"] = FusedOp("iu", "same", f"T(a >> b) if {in_range} else (T(0) if a >= T(0) else T(-1))")
    table["numba_fma"] = FusedOp(_FLOAT, "same", "nm.fma(a, b, c)")  # staged by _numba_contract only
    return table


#: primitive name -> FusedOp (filled on first use: it reads _numba_kernels' tables)
FUSIBLE: dict[str, FusedOp] = {}

# clip(x, lo, hi) as array-api-compat's (the NumPy executor's): with both bounds x is kept on
# ties and a NaN bound gives NaN; with one bound it is maximum/minimum (NaN from either wins)
_CLIP = {
    (True, True): "b if b != b else (c if c != c else (c if (b if a < b else a) > c else (b if a < b else a)))",
    (True, False): "a if (a > b) | (a != a) else b",
    (False, True): "a if (a < c) | (a != a) else c",
}

#: fewest elements a region needs to run as a kernel (below: op by op, as NumPy is as fast;
#: the executor's ``fusion_min_size``); parallel kernels from PARALLEL_MIN_SIZE elements
FUSION_MIN_SIZE = 1 << 12
PARALLEL_MIN_SIZE = 1 << 16
#: most equations in one fused kernel; a longer run is split into several kernels.  Numba's and
#: LLVM's time grows faster than linearly with a kernel's size (one kernel of 200 ops took 3 s to
#: compile, of 1,000 ops 11 s, of 4,000 ops 70 s and 1 GB), while each split costs one more pass
#: over memory: see benchmarks/bench_numba_region_size.py for the figures behind this value
MAX_REGION_OPS = 64
_BLOCK = 1024  # values folded at a time (the fold buffer stays in L1)

_COMPARISONS = frozenset({"equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "isnan",
                          "logical_and", "logical_or", "logical_xor", "logical_not"})
#: result dtype kind -> operations whose Numba result already has the operands' dtype, left without
#: a cast in the kernel (each cast is a call Numba types and lowers: ~30% of a small kernel's compile).
#: Not integers: Numba computes int8 + int8 in int64.
_UNCAST = {
    "f": frozenset({"add", "subtract", "multiply", "divide", "negative", "positive", "square", "maximum",
                    "minimum", "where", "exp", "expm1", "tanh", "numba_fma"}),
    "b": _COMPARISONS,
}

#: shifts by a literal count in [0, bits), which the mask leaves as it is: LLVM then vectorises
#: the shift (threefry's rotations: ~3x faster than testing the count per element as the table does)
_SHIFTS = {"bitwise_left_shift": "T(a << (b & T({mask})))", "bitwise_right_shift": "T(a >> (b & T({mask})))"}


def _literal_count_in_range(eqn) -> bool:
    count = eqn.inputs[1]
    return count.__class__ is Literal and 0 <= int(count.value) < eqn.outputs[0].aval.dtype.itemsize * 8


def regions_of(graph: Graph, min_size: int = FUSION_MIN_SIZE) -> list:
    """The steps of ``graph`` with this module's table of fusible primitives (``executors.common.fusion``)."""
    if not FUSIBLE:
        FUSIBLE.update(_fusible_table())
    return _regions_of(graph, min_size, FUSIBLE, MAX_REGION_OPS)


# -- code generation ------------------------------------------------------------------------------

_HEADER = '''\
# Generated by arrayx.executors.numba.fusion.lowering (a fused region); do not edit.
import numpy as np
from numba import njit
'''
# imported only by the kernels that use them (a cached kernel's module still runs its imports)
_IMPORTS = {"math.": "import math\n", "fb.": "from arrayx.executors.numba.fusion import fold as fb\n",
            "nm.": "from arrayx.executors.numba import math as nm\n",
            "ptr.": "from arrayx.executors.numba.fusion import pointers as ptr\n",
            "team.": "from arrayx.executors.numba import team as team\n",
            "vec.": "from arrayx.executors.numba import vectors as vec\n"}
_DTYPE_NAMES = "".join(f"T_{d} = np.{d if d != 'bool' else 'bool_'}\n" for d in _DTYPES)

# Every kernel runs the chunks of its range (elements, or work items) between the boundaries
# ``cuts``, each claimed from ``claims`` by whichever thread entering the kernel comes to it first,
# until none is left (``numba.team``: no parfors compile, no threading layer).
_CLAIMS = '''
    chunks = cuts.shape[0] - 1
    c = team.claim(claims)
    while c < chunks:
{loop}
        team.finish(claims)
        c = team.claim(claims)
'''

# An elementwise region with only full and scalar operands is one flat loop over elements
# (the smallest kernel: compile time grows with the code Numba types and LLVM optimises).
_FLAT = '''
@njit(cache=False, nogil=True, error_model="numpy", no_cfunc_wrapper=True, _nrt=False)
def kernel(claims, cuts{args}):
{width}{setup}{claims}'''

_FLAT_LOOP = '''\
        for i in range(ptr.load(cuts, c), ptr.load(cuts, c + 1)):
{body}'''

# Work items are (outer row, split of mid).  Rows (inner == 1) go in blocks through fold buffers;
# columns (inner > 1) update one accumulator per column, vectorised across the columns.
_KERNEL = '''
@njit(cache=False, nogil=True, error_model="numpy", no_cfunc_wrapper=True)
def kernel(claims, cuts, outer, mid, inner, step, nsplit{args}):
{width}{setup}{claims}'''

_ITEMS_LOOP = '''\
        for w in range(ptr.load(cuts, c), ptr.load(cuts, c + 1)):
            o = w // nsplit
            s = w - o * nsplit
            lo = s * step
            hi = min(lo + step, mid)
{branch}'''

_ROWS = '''\
        base = o * mid + lo
{row_setup}
        for r0 in range(0, hi - lo, {block}):
            nb = min({block}, hi - lo - r0)
            rb = base + r0
            for i in range(nb):
{row_body}
{row_folds}
{row_results}
'''

_COLUMNS = '''\
        kb = o * inner
{col_setup}
        for k in range(lo, hi):
            rb = (o * mid + k) * inner
{col_row_setup}
            for j in range(inner):
{col_body}
'''


class _Operand(NamedTuple):
    var: object  # the Var (or Literal) passed
    layout: str  # "f" full, "k" kept, "m" along mid, "s" scalar
    broadcast: bool  # a broadcast source (copied to full when its shape is neither "k" nor "m")
    value: object  # a Literal's value cast to its operands' dtype (None for a Var)
    expand: tuple | None  # a broadcast source's shape with the region's rank (its buffer is reshaped to it)


def _indent(lines, n: int) -> str:
    return "\n".join(" " * n + line for line in lines) if lines else " " * n + "pass"


def _subst(expr: str, names: dict, dtype: np.dtype) -> str:
    """``expr`` with its operands a/b/c renamed and T/{bits} made ``dtype``'s."""
    expr = expr.replace("{bits}", str(dtype.itemsize * 8))
    expr = re.sub(r"\bT\(", f"T_{dtype.name}(", expr)
    return re.sub(r"\b[abc]\b", lambda m: names[m.group(0)], expr)


def _block_of(region: Region, sources) -> tuple[int, int]:
    """(first, last) axes of the region's block: the reduced axes, else where the first
    broadcast operand repeats (when that is one block), else every axis."""
    ndim = len(region.shape)
    if region.axes is not None:
        return region.axes[0], region.axes[-1]
    for shape in sources:
        if math.prod(shape) <= 1:
            continue
        ones = [i for i, (d, s) in enumerate(zip(shape, region.shape)) if d != s]
        if ones and ones[-1] - ones[0] + 1 == len(ones) and all(shape[i] == 1 for i in ones):
            return ones[0], ones[-1]
        break
    return 0, ndim - 1


def _block_dtype(name: str, x: np.dtype, out: np.dtype) -> np.dtype:
    """The dtype a block of values is folded in: float32 sums, means and variances fold each block
    in float32 (eight lanes, as NumPy's pairwise sum does) and join the blocks in float64."""
    if name in ("sum", "mean", "var", "std") and x == out == np.float32:
        return x
    return _acc_dtype(name, x, out)


def plan(region: Region, uses: dict, graph_outputs: set, donatable=frozenset()) -> _Plan:
    """The kernel of ``region``: operands, body, stores and folds (see the module doc).
    A stored output may be written into the buffer of an operand in ``donatable`` (same dtype,
    full, not broadcast): the kernel then reads and writes it through that operand's own argument."""
    shape = region.shape
    ndim = len(shape)
    operands: list[_Operand] = []
    index: dict = {}
    names: dict = {}  # Var -> the name of its value in the body
    row_body: list[str] = []  # statements per element; operand loads come first
    sources = [_expanded(e) for e in region.eqns if e.prim.name in _BROADCASTS and e.inputs[0].__class__ is Var]
    first, last = _block_of(region, sources)
    keep_shape = tuple(1 if first <= i <= last else d for i, d in enumerate(shape))
    # the other way an operand may repeat: one value per position in the block (euclidean distances'
    # ``D += XX; D += YY``, with XX (n, 1) kept and YY (1, m) along the block): read where it is
    mid_shape = tuple(d if first <= i <= last else 1 for i, d in enumerate(shape))

    def operand(a, expand=None, dtype=None) -> str:
        """The body name of an operand from outside the region (loaded once per element); a
        broadcast source comes with its ``expand``ed shape (one operand per way it is broadcast)."""
        if a.__class__ is Var and a in names:
            return names[a]
        key = (a, expand) if a.__class__ is Var else (id(a), dtype)
        if key not in index:
            value = None
            if a.__class__ is Literal:
                layout, value = "s", np.asarray(a.value).astype(dtype or _dtype_of(a))[()]
            elif math.prod(a.aval.shape) == 1:
                layout = "s"
            elif tuple(a.aval.shape) == shape:
                layout = "f"
            else:
                padded = expand or (1,) * (ndim - len(a.aval.shape)) + tuple(a.aval.shape)
                layout = "k" if padded == keep_shape else "m" if padded == mid_shape else "f"
            index[key] = len(operands)
            operands.append(_Operand(a, layout, expand is not None, value, expand))
        return f"a{index[key]}"

    def constant(value, dtype) -> str:
        """A kernel argument holding ``value`` (a shape or parameter: never text in the source)."""
        return operand(Literal(value), dtype=np.dtype(dtype))

    n = 0
    reductions = []
    uses_index = False  # whether the body reads the element's flat index e (creation primitives)
    for eqn in region.eqns:
        name = eqn.prim.name
        out = eqn.outputs[0]
        dt = out.aval.dtype
        if name in REDUCERS:
            x = eqn.inputs[0]
            value = names[x] if x in names else operand(x)
            reductions.append((out, name, _acc_dtype(name, x.aval.dtype, dt), value, eqn.params, x.aval.dtype))
            continue
        if name in _BROADCASTS:
            src = eqn.inputs[0]
            names[out] = names[src] if src.__class__ is Var and src in names else operand(src, _expanded(eqn))
            continue
        if name == "full_like":
            names[out] = constant(eqn.params["fill_value"], dt)
            continue
        if name in NULLARY:
            expr = _nullary_expr(eqn, shape, constant)
            if expr is None:  # a constant: no statement in the body
                names[out] = constant(0 if eqn.params["fill_value"] is None else eqn.params["fill_value"], dt)
                continue
            uses_index = True
            value = f"v{n}"
            n += 1
            row_body.append(f"{value} = T_{dt.name}({expr})")
            names[out] = value
            continue
        args = [names[a] if a.__class__ is Var and a in names else
                ("None" if a.__class__ is Literal and a.value is None else
                 operand(a, dtype=_literal_dtype(eqn, k))) for k, a in enumerate(eqn.inputs)]
        ab = dict(zip("abc", args))
        if name in _CASTS:
            src_kind = eqn.inputs[0].aval.dtype.kind if eqn.inputs[0].__class__ is Var else "f"
            expr = f"({ab['a']} != 0)" if dt.kind == "b" and src_kind != "b" else f"T_{dt.name}({ab['a']})"
        elif name == "clip":
            has = tuple(not (a.__class__ is Literal and a.value is None) for a in eqn.inputs[1:3])
            expr = _subst(_CLIP[has], ab, dt)
        elif name == "pow" and eqn.inputs[1].__class__ is Literal and float(eqn.inputs[1].value) == 2.0:
            expr = f"{ab['a']} * {ab['a']}"  # NumPy's fast path for x**2 (exact either way)
        elif name in _SHIFTS and _literal_count_in_range(eqn):
            expr = _subst(_SHIFTS[name].replace("{mask}", str(dt.itemsize * 8 - 1)), ab, dt)
        else:
            op = FUSIBLE[name]
            in_dt = _dtype_of(eqn.inputs[1] if name in _WHERE_LIKE else eqn.inputs[0])
            expr = _subst(op.expr, ab, in_dt)
        value = f"v{n}"
        n += 1
        row_body.append(f"{value} = {expr}" if name in _UNCAST.get(dt.kind, ()) else f"{value} = T_{dt.name}({expr})")
        names[out] = value

    members = {id(e) for e in region.eqns}
    stored = tuple(v for v in region.values if v in graph_outputs
                   or any(id(e) not in members for e in uses.get(v, ())))
    # keep the order of definition (outputs are returned in it)
    order = {e.outputs[0]: i for i, e in enumerate(region.eqns)}
    stored = tuple(sorted(stored, key=order.__getitem__))
    outer = math.prod(shape[:first])
    mid = math.prod(shape[first:last + 1])
    inner = math.prod(shape[last + 1:])
    flat = not reductions and all(op.layout not in ("k", "m") for op in operands)
    donors = _donors(operands, stored, donatable)
    source = (_flat_source(operands, row_body, stored, names, uses_index, donors) if flat
              else _source(operands, names, row_body, stored, reductions, inner == 1, uses_index, donors))
    # the same region on transposed operands (X.T of a C array: RegionRunner._run_transposed), where the
    # body does not read the flat index: elementwise, the flat kernel over their memory order; a 2-D
    # region with its block on axis 1 (rows), the columns kernel over (1, mid, outer)
    transposed = None
    if not uses_index:
        if flat:
            transposed = source
        elif ndim == 2 and first == last == 1 and outer > 1:
            transposed = _source(operands, names, row_body, stored, reductions, False, uses_index, donors)
    return _Plan(source, tuple(operands), stored,
                 tuple((v, name, acc, params) for v, name, acc, _, params, _ in reductions), outer, mid, inner, flat,
                 donors, transposed)


def _donors(operands, stored, donatable) -> dict:
    """stored output index -> the operand whose buffer it takes (each operand at most once)."""
    donors: dict = {}
    for k, v in enumerate(stored):
        for i, op in enumerate(operands):
            a = op.var
            if (i not in donors.values() and a.__class__ is Var and a in donatable and op.layout == "f"
                    and not op.broadcast and a.aval.dtype == v.aval.dtype):
                donors[k] = i
                break
    return donors


_FOLDS = {"sum": "sum_block", "mean": "sum_block", "prod": "prod_block", "max": "max_block",
          "min": "min_block", "any": "any_block", "all": "all_block"}
_COL_FOLDS = {  # (accumulator p, value t) -> the update of one column
    "sum": "{p}[j] += {t}", "mean": "{p}[j] += {t}", "prod": "{p}[j] *= {t}",
    "max": "{p}[j] = {p}[j] if ({p}[j] > {t}) | ({p}[j] != {p}[j]) else {t}",
    "min": "{p}[j] = {p}[j] if ({p}[j] < {t}) | ({p}[j] != {p}[j]) else {t}",
    "any": "{p}[j] |= {t}", "all": "{p}[j] &= {t}",
}


def _init(name: str, acc: np.dtype) -> str:
    """The start of a fold, as text (from this table only)."""
    if name in ("sum", "mean", "var", "std"):
        return f"T_{acc.name}(0)"
    if name == "prod":
        return f"T_{acc.name}(1)"
    if name in ("any", "all"):
        return "False" if name == "any" else "True"
    if acc.kind == "f":
        return f"T_{acc.name}({'-' if name == 'max' else ''}np.inf)"
    info = np.iinfo(acc)
    return f"T_{acc.name}({int(info.min if name == 'max' else info.max)})"


def _module(kernel: str) -> str:
    """The kernel's module: the header, the imports its text uses, the dtype names."""
    imports = "".join(line for key, line in _IMPORTS.items() if key in kernel)
    return _HEADER + imports + "\n" + _DTYPE_NAMES + kernel


def _axis_index(shape: tuple, axis: int, constant) -> str:
    """The element's index along ``axis`` of ``shape``, from its flat (C-order) index e."""
    stride = math.prod(shape[axis + 1:])
    e = "e" if stride == 1 else f"(e // {constant(stride, np.int64)})"
    return e if axis == 0 else f"({e} % {constant(shape[axis], np.int64)})"


def _nullary_expr(eqn, shape: tuple, constant) -> str | None:
    """A creation primitive's value at element e (None for ``full``: one constant)."""
    p, dt = eqn.params, eqn.outputs[0].aval.dtype
    name = eqn.prim.name
    if name == "full":
        return None
    if name == "iota":
        return _axis_index(shape, p["dimension"], constant)
    if name == "eye":
        diagonal = f"{_axis_index(shape, 1, constant)} - {_axis_index(shape, 0, constant)} == {constant(p['k'], np.int64)}"
        return f"1 if {diagonal} else 0"
    if dt.kind in "iu":  # arange
        return f"{constant(p['start'], np.int64)} + e * {constant(p['step'], np.int64)}"
    after = p["start"] + p["step"]  # NumPy's float arange: start + i * delta, element 1 is start + step
    start, delta = constant(p["start"], np.float64), constant(after - p["start"], np.float64)
    return f"{constant(after, np.float64)} if e == 1 else T_float64(e) * {delta} + {start}"


def _flat_source(operands, body, stored, names, uses_index=False, donors=None) -> str:
    args = [f"x{i}" for i in range(len(operands))] + [f"o{i}" for i in range(len(stored))]
    setup, loads = [], []
    for i, op in enumerate(operands):
        if op.layout == "s":
            setup.append(f"a{i} = x{i}")
        else:  # by flat index from w0, no slice (see numba.fusion.pointers)
            loads.append(f"a{i} = ptr.load(x{i}, i)")
    # an output written into an operand's buffer goes through that operand's argument: LLVM sees one
    # pointer (two arrays that may overlap fail its runtime check and run the scalar loop: ~6x slower)
    donors = donors or {}
    stores = [f"ptr.store({f'x{donors[k]}' if k in donors else f'o{k}'}, i, {names[v]})" for k, v in enumerate(stored)]
    loads = (["e = i"] if uses_index else []) + loads
    loop = _FLAT_LOOP.format(body=_indent(loads + body + stores, 12))
    return _module(_FLAT.format(args="".join(", " + a for a in args), width=_width(), setup=_indent(setup, 4),
                                claims=_CLAIMS.format(loop=loop)))


def _source(operands, names, body, stored, reductions, rows: bool, uses_index=False, donors=None) -> str:
    args = [f"x{i}" for i in range(len(operands))] + [f"o{i}" for i in range(len(stored))]
    row_setup, row_loads, col_setup, col_row_setup, col_loads = [], [], [], [], []
    for i, op in enumerate(operands):
        if op.layout == "s":
            row_setup.append(f"a{i} = x{i}")
            col_setup.append(f"a{i} = x{i}")
        elif op.layout == "k":  # by flat index, no slices (see numba.fusion.pointers)
            row_setup.append(f"a{i} = ptr.load(x{i}, o)")
            col_loads.append(f"a{i} = ptr.load(x{i}, kb + j)")
        elif op.layout == "m":  # one value per position along mid
            row_loads.append(f"a{i} = ptr.load(x{i}, lo + r0 + i)")
            col_row_setup.append(f"a{i} = ptr.load(x{i}, k)")
        else:
            row_loads.append(f"a{i} = ptr.load(x{i}, rb + i)")
            col_loads.append(f"a{i} = ptr.load(x{i}, rb + j)")
    donors = donors or {}
    # a donated output through its operand's argument (see _flat_source)
    targets = [f"x{donors[k]}" if k in donors else f"o{k}" for k in range(len(stored))]
    row_stores = [f"ptr.store({t}, rb + i, {names[v]})" for t, v in zip(targets, stored)]
    col_stores = [f"ptr.store({t}, rb + j, {names[v]})" for t, v in zip(targets, stored)]
    row_folds, row_results, kernel_setup = [], [], []
    for r, (out, name, acc, value, _, x_dtype) in enumerate(reductions):
        blk = _block_dtype(name, x_dtype, out.aval.dtype)
        cast = f"({value} != 0)" if name in ("any", "all") else f"T_{acc.name}({value})"
        args.append(f"p{r}")
        kernel_setup.append(f"t{r} = np.empty({_BLOCK}, T_{blk.name})")  # once per call, not per work item
        # no cast where the value has the block's dtype already (each cast is typed and lowered: compile time)
        row_stores.append(f"t{r}[i] = " + (cast if name in ("any", "all") else value if x_dtype == blk
                                            else f"T_{blk.name}({value})"))
        col_setup.append(f"p{r}c = p{r}[o, s]")
        if name in ("var", "std"):
            args.append(f"q{r}")
            row_setup += [f"c{r} = T_{acc.name}(0)", f"m{r} = T_{acc.name}(0)", f"d{r} = T_{acc.name}(0)"]
            row_folds += [f"bm{r}, bq{r} = fb.mean_m2_block(t{r}, nb, T_{blk.name}(nb), T_{blk.name}(0))",
                          f"c{r}, m{r}, d{r} = fb.chan_join(c{r}, m{r}, d{r}, T_{acc.name}(nb), "
                          f"T_{acc.name}(bm{r}), T_{acc.name}(bq{r}))"]
            row_results += [f"p{r}[o, s, 0] = m{r}", f"q{r}[o, s, 0] = d{r}"]
            col_setup += [f"q{r}c = q{r}[o, s]", f"p{r}c[:] = 0", f"q{r}c[:] = 0"]
            # Welford per column: mean and sum of squared deviations, rows lo .. k
            col_row_setup.append(f"n{r} = T_{acc.name}(k - lo + 1)")
            col_stores += [f"e{r} = {cast} - p{r}c[j]", f"p{r}c[j] += e{r} / n{r}",
                           f"q{r}c[j] += e{r} * ({cast} - p{r}c[j])"]
        else:
            row_setup.append(f"g{r} = {_init(name, acc)}")
            row_folds.append(f"g{r} = fb.{_FOLDS[name]}(t{r}, nb, g{r})" if blk == acc else
                             f"g{r} += T_{acc.name}(fb.{_FOLDS[name]}(t{r}, nb, T_{blk.name}(0)))")
            row_results.append(f"p{r}[o, s, 0] = g{r}")
            col_setup.append(f"p{r}c[:] = {_init(name, acc)}")
            col_stores.append(_COL_FOLDS[name].format(p=f"p{r}c", t=cast))
    if uses_index:  # the element's flat index: rb is the first element of the block (rows) or row (columns)
        row_loads.insert(0, "e = rb + i")
        col_loads.insert(0, "e = rb + j")
    if rows:
        branch = _ROWS.format(block=_BLOCK, row_setup=_indent(row_setup, 8),
                              row_body=_indent(row_loads + body + row_stores, 16),
                              row_folds=_indent(row_folds, 12), row_results=_indent(row_results, 8))
    else:
        branch = _COLUMNS.format(col_setup=_indent(col_setup, 8), col_row_setup=_indent(col_row_setup, 12),
                                 col_body=_indent(col_loads + body + col_stores, 16))
    setup = _indent(kernel_setup, 4) if rows and kernel_setup else ""
    loop = _ITEMS_LOOP.format(branch=textwrap.indent(branch, "    "))
    return _module(_KERNEL.format(args="".join(", " + a for a in args), width=_width(), setup=setup,
                                  claims=_CLAIMS.format(loop=loop)))


def _width() -> str:
    from arrayx.executors.numba.vectors import kernel_line  # imports Numba: only when generating

    return kernel_line()


def fuse(ex, graph: Graph):
    """The executable of ``graph`` on the Numba executor ``ex``: regions as fused kernels, the rest
    as the executor's implementations (a straight-line Python function of the input buffers).
    ``fn.regions`` holds the RegionRunners (their ``source``, ``failed``)."""
    from arrayx.core.lowering import straight_line
    from arrayx.executors.numba.fusion.contract import contract_fmas

    graph = contract_fmas(graph)  # exact fma emulations -> one hardware fma (where the CPU has one)
    steps = regions_of(graph, ex.fusion_min_size)
    uses = uses_of(graph)
    graph_outputs = {o for o in graph.outputs if o.__class__ is Var}
    aliases = Aliases(steps)  # values that may share memory (views), values handed to callbacks
    fresh: set = set()  # Vars whose buffers a fused kernel allocated
    runners = []

    def lower_region(step, done):  # done: ids of the equations of the steps before this one
        members = {id(e) for e in step.eqns}

        def live_after(u, itself, members=members):
            """Whether ``u`` is read after this region (a view of the donor: also by this region)."""
            return any(id(e) not in done and not (itself and id(e) in members) for e in uses.get(u, ()))

        # buffers that nothing after this region reads, through no view or callback either
        donatable = {a for a in fresh if aliases.reusable(a, live_after, graph_outputs)}
        plan_ = plan(step, uses, graph_outputs, donatable)
        ins = _inputs(plan_)
        outs = plan_.stored + tuple(v for v, *_ in plan_.reductions)
        fallback = straight_line(ex, Graph(ins, (), (), step.eqns, outs, device=graph.device))
        runner = RegionRunner(ex, step, plan_, fallback)
        runners.append(runner)
        fresh.update(plan_.stored)
        return [Equation(_FUSED, ins, {"runner": runner}, outs)]

    fn = straight_line(ex, rewrite_regions(graph, steps, lower_region))
    fn.regions = runners
    return fn
