"""The Dask executor's entry for ``with_sharding_constraint``'s primitive: a NamedSharding is a
chunking, each dimension cut into as many chunks as the mesh axes it is split over (as
``arrayx/sharding/_dask.py`` places blocks); any other sharding leaves the value as it is.  The
primitive and its rules: ``arrayx/sharding/_constraint.py``.  (Read through the sharding's ``mesh``
and ``spec``: the sharding package builds on this executor, so this module does not import it.)"""
from __future__ import annotations

import math

__all__ = ["TABLE", "chunks_of"]


def chunks_of(sharding, shape) -> tuple:
    """The chunks of a NamedSharding's blocks of an array of ``shape``."""
    sizes = sharding.mesh.shape
    counts = [math.prod(sizes[name] for name in sharding.spec.names_of(d)) for d in range(len(shape))]
    return tuple((n // k,) * k for n, k in zip(shape, counts))


def sharding_constraint(x, *, sharding):
    if getattr(sharding, "spec", None) is None or getattr(sharding, "mesh", None) is None:
        return x  # not a NamedSharding: nothing to rechunk to
    return x.rechunk(chunks_of(sharding, tuple(x.shape)))


#: primitive name -> Dask's implementation (merged into ``DaskExecutor.overrides``)
TABLE = {"sharding_constraint": sharding_constraint}
