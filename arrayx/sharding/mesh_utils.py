"""``arrayx.sharding.mesh_utils``: where ``jax.experimental.mesh_utils`` users look for
:func:`create_device_mesh` (the JAX sharding tutorials build their meshes with it).

    devices = mesh_utils.create_device_mesh((2, 4))
    mesh = arrayx.sharding.Mesh(devices, ("x", "y"))
"""
from __future__ import annotations

import math
import operator

import numpy as np

__all__ = ["create_device_mesh"]


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False, executor: str | None = None) -> np.ndarray:
    """A NumPy object array of shape ``mesh_shape`` holding every one of ``devices`` (default
    ``arrayx.sharding.devices(executor)``), for :class:`~arrayx.sharding.Mesh`, as
    ``jax.experimental.mesh_utils.create_device_mesh``.

    The product of ``mesh_shape`` must equal the number of devices (a ValueError otherwise, as
    JAX's; :func:`~arrayx.sharding.make_mesh` takes the first ``prod(mesh_shape)`` instead).  An int
    is a one-axis shape (``create_device_mesh(8)``, as JAX's did when the tutorials were written).
    On the jax executor the order is JAX's own (its topology-aware order on TPUs; the two keyword
    flags go to it); elsewhere, and on CPU, the devices in order.

    >>> import arrayx as ax
    >>> m = ax.sharding.mesh_utils.create_device_mesh((1,), executor="numpy")
    >>> m.shape, m.dtype
    ((1,), dtype('O'))
    """
    from arrayx.core.executor import Device, get, get_executor
    from arrayx.sharding._mesh import devices as all_devices

    shape = _axis_sizes(mesh_shape)
    pool = list(all_devices(executor) if devices is None else devices)
    if math.prod(shape) != len(pool):
        ex = pool[0].executor if pool and isinstance(pool[0], Device) else (executor or get_executor().name)
        raise ValueError(
            f"create_device_mesh: number of devices {len(pool)} must equal the product of mesh_shape {shape} "
            f"(executor {ex!r}); pass devices= with exactly {math.prod(shape)} of arrayx.sharding.devices(), or "
            f"use arrayx.sharding.make_mesh, which takes the first {math.prod(shape)}")
    bad = [d for d in pool if not isinstance(d, Device)]
    if bad:
        raise TypeError(f"create_device_mesh: devices must be arrayx Devices (from arrayx.sharding.devices()), got "
                        f"{type(bad[0]).__name__}")
    out = np.empty(len(pool), dtype=object)
    if pool[-1].executor == "jax" and get("jax").available():
        from jax.experimental import mesh_utils as jax_mesh_utils

        by_native = {d.native: d for d in pool}
        order = jax_mesh_utils.create_device_mesh(shape, [d.native for d in pool],
                                                  contiguous_submeshes=contiguous_submeshes,
                                                  allow_split_physical_axes=allow_split_physical_axes)
        out[:] = [by_native[n] for n in order.flat]
    else:
        out[:] = pool
    return out.reshape(shape)


def _axis_sizes(mesh_shape) -> tuple:
    """``mesh_shape`` as a tuple of positive ints (an int is one axis)."""
    if isinstance(mesh_shape, (int, np.integer)):
        mesh_shape = (mesh_shape,)
    sizes = None
    if not isinstance(mesh_shape, str):
        try:
            sizes = [_size(s) for s in mesh_shape]
        except TypeError:
            sizes = None
    if sizes is None or None in sizes:
        raise ValueError(f"create_device_mesh: mesh_shape should be a sequence of ints (the size of each mesh axis), "
                         f"got {mesh_shape!r}")
    if any(s < 1 for s in sizes):
        raise ValueError(f"create_device_mesh: mesh_shape {tuple(sizes)}: axis sizes must be positive")
    return tuple(sizes)


def _size(s):
    """An int, or a float that is one (2.0); None for anything else."""
    try:
        return operator.index(s)
    except TypeError:
        return int(s) if isinstance(s, (float, np.floating)) and float(s).is_integer() else None
