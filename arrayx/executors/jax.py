"""The JAX executor: buffers are ``jax.Array``, the namespace is ``jax.numpy``.

Select it with ``arrayx.use_executor("jax")``, ``device="jax"`` (or
``"jax:cpu:0"``, ``"jax:gpu:0"``), or ``ARRAYX_EXECUTOR=jax``.

64-bit types
    JAX computes in 32 bits unless ``jax_enable_x64`` is set, and then turns
    ``float64``/``int64`` requests into ``float32``/``int32`` *silently*.  arrayx
    needs the standard's dtypes (float64 default float, int64 default index), so
    the first time this executor is used (``_load``: the first array created on
    it, ``arrayx.executors()``, ``__array_namespace_info__().devices()``) it
    calls ``jax.config.update("jax_enable_x64", True)``.

    That switch is process-wide: afterwards *other* JAX code in the same process
    also gets 64-bit defaults (``jnp.array(1.0)`` is float64, ``jnp.arange(3)``
    int64, random draws default to float64).  Arrays that code created earlier
    keep their dtypes, and code that passes explicit dtypes is unaffected.  To
    keep 32-bit defaults in your own JAX code, pass ``dtype=jnp.float32``.

Immutability
    ``jax.Array`` buffers cannot be written.  ``x[k] = v`` and ``x += y`` on an
    arrayx array still work: arrayx computes the updated value functionally
    (``buf.at[k].set(v)``, see ``_at_update``) and rebinds the wrapper, so other
    arrayx arrays that shared the old buffer are unchanged (``mutable = False``).

Deviations of ``jax.numpy`` that this module corrects (``overrides``): index
results that JAX returns as int32 (``searchsorted``) are int64, the standard's
default index dtype.
"""
from __future__ import annotations

import numpy as np

from arrayx.executors.base import Device, Executor

_INDEX = np.dtype("int64")

jnp = None  # jax.numpy, set by JaxExecutor._load (JAX is imported only when the executor is used)

# ``x.at[k].<op>(v)`` method for each arrayx update op (``arrayx.api.indexing.AT_OPS``)
_AT_METHODS = {
    "set": "set", "add": "add", "subtract": "subtract", "multiply": "multiply",
    "divide": "divide", "power": "power", "min": "min", "max": "max",
}


def _at_update(buf, value, *index_bufs, key, op):
    """``buf`` with ``buf[key] op= value`` applied functionally (repeated indices accumulate)."""
    from arrayx.api.indexing import decode_key

    ref = buf.at[decode_key(key, index_bufs)]
    return getattr(ref, _AT_METHODS[op])(value)


def _searchsorted(x1, x2, *, side="left", sorter=None):
    return jnp.searchsorted(x1, x2, side=side, sorter=sorter).astype(_INDEX)  # JAX gives int32


class JaxExecutor(Executor):
    name = "jax"
    install_hint = "Install JAX with `pip install jax` (CPU) or `pip install 'jax[cuda12]'` (NVIDIA GPU)."
    mutable = False
    #: primitive name -> implementation, where ``getattr(jax.numpy, name)`` is not what the standard says
    overrides: dict = {
        "at_update": _at_update,
        "searchsorted": _searchsorted,
    }

    def __init__(self) -> None:
        super().__init__()
        self._devices: list[Device] = []
        self._by_native: dict = {}
        self._jax = None

    # -- availability ---------------------------------------------------------------
    def _load(self):
        import jax

        jax.config.update("jax_enable_x64", True)  # see the module docstring
        import jax.numpy

        global jnp
        jnp = jax.numpy
        self._jax = jax
        self.array_type = type(jnp.zeros((), dtype=jnp.float32))
        natives = list(jax.devices())
        if natives[0].platform != "cpu":  # list the host too when an accelerator is the default
            try:
                natives += [d for d in jax.devices("cpu") if d not in natives]
            except RuntimeError:
                pass
        self._devices = [Device(self.name, f"{d.platform}:{d.id}", d) for d in natives]
        self._by_native = {d.native: d for d in self._devices}
        return jnp

    def resolve(self, prim):
        # this executor's overrides beat a primitive's generic ``impls["*"]`` (written for NumPy-like buffers)
        if self.name not in prim.impls and self.overrides.get(prim.name) is not None:
            self.impls[prim] = fn = self.overrides[prim.name]
            return fn
        return super().resolve(prim)

    def capabilities(self) -> dict:
        # eager JAX computes data-dependent shapes (boolean masks, unique, nonzero) on the host
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    # -- devices ------------------------------------------------------------------------
    def devices(self) -> list[Device]:
        self.xp  # noqa: B018 - loads JAX (raises with the reason when it is missing)
        return list(self._devices)

    def default_device(self) -> Device:
        self.xp  # noqa: B018
        return self._devices[0]

    def device_of(self, buf) -> Device:
        natives = buf.devices()
        if len(natives) == 1:
            (native,) = natives
            dev = self._by_native.get(native)
            if dev is not None:
                return dev
        # sharded over several devices: report the first, as JAX's own ``.device`` would refuse
        return self._by_native.get(sorted(natives, key=lambda d: d.id)[0], self._devices[0])

    def to_device(self, buf, device: Device):
        return self._jax.device_put(buf, self._native(device, "to_device"))

    def _native(self, device: Device, fname: str):
        if device.executor != self.name or device.native is None:
            raise ValueError(f"{fname}: {device} is not a device of the 'jax' executor; its devices are {self.devices()}")
        return device.native

    # -- buffers ----------------------------------------------------------------------------
    def coerce(self, out):
        return self.xp.asarray(out)

    def asarray(self, obj, dtype=None, copy=None, device: Device | None = None):
        native = None if device is None else self._native(device, "asarray")
        return self.xp.asarray(obj, dtype=dtype, copy=copy, device=native)

    def from_dlpack(self, obj, copy=None):
        return self.xp.from_dlpack(obj, copy=copy)

    def to_host(self, buf) -> np.ndarray:
        return np.asarray(buf)  # read-only view on CPU, a device-to-host copy elsewhere

    def dlpack_buffer(self, buf):
        return buf

    def from_foreign(self, buf, source: Executor):
        """Copy ``buf`` of ``source`` here: DLPack when the source can export it, else via the host."""
        if source.name != "numpy":
            try:
                exported = source.dlpack_buffer(buf)
                kind, _ = exported.__dlpack_device__()
                if kind in (1, 2):  # kDLCPU, kDLCUDA: devices JAX can import from
                    return self.xp.from_dlpack(exported, copy=True)
            except Exception:  # noqa: BLE001 - any DLPack refusal falls back to the host copy
                pass
        return self.xp.array(source.to_host(buf), copy=True)
