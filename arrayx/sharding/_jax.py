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


def _rule_device(ex, target):
    """The device whose default dtypes and 64-bit setting decide what data arriving for ``target``
    becomes (``arrayx/api/_device_dtypes.py``): a Device's or SingleDeviceSharding's own; for a
    NamedSharding, a mesh device of this process without native 64-bit types if there is one (so
    64-bit data never lands on such a device), else the mesh's first device of this process."""
    if isinstance(target, SingleDeviceSharding):
        return target.device
    if not isinstance(target, NamedSharding):
        return target  # a Device
    from arrayx.api._device_dtypes import for_device

    devs = list(target.mesh.devices.flat)
    me = ex.default_device().native.process_index
    mine = [d for d in devs if d.native is None or d.native.process_index == me] or devs
    return next((d for d in mine if not for_device(ex, d).native64), mine[0])


def arriving(x, target):
    """``x`` (host data, an array of another executor, or a jax one) as a jax array whose dtype is what
    ``asarray(x, device=d)`` gives it for ``d`` the target's device (:func:`_rule_device`), not the
    default device: a float64 NumPy array put with a sharding over TPUs becomes float32 under
    ``tpu_64bit("downcast")``, stays float64 under ``"emulate"``, raises TypeError under ``"refuse"``,
    as ``asarray`` does.  Host data and other executors' arrays land on that device; a jax array
    stays where it is, converted there before it moves (64-bit data never lands on the target)."""
    from arrayx.api import _device_dtypes
    from arrayx.api.creation import asarray
    from arrayx.core.array import Array

    ex = get("jax")
    dev = _rule_device(ex, target)
    dd = _device_dtypes.for_device(ex, dev)
    if x.__class__ is not Array or x._ex is not ex:
        if not dd.native64 and isinstance(x, (np.ndarray, np.generic)):
            _device_dtypes.arriving(x.dtype, dd, ex, dev, "device_put")  # refused or warned as device_put's
        return asarray(x, device=dev)
    if dd.native64 or x.dtype not in _device_dtypes.WIDE or _device_dtypes.for_array(x) is dd:
        return x
    to = _device_dtypes.arriving(x.dtype, dd, ex, dev, "device_put")
    if to == x.dtype:
        return x
    from arrayx.api.data_types import astype

    return astype(x, to)


def device_put(buf, sharding):
    """``buf`` placed as ``sharding`` says, with arrayx's 64-bit types on for the call (the jax
    executor's ``put``: a resharding JAX computes is traced with them, as every other call arrayx
    makes into JAX); a deferred transpose or fused chain is computed first."""
    return get("jax").put(buf, jax_sharding(sharding))
