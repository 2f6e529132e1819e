"""What XLA:TPU refuses or aborts on, as data measured on the chip, checked before XLA compiles.

XLA's TPU compiler ends the whole Python process (a failed ``CHECK``, SIGABRT) on some
primitive x dtype combinations, and answers others with its own internal errors (``RET_CHECK``,
``INVALID_ARGUMENT ... shift-right-arithmetic with different element types``).  Neither may
reach a user: an eager call or a compiled graph that would run a listed primitive on a listed
dtype on a TPU device raises ``NotImplementedError`` naming the function, the dtype and the
device, with the fix, before JAX traces or compiles anything.

The table is what ``python -m conformance.tpu_probe`` saw on one TPU v5e (every case in a child
process that may die: ``conformance/results/tpu_probe.json``), not a guess; ``MEASURED_ON``
names the versions.  A newer JAX or libtpu may fix an entry: rerun the probe there and edit the
table.  Under the default setting (``ARRAYX_TPU_64BIT=downcast``, api/_device_dtypes.py) no
64-bit data reaches a TPU, so only the float32 entries concern a default user; the 64-bit ones
guard ``emulate``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["MEASURED_ON", "REFUSED", "Guarded", "guard", "check_graph", "reason"]

MEASURED_ON = {"jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": "0.0.42.1", "device": "TPU v5 lite",
               "probe": "conformance/results/tpu_probe.json"}

_ABORT_COMPLEX = "XLA:TPU's compiler aborts the process (xprecision_rewriter: Check failed: operand->shape().IsTuple())"
_INTERNAL_F64 = ("XLA:TPU's emulated float64 fails inside XLA (INVALID_ARGUMENT: shift-right-arithmetic/and "
                 "with different element types s32 and u32)")
_ABORT_SVD = "XLA:TPU's compiler aborts the process (shape.h: Check failed: buffer != nullptr)"
_ABORT_TO_C128 = "XLA:TPU's compiler aborts the process converting to complex128 (Unsupported CVT X{64|128} expansion)"
_NO_TPU_EIG = ("JAX has no TPU implementation of the general eigendecomposition (NotImplementedError: MLIR "
               "translation rule for primitive 'eig' not found for platform tpu; seen in the official suite)")
#: every floating dtype: the primitive is refused whatever the dtype (no other dtype helps)
_EVERY_FLOAT = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")

#: primitive name -> {dtype name: what XLA:TPU does with it}: the dtype is any operand's, or the
#: ``dtype`` param's (astype's target)
REFUSED: dict[str, dict[str, str]] = {
    **{name: {"complex128": _ABORT_COMPLEX}
       for name in ("abs", "expm1", "reciprocal", "tan", "tanh", "divide", "pow", "sign")},
    **{name: {"float64": _INTERNAL_F64}
       for name in ("signbit", "atan2", "copysign", "floor_divide", "nextafter", "remainder")},
    "astype": {"complex128": _ABORT_TO_C128},
    "svd": {"float32": _ABORT_SVD},
    **{name: dict.fromkeys(_EVERY_FLOAT, _NO_TPU_EIG) for name in ("eig", "eigvals")},
}
_DTYPES = {name: frozenset(by_dtype) for name, by_dtype in REFUSED.items()}  # by name: bfloat16 needs no import


def reason(name: str, dtypes) -> tuple[str, str] | None:
    """(dtype name, what XLA:TPU does) when ``name`` on these dtypes is listed, else None."""
    listed = _DTYPES.get(name)
    if listed:
        for dt in dtypes:
            if dt is not None and dt.name in listed:
                return dt.name, REFUSED[name][dt.name]
    return None


def _refuse(name: str, dtype: str, why: str, where: str):
    other = "" if len(REFUSED[name]) >= len(_EVERY_FLOAT) else "in another dtype (float32/complex64), or "
    return NotImplementedError(
        f"{name}: {dtype} on {where} is not run: {why} (measured on JAX {MEASURED_ON['jax']}, "
        f"libtpu {MEASURED_ON['libtpu']}; arrayx/executors/jax/tpu_limits.py). Compute it {other}"
        f"on the host: x.to_device('jax:cpu:0')")


def _on_tpu(buf) -> bool:
    try:
        return any(d.platform == "tpu" for d in buf.devices())
    except AttributeError:  # a deferred transpose or a NumPy scalar: its base's device is the executor's
        base = getattr(buf, "base", None)
        return base is not None and _on_tpu(base)


class Guarded:
    """An eager implementation of a listed primitive: refuses a listed dtype on a TPU buffer."""

    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn

    def __call__(self, *bufs, **params):
        found = reason(self.name, [getattr(b, "dtype", None) for b in bufs] + [_param_dtype(params)])
        if found is not None and any(_on_tpu(b) for b in bufs if hasattr(b, "dtype")):
            raise _refuse(self.name, found[0], found[1], "a TPU")
        return self.fn(*bufs, **params)


def _param_dtype(params):
    dt = params.get("dtype") if params else None
    try:
        return None if dt is None else np.dtype(dt)
    except TypeError:
        return None


def guard(executor, prim, fn):
    """``fn``, or ``fn`` behind the dtype check when ``prim`` is listed and the executor has a TPU."""
    if prim.name in REFUSED and executor._has_tpu:
        return Guarded(prim.name, fn)
    return fn


def check_graph(executor, graph, platform: str) -> None:
    """Raise before compiling when ``graph`` (or a graph in its params) runs a listed primitive on a
    listed dtype and will run on ``platform``."""
    if platform != "tpu":
        return
    for eqn in graph.equations:
        for value in eqn.params.values():
            for sub in (value if isinstance(value, (tuple, list)) else (value,)):
                if hasattr(sub, "equations"):
                    check_graph(executor, sub, platform)
                elif hasattr(getattr(sub, "graph", None), "equations"):
                    check_graph(executor, sub.graph, platform)
        if eqn.prim.name not in REFUSED:
            continue
        dtypes = [np.dtype(v.aval.dtype) for v in eqn.inputs if hasattr(v, "aval")]
        found = reason(eqn.prim.name, dtypes + [_param_dtype(eqn.params)])
        if found is not None:
            raise _refuse(eqn.prim.name, found[0], found[1], "a TPU (in a compiled function)")
