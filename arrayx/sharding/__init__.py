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
- ``arrayx.shard_map(f, mesh=, in_specs=, out_specs=)`` with the collectives over mesh axis names;
- many processes on jax (JAX's multi-controller runtime): ``arrayx.distributed.initialize``,
  :func:`process_index`/:func:`process_count`/:func:`local_devices`,
  :func:`make_array_from_process_local_data` (and ``_single_device_arrays``, ``_callback``),
  :func:`process_allgather`; launcher ``python -m arrayx.sharding.launch`` (``_distributed``).

On jax the shardings are XLA's own; on dask a sharding is a chunking and a placement on workers;
on numpy/numba the values are computed as unsharded ones (shard_map runs each member in turn on its
own blocks).  cupy: not implemented (NotImplementedError).

Import cycles (each import inside a function, so any module loads alone): ``_records`` installs
the eager hook of ``_propagate`` when the first record exists, and ``_propagate`` reads the records
and, on dask, ``_dask``'s chunks, which are built from ``_shardings``, whose ``NamedSharding``
installs ``_propagate`` when the first one is made; ``_api``'s ``device_put`` and ``_constraint``'s
``with_sharding_constraint`` call each other (a constraint on a concrete array is a device_put);
``_shard_map`` runs on virtual devices through ``_virtual``, which stages and checks the member with
``_shard_map``'s helpers (the replication check: ``_replication``); ``_distributed`` builds arrays
from process-local data with ``_jax``'s translations of ``_shardings`` and places them with
``_api``, and ``_shardings`` asks ``_distributed`` which of a sharding's devices this process
addresses.
"""
from __future__ import annotations

from arrayx.sharding._api import Shard, addressable_shards, block_until_ready, device_put, devices_of, sharding_of  # noqa: F401
from arrayx.sharding._api import visualize_array_sharding  # noqa: F401
from arrayx.sharding._collectives import ppermute, psum_scatter  # noqa: F401
from arrayx.sharding._constraint import with_sharding_constraint  # noqa: F401
from arrayx.sharding._mesh import Mesh, P, PartitionSpec, devices, make_mesh, virtual_devices  # noqa: F401
from arrayx.sharding._shard_map import shard_map  # noqa: F401
from arrayx.sharding._shardings import NamedSharding, Sharding, SingleDeviceSharding  # noqa: F401
from arrayx.sharding import mesh_utils  # noqa: F401,E402
from arrayx.sharding.mesh_utils import create_device_mesh  # noqa: F401,E402
from arrayx.sharding import _jit  # noqa: F401,E402  (installs jit(..., in_shardings=) )
from arrayx.sharding._distributed import (  # noqa: F401,E402  (many processes: JAX's multi-controller runtime)
    local_device_count, local_devices, make_array_from_callback, make_array_from_process_local_data,
    make_array_from_single_device_arrays, process_allgather, process_count, process_index)

__all__ = ["Mesh", "make_mesh", "create_device_mesh", "mesh_utils", "PartitionSpec", "P", "NamedSharding", "SingleDeviceSharding", "Sharding",
           "devices", "virtual_devices", "device_put", "block_until_ready", "shard_map", "with_sharding_constraint", "ppermute",
           "psum_scatter", "visualize_array_sharding", "addressable_shards",
           "process_index", "process_count", "local_devices", "local_device_count",
           "make_array_from_process_local_data", "make_array_from_single_device_arrays", "make_array_from_callback",
           "process_allgather"]
