"""The JAX executor's entries for the collectives (``psum``, ``pmax``, ``pmin``, ``all_gather``):
inside a ``jax.pmap`` (or a jax ``shard_map``) being traced over the collective's axis
(``arrayx.core.axis_env.JAX_MAPPED``), ``jax.lax``'s own collective; over any other axis the
unmapped value, the generic implementation every executor has (``arrayx.core.executor.GENERIC``).
The primitives and their rules: ``arrayx/transforms/parallel.py``."""
from __future__ import annotations

from arrayx.core.axis_env import JAX_MAPPED
from arrayx.core.executor import GENERIC

__all__ = ["TABLE"]


def psum(x, **params):
    if params["axis_name"] not in JAX_MAPPED.get():
        return GENERIC["psum"](x, **params)
    import jax

    return jax.lax.psum(x, params["axis_name"])


def pmax(x, **params):
    if params["axis_name"] not in JAX_MAPPED.get():
        return GENERIC["pmax"](x, **params)
    import jax

    return jax.lax.pmax(x, params["axis_name"])


def pmin(x, **params):
    if params["axis_name"] not in JAX_MAPPED.get():
        return GENERIC["pmin"](x, **params)
    import jax

    return jax.lax.pmin(x, params["axis_name"])


def all_gather(x, **params):
    if params["axis_name"] not in JAX_MAPPED.get():
        return GENERIC["all_gather"](x, **params)
    import jax

    return jax.lax.all_gather(x, params["axis_name"], axis=params["axis"], tiled=params["tiled"])


#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {"psum": psum, "pmax": pmax, "pmin": pmin, "all_gather": all_gather}
