"""Meshes, partition specs and the devices a mesh is made of.

A :class:`Mesh` is an n-dimensional grid of devices of one executor with a name per grid axis, as
``jax.sharding.Mesh``: ``Mesh(devices, ("x", "y"))`` with ``devices`` an array-like of shape
``(2, 4)``.  :func:`devices` lists the devices a mesh may use on an executor:

- jax: JAX's devices (``XLA_FLAGS=--xla_force_host_platform_device_count=8`` gives 8 CPU devices);
- dask: the workers of the ``dask.distributed`` cluster arrayx is connected to
  (``arrayx.executors.dask.connect``), else ``ARRAYX_VIRTUAL_DEVICES`` virtual devices (threads);
- numpy / numba / cupy: ``ARRAYX_VIRTUAL_DEVICES=N`` virtual devices (default 1: the executor's own
  device), whose shards are separate buffers run in turn.

At most :data:`VIRTUAL_LIMIT` virtual devices (each member of a mesh over them is run in turn, so
more would only be a mistake), and a mesh builds only the devices it uses.
"""
from __future__ import annotations

import math
import os

import numpy as np

from arrayx.core.executor import Device, get, get_executor

__all__ = ["Mesh", "make_mesh", "PartitionSpec", "P", "devices", "virtual_devices"]

VIRTUAL_ENV = "ARRAYX_VIRTUAL_DEVICES"
#: the most virtual devices an executor offers (``ARRAYX_VIRTUAL_DEVICES``, ``virtual_devices``)
VIRTUAL_LIMIT = 65536


def virtual_devices(executor: str, count: int) -> list[Device]:
    """``count`` virtual devices of ``executor`` (numpy, numba, cupy, dask): a mesh over them runs each
    shard as a separate buffer, in turn; ``Device('numpy:virtual:0')``, ..."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"virtual_devices: count must be a positive int, got {count!r}")
    if count > VIRTUAL_LIMIT:
        raise ValueError(f"virtual_devices: count {count} is more than the at most {VIRTUAL_LIMIT} virtual devices an "
                         f"executor offers (their members run in turn); use fewer")
    name = get(executor).name
    if name == "jax":
        raise ValueError("virtual_devices: the 'jax' executor has real devices; on CPU set "
                         "XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX starts")
    return [Device(name, f"virtual:{i}", i) for i in range(count)]


def _env_count() -> int | None:
    raw = os.environ.get(VIRTUAL_ENV)
    if raw is None or raw == "":
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{VIRTUAL_ENV}={raw!r}: expected a positive number of virtual devices")
    if n > VIRTUAL_LIMIT:
        raise ValueError(f"{VIRTUAL_ENV}={raw!r}: an executor offers at most {VIRTUAL_LIMIT} virtual devices (the "
                         f"members of a mesh over them run in turn); set it to the number the mesh needs")
    return n


def _dask_workers() -> list[str]:
    from arrayx.executors import dask as dask_executor

    client = dask_executor.get_scheduler()
    info = getattr(client, "scheduler_info", None)
    if info is None:
        return []
    try:
        workers = info(n_workers=-1)["workers"]
    except TypeError:
        workers = info()["workers"]
    return sorted(workers)


def devices(executor: str | None = None) -> list[Device]:
    """The devices a :class:`Mesh` may use on ``executor`` (default: the current executor)."""
    return _first_devices(get_executor() if executor is None else get(executor), None)


def _first_devices(ex, count: int | None) -> list[Device]:
    """The first ``count`` (None: all) of :func:`devices`; virtual ones beyond them are not built."""
    if ex.name == "jax":
        return ex.devices()[:count]
    n = _env_count()
    if ex.name == "dask" and n is None:
        workers = _dask_workers()
        if workers:
            return [Device("dask", f"worker:{w}", w) for w in workers][:count]
    if n is None:
        return ex.devices()[:1]
    return virtual_devices(ex.name, n if count is None else max(1, min(n, count)))


class PartitionSpec(tuple):
    """How each dimension of an array is split over mesh axes: ``P("x", None)`` splits dimension 0
    over mesh axis ``"x"`` and keeps dimension 1 whole; ``P(("x", "y"))`` splits dimension 0 over both
    axes (``"x"`` major); dimensions past the spec's length are not split.  Mesh axes a spec does
    not name replicate the array.  Equality is JAX's (0.10): ``P('x', None) != P('x')`` although
    both lay an array out alike (``normalized(ndim)`` or ``NamedSharding.is_equivalent_to`` compare
    layouts), ``P(('x',)) == P('x')``, and a spec never equals a plain tuple."""

    def __new__(cls, *entries):
        for e in entries:
            names = e if isinstance(e, tuple) else (e,)
            for n in names:
                if n is not None and not isinstance(n, str):
                    raise TypeError(f"PartitionSpec: entries are mesh axis names (str), tuples of them or None; "
                                    f"got {e!r}")
        return super().__new__(cls, entries)

    def __repr__(self) -> str:
        return "P(" + ", ".join(repr(e) for e in self) + (",)" if len(self) == 1 else ")")

    def names_of(self, dim: int) -> tuple:
        """The mesh axis names dimension ``dim`` is split over (``()`` when it is whole)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        e = self[dim]
        return tuple(n for n in e if n is not None) if isinstance(e, tuple) else (e,)

    def normalized(self, ndim: int | None = None) -> tuple:
        """One tuple of names per dimension, trailing whole dimensions dropped (for comparisons)."""
        n = len(self) if ndim is None else ndim
        out = [self.names_of(d) for d in range(n)]
        while out and out[-1] == ():
            out.pop()
        return tuple(out)

    def __eq__(self, other):
        # as JAX 0.10: entry by entry, a one-name tuple equal to the name (P(('x',)) == P('x')), but
        # P('x', None) != P('x') and a spec is never equal to a plain tuple; compare layouts with
        # NamedSharding.is_equivalent_to(other, ndim) or spec.normalized(ndim)
        if not isinstance(other, PartitionSpec):
            return False
        return len(self) == len(other) and all(self.names_of(d) == other.names_of(d) for d in range(len(self)))

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(tuple(self.names_of(d) for d in range(len(self))))

    def __reduce__(self):
        return (PartitionSpec, tuple(self))


P = PartitionSpec


class Mesh:
    """An n-dimensional grid of devices with named axes: ``Mesh(devices, axis_names)``."""

    __slots__ = ("devices", "axis_names", "executor", "_native")

    def __init__(self, devices, axis_names):
        axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        arr = np.empty(np.shape(np.asarray(devices, dtype=object)), dtype=object)
        arr[...] = np.asarray(devices, dtype=object)
        if arr.ndim != len(axis_names):
            raise ValueError(f"Mesh: devices has {arr.ndim} dimension(s) {arr.shape} but {len(axis_names)} axis "
                             f"name(s) {axis_names} were given; give one name per dimension")
        if len(set(axis_names)) != len(axis_names) or not all(isinstance(n, str) for n in axis_names):
            raise ValueError(f"Mesh: axis names must be distinct strings, got {axis_names}")
        if arr.size == 0:
            raise ValueError("Mesh: no devices")
        flat = list(arr.flat)
        bad = [d for d in flat if not isinstance(d, Device)]
        if bad:
            raise TypeError(f"Mesh: devices must be arrayx Devices (from arrayx.devices(executor)), got "
                            f"{type(bad[0]).__name__}")
        executors = sorted({d.executor for d in flat})
        if len(executors) != 1:
            raise ValueError(f"Mesh: all devices must belong to one executor, got devices of {executors}")
        if len(set(flat)) != len(flat):
            raise ValueError(f"Mesh: a device appears more than once in {flat}")
        self.devices = arr
        self.axis_names = axis_names
        self.executor = executors[0]
        self._native = None

    # -- JAX's Mesh attributes ----------------------------------------------------------------------
    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.label, otypes=[object])(self.devices)

    def coords(self):
        """(device, {axis name: index}) for every device, in row-major order."""
        for idx in np.ndindex(*self.devices.shape):
            yield self.devices[idx], dict(zip(self.axis_names, idx))

    def __eq__(self, other) -> bool:
        if not isinstance(other, Mesh):
            return NotImplemented
        return self.axis_names == other.axis_names and self.devices.shape == other.devices.shape and \
            list(self.devices.flat) == list(other.devices.flat)

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(self.devices.flat)))

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.devices.shape))
        return f"Mesh({sizes}, executor={self.executor!r})"

    def __reduce__(self):
        return (Mesh, (self.devices, self.axis_names))


def make_mesh(axis_shapes, axis_names, *, devices=None, executor: str | None = None) -> Mesh:
    """A :class:`Mesh` of shape ``axis_shapes`` over the first ``prod(axis_shapes)`` of ``devices``
    (default ``arrayx.sharding.devices(executor)``), as ``jax.make_mesh``."""
    axis_shapes = (axis_shapes,) if isinstance(axis_shapes, int) else tuple(int(s) for s in axis_shapes)
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh: {len(axis_shapes)} axis size(s) {axis_shapes} but {len(axis_names)} name(s) "
                         f"{axis_names}")
    need = math.prod(axis_shapes)
    pool = _first_devices(get_executor() if executor is None else get(executor), need) if devices is None \
        else list(devices)
    if need > len(pool):
        ex = pool[0].executor if pool else (executor or get_executor().name)
        hint = ("XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX starts" if ex == "jax" else
                f"{VIRTUAL_ENV}={need} (or devices=arrayx.sharding.virtual_devices({ex!r}, {need}))")
        raise ValueError(f"make_mesh: a mesh of shape {axis_shapes} needs {need} devices but executor {ex!r} has "
                         f"{len(pool)}; set {hint}")
    arr = np.empty(need, dtype=object)
    arr[:] = pool[:need]
    return Mesh(arr.reshape(axis_shapes), axis_names)
