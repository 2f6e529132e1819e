"""The shardings of a jitted function's results on executors without a partitioner (numpy, numba, dask).

XLA chooses the layout of every value of a jitted program from its inputs' shardings (GSPMD).  Here
the graph is walked once per input layout with a few rules that give the same answers as XLA on
the programs that matter (elementwise keeps the layout, a reduction drops the reduced dimensions,
leaving the result replicated along their mesh axes, a contraction over a split dimension is summed
into a replicated result, ``with_sharding_constraint`` sets it); any other operation gives a
replicated result.  Values are not affected: they are computed whole and are the same as unsharded.
"""
from __future__ import annotations

import numpy as np

from arrayx.sharding._mesh import PartitionSpec
from arrayx.sharding._shardings import NamedSharding

_KEEPS = {"sort", "argsort", "cumulative_sum", "cumulative_prod", "cumulative_max", "cumulative_min",
          "flip", "roll", "copy"}


def _spec_of_eqn(eqn, ins, mesh=None):
    """The output specs (tuples of names per dimension, or None: replicated) of one equation, and
    the mesh it sets (``with_sharding_constraint``) or None."""
    name = eqn.prim.name
    params = eqn.params
    outs = eqn.outputs
    if name == "sharding_constraint":
        s = params["sharding"]
        return [s.spec.normalized(len(outs[0].aval.shape)) if isinstance(s, NamedSharding) else None], \
            s.mesh if isinstance(s, NamedSharding) else None
    if name == "slice" and ins and ins[0] is not None:  # x[key] under jit: XLA's rule, not the eager one
        return [sliced_spec(ins[0], params["key"], tuple(outs[0].aval.shape), mesh)], None
    shaped = [(tuple(v.aval.shape), s) for v, s in zip(eqn.inputs, ins) if hasattr(v, "aval")]
    return spec_rule(name, params, shaped, [tuple(o.aval.shape) for o in outs]), None


def sliced_spec(s: tuple, key: tuple, oshape: tuple, mesh) -> tuple:
    """The spec of ``slice`` (a static basic key: ints, None, (start, stop, step)) under ``jit``, as
    XLA's propagation gives it (``jax.jit``'s results): an int drops its dimension, None adds a
    replicated one, and a dimension cut by a slice (any start, stop or step) keeps the longest
    leading part of its mesh axes whose product divides the result's size there (``x[2:6]`` of
    ``P('x', 'y')`` on a (2, 4) mesh stays ``P('x', 'y')``; ``x[1:]``'s 7 rows are replicated).
    Eager basic indexing is JAX's eager rule instead (``basic_index_spec``)."""
    out, i = [], 0
    for e in key:
        if e is None:
            out.append(())
            continue
        names = s[i] if i < len(s) else ()
        i += 1
        if e.__class__ is not tuple:  # an int: the dimension goes
            continue
        out.append(_dividing_prefix(names, oshape[len(out)], mesh))
    for j in range(i, len(s)):  # the dimensions the key leaves whole
        out.append(s[j])
    return tuple(out)


def _dividing_prefix(names: tuple, size, mesh) -> tuple:
    if not isinstance(size, int):
        return ()
    k, keep = 1, 0
    for a in names:
        k *= mesh.shape[a]
        if size % k:
            break
        keep += 1
    return tuple(names[:keep])


def spec_rule(name: str, params: dict, shaped: list, oshapes: list) -> list:
    """The rule of one operation (the one place both ``jit``'s pass and the eager hook use):
    ``shaped`` holds ``(shape, spec or None)`` per array operand, ``oshapes`` the results' shapes;
    gives one spec (a tuple of name tuples per dimension) or None (replicated) per result."""
    if len(oshapes) != 1:
        return [None] * len(oshapes)
    oshape = oshapes[0]
    nd = len(oshape)
    if name == "broadcast_in_dim":
        (shape, s), = shaped[:1]
        dims = params.get("broadcast_dimensions")
        if s is None or dims is None:
            return [None]
        out = [()] * nd
        for i, d in enumerate(dims):
            if i < len(s) and shape[i] == oshape[d]:
                out[d] = s[i]
        return [tuple(out)]
    if name == "permute_dims":
        (shape, s), = shaped[:1]
        if s is None:
            return [None]
        s = _pad(s, len(shape))
        return [tuple(s[a] for a in params["axes"])]
    if name == "matrix_transpose" and shaped and len(shaped[0][0]) >= 2:
        shape, s = shaped[0]
        if s is None:
            return [None]
        s = _pad(s, len(shape))
        return [s[:-2] + (s[-1], s[-2])]
    if name == "moveaxis" and shaped:
        shape, s = shaped[0]
        if s is None:
            return [None]
        s, n = _pad(s, len(shape)), len(shape)
        src = [a % n for a in (params["source"] if isinstance(params["source"], tuple) else (params["source"],))]
        dst = [a % n for a in (params["destination"] if isinstance(params["destination"], tuple)
                               else (params["destination"],))]
        rest = iter([e for i, e in enumerate(s) if i not in src])
        by_dst = dict(zip(dst, src))
        return [tuple(s[by_dst[j]] if j in by_dst else next(rest) for j in range(n))]
    if name in ("reshape", "squeeze", "expand_dims") and shaped:
        return [_reshaped(*shaped[0], oshape)]
    if "axis" in params and "keepdims" in params and shaped:
        shape, s = shaped[0]
        if s is None:
            return [None]
        s = _pad(s, len(shape))
        axes = params["axis"]
        axes = tuple(range(len(shape))) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
        axes = {a % max(1, len(shape)) for a in axes}
        if params["keepdims"]:
            return [tuple(() if i in axes else e for i, e in enumerate(s))]
        return [tuple(e for i, e in enumerate(s) if i not in axes)]
    if name == "matmul" and len(shaped) == 2:
        (sa, a), (sb, b) = shaped
        a = _pad(a, len(sa)) if a is not None else ((),) * len(sa)
        b = _pad(b, len(sb)) if b is not None else ((),) * len(sb)
        if len(sa) == 1 and len(sb) == 1:
            return [()]
        if len(sa) == 1:
            return [_distinct(tuple(b[:-2]) + (b[-1],))]
        if len(sb) == 1:
            return [tuple(a[:-1])]
        batch = tuple(x or y for x, y in zip(a[:-2], b[:-2]))
        return [_distinct(batch + (a[-2], b[-1]))]
    if name in _KEEPS or all(_broadcasts(sh, oshape) for sh, _ in shaped):
        # elementwise (operands broadcast to the result, right-aligned): a dimension keeps the split
        # of the first operand that has it whole-sized and split (an axis name used once)
        merged = [()] * nd
        for sh, s in shaped:
            if s is None or not _broadcasts(sh, oshape):
                continue
            off = nd - len(sh)
            for i, e in enumerate(_pad(s, len(sh))):
                j = i + off
                if e and sh[i] == oshape[j] and not merged[j] and not any(n in m for m in merged for n in e):
                    merged[j] = e
        return [tuple(merged)]
    return [None]


def _reshaped(shape: tuple, s, oshape: tuple):
    """A reshape keeps the split of an input dimension that is the major (first non-1) one of the
    dimensions merged into, or split from, one output dimension; other splits are dropped
    (replicated).  The caller refuses a split the output dimension's size does not divide."""
    if s is None or any(not isinstance(n, int) or n == 0 for n in shape + oshape):
        return None
    s = _pad(s, len(shape))
    out = [()] * len(oshape)
    i = j = 0
    try:
        while i < len(shape) and j < len(oshape):
            gi, gj, pi, po = [i], [j], shape[i], oshape[j]
            i, j = i + 1, j + 1
            while pi != po:
                if pi < po:
                    pi *= shape[i]
                    gi.append(i)
                    i += 1
                else:
                    po *= oshape[j]
                    gj.append(j)
                    j += 1
            major_in = next((d for d in gi if shape[d] != 1), None)
            major_out = next((d for d in gj if oshape[d] != 1), None)
            if major_in is not None and major_out is not None:
                out[major_out] = s[major_in]
    except IndexError:
        return None
    return tuple(out)


def _broadcasts(shape: tuple, oshape: tuple) -> bool:
    if len(shape) > len(oshape):
        return False
    off = len(oshape) - len(shape)
    return all(n == oshape[i + off] or n == 1 for i, n in enumerate(shape))


def _distinct(spec: tuple) -> tuple:
    """``spec`` with a mesh axis kept only where it first splits a dimension (an axis splits one)."""
    seen: set = set()
    out = []
    for e in spec:
        keep = () if any(n in seen for n in e) else e
        seen.update(keep)
        out.append(keep)
    return tuple(out)


def _pad(s, n):
    return tuple(s) + ((),) * (n - len(s))


def output_shardings(graph, in_shardings: tuple) -> list:
    """The sharding of each output of ``graph`` given its inputs' (NamedSharding or None)."""
    from arrayx.core.graph import Var

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
        specs, emesh = _spec_of_eqn(eqn, ins, mesh)
        mesh = emesh or mesh
        for o, s in zip(eqn.outputs, specs):
            if mesh is not None:
                env[o] = (mesh, _fits(mesh, s, tuple(o.aval.shape)))
    out = []
    for o in graph.outputs:
        got = env.get(o) if o.__class__ is Var else None
        out.append(None if got is None else _named(*got))
    graph.derived[key] = out
    return out


def _fits(mesh, spec, shape) -> tuple:
    """``spec`` where it splits ``shape`` evenly over ``mesh``, else () (replicated)."""
    if not spec:
        return ()
    for names, n in zip(spec, shape):
        k = 1
        for a in names:
            k *= mesh.shape[a]
        if not isinstance(n, int) or n % k:
            return ()
    return spec


def _named(mesh, spec):
    entries = [(e[0] if len(e) == 1 else e) if e else None for e in spec]
    while entries and entries[-1] is None:  # as XLA's results: P('x',), not P('x', None)
        entries.pop()
    return NamedSharding(mesh, PartitionSpec(*entries))


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
            o._buf = _laid_out(o._ex, o._buf, _as_operand(s, ins, in_arrays, o.ndim))
    return out_arrays


def _as_operand(s, shardings, operands, ndim: int):
    """An operand's own sharding where ``s`` is the same layout of an array of the same rank (XLA
    gives an elementwise result its operand's sharding, ``P('x', None)`` included), else ``s``."""
    want = s.spec.normalized(ndim)
    for t, x in zip(shardings, operands):
        if t is not None and t.mesh == s.mesh and len(x.shape) == ndim and t.spec.normalized(ndim) == want:
            return t
    return s


def _laid_out(ex, buf, sharding):
    """``buf`` recorded as holding ``sharding``'s blocks (on dask: rechunked to one chunk per block,
    each computed on its worker where the mesh is made of a cluster's workers: ``_dask.laid_out``)."""
    from arrayx.sharding import _records

    if ex.name == "dask" and isinstance(sharding, NamedSharding):
        from arrayx.sharding._dask import laid_out

        buf = laid_out(buf, sharding)
    _records.attach_buffer(buf, sharding)
    return buf


def eager_result(prim, ex, bufs, params, out):
    """The eager hook (``core.eager_hook``, installed while some buffer has a sharding record): an
    op of sharded operands gives its result(s) the sharding :func:`spec_rule` gives (the same
    rules as ``jit``'s pass; JAX's eager ops on committed arrays run ``jit`` of the op), operands
    of one virtual device keep it; unsharded operands give an unsharded result (nothing done)."""
    from arrayx.sharding._records import lookup_buffer

    mesh = None
    single = None
    got = []
    for b in bufs:
        s = lookup_buffer(b)
        if s.__class__ is NamedSharding:
            if mesh is None:
                mesh = s.mesh
            got.append(s)
        else:
            if s is not None:
                single = s
            got.append(None)
    if mesh is None:
        if single is None or ex.name == "jax":
            return out
        outs = out if prim.multiple_results else (out,)
        for o in outs:
            if o is not None and all(o is not b for b in bufs):
                _records_attach(o, single)
        return out
    shaped = []
    for b, s in zip(bufs, got):
        shape = getattr(b, "shape", None)
        if shape is None:
            continue
        shaped.append((tuple(shape), s.spec.normalized(len(shape)) if s is not None and s.mesh == mesh else None))
    outs = out if prim.multiple_results else (out,)
    oshapes = [tuple(o.shape) for o in outs]
    if any(not isinstance(n, int) for sh in oshapes for n in sh):  # dask: sizes known only by computing
        return out
    if prim.name == "basic_index":  # an eager x[key] of a basic key (arrayx.api.indexing)
        specs = [basic_index_spec(shaped[0][0], shaped[0][1], params["key"])] if shaped[0][1] is not None else [None]
    else:
        specs = spec_rule(prim.name, params or {}, shaped, oshapes)
    laid = []
    for o, spec, shape in zip(outs, specs, oshapes):
        if any(o is b for b in bufs):  # the operand itself (a no-op): it keeps its own record
            laid.append(o)
            continue
        s = _as_operand(_named(mesh, _fits(mesh, spec or (), shape)), got, bufs, len(shape))
        laid.append(_laid_out(ex, o, s))
    return tuple(laid) if prim.multiple_results else laid[0]


def basic_index_spec(shape: tuple, s: tuple, key) -> tuple | None:
    """The spec of ``x[key]`` (ints, slices, None, Ellipsis) for ``x`` of ``shape`` split as ``s``, as
    JAX gives it: a dimension taken whole (a slice covering it forwards, step 1) keeps its split, a
    sliced one is replicated, an int drops its dimension, None adds a replicated one."""
    entries = key if key.__class__ is tuple else (key,)
    s = _pad(s, len(shape))
    n_indexing = sum(1 for e in entries if e is not None and e is not Ellipsis)
    out, i = [], 0
    for e in entries:
        if e is None:
            out.append(())
        elif e is Ellipsis:
            for _ in range(len(shape) - n_indexing):
                out.append(s[i])
                i += 1
        elif isinstance(e, slice):
            whole = e.indices(shape[i]) == (0, shape[i], 1)
            out.append(s[i] if whole else ())
            i += 1
        elif isinstance(e, (int, np.integer)):
            i += 1
        else:
            return None
    out.extend(s[i:])
    return tuple(out)


def _records_attach(buf, sharding):
    from arrayx.sharding._records import attach_buffer

    attach_buffer(buf, sharding)


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
