"""The fusible regions of a staged graph, shared by the lowerings that fuse (Numba, CuPy, Dask).

``regions_of(graph, min_size, fusible)`` partitions a graph into **regions**: maximal runs of
elementwise equations of one shape (the lowering's table ``fusible``, plus ``where``, ``clip``,
casts, creation primitives and ``broadcast_to`` of values from outside), ended by reductions
over one block of consecutive axes (``REDUCERS``: sum/prod/max/min/any/all/mean/var/std), and
the equations that run between them.  What a region becomes (one ``@njit`` kernel, CUDA kernels,
one blockwise task per chunk) is each lowering's own; how it goes back into the graph is shared:
``rewrite_regions`` replaces each region by the equations its lowering gives (usually one equation of
a :class:`RegionPlaceholder`, whose ``runner`` param runs the region on buffers), and
``region_inputs``/``operand_slots`` map a region's kernel operands to its input buffers.
"""
from __future__ import annotations

import math

import numpy as np

from arrayx.core.graph import Equation, Graph, Literal, Var

__all__ = ["REDUCERS", "NULLARY", "Region", "regions_of", "Aliases", "FRESH_RESULTS", "RegionPlaceholder",
           "region_inputs", "operand_slots", "rewrite_regions"]

_FLOAT = "f"
_REAL = "iuf"
_ALL = "biuf"

#: reduction primitive -> dtype kinds fused (mean/var/std: floats)
REDUCERS = {"sum": _ALL, "prod": _ALL, "max": _REAL, "min": _REAL, "any": _ALL, "all": _ALL,
            "mean": _FLOAT, "var": _FLOAT, "std": _FLOAT}
_REDUCER_PARAMS = {"axis", "keepdims", "dtype", "correction"}

# primitives that share one rule in the kernels (the internal ones of api/_internal.py with their
# standard counterparts)
_WHERE_LIKE = ("where", "select")  # (cond, x1, x2)
_CASTS = ("astype", "convert_element_type")
_BROADCASTS = ("broadcast_to", "broadcast_in_dim")
#: nullary creation primitives computed in the kernel from the element's flat index ``e``
NULLARY = frozenset({"full", "iota", "arange", "eye"})
#: creation primitives: a region of only these runs op by op (nothing is read; NumPy fills as fast)
_CREATION = NULLARY | {"full_like"}

_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float32", "float64")
_NATIVE_DTYPES = frozenset(np.dtype(d) for d in _DTYPES)


# -- partitioning ---------------------------------------------------------------------------------

class Region:
    """Equations fused into one kernel: elementwise ones of shape ``shape``, then reductions."""

    def __init__(self, shape: tuple):
        self.shape = shape
        self.eqns: list[Equation] = []
        self.values: set = set()  # Vars computed elementwise inside
        self.reduced: set = set()  # Vars that are reduction results
        self.axes: tuple | None = None  # the reductions' axes (one block)

    def add(self, eqn: Equation) -> None:
        self.eqns.append(eqn)
        if eqn.prim.name in REDUCERS:
            self.reduced.add(eqn.outputs[0])
            self.axes = _reduced_axes(eqn)
        else:
            self.values.add(eqn.outputs[0])

    def defines(self, v) -> bool:
        return v in self.values or v in self.reduced


def _reduced_axes(eqn) -> tuple:
    ndim = len(eqn.inputs[0].aval.shape)
    axis = eqn.params.get("axis")
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(int(a) % ndim for a in axis))


def _dtype_of(a) -> np.dtype:
    return a.aval.dtype if a.__class__ is Var else np.asarray(a.value).dtype


def _fusible_shape(eqn, min_size: int, fusible: dict):
    """The region shape ``eqn`` fuses into, or None when it runs between kernels."""
    name = eqn.prim.name
    if eqn.prim.multiple_results or len(eqn.outputs) != 1:
        return None
    out = eqn.outputs[0].aval
    if out.dtype not in _NATIVE_DTYPES or any(_dtype_of(a) not in _NATIVE_DTYPES for a in eqn.inputs
                                             if not (a.__class__ is Literal and a.value is None)):
        return None
    if name in REDUCERS:
        x = eqn.inputs[0]
        if x.__class__ is not Var or not set(eqn.params) <= _REDUCER_PARAMS or x.aval.dtype.kind not in REDUCERS[name]:
            return None
        axes = _reduced_axes(eqn)
        shape = x.aval.shape
        red = math.prod(shape[i] for i in axes)
        if (not axes or axes[-1] - axes[0] + 1 != len(axes) or math.prod(shape) in range(max(min_size, 1))
                or (name in ("var", "std") and red - eqn.params.get("correction", 0.0) <= 0)):
            return None
        return shape
    shape = out.shape
    if not shape or math.prod(shape) in range(max(min_size, 1)):  # (size 0: nothing to compute)
        return None
    if name in _BROADCASTS:
        return shape
    if name in NULLARY:
        return shape if _nullary_fusible(eqn) else None
    if name == "full_like":  # a constant of its operand's shape (the operand is not read)
        return shape if eqn.params.get("fill_value") is not None and eqn.inputs[0].aval.shape == shape else None
    if name in _CASTS:
        src, dst = eqn.inputs[0].aval.dtype, out.dtype
        return shape if not (src.kind == "f" and dst.kind in "iu") else None  # (data_types._float_to_int)
    if name == "clip":
        lo, hi = eqn.inputs[1:3]
        nones = [a.__class__ is Literal and a.value is None for a in (lo, hi)]
        ok = out.dtype.kind in _REAL and not all(nones)
        return shape if ok else None
    op = fusible.get(name)
    if op is None:
        return None
    first = eqn.inputs[1] if name in _WHERE_LIKE else eqn.inputs[0]
    if _dtype_of(first).kind not in op.kinds:
        return None
    if any(a.__class__ is Var and a.aval.shape != shape for a in eqn.inputs):
        return None
    return shape


_INT64 = np.iinfo(np.int64)


def _nullary_fusible(eqn) -> bool:
    """Whether the kernel reproduces the creation primitive's values bit for bit (linspace: never,
    its values are NumPy's host computation; a float arange only where ``i * delta`` is exact, as
    LLVM may contract ``i * delta + start`` into one fused multiply-add)."""
    p = eqn.params
    if eqn.prim.name != "arange":
        return True
    if p["dtype"].kind in "iu":
        return all(_INT64.min <= int(p[k]) <= _INT64.max for k in ("start", "stop", "step"))
    delta = (p["start"] + p["step"]) - p["start"]
    return float(delta).is_integer() and abs(delta) * p["shape"][0] <= 2.0 ** 53


def regions_of(graph: Graph, min_size: int, fusible: dict, max_ops: int | None = None) -> list:
    """The steps of ``graph``: Equations run as they are, and Regions, in an order that respects
    every dependency (a region runs when something outside needs one of its values).
    ``fusible`` maps the elementwise primitives a lowering fuses to entries with ``.kinds`` (the
    dtype kinds of their first operand, x1 for where); regions of fewer than ``min_size``
    elements are not made; a region holds at most ``max_ops`` equations (a longer run is split:
    the next region reads the values it needs from the previous one's outputs)."""
    steps: list = []
    open_regions: dict[tuple, Region] = {}
    owner: dict = {}  # Var -> the open Region computing it

    def close(region: Region) -> None:
        if open_regions.get(region.shape) is region:
            del open_regions[region.shape]
            for v in list(region.values) + list(region.reduced):
                owner.pop(v, None)
            if all(e.prim.name in _CREATION for e in region.eqns):  # nothing read: NumPy fills as fast
                steps.extend(region.eqns)
            else:
                steps.append(region)

    for eqn in graph.equations:
        shape = _fusible_shape(eqn, min_size, fusible)
        ins = [a for a in eqn.inputs if a.__class__ is Var]
        if shape is None:
            for a in ins:
                if a in owner:
                    close(owner[a])
            steps.append(eqn)
            continue
        region = open_regions.get(shape)
        if region is not None and max_ops is not None and len(region.eqns) >= max_ops:
            close(region)
            region = None
        if region is not None:
            reduces = eqn.prim.name in REDUCERS
            if any(a in region.reduced for a in ins) or (
                    reduces and region.axes is not None and region.axes != _reduced_axes(eqn)):
                close(region)
                region = None
        for a in ins:  # values of other open regions: those must run first
            other = owner.get(a)
            if other is not None and other is not region:
                close(other)
        if region is None:
            region = open_regions[shape] = Region(shape)
        region.add(eqn)
        owner[eqn.outputs[0]] = region
    for region in list(open_regions.values()):
        close(region)
    return steps


def _expanded(eqn) -> tuple:
    """The shape of a broadcast's source with the result's rank (size-1 axes where it repeats)."""
    src, shape = tuple(eqn.inputs[0].aval.shape), tuple(eqn.outputs[0].aval.shape)
    if eqn.prim.name == "broadcast_to":
        return (1,) * (len(shape) - len(src)) + src
    expanded = [1] * len(shape)
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        expanded[d] = src[i]
    return tuple(expanded)


def _literal_dtype(eqn, position: int) -> np.dtype | None:
    """The dtype a literal operand is cast to: where's condition bool, else its fellow operands'."""
    if eqn.prim.name in _WHERE_LIKE:
        return np.dtype(bool) if position == 0 else eqn.outputs[0].aval.dtype
    if eqn.prim.name in ("clip", *_CASTS):
        return eqn.inputs[0].aval.dtype if eqn.inputs[0].__class__ is Var else None
    others = [a for a in eqn.inputs if a.__class__ is Var]
    return others[0].aval.dtype if others else None


def acc_dtype(name: str, x: np.dtype, out: np.dtype) -> np.dtype:
    """The dtype a reduction of ``x`` to ``out`` accumulates in (every lowering): float sums, means,
    products and moments in float64, max/min in the operand's dtype, any/all in bool."""
    if name in ("any", "all"):
        return np.dtype(bool)
    if name in ("max", "min"):
        return x
    return np.dtype(np.float64) if out.kind == "f" else out


# -- which values may share memory ------------------------------------------------------------------

#: primitives whose result is always a new buffer on the NumPy-based executors (NumPy, Numba): never
#: a view of an operand nor the operand itself.  Every other primitive (reshape, slicing, transpose,
#: broadcasts, casts that may return their operand, ...) may return memory an operand owns.
#: Checked primitive by primitive in tests/executors/test_fusion.py.
FRESH_RESULTS = frozenset({
    # elementwise functions with a NumPy ufunc behind them (abs, ceil, floor, trunc, round, positive,
    # real, conj, casts: not listed, some return their operand for some dtypes)
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
    "atan2", "hypot", "logaddexp", "copysign", "nextafter", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "bitwise_invert", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "sin", "cos", "tan", "sinh", "cosh",
    "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "negative", "sign", "signbit", "reciprocal",
    "isnan", "isinf", "isfinite", "where", "select", "clip",
    # products, reductions and scans: a result of their own shape
    "matmul", "tensordot", "vecdot", "sum", "prod", "mean", "var", "std", "max", "min", "any", "all",
    "argmax", "argmin", "cumulative_sum", "cumulative_prod", "sort", "argsort", "concat", "stack",
})


class Aliases:
    """Which Vars of a list of steps may share memory, and which were handed to code that may keep them.

    Conservative: the results of an equation whose primitive is not in ``FRESH_RESULTS`` may alias
    each of its operands (a transpose, a reshape, a slice, ``expand_dims`` ... are views), and
    aliasing is transitive; the operands of a primitive with effects (``debug.callback``: the
    function may keep what it is given) or of a call-like one (its sub-graphs may hold such a
    primitive) escape.  A lowering may write into a buffer only when no other live value can
    reach it: see ``reusable``.
    """

    def __init__(self, steps):
        self._parent: dict = {}
        escaping = []
        for step in steps:
            for eqn in (step.eqns if step.__class__ is Region else (step,)):
                ins = [a for a in eqn.inputs if a.__class__ is Var]
                prim = eqn.prim
                if getattr(prim, "effectful", False) or prim.call_like:
                    escaping += ins
                if prim.name not in FRESH_RESULTS:
                    for o in eqn.outputs:
                        for a in ins:
                            self._union(o, a)
        self._escaped = {self._find(v) for v in escaping}
        self._members: dict = {}
        for v in list(self._parent):
            self._members.setdefault(self._find(v), []).append(v)

    def _find(self, v):
        parent = self._parent
        root = v
        while parent.get(root, root) is not root:
            root = parent[root]
        while v is not root:  # path compression
            parent[v], v = root, parent[v]
        return root

    def _union(self, a, b) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra is not rb:
            self._parent[ra] = rb
            self._parent.setdefault(rb, rb)

    def escaped(self, v) -> bool:
        """Whether ``v``, or a value that may alias it, was handed to code that may keep it."""
        return self._find(v) in self._escaped

    def of(self, v) -> list:
        """The Vars that may share memory with ``v`` (``v`` included)."""
        return self._members.get(self._find(v), [v])

    def reusable(self, v, live_after, graph_outputs) -> bool:
        """Whether ``v``'s buffer may be overwritten: neither ``v`` nor any value that may alias it
        escaped, is a graph output, or is still needed (``live_after(u, is_v)``: u is read by an
        equation not run yet; for the aliases of ``v`` also by the equation about to write)."""
        if self.escaped(v):
            return False
        for u in self.of(v):
            if u in graph_outputs or live_after(u, u is v):
                return False
        return True


# -- putting lowered regions back into the graph (the Numba, CuPy and Dask lowerings) ------------------

class RegionPlaceholder:
    """The primitive of an equation that stands for one lowered region: ``straight_line`` calls the
    equation's ``runner`` param on the region's input buffers (a list of output buffers back)."""

    multiple_results = True
    call_like = False
    lowerings = {"*": lambda executor, params: params["runner"]}

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


def region_inputs(operands) -> tuple:
    """A region's input Vars from its kernel operands, each once (a Var may be several operands:
    broadcast in two ways); literal operands are not inputs."""
    return tuple(dict.fromkeys(op.var for op in operands if op.var.__class__ is Var))


def operand_slots(operands, inputs: tuple) -> list:
    """For each kernel operand, the position of its buffer among ``inputs`` (None for a literal)."""
    return [inputs.index(op.var) if op.var.__class__ is Var else None for op in operands]


def rewrite_regions(graph: Graph, steps: list, lower_region) -> Graph:
    """``graph`` with each :class:`Region` of ``steps`` (``regions_of``'s partition) replaced by the
    equations ``lower_region(region, before)`` returns, or kept op by op where it returns None;
    ``before`` holds the ids of the equations of the steps before the region (read-after analyses)."""
    equations, before = [], set()
    for step in steps:
        if step.__class__ is Region:
            lowered = lower_region(step, before)
            equations.extend(step.eqns if lowered is None else lowered)
            before.update(id(e) for e in step.eqns)
        else:
            equations.append(step)
            before.add(id(step))
    return Graph(graph.inputs, graph.constvars, graph.consts, equations, graph.outputs, device=graph.device)
