"""Inspection (the standard's "Inspection" API): ``__array_namespace_info__()``.

The answers describe the executor that new arrays are created on (see
``arrayx.core.executor`` for how it is chosen), except ``devices()``, which
lists the devices of every executor available here, and the ``device=``
arguments, which ask about that device's executor.

Return types are the 2025.12 standard's: ``capabilities()``, ``default_dtypes()`` and
``dtypes()`` give dicts, ``devices()`` a list, ``default_device()`` a device.
``capabilities()`` has exactly the standard's three keys (clients such as array-api-extra
compare the whole dict); what an executor reports beyond them (Numba's native kernels,
thresholds, threading, kernel cache) is ``executor_info()``, an arrayx extension.

``default_dtypes(device=)`` and ``dtypes(device=)`` answer per device, as the standard allows: a
TPU's defaults are 32-bit and its dtypes those XLA:TPU runs natively (``api/_device_dtypes.py``
holds the table and its reasons); every other device has the standard's 64-bit defaults.
"""
from __future__ import annotations

from arrayx.api import _device_dtypes, _dtypes
from arrayx.core import executor as _exec

__all__ = ["__array_namespace_info__"]

# the standard's data type kinds, in the order ``dtypes(kind=...)`` accepts them
_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
          "complex floating", "numeric")
_REQUIRED_CAPABILITIES = ("boolean indexing", "data-dependent shapes", "max dimensions")
_DTYPES: dict = {}  # (kind (None, a kind, a tuple of kinds), native 64-bit) -> dtypes(kind=kind)'s answer


def _executor_for(fname: str, device):
    return _exec.resolve_device(device, fname)[0]



class DeviceTuple(tuple):
    """The tuple ``devices()`` returns (2025.12's type), concatenable with a list as well.

    Until 2024.12 the standard returned a list, and clients still write ``devices() + [None]``
    (SciPy's ``devices`` fixture): adding a list gives a list, adding a tuple a tuple.
    """

    __slots__ = ()

    def __add__(self, other):
        if isinstance(other, list):
            return list(self) + other
        return tuple.__add__(self, other)

    def __radd__(self, other):
        if isinstance(other, list):
            return other + list(self)
        return NotImplemented

class ArrayNamespaceInfo:
    """What arrayx supports here: capabilities, devices and data types."""

    __slots__ = ()
    __module__ = "arrayx"

    def capabilities(self) -> dict:
        """``{"boolean indexing": bool, "data-dependent shapes": bool, "max dimensions": int | None}``
        for the current executor: the standard's keys and no others (see ``executor_info``)."""
        ex = _exec.get_executor()
        caps = ex.capabilities()
        missing = [k for k in _REQUIRED_CAPABILITIES if k not in caps]
        if missing:
            raise RuntimeError(f"capabilities: executor {ex.name!r} does not report {missing}")
        return {k: caps[k] for k in _REQUIRED_CAPABILITIES}

    def executor_info(self, *, device=None) -> dict:
        """What the executor of ``device`` (default: the current one) reports beyond the standard's
        capabilities, e.g. Numba's ``"native"`` kernels and ``"threading layer"`` (an arrayx extension;
        ``{}`` for executors with nothing to add)."""
        ex = _exec.get_executor() if device is None else _executor_for("executor_info", device)
        return dict(ex.executor_info())

    def default_device(self):
        """The device new arrays are created on."""
        return _exec.get_executor().default_device()

    def devices(self) -> "DeviceTuple":
        """Every device of every executor available here, as a tuple (the standard's type since
        2025.12) that also concatenates with lists (clients written for 2023.12-2024.12, when it was
        a list, write ``devices() + [None]``); each is a valid ``device=`` argument."""
        out = []
        for name in _exec.executors():
            out.extend(_exec.get(name).devices())
        return DeviceTuple(out)

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtypes of ``device`` (default: the one new arrays are created on): "real
        floating", "complex floating", "integral" and "indexing" (float64, complex128, int64, int64;
        float32, complex64, int32, int32 on a TPU)."""
        return _device_dtypes.for_request(device, "default_dtypes")[2].answer()

    def dtypes(self, *, device=None, kind=None) -> dict:
        """Supported dtypes by canonical name, optionally only those of ``kind`` (a kind or tuple);
        on a device without native 64-bit types (a TPU) only the 8-, 16- and 32-bit ones."""
        native64 = _device_dtypes.for_request(device, "dtypes")[2].native64
        try:
            cached = _DTYPES.get((kind, native64))  # a copy below: the caller may edit it
        except TypeError:  # an unhashable kind: refused below
            cached = None
        if cached is not None:
            return dict(cached)
        if kind is None:
            members = _dtypes.CATEGORIES["all"]
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            members = set()
            for k in kinds:
                if k not in _KINDS:
                    raise ValueError(f"dtypes: unknown kind {k!r}; kinds are {_KINDS}")
                members |= _dtypes.CATEGORIES[k]
        if not native64:
            members = members & frozenset(_device_dtypes.NARROW_DTYPES)
        out = _DTYPES[kind, native64] = {dt.name: dt for dt in _dtypes.all_dtypes if dt in members}
        return dict(out)

    def __repr__(self) -> str:
        return "arrayx.__array_namespace_info__()"


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The standard's inspection object: capabilities(), devices(), default_device(), dtypes(), ..."""
    return ArrayNamespaceInfo()
