"""The JAX executor's entry for ``with_sharding_constraint``'s primitive: XLA's own constraint
(``jax.lax.with_sharding_constraint``; XLA reshards there).  A mesh of another executor's devices
says nothing about where XLA puts the value: it is left as it is.  The primitive and its rules:
``arrayx/sharding/_constraint.py``; arrayx's shardings as JAX's: ``arrayx/sharding/_jax.py``."""
from __future__ import annotations

__all__ = ["TABLE"]


def sharding_constraint(x, *, sharding):
    import jax

    from arrayx.sharding._jax import jax_sharding
    from arrayx.sharding._shardings import NamedSharding

    if isinstance(sharding, NamedSharding) and sharding.mesh.executor != "jax":
        return x  # a mesh of another executor's devices says nothing about where XLA puts this value
    return jax.lax.with_sharding_constraint(x, jax_sharding(sharding))


#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {"sharding_constraint": sharding_constraint}
