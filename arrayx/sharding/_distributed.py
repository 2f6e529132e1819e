"""Many processes on the jax executor, through JAX's own multi-controller runtime.

JAX grows past one host by running one Python process per host (or per GPU) under
``jax.distributed.initialize``: every process runs the same program, ``jax.devices()`` lists the
devices of all of them, a mesh spans them all, and a global array holds on each process only the
blocks of that process's devices.  arrayx takes that runtime as it is, on the jax executor:

- :func:`initialize` (also ``arrayx.distributed.initialize``, JAX's spelling) calls
  ``jax.distributed.initialize`` with the same arguments, after checking what JAX would only report
  later or less clearly (the executor, and that JAX has not started its devices yet); with no
  arguments it reads ``JAX_COORDINATOR_ADDRESS`` (as JAX does), ``JAX_NUM_PROCESSES`` and
  ``JAX_PROCESS_ID`` (set by ``python -m arrayx.sharding.launch``), else JAX's cluster detection
  (SLURM, Open MPI, Cloud TPU, ...);
- :func:`process_index`, :func:`process_count`, :func:`local_devices`: JAX's, as arrayx devices;
  ``arrayx.sharding.devices("jax")`` lists every process's devices, so ``make_mesh`` builds a global
  mesh in JAX's order;
- :func:`make_array_from_process_local_data`, :func:`make_array_from_single_device_arrays`,
  :func:`make_array_from_callback`: a global array from what this process holds (JAX's own
  functions on the jax executor; on numpy/numba/dask one process holds the whole array);
- ``x.addressable_shards`` lists this process's blocks only (JAX's own), ``x.sharding`` is the
  global sharding, ``sharding.addressable_devices`` this process's devices of it;
- :func:`process_allgather`: ``process_allgather(x, tiled=True)`` is the whole value of a global
  array on every process (a NumPy array, as ``jax.experimental.multihost_utils.process_allgather``).

Reading on the host an array that spans other processes' devices (``np.asarray(x)``, ``float``,
``.item()``, printing) raises :func:`not_addressable_error` (a ``RuntimeError`` naming the array,
the processes and the two ways to read it).  Arrays replicated on every device read as usual.

The other executors do not run as many controllers: numpy and numba compute in one process, and
the dask executor's many processes are a ``dask.distributed`` cluster that one client program
drives (``arrayx.executors.dask.connect(address)``); :func:`initialize` on them raises a
``ValueError`` saying so.
"""
from __future__ import annotations

import os

import numpy as np

from arrayx import pytree
from arrayx.core.executor import Device, get, get_executor

__all__ = ["initialize", "shutdown", "is_initialized", "process_index", "process_count", "local_devices",
           "local_device_count", "make_array_from_process_local_data", "make_array_from_single_device_arrays",
           "make_array_from_callback", "process_allgather"]

#: read by :func:`initialize` when its arguments are not given (JAX reads JAX_COORDINATOR_ADDRESS itself)
ENV_ADDRESS, ENV_COUNT, ENV_INDEX = "JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"

_ONE_PROCESS = {
    "dask": ("the 'dask' executor runs on many processes and hosts through dask.distributed, driven by one "
             "client program: start a scheduler and workers (dask scheduler / dask worker, or a "
             "LocalCluster) and call arrayx.executors.dask.connect(address); meshes then span the workers"),
    "numpy": "the 'numpy' executor computes in this process only",
    "numba": "the 'numba' executor computes in this process only",
    "cupy": "the 'cupy' executor computes in this process only",
}


def _jax(fname: str):
    # imported, not loaded as an executor: loading lists the devices, which starts JAX's backends,
    # and jax.distributed.initialize must come before that
    try:
        import jax
    except ImportError as e:
        raise ImportError(f"{fname}: JAX is not installed ({e}), and many processes are the 'jax' executor's "
                          f"(JAX's multi-controller runtime); `pip install jax`, or use dask.distributed through "
                          f"arrayx.executors.dask.connect()") from e
    return jax


def _jax_or_none():
    try:
        import jax
    except ImportError:
        return None
    return jax


def _refuse(fname: str, executor: str):
    why = _ONE_PROCESS.get(executor, f"the {executor!r} executor computes in this process only")
    fix = "" if executor == "dask" else ("; for many processes use the 'jax' executor (arrayx.distributed.initialize, "
                                         "one process per host) or the 'dask' executor on a dask.distributed cluster "
                                         "(arrayx.executors.dask.connect(address))")
    return ValueError(f"{fname}: executor {executor!r} has no multi-process runtime of JAX's kind: {why}{fix}")


def _backend_started(jax) -> bool:
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - JAX's private layout moved: JAX's own check remains
        return False
    check = getattr(xla_bridge, "backends_are_initialized", None)
    return bool(check()) if check is not None else False


def _env_int(name: str, fname: str):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{fname}: {name}={raw!r} is not an integer; set it to a number or unset it") from None


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None, *, executor: str = "jax", **jax_kwargs) -> None:
    """Join this process to a multi-process JAX program (``jax.distributed.initialize``): call it
    first, in every process, before any array is made on the jax executor.  The arguments are
    JAX's (``coordinator_address="host:port"`` of process 0, the number of processes, this one's
    index, and JAX's keywords such as ``initialization_timeout``); unset ones come from
    ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``, else JAX's cluster
    detection.  ``executor`` other than ``"jax"`` raises ``ValueError`` (see the module doc)."""
    fname = "arrayx.distributed.initialize"
    name = get(executor).name
    if name != "jax":
        raise _refuse(fname, name)
    jax = _jax(fname)
    if is_initialized():
        raise RuntimeError(f"{fname}: this process is already part of a multi-process JAX program (process "
                           f"{jax.process_index()} of {jax.process_count()}); call it once per process, or "
                           f"arrayx.distributed.shutdown() first")
    if _backend_started(jax):
        raise RuntimeError(f"{fname}: JAX has already started its devices in this process (an array was made or "
                           f"a device listed on the 'jax' executor, or JAX was used directly), and "
                           f"jax.distributed.initialize must come before that; call {fname}(...) first, "
                           f"right after the imports")
    if num_processes is None:
        num_processes = _env_int(ENV_COUNT, fname)
    if process_id is None:
        process_id = _env_int(ENV_INDEX, fname)
    jax.distributed.initialize(coordinator_address, num_processes, process_id, local_device_ids, **jax_kwargs)


def shutdown() -> None:
    """Leave the multi-process program (``jax.distributed.shutdown``); nothing when not in one."""
    jax = _jax_or_none()
    if jax is not None:
        jax.distributed.shutdown()


def is_initialized() -> bool:
    """Whether this process is part of a multi-process JAX program (JAX's own flag)."""
    jax = _jax_or_none()
    if jax is None:
        return False
    check = getattr(jax.distributed, "is_initialized", None)
    if check is not None:
        return bool(check())
    from jax._src import distributed as _jd  # pragma: no cover - older JAX

    return _jd.global_state.client is not None


def _which(executor: str | None) -> str:
    """The executor a process query is about: ``executor``; by default the jax executor when this
    process is part of a multi-process JAX program, else the current executor."""
    if executor is not None:
        return get(executor).name
    return "jax" if is_initialized() else get_executor().name


def process_index(executor: str | None = None) -> int:
    """This process's index among the processes of the program (``jax.process_index()``); 0 on the
    executors that compute in one process (a dask.distributed cluster is driven by one client)."""
    if _which(executor) != "jax":
        return 0
    return int(_jax("process_index").process_index())


def process_count(executor: str | None = None) -> int:
    """How many processes run the program (``jax.process_count()``); 1 on the other executors."""
    if _which(executor) != "jax":
        return 1
    return int(_jax("process_count").process_count())


def local_devices(executor: str | None = None) -> list[Device]:
    """This process's devices (``jax.local_devices()``); on the other executors all of
    ``arrayx.sharding.devices(executor)``."""
    from arrayx.sharding._mesh import devices

    name = _which(executor)
    if name != "jax":
        return devices(name)
    jax = _jax("local_devices")
    ex = get("jax")
    ex.devices()
    return [ex._by_native[d] for d in jax.local_devices()]


def local_device_count(executor: str | None = None) -> int:
    """``len(local_devices(executor))`` (``jax.local_device_count()``)."""
    return len(local_devices(executor))


def addressable(devices) -> set:
    """The devices of ``devices`` this process can read and write: on jax those of this process,
    elsewhere all of them."""
    devs = set(devices)
    if not any(d.executor == "jax" for d in devs) or not is_initialized():
        return devs
    import jax

    me = jax.process_index()
    return {d for d in devs if d.executor != "jax" or d.native.process_index == me}


# -- global arrays from this process's data ------------------------------------------------------------


def _check_sharding(fname: str, sharding):
    from arrayx.sharding._shardings import Sharding

    if not isinstance(sharding, Sharding):
        raise TypeError(f"{fname}: sharding must be an arrayx.sharding NamedSharding or SingleDeviceSharding, "
                        f"got {type(sharding).__name__}")
    mesh = getattr(sharding, "mesh", None)
    return mesh.executor if mesh is not None else sharding.device.executor


def _host(fname: str, v) -> np.ndarray:
    from arrayx.core.array import Array

    if isinstance(v, Array):
        if v.__class__ is not Array:
            raise TypeError(f"{fname}: the data must be concrete, got a traced value inside a transform; call "
                            f"{fname} outside jit/grad/vmap")
        return np.asarray(v._ex.to_host(v._buf))
    return np.asarray(v)


def _wrap_jax(buf):
    from arrayx.core.primitives import _wrap

    return _wrap(buf, get("jax"))


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """A global array laid out as ``sharding`` from this process's part of it (JAX's function of the
    same name): on jax, ``local_data`` holds the blocks of this process's devices, concatenated
    along the dimensions the processes split (``global_shape`` inferred from them when not given);
    on numpy, numba and dask one process holds the whole array, so ``local_data`` is all of it."""
    fname = "make_array_from_process_local_data"
    ex_name = _check_sharding(fname, sharding)
    local = _host(fname, local_data)
    if ex_name == "jax":
        jax = _jax(fname)
        from arrayx.sharding._jax import jax_sharding

        shape = None if global_shape is None else tuple(int(n) for n in global_shape)
        make = get("jax").scoped(jax.make_array_from_process_local_data)  # float64 stays float64
        return _wrap_jax(make(jax_sharding(sharding), local, shape))
    if global_shape is not None and tuple(global_shape) != local.shape:
        raise ValueError(f"{fname}: a mesh of the {ex_name!r} executor's devices lives in this one process, which "
                         f"holds the whole array, so local_data (shape {local.shape}) must have global_shape "
                         f"{tuple(global_shape)}; for arrays split over processes use the 'jax' executor "
                         f"(arrayx.distributed.initialize) or dask.distributed (arrayx.executors.dask.connect)")
    from arrayx.sharding._api import device_put

    return device_put(local, sharding)


def make_array_from_single_device_arrays(shape, sharding, arrays):
    """A global array of ``shape`` laid out as ``sharding`` from one array per device of this process
    (JAX's function): on jax, each array sits on its device (e.g. ``x.addressable_shards``' data);
    elsewhere the arrays are taken in the order of ``sharding.addressable_devices_indices_map``."""
    fname = "make_array_from_single_device_arrays"
    ex_name = _check_sharding(fname, sharding)
    shape = tuple(int(n) for n in shape)
    arrays = list(arrays)
    if ex_name == "jax":
        jax = _jax(fname)
        from arrayx.core.array import Array
        from arrayx.sharding._jax import jax_sharding

        bufs = []
        for i, a in enumerate(arrays):
            if not (isinstance(a, Array) and a.__class__ is Array and a._ex.name == "jax"):
                raise TypeError(f"{fname}: arrays[{i}] must be a concrete array of the 'jax' executor on one "
                                f"device (e.g. a shard's .data), got {type(a).__name__}"
                                + (f" of executor {a._ex.name!r}" if isinstance(a, Array) else ""))
            bufs.append(a._buf)
        make = get("jax").scoped(jax.make_array_from_single_device_arrays)
        return _wrap_jax(make(shape, jax_sharding(sharding), bufs))
    where = sharding.addressable_devices_indices_map(shape)
    if len(arrays) != len(where):
        raise ValueError(f"{fname}: sharding {sharding!r} has {len(where)} devices in this process but "
                         f"{len(arrays)} arrays were given; give one per device, in the order of "
                         f"sharding.addressable_devices_indices_map(shape)")
    blocks = [_host(fname, a) for a in arrays]
    out = np.empty(shape, dtype=np.result_type(*blocks) if blocks else np.float64)
    for i, (block, idx) in enumerate(zip(blocks, where.values())):
        want = out[idx].shape
        if block.shape != want:
            raise ValueError(f"{fname}: arrays[{i}] has shape {block.shape} but its device's block of an array "
                             f"of shape {shape} has shape {want}")
        out[idx] = block
    from arrayx.sharding._api import device_put

    return device_put(out, sharding)


def make_array_from_callback(shape, sharding, data_callback):
    """A global array of ``shape`` laid out as ``sharding``, each of this process's blocks being
    ``data_callback(index)`` (index: a tuple of slices), as JAX's function of the same name."""
    fname = "make_array_from_callback"
    ex_name = _check_sharding(fname, sharding)
    shape = tuple(int(n) for n in shape)
    if ex_name == "jax":
        jax = _jax(fname)
        from arrayx.sharding._jax import jax_sharding

        make = get("jax").scoped(jax.make_array_from_callback)
        return _wrap_jax(make(shape, jax_sharding(sharding), lambda idx: _host(fname, data_callback(idx))))
    out, dtype = None, None
    for idx in sharding.addressable_devices_indices_map(shape).values():
        block = _host(fname, data_callback(idx))
        if out is None:
            dtype = block.dtype
            out = np.empty(shape, dtype=dtype)
        if block.shape != out[idx].shape:
            raise ValueError(f"{fname}: data_callback({idx}) gave shape {block.shape}, expected "
                             f"{out[idx].shape} (the block of an array of shape {shape})")
        out[idx] = block
    from arrayx.sharding._api import device_put

    return device_put(out, sharding)


# -- reading -------------------------------------------------------------------------------------------


def process_allgather(x, tiled: bool = False):
    """The values of ``x`` (an array or a pytree of them) on every process, as NumPy arrays
    (``jax.experimental.multihost_utils.process_allgather``): an array spanning several processes
    gives its whole value (with ``tiled=True``, as JAX requires); a process-local one gives every
    process's value stacked on a new leading axis (``tiled=True``: concatenated along axis 0).
    Every process must call it."""
    from arrayx.core.array import Array

    multi = is_initialized()

    def one(v):
        if isinstance(v, Array) and v.__class__ is not Array:
            raise TypeError("process_allgather: got a traced value inside a transform; call it outside "
                            "jit/grad/vmap, on concrete arrays")
        if isinstance(v, Array) and v._ex.name == "jax":
            from jax.experimental import multihost_utils

            if not tiled and not v._buf.is_fully_addressable:
                raise ValueError(f"process_allgather: this array (shape {tuple(v.shape)}) spans the devices of "
                                 f"several processes, and its whole value is gathered with tiled=True (as JAX's); "
                                 f"tiled=False stacks process-local values")

            return np.asarray(get("jax").scoped(multihost_utils.process_allgather)(v._buf, tiled=tiled))
        host = _host("process_allgather", v)
        if multi:
            from jax.experimental import multihost_utils

            return np.asarray(get("jax").scoped(multihost_utils.process_allgather)(host, tiled=tiled))
        return np.array(host, copy=True) if tiled else host[None].copy()

    return pytree.map(one, x)


def not_addressable_error(buf) -> RuntimeError:
    """The error of reading on the host (``np.asarray``, ``float``, ``.item()``, printing) a jax
    executor array that spans devices of other processes."""
    try:
        import jax

        where = f"process {jax.process_index()} of {jax.process_count()}"
        held = len(buf.addressable_shards)
        total = len(buf.sharding.device_set)
    except Exception:  # pragma: no cover - the message without the counts
        where, held, total = "this process", "some", "all"
    return RuntimeError(f"reading an array on the host (np.asarray, float, .item(), .tolist(), printing): this "
                        f"array of the 'jax' executor (shape {tuple(buf.shape)}, {buf.dtype}) is sharded over the "
                        f"devices of several processes, and {where} holds {held} of its {total} device blocks; "
                        f"read this process's blocks with x.addressable_shards, or the whole value on every "
                        f"process with arrayx.sharding.process_allgather(x, tiled=True) (every process must call "
                        f"it), or replicate it first (jit with out_shardings=NamedSharding(mesh, P())) and read that")
