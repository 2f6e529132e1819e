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

from arrayx.core.precision import current as _precision
from arrayx.executors.jax import x64

__all__ = ["MEASURED_ON", "REFUSED", "LOWER_IN_32_BITS", "Guarded", "In32Bits", "guard", "check_graph", "reason"]

MEASURED_ON = {"jax": "0.10.2", "jaxlib": "0.10.2", "libtpu": "0.0.42.1", "device": "TPU v5 lite",
               "probe": "conformance/results/tpu_probe.json"}

_ABORT_COMPLEX = "XLA:TPU's compiler aborts the process (xprecision_rewriter: Check failed: operand->shape().IsTuple())"
_INTERNAL_F64 = ("XLA:TPU's emulated float64 fails inside XLA (INVALID_ARGUMENT: shift-right-arithmetic/and "
                 "with different element types s32 and u32)")
_ABORT_SVD_C128 = ("XLA:TPU's compiler aborts the process (xprecision_rewriter: Unsupported CVT X{64|128} expansion "
                   "from pred to c128; compiled ahead of time for a v5e on a CPU, benchmarks/tpu_aot.py)")
_ABORT_TO_C128 = "XLA:TPU's compiler aborts the process converting to complex128 (Unsupported CVT X{64|128} expansion)"
_AOT = "conformance/results/tpu_aot_linalg.json, compiled ahead of time for a v5e on a CPU"
_ABORT_LINALG_C128 = (f"XLA:TPU's compiler aborts the process (xprecision_rewriter: Unsupported CVT X{{64|128}} expansion "
                      f"to c128; on the chip, session 26's probe, and {_AOT})")
_ABORT_CHOLESKY_C128 = (f"XLA:TPU's compiler aborts the process (xprecision_rewriter: Check failed: "
                        f"operand->shape().IsTuple(); on the chip, session 26's probe, and {_AOT})")
_NO_LU_C128 = (f"XLA:TPU has no complex128 LU (UNIMPLEMENTED: Only F32 and C64 types are implemented in "
               f"LuDecomposition; {_AOT}), and complex128 det halted the TPU core on the chip (RuntimeUnexpectedCoreHalt: "
               f"every later program of the process failed)")
_NO_LU_F64 = ("XLA:TPU has no float64 LU (JaxRuntimeError: UNIMPLEMENTED: Only F32 and C64 types are implemented in "
              "LuDecomposition; on the chip, session 26's probe and tpu_linalg_accuracy, and " + _AOT + ")")
_NO_FFT_64 = ("XLA:TPU's FFT takes no 64-bit operand (JaxRuntimeError: INVALID_ARGUMENT: Unexpected operand type "
              "for FFT: f64/c128; on the chip, session 26's probe)")
_NO_DOT_I64 = ("XLA:TPU's 64-bit emulation has no integer dot_general (JaxRuntimeError: UNIMPLEMENTED: While rewriting "
               "computation to not contain X{64|128} element types, XLA encountered an HLO for which this rewriting is "
               "not implemented: dot_general s64; matmul on the chip, session 26's probe; tensordot is the same product)")
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
    "svd": {"complex128": _ABORT_SVD_C128},
    **{name: {"complex128": _ABORT_LINALG_C128} for name in ("eigh", "eigvalsh", "qr", "svdvals")},
    "cholesky": {"complex128": _ABORT_CHOLESKY_C128},
    **{name: {"complex128": _NO_LU_C128, "float64": _NO_LU_F64} for name in ("det", "slogdet", "inv", "solve")},
    **{name: dict.fromkeys(("int64", "uint64"), _NO_DOT_I64) for name in ("matmul", "tensordot")},
    **{name: dict.fromkeys(("float64", "complex128"), _NO_FFT_64)
       for name in ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft")},
    **{name: dict.fromkeys(_EVERY_FLOAT, _NO_TPU_EIG) for name in ("eig", "eigvals")},
}
_DTYPES = {name: frozenset(by_dtype) for name, by_dtype in REFUSED.items()}  # by name: bfloat16 needs no import


#: primitive -> why its TPU lowering is built with JAX's 64-bit types off.  JAX writes these lowerings in
#: Python (``mlir.lower_fun``) and traces them when XLA lowers the program, under the calling thread's
#: 64-bit setting; arrayx keeps that setting on around its calls (x64.py), which put 64-bit integers
#: into the 32-bit lowering and XLA:TPU's compiler aborted the process on float32 (shape.h: Check
#: failed: buffer != nullptr; the chip's probe, conformance/results/tpu_probe.json).  Reproduced and
#: checked without a chip: the same program lowered with the setting off compiles for a v5e, on with
#: it aborts (XLA:TPU's ahead-of-time compiler on a CPU, tests/executors/test_jax_tpu_limits.py).
#: Operands of 32 bits or fewer are lowered with the setting off (eagerly, and a compiled graph that
#: holds no 64-bit value); a graph that also holds 64-bit values is refused (its lowering needs both).
LOWER_IN_32_BITS: dict[str, str] = {
    "svd": "JAX's TPU lowering of svd, traced with 64-bit types on, aborts XLA:TPU's compiler on float32 "
           "(shape.h: Check failed: buffer != nullptr)",
}
_WIDE = frozenset({"float64", "complex128", "int64", "uint64"})


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
    """An eager implementation of a listed primitive: refuses a listed dtype on a TPU buffer, and runs
    a primitive of ``LOWER_IN_32_BITS`` on 32-bit TPU operands as ``raw`` with 64-bit types off."""

    __slots__ = ("name", "fn", "raw")

    def __init__(self, name, fn, raw=None):
        self.name = name
        self.fn = fn
        self.raw = raw

    def __call__(self, *bufs, **params):
        dtypes = [getattr(b, "dtype", None) for b in bufs] + [_param_dtype(params)]
        found = reason(self.name, dtypes)
        on_tpu = any(_on_tpu(b) for b in bufs if hasattr(b, "dtype"))
        if found is not None and on_tpu:
            raise _refuse(self.name, found[0], found[1], "a TPU")
        if self.raw is not None and on_tpu and not any(dt is not None and dt.name in _WIDE for dt in dtypes):
            return in_32_bits(self.raw, bufs, params)
        return self.fn(*bufs, **params)


def in_32_bits(fn, args, kwargs):
    """``fn(*args, **kwargs)`` with the calling thread's 64-bit types off (what JAX does by default) and
    arrayx's matmul precision, if one is named; the caller's settings restored after."""
    prev, wanted = x64.swap(False), _precision()
    before = None if wanted is None else x64.precision_swap(wanted)
    try:
        return fn(*args, **kwargs)
    finally:
        if wanted is not None:
            x64.precision_restore(before)
        x64.restore(prev)


class In32Bits:
    """A compiled program traced, lowered and called with 64-bit types off (a graph that runs a
    primitive of ``LOWER_IN_32_BITS`` on a TPU); other attributes are the program's."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return in_32_bits(self.fn, args, kwargs)

    def __getattr__(self, name):
        return getattr(self.fn, name)


def _param_dtype(params):
    dt = params.get("dtype") if params else None
    try:
        return None if dt is None else np.dtype(dt)
    except TypeError:
        return None


def guard(executor, prim, fn, raw=None):
    """``fn``, or ``fn`` behind the dtype check when ``prim`` is listed and the executor has a TPU
    (``raw``: the plain implementation, run with 64-bit types off for ``LOWER_IN_32_BITS``)."""
    if executor._has_tpu and (prim.name in REFUSED or prim.name in LOWER_IN_32_BITS):
        return Guarded(prim.name, fn, raw if prim.name in LOWER_IN_32_BITS else None)
    return fn


def check_graph(executor, graph, platform: str) -> bool:
    """Raise before compiling when ``graph`` (or a graph in its params) runs a listed primitive on a
    listed dtype and will run on ``platform``.  True when the program must be lowered with 64-bit
    types off (it runs a primitive of ``LOWER_IN_32_BITS`` and holds no 64-bit value)."""
    if platform != "tpu":
        return False
    needs, wide = [], []
    _walk(graph, needs, wide)
    if needs and wide:
        raise NotImplementedError(
            f"{needs[0]}: a compiled function on a TPU that runs {needs[0]} and also holds {wide[0]} values "
            f"is not run: {LOWER_IN_32_BITS[needs[0]]}, and its {wide[0]} values need them on (measured on JAX "
            f"{MEASURED_ON['jax']}, libtpu {MEASURED_ON['libtpu']}; arrayx/executors/jax/tpu_limits.py). Keep "
            f"{needs[0]} in a function of its own, or compute in 32-bit types")
    return bool(needs)


def _walk(graph, needs: list, wide: list) -> None:
    for v in (*graph.inputs, *graph.constvars, *graph.outputs):
        dt = getattr(getattr(v, "aval", None), "dtype", None)
        if dt is not None and np.dtype(dt).name in _WIDE:
            wide.append(np.dtype(dt).name)
    for eqn in graph.equations:
        for value in eqn.params.values():
            for sub in (value if isinstance(value, (tuple, list)) else (value,)):
                if hasattr(sub, "equations"):
                    _walk(sub, needs, wide)
                elif hasattr(getattr(sub, "graph", None), "equations"):
                    _walk(sub.graph, needs, wide)
        dtypes = [np.dtype(v.aval.dtype) for v in (*eqn.inputs, *eqn.outputs) if hasattr(v, "aval")]
        wide.extend(dt.name for dt in dtypes if dt.name in _WIDE)
        if eqn.prim.name in LOWER_IN_32_BITS:
            needs.append(eqn.prim.name)
        if eqn.prim.name not in REFUSED:
            continue
        found = reason(eqn.prim.name, dtypes[:len(eqn.inputs)] + [_param_dtype(eqn.params)])
        if found is not None:
            raise _refuse(eqn.prim.name, found[0], found[1], "a TPU (in a compiled function)")
