"""Known deviations: what an executor truly cannot do the way NumPy does, one entry each.

The differential suite (``conformance/differential``) classifies every disagreement it finds:
one that an entry here covers is a known deviation (reported, not a failure); any other is a
failure.  An entry names the executors, the functions (the standard's names, ``"*"`` for all)
and the kinds of disagreement it covers (``runner.Disagreement.kind``), and says *why* with a
``recheck``: a function of ``(fn, args, kwargs, executor)`` that is True when the executor's
answer is exactly what the deviation predicts (e.g. NumPy's answer for the inputs with their
subnormals flushed to zero).  A disagreement the recheck does not explain stays a failure, so an
entry cannot hide another bug on the same inputs.

``test_deviations.py`` pins the exact set of ids (the table cannot grow without a test change)
and runs each entry's ``example`` to show it still happens and is covered.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Deviation:
    id: str
    executors: tuple
    functions: tuple            # standard names; ("*",) for every function
    kinds: tuple                # runner.Disagreement kinds it covers
    recheck: Callable           # (fn, args, kwargs, executor) -> True when the deviation explains the result
    reason: str
    example: tuple              # (table name, args, kwargs): a call that shows it

    def covers(self, d) -> bool:
        return (d.executor in self.executors
                and ("*" in self.functions or d.function in self.functions)
                and d.kind in self.kinds
                and d.call is not None
                and bool(self.recheck(*d.call, d.executor)))


# -- rechecks -----------------------------------------------------------------------------------------


def _flush(value):
    """Host inputs (and materialised results) with every subnormal replaced by a zero of its sign."""
    from conformance.differential.strategies import Input

    if isinstance(value, Input):
        return Input(_flush(value.values), value.layout)
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        if value.dtype.kind == "c":
            out = value.copy()
            out.real, out.imag = _flush(value.real.copy()), _flush(value.imag.copy())
            return out
        tiny = np.finfo(value.dtype).smallest_normal
        return np.where((value != 0) & (np.abs(value) < tiny), np.copysign(np.zeros((), value.dtype), value), value)
    if isinstance(value, tuple):
        return tuple(_flush(v) for v in value)
    if isinstance(value, list):
        return [_flush(v) for v in value]
    if isinstance(value, dict):
        return {k: _flush(v) for k, v in value.items()}
    return value


def as_if_subnormals_were_zero(fn, args, kwargs, executor) -> bool:
    """The executor's result equals NumPy's for the inputs flushed to zero, with its result flushed too."""
    from conformance.differential import runner

    status, want = runner.reference(fn, _flush(args), _flush(kwargs))
    if status != "ok":
        return False
    try:
        got = runner.call(fn, args, kwargs, executor)
        runner.compare(fn, _flush(got), _flush(want), runner._finite_scale(args, want))
    except Exception:  # noqa: BLE001 - anything else is not this deviation
        return False
    return True


# -- the table --------------------------------------------------------------------------------------

def _input(values, dtype):
    from conformance.differential.strategies import Input

    return Input(np.asarray(values, dtype=dtype))


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "jax-flushes-subnormals", ("jax",), ("*",), ("value",), as_if_subnormals_were_zero,
        "XLA on CPU computes with the processor's flush-to-zero and denormals-are-zero modes on and "
        "nothing turns them off (XLA_FLAGS=--xla_cpu_ftz=false changes nothing, and checking operands "
        "for subnormals costs 5.2x the op: benchmarks/bench_jax_subnormals.py; jax-ml/jax#16200): "
        "subnormal inputs and results are zeros of their sign; every other value is NumPy's",
        ("multiply", (_input([1e-40, 2.0], "float32"), 1.0), {}),
    ),
)


# -- per platform: what a kind of hardware computes differently, whichever executor drives it ----------


@dataclass(frozen=True)
class PlatformDeviation:
    """A difference of one kind of hardware (a device platform), found by running the table there.

    These are not rechecked on this machine (it has no such hardware): ``measured`` names the
    committed results that show them, and ``conformance/tpu_probe.py --summarize`` classifies a
    chip run's disagreements against them (by function and input dtype), listing any other.

    An entry with a ``tolerance`` (``(rtol, atol)`` in units of the result dtype's epsilon, as
    ``compare.TOLERANCES``) is what ``python -m conformance.report`` accepts on that platform for
    those functions and input dtypes (the input dtypes as the device holds them): a case that
    differs by more than its class allows but within this is reported as ``deviation`` with the
    entry's id, not ``ok``; one beyond it stays DIFFERS.  Other platforms never see it.
    """

    id: str
    platform: str
    functions: tuple            # standard names, "*" for all
    dtypes: tuple               # input dtypes where it shows
    reason: str
    measured: str
    tolerance: tuple | None = None  # (rtol, atol) in eps of the result dtype: the report's bound there

    def covers(self, platform: str, function: str, dtypes) -> bool:
        return (platform == self.platform and ("*" in self.functions or function in self.functions)
                and any(d in self.dtypes for d in dtypes))


_PRODUCTS = ("matmul", "tensordot", "vecdot", "linalg.matmul", "linalg.tensordot", "linalg.vecdot",
             "linalg.matrix_power", "linalg.eigh", "linalg.eigvalsh", "linalg.qr", "linalg.svd", "linalg.svdvals",
             "linalg.pinv", "linalg.solve", "linalg.inv", "linalg.cholesky", "linalg.det", "linalg.slogdet",
             "linalg.matrix_norm", "linalg.matrix_rank", "linalg.outer", "linalg.cross")
_TRANSCENDENTAL = ("exp", "expm1", "log", "log1p", "log2", "log10", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                   "logaddexp", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "hypot", "sqrt")

PLATFORM_DEVIATIONS: tuple[PlatformDeviation, ...] = (
    PlatformDeviation(
        "tpu-matmul-default-precision", "tpu", _PRODUCTS, ("float32", "complex64"),
        "At JAX's default matmul precision (arrayx's default too: arrayx.default_matmul_precision) XLA:TPU "
        "multiplies float32 in one bfloat16 pass: products agree with NumPy to about three digits (largest "
        "seen 6.4e-3 relative, tensordot); under default_matmul_precision('highest') they run at float32 "
        "accuracy, which python -m conformance.report sets by itself on an accelerator (conformance/narrow.py)",
        "conformance/results/tpu_probe.json (examples32: matmul, tensordot, eigh, qr, svd, matrix_power)"),
    PlatformDeviation(
        "tpu-float32-transcendentals", "tpu", _TRANSCENDENTAL,
        ("float32", "complex64", "bool", "int8", "int16", "uint8", "uint16", "int32", "uint32"),
        "XLA:TPU computes float32 and complex64 transcendentals with its own approximations, not correctly "
        "rounded: they agree with NumPy to about four digits (3e-6 relative typical; the largest first "
        "differing elements seen were 1.2e-4 relative in asinh and atanh, 1.8e-4 in logaddexp, i.e. up to "
        "about 1500 float32 ulps); small integers and bool promote to float32 first, and so do int32/uint32 "
        "under the default ARRAYX_TPU_64BIT=downcast (their default float is float32 there). The report "
        "accepts 4096 float32 ulps (4.9e-4) relative there, about 2.7x the largest seen",
        "conformance/results/tpu_probe.json (sweep: float32, complex64, int8/16, uint8/16, bool rows; JAX 0.10.2, "
        "libtpu 0.0.42.1, TPU v5 lite)", tolerance=(4096, 4096)),
    PlatformDeviation(
        "tpu-emulated-64bit", "tpu", ("*",), ("float64", "complex128", "int64", "uint64", "int32", "uint32"),
        "XLA:TPU has no 64-bit floating point: under ARRAYX_TPU_64BIT=emulate float64 is a pair of float32 "
        "(about 48 bits of mantissa), so values do not survive a round trip exactly (flip, sort, max of "
        "float64 differ in the last bits) and functions differ by up to 2.4e-14 relative; int32/uint32 "
        "transcendentals promote to float64 and inherit it. The decompositions' vectors are further off: float64 "
        "svd and pinv (and eigh's V diag(w) V^H) agree with LAPACK to ~4e-9 relative, at every magnitude (XLA:TPU's "
        "iterations stop near float32's tolerance; their values, eigvalsh and svdvals, to ~2e-14), and with "
        "float32's exponent range entries near 1e-30 lose more (cholesky 1e-5). The default (downcast) keeps "
        "64-bit data off the chip",
        "conformance/results/tpu_probe.json (sweep: float64/complex128 rows; int32/uint32 tan, sinh, hypot), "
        "tpu_emulate64.json (linalg.svd, linalg.pinv float64), tpu_linalg_accuracy_64.json (session 26)"),
)


def classify_platform(platform: str, function: str, dtypes) -> PlatformDeviation | None:
    """The per-platform entry that covers ``function`` on ``dtypes`` there, or None."""
    for dev in PLATFORM_DEVIATIONS:
        if dev.covers(platform, function, dtypes):
            return dev
    return None


def platform_tolerance(platform: str, function: str, dtypes) -> PlatformDeviation | None:
    """The first per-platform entry with a tolerance that covers ``function`` on ``dtypes`` there, or None."""
    for dev in PLATFORM_DEVIATIONS:
        if dev.tolerance is not None and dev.covers(platform, function, dtypes):
            return dev
    return None


def classify(d) -> Deviation | None:
    """The entry that covers disagreement ``d``, or None."""
    for dev in DEVIATIONS:
        if dev.covers(d):
            return dev
    return None


def table() -> list[dict]:
    """The entries as rows (for the report and the README)."""
    from conformance.differential import functions as F
    from conformance.differential.runner import reproducer

    return [{"id": d.id, "executors": list(d.executors), "functions": list(d.functions), "kinds": list(d.kinds),
             "reason": d.reason, "reproducer": reproducer(F.BY_NAME[d.example[0]], *d.example[1:])}
            for d in DEVIATIONS]
