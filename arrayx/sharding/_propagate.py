"""The shardings of a jitted function's results on executors without a partitioner (numpy, numba, dask).

XLA chooses the layout of every value of a jitted program from its inputs' shardings (GSPMD).  Here
the graph is walked once per input layout with a few rules that give the same answers as XLA on
the programs that matter (elementwise keeps the layout, a reduction drops the reduced dimensions,
leaving the result replicated along their mesh axes, a contraction over a split dimension is summed
into a replicated result, ``with_sharding_constraint`` sets it); any other operation gives a
replicated result.  Values are not affected: they are computed whole and are the same as unsharded.
"""
from __future__ import annotations

from arrayx.sharding._mesh import PartitionSpec
from arrayx.sharding._shardings import NamedSharding

_KEEPS = {"sort", "argsort", "cumulative_sum", "cumulative_prod", "cumulative_max", "cumulative_min",
          "flip", "roll", "copy"}


def _spec_of_eqn(eqn, ins):
    """The output specs (tuples of names per dimension, or None: replicated) of one equation."""
    name = eqn.prim.name
    params = eqn.params
    outs = eqn.outputs
    if name == "sharding_constraint":
        s = params["sharding"]
        return [s.spec.normalized(len(outs[0].aval.shape)) if isinstance(s, NamedSharding) else None], \
            s.mesh if isinstance(s, NamedSharding) else None
    if len(outs) != 1:
        return [None] * len(outs), None
    oshape = tuple(outs[0].aval.shape)
    nd = len(oshape)
    shaped = [(tuple(v.aval.shape), s) for v, s in zip(eqn.inputs, ins) if hasattr(v, "aval")]
    if name == "broadcast_in_dim":
        (shape, s), = shaped[:1]
        dims = params.get("broadcast_dimensions")
        if s is None or dims is None:
            return [None], None
        out = [()] * nd
        for i, d in enumerate(dims):
            if i < len(s) and shape[i] == oshape[d]:
                out[d] = s[i]
        return [tuple(out)], None
    if name == "permute_dims":
        (shape, s), = shaped[:1]
        if s is None:
            return [None], None
        s = _pad(s, len(shape))
        return [tuple(s[a] for a in params["axes"])], None
    if "axis" in params and "keepdims" in params and shaped:
        shape, s = shaped[0]
        if s is None:
            return [None], None
        s = _pad(s, len(shape))
        axes = params["axis"]
        axes = tuple(range(len(shape))) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
        axes = {a % max(1, len(shape)) for a in axes}
        if params["keepdims"]:
            return [tuple(() if i in axes else e for i, e in enumerate(s))], None
        return [tuple(e for i, e in enumerate(s) if i not in axes)], None
    if name == "matmul" and len(shaped) == 2:
        (sa, a), (sb, b) = shaped
        a = _pad(a, len(sa)) if a is not None else ((),) * len(sa)
        b = _pad(b, len(sb)) if b is not None else ((),) * len(sb)
        if len(sa) == 1 and len(sb) == 1:
            return [()], None
        if len(sa) == 1:
            return [tuple(b[:-2]) + (b[-1],)], None
        if len(sb) == 1:
            return [tuple(a[:-1])], None
        batch = tuple(x or y for x, y in zip(a[:-2], b[:-2]))
        return [batch + (a[-2], b[-1])], None
    if name in _KEEPS or all(sh == oshape or sh == () for sh, _ in shaped):
        merged = [()] * nd
        for sh, s in shaped:
            if s is None or sh != oshape:
                continue
            for i, e in enumerate(_pad(s, nd)):
                if e and not merged[i] and not any(n in m for m in merged for n in e):
                    merged[i] = e
        return [tuple(merged)], None
    return [None], None


def _pad(s, n):
    return tuple(s) + ((),) * (n - len(s))


def output_shardings(graph, in_shardings: tuple) -> list:
    """The sharding of each output of ``graph`` given its inputs' (NamedSharding or None)."""
    from arrayx.transforms.graph import Var

    key = ("sharding propagation", in_shardings)
    cached = graph.derived.get(key)
    if cached is not None:
        return cached
    env = {}  # var -> (mesh, spec: a tuple of name tuples per dimension)
    for v, s in zip(graph.inputs, in_shardings):
        if isinstance(s, NamedSharding):
            env[v] = (s.mesh, s.spec.normalized(len(v.aval.shape)))
    for eqn in graph.equations:
        got = [env.get(a) if a.__class__ is Var else None for a in eqn.inputs]
        if all(g is None for g in got) and eqn.prim.name != "sharding_constraint":
            continue
        mesh = next((g[0] for g in got if g is not None), None)
        ins = [g[1] if g is not None and g[0] == mesh else None for g in got]
        if eqn.prim.name == "call" and "graph" in eqn.params:
            sub_in = tuple(_named(mesh, s) if s is not None else None for s in ins)
            subs = output_shardings(eqn.params["graph"], sub_in)
            for o, s in zip(eqn.outputs, subs):
                if s is not None:
                    env[o] = (s.mesh, s.spec.normalized())
            continue
        specs, emesh = _spec_of_eqn(eqn, ins)
        mesh = emesh or mesh
        for o, s in zip(eqn.outputs, specs):
            if mesh is not None:
                env[o] = (mesh, () if s is None else s)
    out = []
    for o in graph.outputs:
        got = env.get(o) if o.__class__ is Var else None
        out.append(None if got is None else _named(*got))
    graph.derived[key] = out
    return out


def _named(mesh, spec):
    return NamedSharding(mesh, PartitionSpec(*[(e[0] if len(e) == 1 else e) if e else None for e in spec]))


def attach_outputs(graph, in_arrays, out_arrays) -> None:
    """Give the results of a jitted call on numpy/numba/dask the shardings its inputs imply (the
    ``jit`` hook; only called while some array has a sharding record)."""
    from arrayx.sharding import _records

    if not out_arrays or out_arrays[0]._ex.name == "jax":  # XLA gave jax's buffers their shardings
        return out_arrays
    ins = []
    any_sharded = False
    for x in in_arrays:
        s = _records.lookup(x) if x is not None else None
        s = s if isinstance(s, NamedSharding) else None
        any_sharded = any_sharded or s is not None
        ins.append(s)
    consts = len(graph.inputs) - len(ins)
    if not any_sharded and not _has_constraint(graph):
        return out_arrays
    shardings = output_shardings(graph, (None,) * consts + tuple(ins))
    for o, s in zip(out_arrays, shardings):
        if s is not None and o.__class__.__name__ == "Array":
            if o._ex.name == "dask":
                from arrayx.sharding._dask import chunks_of

                o._buf = o._buf.rechunk(chunks_of(s, tuple(o.shape)))
            _records.attach(o, s)
    return out_arrays


def install() -> None:
    """Make ``jit`` call :func:`attach_outputs` (from the first NamedSharding on: no cost before)."""
    from arrayx.transforms import jitting

    if jitting.sharding_hook is None:
        jitting.sharding_hook = attach_outputs


def _has_constraint(graph) -> bool:
    key = "has sharding constraint"
    if key not in graph.derived:
        graph.derived[key] = any(e.prim.name == "sharding_constraint" for e in graph.equations)
    return graph.derived[key]
