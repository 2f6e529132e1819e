"""``with_sharding_constraint``: inside ``jit``, the value is to be laid out as ``sharding`` says.

A primitive with no effect on values: on jax it lowers to ``jax.lax.with_sharding_constraint`` (XLA
reshards there); on dask it rechunks to the sharding's blocks (those executors' tables:
``executors/jax/sharding.py``, ``executors/dask/sharding.py``); on numpy/numba it marks the value for
the shardings ``jit`` gives its results (``_propagate``).  Outside ``jit`` it is ``device_put``.
Linear: the cotangent is constrained the same way (as JAX does); under ``vmap`` the batch dimension
is left whole.
"""
from __future__ import annotations

from arrayx import pytree
from arrayx.sharding._mesh import PartitionSpec
from arrayx.sharding._shardings import NamedSharding, Sharding, SingleDeviceSharding, check_divisible
from arrayx.core.array import Array
from arrayx.core.primitives import Primitive
from arrayx.core.executor import GENERIC
from arrayx.core.tracers import ShapeDtypeStruct, is_weak

sharding_constraint_p = Primitive("sharding_constraint")
sharding_constraint_p.abstract_eval = lambda x, *, sharding: ShapeDtypeStruct._trusted(
    tuple(x.shape), x.dtype, is_weak(x))
GENERIC[sharding_constraint_p.name] = lambda x, *, sharding: x  # jax's and dask's: executors/<name>/sharding.py


def _lowering(ex, params):
    impl = ex.table.get(sharding_constraint_p.name) or GENERIC[sharding_constraint_p.name]
    return lambda x: impl(x, **params)


sharding_constraint_p.lowerings["*"] = _lowering


def _batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    if d is None or not isinstance(sharding, NamedSharding):
        return sharding_constraint_p.bind(x, sharding=sharding), d
    entries = list(sharding.spec) + [None] * (x.ndim - 1 - len(sharding.spec))
    entries.insert(d, None)
    return sharding_constraint_p.bind(x, sharding=NamedSharding(sharding.mesh, PartitionSpec(*entries))), d


sharding_constraint_p.batch = _batch


def _define_rules():
    from arrayx.transforms.rules import deflinear

    deflinear(sharding_constraint_p, lambda ct, x, *, sharding: (sharding_constraint_p.bind(ct, sharding=sharding),))


_define_rules()


def with_sharding_constraint(x, shardings):
    """``x`` (an array or a pytree) laid out as ``shardings`` (a Sharding or a pytree of them) says,
    inside ``jit``; outside it is ``device_put``."""
    from arrayx.sharding._api import device_put

    def one(v, s):
        if isinstance(s, PartitionSpec):
            raise TypeError("with_sharding_constraint: a bare PartitionSpec needs a mesh; pass "
                            "NamedSharding(mesh, spec)")
        if not isinstance(s, Sharding):
            raise TypeError(f"with_sharding_constraint: expected a NamedSharding or SingleDeviceSharding, got "
                            f"{type(s).__name__}")
        if not isinstance(v, Array):
            from arrayx import api as ax

            v = ax.asarray(v)
        if v.__class__ is Array:
            return device_put(v, s)
        if isinstance(s, NamedSharding):
            check_divisible("with_sharding_constraint", s.spec, s.mesh, tuple(v.shape))
        return sharding_constraint_p.bind(v, sharding=s)

    if isinstance(shardings, (Sharding,)):
        return pytree.map(lambda v: one(v, shardings), x)
    leaves, tree = pytree.flatten(x)
    targets = pytree.broadcast_prefix(shardings, x, is_leaf=lambda s: isinstance(s, (Sharding, PartitionSpec)),
                                      prefix_name="shardings", full_name="x", who="with_sharding_constraint")
    return pytree.unflatten(tree, [one(v, s) for v, s in zip(leaves, targets)])


__all__ = ["with_sharding_constraint", "sharding_constraint_p", "SingleDeviceSharding"]
