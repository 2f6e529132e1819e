"""``arrayx.sharding``: arrays split over the devices of a mesh, with JAX's model.

- :class:`Mesh` / :func:`make_mesh`: a grid of devices with named axes; :func:`devices` lists an
  executor's devices (JAX's; a Dask cluster's workers; ``ARRAYX_VIRTUAL_DEVICES`` virtual devices
  on numpy/numba); :func:`create_device_mesh` (also ``mesh_utils.create_device_mesh``, as
  ``jax.experimental.mesh_utils``) an array of all of them in a mesh's shape;
- :class:`PartitionSpec` (``P``), :class:`NamedSharding`, :class:`SingleDeviceSharding`;
- ``arrayx.device_put(x, sharding)``, ``x.sharding``, ``x.devices()``, ``x.addressable_shards``,
  ``arrayx.debug.visualize_array_sharding(x)``;
- ``arrayx.jit`` keeps and propagates shardings (``in_shardings``/``out_shardings``),
  ``arrayx.lax.with_sharding_constraint`` inside it;
- ``arrayx.shard_map(f, mesh=, in_specs=, out_specs=)`` with the collectives over mesh axis names.

On jax the shardings are XLA's own; on dask a sharding is a chunking and a placement on workers;
on numpy/numba the values are computed as unsharded ones (shard_map runs each member in turn on its
own blocks).  cupy: not implemented (NotImplementedError).

Import cycles (each import inside a function, so any module loads alone): ``_records`` installs
the eager hook of ``_propagate`` when the first record exists, and ``_propagate`` reads the records
and, on dask, ``_dask``'s chunks, which are built from ``_shardings``, whose ``NamedSharding``
installs ``_propagate`` when the first one is made; ``_api``'s ``device_put`` and ``_constraint``'s
``with_sharding_constraint`` call each other (a constraint on a concrete array is a device_put);
``_shard_map`` runs on virtual devices through ``_virtual``, which stages and checks the member with
``_shard_map``'s helpers (the replication check: ``_replication``).
"""
from __future__ import annotations

from arrayx.sharding._api import Shard, addressable_shards, device_put, devices_of, sharding_of  # noqa: F401
from arrayx.sharding._api import visualize_array_sharding  # noqa: F401
from arrayx.sharding._collectives import ppermute, psum_scatter  # noqa: F401
from arrayx.sharding._constraint import with_sharding_constraint  # noqa: F401
from arrayx.sharding._mesh import Mesh, P, PartitionSpec, devices, make_mesh, virtual_devices  # noqa: F401
from arrayx.sharding._shard_map import shard_map  # noqa: F401
from arrayx.sharding._shardings import NamedSharding, Sharding, SingleDeviceSharding  # noqa: F401
from arrayx.sharding import mesh_utils  # noqa: F401,E402
from arrayx.sharding.mesh_utils import create_device_mesh  # noqa: F401,E402
from arrayx.sharding import _jit  # noqa: F401,E402  (installs jit(..., in_shardings=) )

__all__ = ["Mesh", "make_mesh", "create_device_mesh", "mesh_utils", "PartitionSpec", "P", "NamedSharding", "SingleDeviceSharding", "Sharding",
           "devices", "virtual_devices", "device_put", "shard_map", "with_sharding_constraint", "ppermute",
           "psum_scatter", "visualize_array_sharding", "addressable_shards"]
