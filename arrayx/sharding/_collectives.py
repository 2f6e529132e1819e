"""``ppermute`` and ``psum_scatter`` over mapped axes, as collectives of their own: each member
receives only what it needs.

- ``ppermute(x, axis_name, perm)``: member ``dst`` gets member ``src``'s ``x`` for each pair; a member
  no pair sends to gets zeros (``jax.lax.ppermute``).  One block travels per pair, none elsewhere.
- ``psum_scatter(x, axis_name, scatter_dimension=, tiled=)``: member ``m`` gets block ``m`` of the
  sum along ``scatter_dimension``; it adds up the other members' ``m``-th parts only (a ``1/n``-th of
  each), never the whole sum (``jax.lax.psum_scatter``).

``axis_name`` may be a tuple of names: the members are then numbered row-major over the named axes,
as JAX numbers them: for ``psum_scatter`` in the tuple's order (the first name varies slowest), for
``ppermute`` in the order the axes are bound (the mesh's order inside shard_map, whatever the
tuple's order).  A ``psum_scatter`` over a tuple is one per name, the first name first (each
member's part is the same block of the flattened numbering, and each step moves a ``1/n``-th of what
it reduces); a ``ppermute`` over a tuple is one primitive.

Where each runs (``ppermute_p``/``psum_scatter_p`` are primitives, so the member graph of a
shard_map holds them and the runners see them):

- shard_map on numpy / numba (``_virtual``): :func:`combine_in_turn` gives each member its source's
  block (a copy) or its summed part;
- shard_map on dask (``_virtual``): :func:`arrayx.sharding._dask.combine_blocks` wires the source's
  task straight into the destination's (no task between them), and for psum_scatter one task per
  (source, destination) cutting the source's part where the source is, one sum where the
  destination is;
- shard_map on jax: ``jax.lax.ppermute`` / ``jax.lax.psum_scatter`` (the lowering below);
- under ``vmap(axis_name=)`` (and so shard_map under ``jit``/``grad``, and ``pmap`` under a
  transform, which are nested vmaps): the named batch rules (a ``take`` along the mapped axis; a
  sum then a split);
- inside ``pmap`` with no transform active (its member graph holds the primitives as shard_map's
  does): numpy / numba and the dask runner actor hand each member its source's block or its
  summed part (:func:`combine_in_turn`); the dask task runner (``transforms/pmap_dask.py``) cuts,
  on each group's worker, only the blocks or parts another group's members need (one small task
  per pair of groups) and the reading group combines them; jax runs ``jax.lax.ppermute`` /
  ``jax.lax.psum_scatter`` inside ``jax.pmap``.  The earlier formulation over ``all_gather`` /
  ``psum`` (:func:`ppermute_gathered`, :func:`psum_scatter_summed`: every member received every
  block) stays as the tests' reference.

:func:`record_transfers` counts, per collective, the bytes each member receives from the others
on the numpy/numba/dask runners of shard_map and pmap (the tests and the benchmark read it).
"""
from __future__ import annotations

import contextlib
import math
from contextvars import ContextVar

import numpy as np

from arrayx import pytree
from arrayx.core.axis_env import JAX_MAPPED, _frame, _names, axis_frames
from arrayx.core.executor import GENERIC
from arrayx.core.primitives import Primitive
from arrayx.core.tracers import ShapeDtypeStruct, is_weak
from arrayx.transforms.parallel import COLLECTIVES, _psum_unmapped, all_gather, all_gather_p, axis_index, psum, psum_p

__all__ = ["ppermute", "psum_scatter", "ppermute_p", "psum_scatter_p", "record_transfers", "Transfers",
           "ppermute_gathered", "psum_scatter_summed", "combine_in_turn"]

ppermute_p = Primitive("ppermute")  # params: axis_name (a name, or a tuple of names), axis_size, perm
psum_scatter_p = Primitive("psum_scatter")  # params: axis_name (one name), axis_size, scatter_dimension, tiled
COLLECTIVES.extend([ppermute_p, psum_scatter_p])  # segments() cuts at them; the runners combine them


# -- checks and the public functions ---------------------------------------------------------------------


def _checked_perm(perm, n, axis_name) -> tuple:
    """``perm`` as a tuple of (src, dst) int pairs, each member sending and receiving at most once."""
    try:
        pairs = tuple((int(s), int(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise TypeError(f"ppermute: perm must be a sequence of (source, destination) index pairs, got {perm!r}")
    for pair in pairs:
        if not all(0 <= v < n for v in pair):
            raise ValueError(f"ppermute: pair {pair} is out of range for axis {axis_name!r} of size {n}")
    if len({s for s, _ in pairs}) != len(pairs) or len({d for _, d in pairs}) != len(pairs):
        raise ValueError(f"ppermute: perm {list(pairs)} sends from or to a member twice; it must be a permutation")
    return pairs


def sources(perm, n) -> list:
    """For each member, the member it receives from (-1: none, it gets zeros)."""
    src = [-1] * n
    for s, d in perm:
        src[d] = s
    return src


def _axis_frames(fname, axis_name):
    names = _names(axis_name)
    if len(set(names)) != len(names):
        raise ValueError(f"{fname}: axis_name {axis_name!r} names an axis twice")
    return names, [_frame(fname, a) for a in names]


def ppermute(x, axis_name, perm):
    """Member ``dst`` gets member ``src``'s ``x`` for each ``(src, dst)`` in ``perm``; members that no
    pair sends to get zeros (as ``jax.lax.ppermute``).  ``axis_name``: a mapped axis or a tuple of
    them (members numbered row-major over them in the mesh's axis order, as JAX).  ``x`` may be a
    pytree."""
    from arrayx import api as ax

    names, frames = _axis_frames("ppermute", axis_name)
    if len(names) > 1:  # numbered in the order the axes are bound (the mesh's), whatever the tuple's (as JAX)
        bound = {f.name: k for k, f in enumerate(axis_frames())}
        names = tuple(sorted(names, key=bound.__getitem__))
        frames = [_frame("ppermute", a) for a in names]
    n = math.prod(f.size for f in frames)
    pairs = _checked_perm(perm, n, axis_name)
    name = names[0] if len(names) == 1 else names

    def one(v):
        v = v if isinstance(v, ax.Array) else ax.asarray(v)
        return ppermute_p.bind(v, axis_name=name, axis_size=n, perm=pairs)

    return pytree.map(one, x)


def _scatter_dim(fname, v, scatter_dimension, n, tiled, axis_name) -> int:
    if v.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension (got a {v.dtype} scalar)")
    if not -v.ndim <= scatter_dimension < v.ndim:
        raise ValueError(f"{fname}: scatter_dimension {scatter_dimension} is out of range for x of shape "
                         f"{tuple(v.shape)}")
    d = scatter_dimension % v.ndim
    size = v.shape[d]
    if tiled and size % n:
        raise ValueError(f"{fname}: dimension {d} of x (shape {tuple(v.shape)}) has size {size}, which the size {n} "
                         f"of axis {axis_name!r} does not divide; with tiled=True it must")
    if not tiled and size != n:
        raise ValueError(f"{fname}: dimension {d} of x (shape {tuple(v.shape)}) has size {size} but axis "
                         f"{axis_name!r} has {n} members; with tiled=False they must be equal (or use tiled=True)")
    return d


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, tiled: bool = False):
    """The ``psum`` of ``x`` over ``axis_name``, each member keeping its block along
    ``scatter_dimension`` (its index there when not ``tiled``; a ``size``-th when ``tiled``)."""
    from arrayx import api as ax

    names, frames = _axis_frames("psum_scatter", axis_name)
    n = math.prod(f.size for f in frames)
    tiled = bool(tiled)

    def one(v):
        v = v if isinstance(v, ax.Array) else ax.asarray(v)
        d = _scatter_dim("psum_scatter", v, scatter_dimension, n, tiled, axis_name)
        if not tiled and len(names) > 1:  # the dimension of n as one of each axis's size, row-major
            v = ax.reshape(v, tuple(v.shape[:d]) + tuple(f.size for f in frames) + tuple(v.shape[d + 1:]))
        for f in frames:  # the first name first: member (i, j) ends with block i * n_j + j
            v = psum_scatter_p.bind(v, axis_name=f.name, axis_size=f.size, scatter_dimension=d, tiled=tiled)
        return v

    return pytree.map(one, x)


# -- the earlier formulation (pmap's, and the reference the tests compare with) --------------------------


def _linear_index(names):
    """This member's position over ``names``, row-major (int32)."""
    from arrayx import api as ax

    me = ax.asarray(0, dtype=ax.int32)
    for a in names:
        me = me * _frame("axis_index", a).size + axis_index(a)
    return me


def ppermute_gathered(v, names, pairs):
    """``ppermute`` as an ``all_gather`` and each member's pick of its source (every member receives
    every block)."""
    from arrayx import api as ax
    from arrayx.api._slicing import dynamic_index_in_dim

    names = _names(names)
    n = math.prod(_frame("ppermute", a).size for a in names)
    src_of = sources(pairs, n)
    g = v
    for a in reversed(names):  # leading axes in the order of names
        g = all_gather(g, a)
    g = ax.reshape(g, (n,) + tuple(v.shape))
    me = _linear_index(names)
    src = dynamic_index_in_dim(ax.asarray([max(s, 0) for s in src_of], dtype=ax.int32), me, 0, keepdims=False)
    has = dynamic_index_in_dim(ax.asarray([s >= 0 for s in src_of]), me, 0, keepdims=False)
    picked = dynamic_index_in_dim(g, src, 0, keepdims=False)
    return ax.where(has, picked, ax.zeros_like(picked))


def psum_scatter_summed(v, names, d, tiled):
    """``psum_scatter`` as a ``psum`` and each member's slice of it (every member receives the whole sum)."""
    from arrayx.api._slicing import dynamic_index_in_dim, dynamic_slice_in_dim

    names = _names(names)
    n = math.prod(_frame("psum_scatter", a).size for a in names)
    total = psum(v, names)
    me = _linear_index(names)
    if tiled:
        k = v.shape[d] // n
        return dynamic_slice_in_dim(total, me * k, k, d)
    return dynamic_index_in_dim(total, me, d, keepdims=False)


# -- the primitives' rules ---------------------------------------------------------------------------------


def _scattered_shape(shape, axis_size, scatter_dimension, tiled) -> tuple:
    shape = list(shape)
    if tiled:
        shape[scatter_dimension] //= axis_size
    else:
        del shape[scatter_dimension]
    return tuple(shape)


ppermute_p.abstract_eval = lambda x, **params: ShapeDtypeStruct._trusted(tuple(x.shape), x.dtype, is_weak(x))
psum_scatter_p.abstract_eval = lambda x, *, axis_name, axis_size, scatter_dimension, tiled: \
    ShapeDtypeStruct._trusted(_scattered_shape(x.shape, axis_size, scatter_dimension, tiled), x.dtype, is_weak(x))


def _ppermute_unmapped(x, *, axis_name, axis_size, perm):
    """On a concrete value (the same on every member) with no runner of the axis: a permutation of
    every member leaves it as it is; anything else depends on the member, which is not known here."""
    if len(perm) == axis_size:
        return x
    raise NotImplementedError(f"ppermute over {axis_name!r} with perm {list(perm)} (not every member receives) on a "
                              f"value outside shard_map/vmap/pmap: the result differs per member; call it inside "
                              f"the mapped function")


def _psum_scatter_unmapped(x, *, axis_name, axis_size, scatter_dimension, tiled):
    raise NotImplementedError(f"psum_scatter over {axis_name!r} on a value outside shard_map/vmap/pmap: each member "
                              f"keeps a different block; call it inside the mapped function")


GENERIC[ppermute_p.name] = _ppermute_unmapped
GENERIC[psum_scatter_p.name] = _psum_scatter_unmapped


def _jax_lowering(unmapped, collective):
    def lower(ex, params):
        names = _names(params["axis_name"])

        def run(x):
            if not all(a in JAX_MAPPED.get() for a in names):
                return unmapped(x, **params)
            return collective(x, params)

        return run

    return lower


def _jax_ppermute(x, params):
    import jax

    return jax.lax.ppermute(x, params["axis_name"], perm=[tuple(p) for p in params["perm"]])


def _jax_psum_scatter(x, params):
    import jax

    return jax.lax.psum_scatter(x, params["axis_name"], scatter_dimension=params["scatter_dimension"],
                                tiled=params["tiled"])


def _jax_psum(x, params):
    import jax

    return jax.lax.psum(x, params["axis_name"])


def _psum_lowering(ex, params):
    """psum over a tuple of names (one primitive: ``parallel.psum``) is ``jax.lax.psum`` over the
    tuple, one all-reduce over the combined group; over one name the jax executor's own entry."""
    if params["axis_name"].__class__ is tuple:
        return _jax_lowering(_psum_unmapped, _jax_psum)(ex, params)
    impl = ex.impls.get(psum_p) or ex.resolve(psum_p)
    return lambda x: impl(x, **params)


# inside jax.shard_map (and jax.pmap) over the axes: JAX's own collectives
ppermute_p.lowerings["jax"] = _jax_lowering(_ppermute_unmapped, _jax_ppermute)
psum_scatter_p.lowerings["jax"] = _jax_lowering(_psum_scatter_unmapped, _jax_psum_scatter)
psum_p.lowerings["jax"] = _psum_lowering


def _define_rules():
    from arrayx.transforms.batching import COLLECTIVE_RULES
    from arrayx.transforms.rules import deflinear
    from arrayx.transforms.rules._batch import defbatch

    deflinear(ppermute_p, lambda ct, x, *, perm, **params: (
        ppermute_p.bind(ct, perm=tuple((d, s) for s, d in perm), **params),))
    deflinear(psum_scatter_p, lambda ct, x, *, scatter_dimension, **params: (
        all_gather_p.bind(ct, axis=scatter_dimension, **params),))
    defbatch(ppermute_p, _ppermute_batch)
    defbatch(psum_scatter_p, _psum_scatter_batch)
    COLLECTIVE_RULES[ppermute_p] = _ppermute_named
    COLLECTIVE_RULES[psum_scatter_p] = _psum_scatter_named


# batched along an axis other than the collective's: member-wise
def _ppermute_batch(vals, dims, **params):
    return ppermute_p.bind(vals[0], **params), dims[0]


def _psum_scatter_batch(vals, dims, *, scatter_dimension, **params):
    from arrayx.transforms.rules._batch import to_front

    return psum_scatter_p.bind(to_front(vals[0], dims[0]), scatter_dimension=scatter_dimension + 1, **params), 0


def _vmapped_name(names, size):
    """Which of ``names`` the vmap applying a named rule maps: the innermost vmap frame among them
    (bind reaches the innermost trace first)."""
    for f in reversed(axis_frames()):
        if f.name in names and f.kind == "vmap" and f.size == size:
            return f.name
    raise NameError(f"ppermute over {names!r}: no enclosing vmap maps one of these axes")


def _ppermute_named(vals, dims, size, *, axis_name, axis_size, perm):
    """Over the vmapped axis itself: each member's row of the source's (a take along the axis);
    over a tuple of axes the other axes' blocks are gathered first (they are outer vmaps here)."""
    from arrayx import api as ax
    from arrayx.transforms.rules._batch import moveaxis_to

    (x,), (d,) = vals, dims
    x = moveaxis_to(x, d, 0, size)
    names = _names(axis_name)
    src_of = sources(perm, axis_size)
    if len(names) == 1:
        idx = ax.asarray([max(s, 0) for s in src_of], dtype=ax.int32)
        has = ax.asarray([s >= 0 for s in src_of])
    else:
        here = _vmapped_name(names, size)
        rest = [a for a in names if a != here]
        g = x
        for a in reversed(rest):  # leading axes: rest (in names order), then here
            g = all_gather_p.bind(g, axis_name=a, axis_size=_frame("ppermute", a).size, axis=0, tiled=False)
        lead = rest + [here]
        order = [lead.index(a) for a in names]
        g = ax.permute_dims(g, tuple(order) + tuple(range(len(names), g.ndim)))
        x = ax.reshape(g, (axis_size,) + tuple(g.shape[len(names):]))
        me = ax.asarray(0, dtype=ax.int32)
        for a in names:  # this member's linear position, one per coordinate along `here`
            coord = ax.arange(size, dtype=ax.int32) if a == here else axis_index(a)
            me = me * _frame("ppermute", a).size + coord
        idx = ax.take(ax.asarray([max(s, 0) for s in src_of], dtype=ax.int32), me, axis=0)
        has = ax.take(ax.asarray([s >= 0 for s in src_of]), me, axis=0)
    out = ax.take(x, idx, axis=0)
    mask = ax.reshape(has, (size,) + (1,) * (out.ndim - 1))
    return ax.where(mask, out, ax.zeros_like(out)), 0


def _psum_scatter_named(vals, dims, size, *, axis_name, axis_size, scatter_dimension, tiled):
    """Over the vmapped axis itself: the sum over it (as psum's rule), its blocks along
    ``scatter_dimension`` becoming the mapped axis."""
    from arrayx import api as ax

    (x,), (d,) = vals, dims
    total = x * size if d is None else ax.sum(x, axis=d, dtype=x.dtype)
    k = scatter_dimension
    if tiled:
        shape = tuple(total.shape)
        total = ax.reshape(total, shape[:k] + (size, shape[k] // size) + shape[k + 1:])
    return ax.moveaxis(total, k, 0), 0


_define_rules()


# -- counting what the runners move --------------------------------------------------------------------------


class Transfers:
    """What members received from other members during :func:`record_transfers`: one record per
    (collective, source member, destination member, bytes)."""

    def __init__(self):
        self.records: list = []

    def add(self, collective, src, dst, nbytes):
        if src != dst and nbytes:
            self.records.append((collective, int(src), int(dst), int(nbytes)))

    @property
    def bytes(self) -> int:
        return sum(r[3] for r in self.records)

    def by_collective(self) -> dict:
        """{collective name: bytes}."""
        out: dict = {}
        for name, _, _, nb in self.records:
            out[name] = out.get(name, 0) + nb
        return out

    def received(self) -> dict:
        """{destination member: bytes}."""
        out: dict = {}
        for _, _, dst, nb in self.records:
            out[dst] = out.get(dst, 0) + nb
        return out


_RECORDING: ContextVar = ContextVar("arrayx_collective_transfers", default=None)


@contextlib.contextmanager
def record_transfers():
    """``with record_transfers() as t:`` the shard_maps run inside (numpy, numba, dask runners) add
    to ``t`` (a :class:`Transfers`) each block a member receives from another."""
    t = Transfers()
    token = _RECORDING.set(t)
    try:
        yield t
    finally:
        _RECORDING.reset(token)


def note(collective, src, dst, nbytes) -> None:
    t = _RECORDING.get()
    if t is not None:
        t.add(collective, src, dst, nbytes)


def _nbytes(aval) -> int:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize


def note_collective(eqn, group) -> None:
    """What a runner's collective moves: ppermute one block per pair, psum_scatter each member's
    part of every other member's value, the others (psum, pmax, pmin, all_gather) every other
    member's whole value to each member."""
    if _RECORDING.get() is None:
        return
    name, params = eqn.prim.name, eqn.params
    nb = _nbytes(eqn.inputs[0].aval)
    if eqn.prim is ppermute_p:
        for s, d in params["perm"]:
            note(name, group[s], group[d], nb)
        return
    part = nb // len(group) if eqn.prim is psum_scatter_p else nb
    for dst in group:
        for src in group:
            note(name, src, dst, part)


# -- the numpy / numba runner ---------------------------------------------------------------------------


def part_index(ndim, d, m, n, tiled, size) -> tuple:
    """The index of member ``m``'s part of a value along dimension ``d``."""
    if tiled:
        k = size // n
        return (slice(None),) * d + (slice(m * k, (m + 1) * k),)
    return (slice(None),) * d + (m,)


def combine_in_turn(xp, eqn, values, copy) -> list:
    """ppermute / psum_scatter over one group's values (in member order) -> each member's result:
    its source's block (``copy``: the block as the destination's own buffer) or zeros; the sum of
    every member's part ``m`` for member ``m``, added in member order (as psum adds)."""
    params = eqn.params
    n = len(values)
    if eqn.prim is ppermute_p:
        src_of = sources(params["perm"], n)
        return [copy(values[s]) if s >= 0 else xp.zeros_like(values[0]) for s in src_of]
    d, tiled = params["scatter_dimension"], params["tiled"]
    size = values[0].shape[d]
    out = []
    for m in range(n):
        key = part_index(values[0].ndim, d, m, n, tiled, size)
        acc = copy(values[0][key])  # the member's own buffer (a 0-d array for a scalar part)
        for v in values[1:]:
            acc = acc + v[key]
        out.append(xp.asarray(acc))
    return out


def is_block_collective(prim) -> bool:
    return prim is ppermute_p or prim is psum_scatter_p


def _register() -> None:
    """pmap's runners combine ppermute / psum_scatter and count transfers through this module."""
    import sys

    from arrayx.transforms import parallel

    parallel.BLOCK_COLLECTIVES = sys.modules[__name__]


_register()
