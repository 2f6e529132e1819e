"""The jax executor: arrayx meshes and shardings as JAX's own (XLA places and propagates shards)."""
from __future__ import annotations

import numpy as np

from arrayx.core.executor import get
from arrayx.sharding._mesh import Mesh, PartitionSpec
from arrayx.sharding._shardings import NamedSharding, SingleDeviceSharding


def _jax():
    import jax

    return jax


def jax_mesh(mesh: Mesh):
    """JAX's Mesh of the same devices and names (Auto axes: XLA chooses intermediate shardings)."""
    if mesh._native is None:
        jax = _jax()
        natives = np.vectorize(lambda d: d.native, otypes=[object])(mesh.devices)
        types = (jax.sharding.AxisType.Auto,) * len(mesh.axis_names)
        mesh._native = jax.sharding.Mesh(natives, mesh.axis_names, axis_types=types)
    return mesh._native


def jax_spec(spec: PartitionSpec):
    return _jax().sharding.PartitionSpec(*spec)


def jax_sharding(sharding):
    jax = _jax()
    if isinstance(sharding, NamedSharding):
        return jax.sharding.NamedSharding(jax_mesh(sharding.mesh), jax_spec(sharding.spec))
    if isinstance(sharding, SingleDeviceSharding):
        return jax.sharding.SingleDeviceSharding(sharding.device.native)
    raise TypeError(f"jax executor: cannot convert {sharding!r} to a JAX sharding")


def _device(native):
    ex = get("jax")
    ex.devices()
    return ex._by_native[native]


def from_jax(js):
    """arrayx's sharding for a JAX sharding."""
    jax = _jax()
    if isinstance(js, jax.sharding.SingleDeviceSharding):
        (native,) = js.device_set
        return SingleDeviceSharding(_device(native))
    if isinstance(js, jax.sharding.NamedSharding):
        devs = np.vectorize(_device, otypes=[object])(np.asarray(js.mesh.devices))
        return NamedSharding(Mesh(devs, js.mesh.axis_names), PartitionSpec(*js.spec))
    raise NotImplementedError(f"x.sharding on the 'jax' executor: JAX gave a {type(js).__name__} ({js}), which "
                              f"arrayx does not translate; constrain the result with "
                              f"arrayx.lax.with_sharding_constraint or device_put it with a NamedSharding")


def device_put(buf, sharding):
    return _jax().device_put(buf, jax_sharding(sharding))
