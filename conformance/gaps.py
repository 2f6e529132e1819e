"""Known gaps: functions an executor legitimately cannot run (it raises NotImplementedError).

One dict per executor: standard function name (as in the table: ``"sin"``,
``"linalg.eigh"``, ``"array.at"``), or one hand-picked example's id (``"repeat[array]"``) when only
that use is missing, -> the reason, in words a user can act on.  The eager sweep
(``test_differential.py``) fails on a NotImplementedError whose function is not listed here, and on
a listed function that no longer raises (so this table never goes stale).

Per platform (:func:`platform_gaps`): what an executor refuses on one kind of hardware only, by
function and input dtype.  For the jax executor on a TPU that is ``arrayx/executors/jax/tpu_limits.py``'s
table, read from there (not copied): the primitive x dtype combinations XLA:TPU aborts on or fails
inside, measured on the chip (``MEASURED_ON``), which arrayx refuses with NotImplementedError before
XLA compiles.  ``python -m conformance.report`` on such a device lists a case as a known gap when
the function and a dtype the device holds it in (or the dtype the error names) are in this table.
"""
from __future__ import annotations

import re

GAPS: dict[str, dict[str, str]] = {
    "numpy": {},
    "numba": {},
    "jax": {},
    "dask": {},
    "cupy": {},
}

#: tpu_limits primitive -> the standard functions that run it, where they are not the same name
#: (``pinv`` computes through ``svd``)
FUNCTIONS_OF_PRIMITIVE = {
    "svd": ("linalg.svd", "linalg.pinv"), "eig": ("linalg.eig",), "eigvals": ("linalg.eigvals",),
    **{name: (f"linalg.{name}",) for name in ("cholesky", "det", "eigh", "eigvalsh", "qr", "slogdet", "solve")},
    "inv": ("linalg.inv", "linalg.matrix_power"),  # (a negative power inverts)
    "svdvals": ("linalg.svdvals", "linalg.matrix_rank", "linalg.matrix_norm"),  # (matrix_norm: its 2, -2 and nuc orders)
    "matmul": ("matmul", "linalg.matmul"), "tensordot": ("tensordot", "linalg.tensordot"),
    **{name: (f"fft.{name}",) for name in ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft")},
}


def reason(executor: str, func: str, case_id: str | None = None) -> str | None:
    """Why ``executor`` cannot run ``func`` (or the case ``case_id``), or None when it is not a known gap."""
    table = GAPS.get(executor, {})
    return table.get(case_id) or table.get(func) if case_id else table.get(func)


def _jax_tpu() -> dict[str, dict[str, str]]:
    from arrayx.executors.jax import tpu_limits

    m = tpu_limits.MEASURED_ON
    out: dict[str, dict[str, str]] = {}
    for prim, by_dtype in tpu_limits.REFUSED.items():
        for func in FUNCTIONS_OF_PRIMITIVE.get(prim, (prim,)):
            for dtype, why in by_dtype.items():
                out.setdefault(func, {})[dtype] = (
                    f"{why}; arrayx refuses it before XLA compiles (arrayx/executors/jax/tpu_limits.py, measured on "
                    f"JAX {m['jax']}, libtpu {m['libtpu']}, {m['device']}). Use another dtype or the host device")
    return out


#: (executor, platform) -> a function giving {standard function: {dtype name: reason}}
_PLATFORM_TABLES = {("jax", "tpu"): _jax_tpu}


def platform_gaps(executor: str, platform: str) -> dict[str, dict[str, str]]:
    """What ``executor`` refuses on ``platform`` only: {standard function: {dtype name: reason}}."""
    make = _PLATFORM_TABLES.get((executor, platform))
    return make() if make else {}


def platform_reason(executor: str, platform: str, func: str, dtypes) -> str | None:
    """Why ``func`` on any of ``dtypes`` (names) is a known gap of ``executor`` on ``platform``, or None."""
    by_dtype = platform_gaps(executor, platform).get(func, {})
    return next((by_dtype[d] for d in dtypes if d in by_dtype), None)


_NAMED = re.compile(r"NotImplementedError: [\w.]+: (\w+) on ")


def dtypes_named(detail: str) -> list[str]:
    """The dtype a tpu_limits refusal names ("NotImplementedError: astype: complex128 on a TPU ...")."""
    return _NAMED.findall(detail or "")
