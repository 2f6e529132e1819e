"""Operations on arrays of one chunk: one task running the NumPy executor's implementation.

A client such as scikit-learn or SciPy calls arrayx op by op on arrays that fit in one chunk
(Dask's ``array.chunk-size``, 128 MiB by default: every array of the benchmarks' large size).
Dask's own functions spend 0.1-0.7 ms per call building such an operation (broadcasting and
chunk arithmetic, ``compute_meta`` running the function on empty stand-ins, tokenising the
operands, a reduction's chunk / combine / aggregate layers), and the compute runs those layers.
Here, when every Dask operand of a primitive is one chunk of known shape, the result is one
task: the NumPy executor's implementation of the primitive on the operands' blocks, with the
result's shape and dtype from the primitive's abstract evaluation (nothing runs to learn them).
The values are the NumPy executor's (its reductions, its special-value rules), whatever the
operation; the task checks that the block it made has the shape and dtype announced.

Not here (Dask's own, chunked implementation): operands of several chunks or unknown shape,
results larger than one chunk, results whose size depends on values (masks, ``nonzero``,
``unique_*``), operations with an effect (host callbacks), call-like and control-flow
primitives (their functions), and computations on a ``dask.distributed`` cluster (``connect``).
"""
from __future__ import annotations

import functools
import itertools
import operator
import weakref

import numpy as np

from arrayx.core.graph import Graph as _GRAPH

__all__ = ["one_chunk", "sliced"]

#: primitives never run as one task: sizes that depend on values, and those whose abstract rule
#: assumes operands already broadcast as transforms bind them (eager callers bind them otherwise)
#: or leaves the shape checks to the executor (found by tests/api on this executor)
EXCLUDED = frozenset({"boolean_mask", "nonzero", "unique_values", "unique_counts", "unique_inverse",
                      "unique_all", "repeat", "take_along_axis", "vecdot", "cross", "solve", "trace",
                      "tensordot"})

_counter = itertools.count()


class ShapeMismatch(RuntimeError):
    """The NumPy executor's block differs from the abstract evaluation (an arrayx bug)."""


def _limit() -> int:
    import dask

    return dask.utils.parse_bytes(dask.config.get("array.chunk-size"))


def one_chunk(prim, native, distributed):
    """``native`` (Dask's implementation of ``prim``), preceded by the one-task path where it applies.

    ``distributed()`` says whether computations go to a ``dask.distributed`` cluster now."""
    if (prim.name in EXCLUDED or prim.data_dependent is not None or getattr(prim, "effectful", False)
            or getattr(prim, "call_like", False) or prim.abstract_eval is None):
        return native
    from dask.array import Array as darray

    from arrayx.core import executor as base
    from arrayx.core.primitives import _wrap

    rule = prim.abstract_eval
    multiple = prim.multiple_results
    dask_ex = base.get("dask")
    elementwise = _elementwise(prim.name)
    matmul = prim.name == "matmul"
    state = {}
    if prim.name == "slice":  # a slice of a random draw draws only the sliced values (dask.random)
        from arrayx.executors.dask.random import _RECIPES as draws
    else:
        draws = ()

    def impl(*bufs, **params):
        for p in params.values():
            if p.__class__ is _GRAPH:  # a primitive of functions (control flow): Dask's path
                return native(*bufs, **params)
        deps = []
        avals = []
        for b in bufs:
            if b.__class__ is darray:
                chunks = b.chunks
                shape = b.shape
                if any(len(c) != 1 for c in chunks) or any(d != d for d in shape):
                    return native(*bufs, **params)
                deps.append(b)
                avals.append(_wrap(b, dask_ex))  # as lazy() gives them: concrete arrays
            elif isinstance(b, np.ndarray):
                return native(*bufs, **params)
            else:
                avals.append(b)
        if not deps or distributed() or (draws and deps[0].name in draws):
            return native(*bufs, **params)
        try:
            out = rule(*avals, **params)
        except Exception:  # noqa: BLE001 - a rule that needs values (or refuses): Dask's own path
            return native(*bufs, **params)
        outs = tuple(out) if multiple else (out,)
        if matmul and not _matmul_shapes_valid(deps):
            return native(*bufs, **params)  # Dask's path raises the error the namespace expects
        if elementwise and not _broadcast_as_ruled(outs[0], deps, elementwise):
            return native(*bufs, **params)
        limit = state.get("limit")
        if limit is None:
            limit = state["limit"] = _limit()
        for o in outs:
            if any(d is None for d in o.shape) or o.dtype.itemsize * _size(o.shape) > limit:
                return native(*bufs, **params)
        out = _build(prim, bufs, params, deps, outs, multiple)
        if elementwise:  # a slice of it (what repr shows) computes the op on sliced operands
            _SLICEABLE[out.name] = recipe = _Recipe(prim, tuple(
                (b.name, b.chunks, b._meta) if b.__class__ is darray else (b,) for b in bufs), params,
                [r for b in deps for r in (getattr(b, "_arrayx_recipe", None), getattr(b, "_arrayx_elementwise", None))
                 if r is not None])
            out._arrayx_elementwise = recipe  # the recipe lives as long as the buffer does
        return out

    impl.__name__ = f"{prim.name}_one_chunk"
    impl.__wrapped__ = native
    return impl




#: Dask name -> how an elementwise one-chunk result was made (its primitive, operands, params):
#: ``sliced`` computes a slice of it from slices of its operands
_SLICEABLE: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


class _Recipe:
    __slots__ = ("prim", "operands", "params", "inner", "__weakref__")

    def __init__(self, prim, operands, params, inner):
        # operands: (name, chunks, meta) of a Dask operand (rebuilt from the result's own graph:
        # holding the operand arrays would keep them alive for dask.keep), (value,) of any other;
        # inner: the operands' own recipes (draws, elementwise ops), alive while this one is
        self.prim, self.operands, self.params, self.inner = prim, operands, params, inner


def sliced(buf, key: tuple):
    """``buf[key]`` for a key of one slice per axis, computing only the sliced values where ``buf``
    is a random draw (``dask.random``) or an elementwise one-chunk operation of such arrays
    (``exp(normal(key, (2**24,)))``: the operation on the sliced draw); None otherwise."""
    from arrayx.executors.dask.random import sliced_draw

    out = sliced_draw(buf, key)
    if out is not None:
        return out
    recipe = _SLICEABLE.get(buf.name)
    if recipe is None or len(key) != buf.ndim or not all(isinstance(k, slice) for k in key):
        return None
    from dask.array import Array as darray

    from arrayx.core import executor as base
    from arrayx.core.primitives import _wrap

    bufs = []
    for op in recipe.operands:
        if len(op) == 1:
            bufs.append(op[0])
            continue
        name, chunks, meta = op
        operand = darray(buf.dask, name, chunks, meta=meta)
        # broadcast: the operand's axes are the result's last ones, a length-1 axis stays whole
        own = tuple(slice(None) if n == 1 and m != 1 else k
                    for k, n, m in zip(key[buf.ndim - operand.ndim:], operand.shape, buf.shape[buf.ndim - operand.ndim:]))
        part = sliced(operand, own)
        bufs.append(operand[own] if part is None else part)
    deps = [b for b in bufs if b.__class__ is darray]
    dask_ex = base.get("dask")
    avals = [_wrap(b, dask_ex) if b.__class__ is darray else b for b in bufs]
    out = recipe.prim.abstract_eval(*avals, **recipe.params)
    return _build(recipe.prim, bufs, recipe.params, deps, (out,), False)


def _elementwise(name: str) -> int:
    """0, or for an elementwise primitive the index of its first value operand (``where``: 1).
    Their rules assume operands promoted to one dtype and (under transforms) broadcast to one
    shape, as the namespace binds them; code that binds them otherwise takes Dask's path."""
    if name == "where":
        return 2
    from arrayx.core.primitives import ELEMENTWISE

    return 1 if name in ELEMENTWISE else 0


def _broadcast_as_ruled(out, deps, elementwise: int) -> bool:
    values = deps if elementwise == 1 else [d for d in deps[1:]]
    if len({d.dtype for d in values}) > 1:
        return False
    return tuple(out.shape) == np.broadcast_shapes(*(d.shape for d in deps))


def _matmul_shapes_valid(deps) -> bool:
    if len(deps) != 2:
        return False
    a, b = deps[0].shape, deps[1].shape
    if not a or not b or a[-1] != (b[-2] if len(b) > 1 else b[0]):
        return False
    try:
        np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        return False
    return True


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _run(numpy_impl, template, params, outs, name, *blocks):
    """The task: the NumPy executor's implementation on the blocks, checked against ``outs``."""
    # a 0-d block may be a NumPy scalar (Dask's reductions give them); the NumPy executor's
    # implementations take 0-d arrays (a scalar cannot be written: 0-d setitem)
    it = (np.asarray(b) if isinstance(b, np.generic) else b for b in blocks)
    args = [next(it) if t is None else t[0] for t in template]
    result = numpy_impl(*args, **params)
    results = tuple(result) if outs.__class__ is tuple else (result,)
    checked = []
    for r, o in zip(results, outs if outs.__class__ is tuple else (outs,)):
        r = np.asarray(r)
        if r.shape != o.shape or r.dtype != o.dtype:
            raise ShapeMismatch(f"{name}: the NumPy executor gives {r.dtype}{list(r.shape)}, the abstract "
                                f"evaluation {o.dtype}{list(o.shape)} (an arrayx bug; please report it)")
        checked.append(r)
    return tuple(checked) if outs.__class__ is tuple else checked[0]


def _build(prim, bufs, params, deps, outs, multiple):
    from dask._task_spec import Task, TaskRef
    from dask.array import Array
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    from arrayx.core import executor as base

    numpy_impl = base.get("numpy").resolve(prim)
    template = tuple(None if b.__class__ is Array else (b,) for b in bufs)
    refs = [TaskRef((d.name,) + (0,) * d.ndim) for d in deps]
    uid = f"{prim.name}-onechunk-{next(_counter)}-{id(bufs)}"
    run = functools.partial(_run, numpy_impl, template, params, outs if multiple else outs[0], prim.name)
    if not multiple:
        o = outs[0]
        key = (uid,) + (0,) * len(o.shape)
        graph = HighLevelGraph.from_collections(uid, {key: Task(key, run, *refs)}, dependencies=deps)
        return Array(graph, uid, tuple((d,) for d in o.shape), meta=np.empty((0,) * len(o.shape), o.dtype))
    whole = (uid,)
    base_graph = HighLevelGraph.from_collections(uid, {whole: Task(whole, run, *refs)}, dependencies=deps)
    results = []
    for i, o in enumerate(outs):  # a layer of one task per result: reads see one task per layer
        name = f"{uid}-{i}"
        key = (name,) + (0,) * len(o.shape)
        graph = HighLevelGraph({**base_graph.layers, name: MaterializedLayer({key: Task(key, operator.getitem,
                                                                                           TaskRef(whole), i)})},
                               {**base_graph.dependencies, name: {uid}})
        results.append(Array(graph, name, tuple((d,) for d in o.shape), meta=np.empty((0,) * len(o.shape), o.dtype)))
    return tuple(results)
