"""The JAX executor's entries for the collectives (``psum``, ``pmax``, ``pmin``, ``all_gather``):
inside a ``jax.pmap`` (or a jax ``shard_map``) being traced over the collective's axis
(``arrayx.core.axis_env.JAX_MAPPED``), ``jax.lax``'s own collective; over any other axis the
unmapped value, the generic implementation every executor has (``arrayx.core.executor.GENERIC``).
The primitives and their rules: ``arrayx/transforms/parallel.py``."""
from __future__ import annotations

from arrayx.core.axis_env import JAX_MAPPED
from arrayx.core.executor import GENERIC

__all__ = ["TABLE"]


def _collective(name: str):
    def impl(x, **params):
        if params["axis_name"] not in JAX_MAPPED.get():
            return GENERIC[name](x, **params)
        import jax

        if name == "all_gather":
            return jax.lax.all_gather(x, params["axis_name"], axis=params["axis"], tiled=params["tiled"])
        return getattr(jax.lax, name)(x, params["axis_name"])

    impl.__name__ = name
    return impl


#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {name: _collective(name) for name in ("psum", "pmax", "pmin", "all_gather")}
