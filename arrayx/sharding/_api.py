"""``device_put``, ``x.sharding``, ``x.devices()``, ``x.addressable_shards`` and the text grid of
``arrayx.debug.visualize_array_sharding``."""
from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np

from arrayx import pytree
from arrayx.core.executor import Device, get
from arrayx.core.keys import AVAL_KEYED
from arrayx.sharding import _records
from arrayx.sharding._mesh import Mesh
from arrayx.sharding._shardings import NamedSharding, Sharding, SingleDeviceSharding, check_divisible
from arrayx.core.array import Array, define_array_methods


def _is_concrete(x) -> bool:
    return x.__class__ is Array


def sharding_of(x) -> Sharding:
    """``x.sharding``: a NamedSharding where ``x`` was placed or computed sharded, else the
    SingleDeviceSharding of its device."""
    if not _is_concrete(x):
        raise ValueError("x.sharding: a traced value has no placement while its function is staged; place it with "
                         "arrayx.lax.with_sharding_constraint(x, sharding) or read .sharding on the result")
    if x._ex.name == "jax":
        from arrayx.sharding._jax import from_jax

        return from_jax(x._buf.sharding)
    rec = _records.lookup(x)
    return rec if rec is not None else SingleDeviceSharding(x._ex.device_of(x._buf))


def devices_of(x) -> set:
    """``x.devices()``: the set of devices holding a shard of ``x``."""
    return set(sharding_of(x).device_set)


class Shard(NamedTuple):
    """One device's block of an array (``x.addressable_shards``)."""

    device: Device
    index: tuple
    replica_id: int
    data: Array


def addressable_shards(x) -> list:
    """Each device's block as its own array (JAX: the device buffers; numpy/numba virtual devices:
    separate host copies; dask: the block's chunk)."""
    from arrayx.core.primitives import _wrap

    s = sharding_of(x)
    if x._ex.name == "jax":
        from arrayx.sharding._jax import from_jax

        ex = x._ex
        return [Shard(ex._by_native[sh.device], sh.index, sh.replica_id, _wrap(sh.data, ex))
                for sh in x._buf.addressable_shards]
    seen: dict = {}
    out = []
    for dev, idx in s.devices_indices_map(tuple(x.shape)).items():
        key = tuple((sl.start, sl.stop) for sl in idx)
        rid = seen[key] = seen.get(key, -1) + 1
        part = x._buf[idx]
        if x._ex.name != "dask":
            part = x._ex.coerce(np.array(x._ex.to_host(part), copy=True)) if x._ex.name != "numpy" else part.copy()
        out.append(Shard(dev, idx, rid, _wrap(part, x._ex)))
    return out


# -- device_put ---------------------------------------------------------------------------------------


def _executor_of_target(target) -> str:
    if isinstance(target, Device):
        return target.executor
    if isinstance(target, NamedSharding):
        return target.mesh.executor
    if isinstance(target, SingleDeviceSharding):
        return target.device.executor
    raise TypeError(f"device_put: expected a Device, a NamedSharding or a SingleDeviceSharding, got "
                    f"{type(target).__name__}")


def _on_executor(x, name: str):
    from arrayx import api as ax

    if not isinstance(x, Array):
        return ax.asarray(x, device=get(name).default_device())
    if x._ex.name == name:
        return x
    return ax.asarray(x, device=get(name).default_device())


def _put_one(x, target):
    from arrayx.core.primitives import _wrap

    if not _is_concrete(x) and isinstance(x, Array):
        if isinstance(target, Device):
            target = SingleDeviceSharding(target)
        from arrayx.sharding._constraint import with_sharding_constraint

        return with_sharding_constraint(x, target)
    name = _executor_of_target(target)
    if name == "cupy" and isinstance(target, NamedSharding):
        raise NotImplementedError("device_put: a NamedSharding on the 'cupy' executor (one device per GPU) is not "
                                  "implemented; use the 'jax' executor on GPUs, or numpy virtual devices")
    host = None
    if name == "dask" and isinstance(target, NamedSharding) and not (isinstance(x, Array) and x._ex.name == "dask"):
        host = _host_values(x)  # host data goes to the workers block by block (client.scatter)
    if name == "jax":  # the dtype the target's devices give it (their defaults, the 64-bit setting)
        from arrayx.sharding._jax import arriving

        x = arriving(x, target)
    else:
        x = _on_executor(x, name)
    ex = x._ex
    if isinstance(target, Device):
        target = SingleDeviceSharding(target)
    if isinstance(target, SingleDeviceSharding):
        dev = target.device
        if dev in ex.devices():
            out = x.to_device(dev)
            if out is x:
                out = _wrap(x._buf, ex)
            return out
        out = _wrap(_private(ex, x._buf), ex)  # a virtual device: the whole array, one buffer
        _records.attach(out, target)
        return out
    check_divisible("device_put", target.spec, target.mesh, tuple(x.shape))
    if name == "jax":
        from arrayx.sharding._jax import device_put

        return _wrap(device_put(x._buf, target), ex)
    if name == "dask":
        from arrayx.sharding._dask import place

        out = _wrap(place(x._buf, target, host), ex)
    else:
        out = _wrap(_private(ex, x._buf), ex)
    _records.attach(out, target)
    return out


def _host_values(x):
    if isinstance(x, Array):
        return np.asarray(x._ex.to_host(x._buf))
    return np.asarray(x)


def _private(ex, buf):
    if ex.name == "dask":
        return buf
    return ex.coerce(np.array(ex.to_host(buf), copy=True)) if ex.name != "numpy" else np.array(buf, copy=True)


def _is_target(v) -> bool:
    return isinstance(v, (Device, Sharding))


def device_put(x, device=None):
    """``x`` (an array or a pytree of arrays) placed as ``device`` says: a Device, a
    ``NamedSharding`` (each device gets its block; moved to the mesh's executor first), a
    ``SingleDeviceSharding``, or a pytree of these matching ``x``.  Under ``jit`` it is
    ``arrayx.lax.with_sharding_constraint``."""
    if device is None:
        return pytree.map(lambda v: v if isinstance(v, Array) else _on_executor(v, get(None).name), x)
    if _is_target(device):
        return pytree.map(lambda v: _put_one(v, device), x)
    targets = pytree.broadcast_prefix(device, x, is_leaf=_is_target, prefix_name="device", full_name="x",
                                      who="device_put")
    leaves, tree = pytree.flatten(x)
    return pytree.unflatten(tree, [_put_one(v, t) for v, t in zip(leaves, targets)])


def block_until_ready(x):
    """Wait until every array in ``x`` (an array or a pytree of arrays, as ``jax.block_until_ready``
    takes) is computed, and return ``x``.  The jax executor's buffers are waited for in one batched
    call; other arrays as ``Array.block_until_ready`` says (numpy and numba compute before returning,
    cupy synchronizes its device, dask stays lazy).  Leaves that are not arrays are passed over."""
    if x.__class__ is Array:
        return x.block_until_ready()
    tree_util = sys.modules.get("jax.tree_util")
    leaves = None
    if tree_util is not None:
        leaves = tree_util.tree_leaves(x)
        bufs = []
        for v in leaves:  # the common case, a step's output: arrays holding jax.Arrays only, in one pass
            if v.__class__ is not Array:
                break
            b = v._buf
            if b.__class__ not in AVAL_KEYED:
                break
            bufs.append(b)
        else:
            _wait_jax(bufs)
            return x
    native = None if leaves is None else _buffers_to_wait_for(leaves, False)
    if native is None:  # no JAX, or a node registered with arrayx alone (JAX's flatten stops at it)
        native = _buffers_to_wait_for(pytree.leaves(x), True)
    if native:
        import jax

        jax.block_until_ready(native)
    return x


def _wait_jax(bufs: list) -> None:
    """Wait for ``bufs`` (jax.Arrays only) in one call: jaxlib's batched wait, which
    ``jax.block_until_ready`` ends in (its flatten and class checks of the list are not done again)."""
    if len(bufs) > 1:
        batched = _BATCHED[0]
        if batched is None:
            batched = _BATCHED[0] = _find_batched_wait()
        batched(bufs)
    elif bufs:
        bufs[0].block_until_ready()


#: jaxlib's wait for a list of jax.Arrays (found on the first wait for several)
_BATCHED: list = [None]


def _find_batched_wait():
    import jax

    client = getattr(sys.modules.get("jax._src.api"), "xc", None) or sys.modules.get("jaxlib.xla_client")
    found = getattr(client, "batched_block_until_ready", None)  # what jax.block_until_ready calls
    if found is None:  # another JAX: its public wait (it flattens the list again)
        return jax.block_until_ready
    return found


def _buffers_to_wait_for(leaves, complete: bool):
    """The jax buffers among ``leaves`` (a deferred transpose's operand for it), other arrays waited
    for one by one here; None where a leaf is neither an array nor a buffer and ``complete`` is False
    (it may be a node that arrayx's flatten opens)."""
    native = []
    rest = []
    for v in leaves:
        if v.__class__ is Array:
            buf = v._buf
            if buf.__class__ in AVAL_KEYED:  # a jax.Array: waited for with the others, in one call
                native.append(buf)
            elif getattr(buf, "base", None).__class__ in AVAL_KEYED:  # a deferred transpose: its operand
                native.append(buf.base)
            else:
                rest.append(v)
        elif hasattr(v, "block_until_ready"):
            native.append(v)
        elif not complete:
            return None
    for v in rest:
        v.block_until_ready()
    return native


# -- the text grid ----------------------------------------------------------------------------------------


def device_label(dev: Device) -> str:
    """A short name for a device: ``CPU 3`` (JAX's CPU device 3, or virtual device 3), ``worker 1``."""
    if dev.executor == "jax" and dev.native is not None:
        return f"{dev.native.platform.upper()} {dev.native.id}"
    if dev.label.startswith("virtual:"):
        return f"CPU {dev.native}"
    if dev.label.startswith("worker:"):
        from arrayx.sharding._mesh import _dask_workers

        workers = _dask_workers()
        return f"W {workers.index(dev.native)}" if dev.native in workers else dev.label
    label = dev.label.upper().replace(":", " ")
    return label if label.rpartition(" ")[2].isdigit() else f"{label} 0"  # the executor's one device


def sharding_grid(x) -> str:
    """The text of ``visualize_array_sharding``: one cell per block, naming the devices holding it."""
    s = sharding_of(x)
    shape = tuple(x.shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_array_sharding: only 1-D and 2-D arrays can be drawn, got shape {shape}")
    shape2 = shape if len(shape) == 2 else (1,) + shape
    cells: dict = {}
    for dev, idx in s.devices_indices_map(shape).items():
        idx2 = idx if len(shape) == 2 else (slice(None),) + idx
        key = tuple(((sl.start or 0), (sl.stop if sl.stop is not None else n)) for sl, n in zip(idx2, shape2))
        cells.setdefault(key, []).append(dev)
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    text = {k: ",".join(sorted({device_label(d) for d in v}, key=_label_order)) for k, v in cells.items()}
    text = {k: _merge_labels(v) for k, v in text.items()}
    width = max(len(t) for t in text.values()) + 2
    horiz = "─" * width
    lines = ["┌" + "┬".join([horiz] * len(cols)) + "┐"]
    for i, r in enumerate(rows):
        lines.append("│" + "│".join(text[(r, c)].center(width) for c in cols) + "│")
        lines.append(("├" + "┼".join([horiz] * len(cols)) + "┤") if i < len(rows) - 1 else
                     ("└" + "┴".join([horiz] * len(cols)) + "┘"))
    return "\n".join(lines)


def _label_order(label: str):
    head, _, tail = label.rpartition(" ")
    return (head, int(tail)) if tail.isdigit() else (label, 0)


def _merge_labels(joined: str) -> str:
    # "CPU 0,CPU 4" -> "CPU 0,4" (as JAX writes replicas)
    parts = joined.split(",")
    heads = {p.rpartition(" ")[0] for p in parts}
    if len(heads) == 1 and all(p.rpartition(" ")[2].isdigit() for p in parts):
        return f"{heads.pop()} " + ",".join(p.rpartition(" ")[2] for p in parts)
    return joined


def visualize_array_sharding(x) -> None:
    """Print which devices hold which block of a 1-D or 2-D array ``x`` (as JAX's)."""
    print(sharding_grid(x))


def is_mesh(v) -> bool:
    return isinstance(v, Mesh)


@define_array_methods
class _ShardingMethods:
    """The array object's sharding attributes (arrayx.sharding sits above the array's module)."""

    @property
    def sharding(self):
        """Where the blocks of this array live (an ``arrayx.sharding`` Sharding)."""
        return sharding_of(self)

    def devices(self) -> set:
        """The devices holding a block of this array."""
        return devices_of(self)

    @property
    def addressable_shards(self) -> list:
        """Each device's block (``Shard(device, index, replica_id, data)``)."""
        return addressable_shards(self)
