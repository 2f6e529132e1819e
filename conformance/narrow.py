"""The report on a device with 32-bit defaults (a TPU): references computed on the data that device holds.

A device without native 64-bit types (``arrayx/api/_device_dtypes.py``: a TPU) turns arriving
float64/complex128/int64/uint64 data into float32/complex64/int32/uint32 (``ARRAYX_TPU_64BIT=downcast``,
the default; ``refuse`` makes the user do it first), and its defaults (creation without ``dtype=``,
index results, the float of an integer computation) are 32-bit.  Comparing its results with NumPy's
float64 ones says only "float32 != float64".  So, where the executor's device narrows (:func:`target`):

- the reference runs on the host inputs cast the way arrayx casts them there (:func:`narrow_inputs`);
- its 64-bit results are cast the same way (:func:`narrow_result`): what the device's defaults give,
  so the comparison uses the tolerance of the dtype the device actually produces;
- a case whose values do not fit the 32-bit types (an int64 example beyond int32, a Python int
  2**62 with int32 data) or that asks for a 64-bit ``dtype=`` (refused there by design, never
  dropped silently) is *not applicable on this device*, with the reason, not an error;
- a case whose answer describes the device itself (``__array_namespace_info__``) is compared with
  what that device's table says (:data:`DEVICE_ANSWERS`).

Everywhere else (every CPU, and a TPU under ``ARRAYX_TPU_64BIT=emulate``) nothing changes.
Accelerators also run the table with float32 products at full precision (:func:`settings`), as
``python -m arrayx`` and the TPU probe do: JAX's default there is one bfloat16 pass
(``conformance/deviations.py``: tpu-matmul-default-precision).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

import arrayx
from arrayx.api import _device_dtypes
from arrayx.core import executor as _base

#: the precision float32 products run at while the table runs on an accelerator
ACCELERATOR_PRECISION = "highest"


@dataclass(frozen=True)
class Target:
    """Where an executor's cases run: its default device, that device's platform, and the casts
    64-bit data gets there (empty where nothing is narrowed)."""

    executor: str
    device: str
    platform: str
    mode: str                                   # ARRAYX_TPU_64BIT's setting ("" where 64-bit types are native)
    narrow: dict = field(default_factory=dict)  # np.dtype -> np.dtype

    @property
    def narrows(self) -> bool:
        return bool(self.narrow)

    @property
    def accelerator(self) -> bool:
        return self.platform != "cpu"

    def describe(self) -> str:
        parts = [f"{self.executor} runs on {self.device} (platform {self.platform})"]
        if self.narrows:
            casts = ", ".join(f"{a} -> {b}" for a, b in self.narrow.items())
            parts.append(f"no native 64-bit types, ARRAYX_TPU_64BIT={self.mode}: the NumPy reference runs on the "
                         f"inputs cast as there ({casts}) and its 64-bit results are cast the same way")
        if self.accelerator:
            parts.append(f"float32 products at {ACCELERATOR_PRECISION!r} precision "
                         f"(arrayx.default_matmul_precision)")
        return "; ".join(parts)

    def as_json(self) -> dict:
        return {"description": self.describe(), "device": self.device, "platform": self.platform, "tpu_64bit": self.mode,
                "narrow": {str(a): str(b) for a, b in self.narrow.items()},
                "matmul_precision": ACCELERATOR_PRECISION if self.accelerator else None}


def target(executor: str) -> Target:
    """The :class:`Target` of ``executor`` now (its default device, the 64-bit setting in force)."""
    ex = _base.get(executor)
    device = ex.default_device()
    platform = ex.platform_of(device)
    dd = _device_dtypes.for_device(ex)
    if dd.native64:
        return Target(executor, str(device), platform, "")
    mode = _device_dtypes.mode()
    narrow = {} if mode == "emulate" else {np.dtype(a): np.dtype(b) for a, b in dd.narrow.items()}
    return Target(executor, str(device), platform, mode, narrow)


def plain(executor: str) -> bool:
    """Whether the executor's cases run as they always did (a CPU with native 64-bit types)."""
    t = target(executor)
    return not t.narrows and not t.accelerator


@contextlib.contextmanager
def settings(executors):
    """The table's settings for these executors: full-precision float32 products where one runs on
    an accelerator (numpy, numba and dask ignore the setting), nothing otherwise."""
    if any(target(e).accelerator for e in executors):
        with arrayx.default_matmul_precision(ACCELERATOR_PRECISION):
            yield
    else:
        yield


# -- inputs and results -----------------------------------------------------------------------------


class NotApplicable(Exception):
    """The case cannot run on the device as written (the message says why)."""


def _fits(wide: np.ndarray, cast: np.ndarray) -> bool:
    if wide.dtype.kind in "iu":
        return bool(np.array_equal(cast.astype(wide.dtype), wide))
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(wide)
        return not bool((finite & ~np.isfinite(cast)).any())


def narrow_inputs(host: list, narrow: dict) -> list:
    """The host inputs cast as the device casts them; NotApplicable where a value does not fit."""
    out = []
    for i, h in enumerate(host):
        to = narrow.get(h.dtype) if isinstance(h, np.ndarray) else None
        if to is None:
            out.append(h)
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            cast = h.astype(to)
        if not _fits(h, cast):
            big = np.abs(h[np.isfinite(h)] if h.dtype.kind in "fc" else h).max()
            raise NotApplicable(f"input {i}'s {h.dtype} values (up to {big!r}) do not fit {to}, which the device "
                                f"holds them as")
        out.append(cast)
    return out


def narrow_result(tree, narrow: dict, path: str = "result"):
    """A materialised reference result with its 64-bit arrays cast as the device's defaults give them."""
    kind = tree[0]
    if kind == "array":
        a = tree[1]
        to = narrow.get(a.dtype)
        if to is None:
            return tree
        with np.errstate(over="ignore", invalid="ignore"):
            cast = a.astype(to)
        if a.dtype.kind in "iu" and not _fits(a, cast):
            raise NotApplicable(f"{path}: the reference's {a.dtype} values (up to {np.abs(a).max()!r}) do not fit "
                                f"{to}, the device's integer")
        return ("array", cast)
    if kind == "named":
        return ("named", tree[1], tuple(narrow_result(v, narrow, f"{path}.{f}") for f, v in zip(tree[1], tree[2])))
    if kind in ("tuple", "list"):
        return (kind, tuple(narrow_result(v, narrow, f"{path}[{i}]") for i, v in enumerate(tree[1])))
    if kind == "dict":
        return ("dict", tuple((k, narrow_result(v, narrow, f"{path}[{k!r}]")) for k, v in tree[1]))
    return tree


def _info_for_device(want, executor: str):
    """``__array_namespace_info__``'s case (default_dtypes(), dtypes(), dtypes(kind="integral"), ...):
    the defaults of the device and only the dtypes it holds, from arrayx/api/_device_dtypes.py's table."""
    dd = _device_dtypes.for_device(_base.get(executor))
    held = set(_device_dtypes.NARROW_DTYPES)
    defaults = ("dict", tuple((k, ("value", v)) for k, v in dd.answer().items()))
    items = list(want[1])

    def only_held(d):
        return ("dict", tuple((k, v) for k, v in d[1] if v[1] in held))

    return ("tuple", (defaults, only_held(items[1]), only_held(items[2]), *items[3:]))


#: case id -> why its answer in the 32-bit types is not determined (the device's result is not compared)
ILL_CONDITIONED_32 = {
    "linalg.pinv[lowrank]": "its rtol=1e-8 is below float32's epsilon (1.2e-7): whether the near-zero singular "
                            "value of the rank-deficient input is dropped or inverted is decided by rounding, so "
                            "the float32 answer is not determined (NumPy's own float32 pinv is as arbitrary)",
}

#: function -> (NumPy's materialised answer, executor) -> the answer on a narrowing device: the cases
#: whose answer describes the device (the device's own table is the reference there)
DEVICE_ANSWERS = {"__array_namespace_info__": _info_for_device}


# -- the device's own refusals ------------------------------------------------------------------------


def refused_64bit_request(e: BaseException) -> bool:
    """Whether ``e`` is the device refusing 64-bit data or an explicit 64-bit ``dtype=`` by design
    (``_device_dtypes.requested`` / ``arriving``), not a failure."""
    codes = {_device_dtypes.requested.__code__, _device_dtypes.arriving.__code__}
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return isinstance(e, TypeError)
        tb = tb.tb_next
    return False


def input_dtypes(case, t: Target) -> list[str]:
    """The case's input dtypes as the device holds them."""
    return [str(t.narrow.get(np.dtype(a.dtype), np.dtype(a.dtype))) for a in case.args]
