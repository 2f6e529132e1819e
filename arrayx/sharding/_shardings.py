"""Shardings: where the pieces of an array live (``NamedSharding``, ``SingleDeviceSharding``).

The shard of a device is the block of the array at that device's mesh coordinates: dimension ``d``
split over mesh axes ``(a, b)`` is cut into ``size(a) * size(b)`` equal blocks (``a`` major), and the
device takes the block numbered by its coordinates along ``a`` and ``b``.  Devices that differ only
along axes the spec does not name hold the same block (replicas).  An uneven split is refused.
"""
from __future__ import annotations

import math

from arrayx.core.executor import Device
from arrayx.sharding._mesh import Mesh, PartitionSpec

__all__ = ["Sharding", "NamedSharding", "SingleDeviceSharding"]


class Sharding:
    """Base class of shardings: the per-device blocks of an array of a given shape."""

    __slots__ = ()

    # subclasses define: device_set, _mesh_and_spec()
    def devices_indices_map(self, global_shape) -> dict:
        """{device: tuple of slices}: the block of an array of ``global_shape`` each device holds."""
        mesh, spec = self._mesh_and_spec()
        check_divisible("devices_indices_map", spec, mesh, global_shape)
        out = {}
        for dev, coord in mesh.coords():
            out[dev] = shard_index(spec, mesh, coord, global_shape)
        return out

    def shard_shape(self, global_shape) -> tuple:
        mesh, spec = self._mesh_and_spec()
        check_divisible("shard_shape", spec, mesh, global_shape)
        return tuple(n // split_count(spec, mesh, d) for d, n in enumerate(global_shape))

    @property
    def is_fully_replicated(self) -> bool:
        mesh, spec = self._mesh_and_spec()
        return all(split_count(spec, mesh, d) == 1 for d in range(len(spec)))

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        """The devices of this process (all of them, but on a multi-process jax program)."""
        from arrayx.sharding._distributed import addressable

        return addressable(self.device_set)

    @property
    def is_fully_addressable(self) -> bool:
        return self.addressable_devices == set(self.device_set)

    def addressable_devices_indices_map(self, global_shape) -> dict:
        """:meth:`devices_indices_map` for this process's devices only."""
        mine = self.addressable_devices
        return {d: idx for d, idx in self.devices_indices_map(global_shape).items() if d in mine}

    def is_equivalent_to(self, other, ndim: int) -> bool:
        if not isinstance(other, Sharding):
            return False
        m1, s1 = self._mesh_and_spec()
        m2, s2 = other._mesh_and_spec()
        if m1 == m2:
            return s1.normalized(ndim) == s2.normalized(ndim)
        # the same placement over different meshes (e.g. one device)
        shape = tuple(max(1, m1.size) * max(1, m2.size) for _ in range(ndim))
        return self.devices_indices_map(shape) == other.devices_indices_map(shape)


class NamedSharding(Sharding):
    """``NamedSharding(mesh, spec)``: dimension ``d`` split over the mesh axes ``spec[d]`` names."""

    __slots__ = ("mesh", "spec", "memory_kind")

    def __init__(self, mesh: Mesh, spec=PartitionSpec(), *, memory_kind=None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: mesh must be an arrayx.sharding.Mesh, got {type(mesh).__name__}")
        if spec is None:
            spec = PartitionSpec()
        if not isinstance(spec, PartitionSpec):
            if isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding: spec must be a PartitionSpec (P(...)), got {type(spec).__name__}")
        used = []
        for d in range(len(spec)):
            for n in spec.names_of(d):
                if n not in mesh.axis_names:
                    raise ValueError(f"NamedSharding: spec {spec!r} names axis {n!r}, which mesh {mesh!r} does not "
                                     f"have (its axes: {mesh.axis_names})")
                if n in used:
                    raise ValueError(f"NamedSharding: spec {spec!r} uses mesh axis {n!r} more than once")
                used.append(n)
        self.mesh = mesh
        self.spec = spec
        self.memory_kind = memory_kind
        _install_jit_hook()

    def _mesh_and_spec(self):
        return self.mesh, self.spec

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    def __eq__(self, other) -> bool:
        if not isinstance(other, NamedSharding):
            return NotImplemented
        return self.mesh == other.mesh and self.spec == other.spec

    def __hash__(self) -> int:
        return hash((self.mesh, self.spec))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"

    def __reduce__(self):
        return (NamedSharding, (self.mesh, self.spec))


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    __slots__ = ("device", "memory_kind")

    def __init__(self, device: Device, *, memory_kind=None):
        if not isinstance(device, Device):
            raise TypeError(f"SingleDeviceSharding: expected an arrayx Device, got {type(device).__name__}")
        self.device = device
        self.memory_kind = memory_kind

    def _mesh_and_spec(self):
        return Mesh([self.device], ("_",)), PartitionSpec()

    @property
    def device_set(self) -> set:
        return {self.device}

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        if not isinstance(other, SingleDeviceSharding):
            return NotImplemented
        return self.device == other.device

    def __hash__(self) -> int:
        return hash(self.device)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self.device!r})"

    def __reduce__(self):
        return (SingleDeviceSharding, (self.device,))


# -- block arithmetic ---------------------------------------------------------------------------------


def split_count(spec: PartitionSpec, mesh: Mesh, dim: int) -> int:
    sizes = mesh.shape
    return math.prod(sizes[n] for n in spec.names_of(dim))


def check_divisible(fname: str, spec: PartitionSpec, mesh: Mesh, shape) -> None:
    shape = tuple(shape)
    if len(spec) > len(shape):
        raise ValueError(f"{fname}: spec {spec!r} has {len(spec)} entries but the array has {len(shape)} "
                         f"dimension(s) {shape}; give at most one entry per dimension")
    for d, n in enumerate(shape):
        k = split_count(spec, mesh, d)
        if k > 1 and n % k:
            names = spec.names_of(d)
            axes = " x ".join(f"{a!r} (size {mesh.shape[a]})" for a in names)
            raise ValueError(f"{fname}: dimension {d} of size {n} (shape {shape}) is split over mesh axis {axes} "
                             f"into {k} shards, but {n} is not divisible by {k}; pad the array or choose a mesh "
                             f"axis whose size divides {n}")


def shard_number(spec: PartitionSpec, mesh: Mesh, coord: dict, dim: int) -> int:
    k = 0
    for n in spec.names_of(dim):
        k = k * mesh.shape[n] + coord[n]
    return k


def shard_index(spec: PartitionSpec, mesh: Mesh, coord: dict, shape) -> tuple:
    out = []
    for d, n in enumerate(shape):
        count = split_count(spec, mesh, d)
        step = n // count
        k = shard_number(spec, mesh, coord, d)
        out.append(slice(k * step, (k + 1) * step) if count > 1 else slice(None))
    return tuple(out)


def _install_jit_hook() -> None:
    global _install_jit_hook
    from arrayx.sharding._propagate import install

    install()
    _install_jit_hook = _noop


def _noop() -> None:
    pass
