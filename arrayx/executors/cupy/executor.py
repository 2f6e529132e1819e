"""The CuPy executor: buffers are ``cupy.ndarray`` on CUDA devices, the namespace is array-api-compat's CuPy namespace.

Select it with ``arrayx.use_executor("cupy")``, ``device="cupy"`` (or
``"cupy:cuda:1"`` for the second GPU) or ``ARRAYX_EXECUTOR=cupy``.

Availability
    The executor needs CuPy (``pip install cupy-cuda12x``) *and* a usable CUDA
    device.  CuPy imports on a machine without one, but every allocation fails;
    there ``cupy.cuda.is_available()`` is False and this executor reports itself
    unavailable with the reason (``arrayx.executors.get("cupy").unavailable_reason``),
    so tests parameterised over executors skip it.

Devices
    One ``Device("cupy", "cuda:<id>")`` per visible CUDA device; creation
    functions and ``asarray(..., device=...)`` allocate on the requested one,
    ``x.to_device(d)`` copies between GPUs.

Moving data
    DLPack is used where both sides live on the same kind of device (CuPy <->
    JAX on GPU, CuPy <-> other CUDA producers); NumPy, Dask and CPU-JAX arrays
    come through a host copy, and ``to_host`` copies device -> host.
"""
from __future__ import annotations


import numpy as np

from arrayx.core import config as _config
from arrayx.executors.common.indexing import NUMPY_LIKE as _INDEXING, scatter_on_copy
from arrayx.executors.common.linalg import FAILING as _LINALG_FAILING, checked as checked_linalg
from arrayx.core.executor import Device, Executor, get
from arrayx.executors.cupy import lax as _lax, nn as _nn, random as _random

_KDL_CPU, _KDL_CUDA = 1, 2

cupy = None  # the cupy module, set by CupyExecutor._load (CuPy is imported only when the executor is used)


def _cupyx_scatter(name: str):
    """CuPy's scatter kernel ``cupyx.<name>`` (add, min, max) as an accumulator of ``scatter_on_copy``."""
    def at(out, key, u):
        import cupyx

        getattr(cupyx, name)(out, key, u)
        return out

    at.__name__ = name
    return at


def _multiply_on_host(out, key, u):
    """scatter's multiply: NumPy's ufunc.at on a host copy (CuPy has no scatter kernel for it)."""
    host = cupy.asnumpy(out)
    hk = tuple(cupy.asnumpy(e) if isinstance(e, cupy.ndarray) else e for e in key)
    hv = cupy.asnumpy(u) if isinstance(u, cupy.ndarray) else u
    np.multiply.at(host, hk, hv)
    return cupy.asarray(host)


#: scatter on a copy (executors/common/indexing.py): CuPy's scatter kernels for add/min/max, NumPy's
#: ufunc.at on the host for multiply
_scatter = scatter_on_copy({"add": _cupyx_scatter("scatter_add"), "min": _cupyx_scatter("scatter_min"),
                            "max": _cupyx_scatter("scatter_max"), "multiply": _multiply_on_host})


def _linalg_nan_where_failed(name):
    """cupy.linalg.<name> with the matrices that fail set to NaN (executors/common/linalg.py): CuPy does not raise."""
    return checked_linalg(name, lambda: get("cupy").xp)


class CupyExecutor(Executor):
    name = "cupy"
    install_hint = "Install CuPy with `pip install cupy-cuda12x` (or cupy-cuda11x) on a machine with an NVIDIA GPU."
    mutable = True
    #: primitive name -> implementation, where ``getattr(xp, name)`` is not what the standard says
    overrides: dict = {
        **_INDEXING,
        "scatter": _scatter,
        **{name: _linalg_nan_where_failed(name) for name in _LINALG_FAILING},
        # lax, nn and random's primitives (this package's modules)
        **_lax.TABLE,
        **_nn.TABLE,
        **_random.TABLE,
    }

    def __init__(self) -> None:
        super().__init__()
        self._devices: list[Device] = []
        #: jit: fewest elements of a region fused into kernels (every launch costs ~10 us: fuse all)
        self.fusion_min_size = _config.get("ARRAYX_CUPY_FUSION_MIN_SIZE")
        #: ("fused region", kind) -> why NVRTC did not compile a region's kernel (it then runs op by op)
        self.failed: dict[tuple[str, str], str] = {}
        self._fused_kernels = None

    def _load(self):
        global cupy
        try:
            import cupy as cp
        except ImportError as e:
            raise ImportError(f"cupy is not installed ({e})") from None
        if not cp.cuda.is_available():
            try:
                cp.cuda.runtime.getDeviceCount()
                detail = "no CUDA device found"
            except Exception as e:  # noqa: BLE001 - the runtime's own words are the best reason
                detail = f"{type(e).__name__}: {e}"
            raise RuntimeError(f"cupy is installed but no usable CUDA GPU is present ({detail})")
        import array_api_compat.cupy as xp

        cupy = cp
        self.array_type = cp.ndarray
        self._devices = [Device(self.name, f"cuda:{i}", i) for i in range(cp.cuda.runtime.getDeviceCount())]
        return xp

    # -- devices ------------------------------------------------------------------------
    def memory_limit(self):
        return None  # GPU memory: CuPy's OutOfMemoryError names the size

    def devices(self) -> list[Device]:
        self.xp  # noqa: B018 - loads CuPy (raises with the reason when unavailable)
        return list(self._devices)

    def default_device(self) -> Device:
        self.xp  # noqa: B018
        return self._devices[cupy.cuda.runtime.getDevice()]

    def device_of(self, buf) -> Device:
        return self._devices[buf.device.id]

    def _device_id(self, device: Device, fname: str) -> int:
        if device.executor != self.name or device.native is None:
            raise ValueError(f"{fname}: {device} is not a device of the 'cupy' executor; its devices are {self.devices()}")
        return device.native

    def to_device(self, buf, device: Device):
        target = self._device_id(device, "to_device")
        if buf.device.id == target:
            return buf
        with cupy.cuda.Device(target):
            return cupy.array(buf, copy=True)  # peer-to-peer copy

    # -- buffers ----------------------------------------------------------------------------
    def compile(self, graph, donate_argnums: tuple = ()):
        # fusible regions as generated CUDA kernels, the rest straight-line over this executor's table
        from arrayx.executors.cupy.fusion import fuse

        self.xp  # noqa: B018 - loads CuPy (raises with the reason when unavailable)
        return fuse(self, graph)

    def fused_kernels(self):
        """The launcher of jit's fused kernels (cupy.fusion.CupyKernels``), made once."""
        if self._fused_kernels is None:
            from arrayx.executors.cupy.fusion import CupyKernels

            self._fused_kernels = CupyKernels(cupy)
        return self._fused_kernels

    def executor_info(self) -> dict:
        caps = super().executor_info()
        caps["fused kernels"] = "cupy.ElementwiseKernel / ReductionKernel per jit region (executors/cupy/fusion.py)"
        caps["compile failures"] = {kind: reason for (_, kind), reason in sorted(self.failed.items())}
        return caps

    def coerce(self, out):
        return cupy.asarray(out)

    def asarray(self, obj, dtype=None, copy=None, device: Device | None = None):
        if device is None:
            return self.xp.asarray(obj, dtype=dtype, copy=copy)
        with cupy.cuda.Device(self._device_id(device, "asarray")):
            return self.xp.asarray(obj, dtype=dtype, copy=copy)

    def from_dlpack(self, obj, copy=None):
        kind = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else _KDL_CUDA
        if kind == _KDL_CPU:  # a host producer: CuPy cannot alias host memory, so copy it over
            if copy is False:
                raise ValueError("from_dlpack: copy=False, but moving host memory to a CUDA device copies")
            return cupy.asarray(np.from_dlpack(obj))
        out = cupy.from_dlpack(obj)
        return out.copy() if copy else out

    def to_host(self, buf) -> np.ndarray:
        return cupy.asnumpy(buf)

    def dlpack_buffer(self, buf):
        return buf

    def from_foreign(self, buf, source: Executor):
        """Copy ``buf`` of ``source`` here: DLPack when it is on a CUDA device, else through the host."""
        if source.name != "numpy":
            try:
                exported = source.dlpack_buffer(buf)
                if exported.__dlpack_device__()[0] == _KDL_CUDA:
                    return cupy.from_dlpack(exported).copy()
            except Exception:  # noqa: BLE001 - any DLPack refusal falls back to the host copy
                pass
        return cupy.asarray(np.asarray(source.to_host(buf)))
