"""jit on the Dask executor: each fusible region of a staged graph runs per chunk as one task.

``fuse(executor, graph)`` partitions the graph with the Numba lowering's ``regions_of`` (the same
table of fusible primitives), keeps of each region its elementwise part (arithmetic, comparisons,
transcendentals, ``where``, ``clip``, casts, broadcasts of values from outside) and runs that part
as **one** ``dask.array.blockwise`` layer: one task per output chunk computes every op of the
region on that chunk's NumPy blocks.  The region's creation primitives run before it and its
reductions after it as Dask's own lazy operations (a reduction's per-chunk step is a blockwise
layer Dask fuses with the region's when it optimises the graph), and so does everything else.

Per chunk, the region is a small graph of the chunk's shape (made once per distinct chunk shape:
edge chunks differ) compiled by the Numba executor, so its elementwise ops are one generated
kernel (``numba.fusion.lowering``), or by the NumPy executor when Numba is not installed.  A broadcast
operand reaches its tasks as its block with size-1 axes (Dask's blockwise repeats it along
them), never copied to the full shape.  Building the Dask graph computes nothing: the kernels are
compiled when a chunk is first computed.
"""
from __future__ import annotations

import math
import operator
import threading

import numpy as np

from arrayx.executors.numba.fusion.lowering import (
    _BROADCASTS,
    NULLARY,
    REDUCERS,
    Region,
    _expanded,
    regions_of,
)
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.executors.common.fusion import RegionPlaceholder, rewrite_regions
from arrayx.core.graph import Equation, Graph, Var, uses_of

__all__ = ["fuse", "ChunkRegion"]

#: fewest elementwise (non-broadcast) operations a region needs to become one blockwise layer
#: (one op is one layer either way: it stays Dask's own)
MIN_OPS = 2


_DASK_REGION = RegionPlaceholder("dask_fused_region")  # an equation of it runs its blockwise layers
_TOKEN = "arrayx-fused-region"  # the blockwise layers' name prefix


def _chunk_executor():
    """The executor that runs a region on one chunk: Numba's (fused kernels) where it is installed."""
    from arrayx.core import executor as base

    numba_ex = base.get("numba")
    return numba_ex if numba_ex.available() else base.get("numpy")


class ChunkRegion:
    """A region's elementwise equations run on one chunk's NumPy blocks (the blockwise function).

    ``operands`` are (Var, expanded shape or None) in the order the blocks come; ``outputs`` the
    Vars returned.  Compiled once per chunk shape, by ``executor`` (default: ``_chunk_executor()``).
    """

    def __init__(self, eqns, operands, outputs, executor=None):
        self.eqns = tuple(eqns)
        self.operands = tuple(operands)
        self.outputs = tuple(outputs)
        self.ndim = len(outputs[0].aval.shape)
        self.executor = executor
        self._compiled: dict = {}  # chunk shape -> executable
        self._lock = threading.Lock()

    def __getstate__(self):  # sent to Dask's workers without what each process compiles for itself
        return {k: v for k, v in vars(self).items() if k not in ("_compiled", "_lock")}

    def __setstate__(self, state):
        vars(self).update(state, _compiled={}, _lock=threading.Lock())

    def __call__(self, *blocks):
        shape = np.broadcast_shapes(*(b.shape for b in blocks))
        fn = self._compiled.get(shape)
        if fn is None:
            with self._lock:
                fn = self._compiled.get(shape)
                if fn is None:
                    fn = self._compiled[shape] = self._compile(shape)
        outs = fn(*blocks)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _compile(self, shape: tuple):
        """The region over blocks of a chunk of ``shape``: a graph of that shape, compiled."""
        ex = self.executor or _chunk_executor()
        new: dict = {}  # Var of the staged graph -> Var of the chunk's graph
        inputs = []
        for k, (v, expand) in enumerate(self.operands):
            block = shape if expand is None else tuple(1 if e == 1 else d for e, d in zip(expand, shape))
            inputs.append(Var(ShapeDtypeStruct(block, v.aval.dtype, v.aval.weak_type)))
            new[v, expand] = inputs[-1]
        eqns = []
        for eqn in self.eqns:
            outs = tuple(Var(ShapeDtypeStruct(shape, o.aval.dtype, o.aval.weak_type)) for o in eqn.outputs)
            if eqn.prim.name in _BROADCASTS:
                src = eqn.inputs[0]
                if src.__class__ is Var:
                    src = new.get((src, _expanded(eqn))) or new[src]
                params = {"shape": shape}
                if eqn.prim.name == "broadcast_in_dim":  # the block already has the region's rank
                    params["broadcast_dimensions"] = tuple(range(self.ndim)) if src.__class__ is Var else ()
                eqns.append(Equation(eqn.prim, (src,), params, outs))
            else:
                ins = tuple((new[a] if a in new else new[a, None]) if a.__class__ is Var else a for a in eqn.inputs)
                eqns.append(Equation(eqn.prim, ins, eqn.params, outs))
            for o, n in zip(eqn.outputs, outs):
                new[o] = n
        fn = ex.compile(Graph(inputs, (), (), eqns, [new[o] for o in self.outputs]))
        for runner in getattr(fn, "regions", ()):
            runner.threads = 1  # Dask runs the chunks side by side
        return fn


def _split(region: Region):
    """(creation equations, elementwise equations, reductions) of a region, in their order."""
    created = [e for e in region.eqns if e.prim.name in NULLARY]
    reduced = [e for e in region.eqns if e.prim.name in REDUCERS]
    middle = [e for e in region.eqns if e.prim.name not in NULLARY and e.prim.name not in REDUCERS]
    return created, middle, reduced


def _region_run(ex, eqns, outputs):
    """(input Vars, the blockwise function over their buffers) for the elementwise ``eqns``."""
    defined = {o for e in eqns for o in e.outputs}
    operands, order = [], {}
    for eqn in eqns:
        for a in eqn.inputs:
            if a.__class__ is not Var or a in defined:
                continue
            key = (a, _expanded(eqn) if eqn.prim.name in _BROADCASTS else None)
            if key not in order:
                order[key] = len(operands)
                operands.append(key)
    chunk_fn = ChunkRegion(eqns, operands, outputs)
    shape = tuple(outputs[0].aval.shape)
    ind = tuple(range(len(shape)))
    ins = tuple(dict.fromkeys(v for v, _ in operands))
    position = {v: i for i, v in enumerate(ins)}
    dtypes = [o.aval.dtype for o in outputs]

    def run(*bufs):
        import dask.array as da

        args = []
        for v, expand in operands:
            b = bufs[position[v]]
            if not isinstance(b, da.Array):  # a NumPy scalar or array a previous step gave
                b = da.from_array(np.asarray(b), name=False)
            if expand is not None and tuple(b.shape) != expand:
                b = b.reshape(expand)
            args += [b, ind[len(ind) - b.ndim:]]  # a 0-d operand (a clip bound) has no block index
        meta = np.empty((0,) * len(ind), dtypes[0])
        if len(outputs) == 1:
            return [da.blockwise(chunk_fn, ind, *args, dtype=dtypes[0], meta=meta, concatenate=True, token=_TOKEN)]
        both = da.blockwise(chunk_fn, ind, *args, dtype=dtypes[0], meta=meta, concatenate=True, token=_TOKEN)
        return [da.blockwise(operator.getitem, ind, both, ind, k, None, dtype=dt, meta=np.empty((0,) * len(ind), dt))
                for k, dt in enumerate(dtypes)]

    return ins, run


def fuse(ex, graph: Graph):
    """The executable of ``graph`` on the Dask executor ``ex``: its regions as blockwise layers (one
    task per chunk), the rest as the executor's implementations (a straight-line function)."""
    from arrayx.core.lowering import straight_line

    uses = uses_of(graph)
    graph_outputs = {o for o in graph.outputs if o.__class__ is Var}
    regions = []

    def lower_region(step, before):
        created, middle, reduced = _split(step)
        ops = sum(e.prim.name not in _BROADCASTS for e in middle)
        if ops < MIN_OPS or any(math.prod(e.outputs[0].aval.shape) == 0 for e in middle):
            return None  # op by op: Dask's own layers
        members = {id(e) for e in middle}
        outputs = tuple(v for e in middle for v in e.outputs
                        if v in graph_outputs or any(id(u) not in members for u in uses.get(v, ())))
        ins, run = _region_run(ex, middle, outputs)
        regions.append(run)
        return [*created, Equation(_DASK_REGION, ins, {"runner": run}, outputs), *reduced]

    fn = straight_line(ex, rewrite_regions(graph, regions_of(graph, 1), lower_region))
    fn.fused_regions = len(regions)
    return fn

