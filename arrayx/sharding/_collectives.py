"""``ppermute`` and ``psum_scatter`` over a mapped axis (shard_map, pmap, vmap with axis_name),
written with the existing collectives, so that every executor, ``grad`` and ``vmap`` get them:
``ppermute`` is an ``all_gather`` then each member's pick of its source; ``psum_scatter`` a ``psum``
then each member's block.  (On jax they lower to all_gather/psum: the values are JAX's, the traffic
is that of the whole gather.)"""
from __future__ import annotations

from arrayx import pytree
from arrayx.transforms.parallel import _frame, all_gather, axis_index, psum


def ppermute(x, axis_name, perm):
    """Member ``dst`` gets member ``src``'s ``x`` for each ``(src, dst)`` in ``perm``; members that no
    pair sends to get zeros (as ``jax.lax.ppermute``)."""
    from arrayx import api as ax
    from arrayx.api._slicing import dynamic_index_in_dim

    n = _frame("ppermute", axis_name).size
    src_of = [-1] * n
    for pair in perm:
        s, d = (int(v) for v in pair)
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute: pair {pair} is out of range for axis {axis_name!r} of size {n}")
        if src_of[d] != -1 or s in [v for v in src_of if v != -1]:
            raise ValueError(f"ppermute: perm {list(perm)} sends from or to a member twice; it must be a permutation")
        src_of[d] = s

    def one(v):
        v = v if isinstance(v, ax.Array) else ax.asarray(v)
        me = axis_index(axis_name)
        src = dynamic_index_in_dim(ax.asarray([max(s, 0) for s in src_of], dtype=ax.int32), me, 0, keepdims=False)
        has = dynamic_index_in_dim(ax.asarray([s >= 0 for s in src_of]), me, 0, keepdims=False)
        picked = dynamic_index_in_dim(all_gather(v, axis_name), src, 0, keepdims=False)
        return ax.where(has, picked, ax.zeros_like(picked))

    return pytree.map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, tiled: bool = False):
    """The ``psum`` of ``x`` over ``axis_name``, each member keeping its block along
    ``scatter_dimension`` (its index there when not ``tiled``; a ``size``-th when ``tiled``)."""
    from arrayx import api as ax
    from arrayx.api._slicing import dynamic_index_in_dim, dynamic_slice_in_dim

    n = _frame("psum_scatter", axis_name).size

    def one(v):
        v = v if isinstance(v, ax.Array) else ax.asarray(v)
        d = scatter_dimension % max(1, v.ndim)
        if v.ndim == 0:
            raise ValueError("psum_scatter: x must have at least one dimension")
        size = v.shape[d]
        total = psum(v, axis_name)
        me = axis_index(axis_name)
        if tiled:
            if size % n:
                raise ValueError(f"psum_scatter: dimension {d} of size {size} is not divisible by the size {n} of "
                                 f"axis {axis_name!r}")
            return dynamic_slice_in_dim(total, me * (size // n), size // n, d)
        if size != n:
            raise ValueError(f"psum_scatter: dimension {d} has size {size} but axis {axis_name!r} has {n} members; "
                             f"with tiled=False they must be equal")
        return dynamic_index_in_dim(total, me, d, keepdims=False)

    return pytree.map(one, x)
