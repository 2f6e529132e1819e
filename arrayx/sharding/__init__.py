"""``arrayx.sharding``: arrays split over the devices of a mesh, with JAX's model.

- :class:`Mesh` / :func:`make_mesh`: a grid of devices with named axes; :func:`devices` lists an
  executor's devices (JAX's; a Dask cluster's workers; ``ARRAYX_VIRTUAL_DEVICES`` virtual devices
  on numpy/numba);
- :class:`PartitionSpec` (``P``), :class:`NamedSharding`, :class:`SingleDeviceSharding`;
- ``arrayx.device_put(x, sharding)``, ``x.sharding``, ``x.devices()``, ``x.addressable_shards``,
  ``arrayx.debug.visualize_array_sharding(x)``;
- ``arrayx.jit`` keeps and propagates shardings (``in_shardings``/``out_shardings``),
  ``arrayx.lax.with_sharding_constraint`` inside it;
- ``arrayx.shard_map(f, mesh=, in_specs=, out_specs=)`` with the collectives over mesh axis names.

On jax the shardings are XLA's own; on dask a sharding is a chunking and a placement on workers;
on numpy/numba the values are computed as unsharded ones (shard_map runs each member in turn on its
own blocks).  cupy: not implemented (NotImplementedError).
"""
from __future__ import annotations

from arrayx.sharding._api import Shard, addressable_shards, device_put, devices_of, sharding_of  # noqa: F401
from arrayx.sharding._api import visualize_array_sharding  # noqa: F401
from arrayx.sharding._collectives import ppermute, psum_scatter  # noqa: F401
from arrayx.sharding._constraint import with_sharding_constraint  # noqa: F401
from arrayx.sharding._mesh import Mesh, P, PartitionSpec, devices, make_mesh, virtual_devices  # noqa: F401
from arrayx.sharding._shard_map import shard_map  # noqa: F401
from arrayx.sharding._shardings import NamedSharding, Sharding, SingleDeviceSharding  # noqa: F401

__all__ = ["Mesh", "make_mesh", "PartitionSpec", "P", "NamedSharding", "SingleDeviceSharding", "Sharding",
           "devices", "virtual_devices", "device_put", "shard_map", "with_sharding_constraint", "ppermute",
           "psum_scatter", "visualize_array_sharding", "addressable_shards"]
