"""Inspection (the standard's "Inspection" API): ``__array_namespace_info__()``.

The answers describe the executor that new arrays are created on (see
``arrayx.executors.base`` for how it is chosen), except ``devices()``, which
lists the devices of every executor available here, and the ``device=``
arguments, which ask about that device's executor.
"""
from __future__ import annotations

from arrayx.api import _dtypes
from arrayx.executors import base as _exec

__all__ = ["__array_namespace_info__"]

# the standard's data type kinds, in the order ``dtypes(kind=...)`` accepts them
_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
          "complex floating", "numeric")
_REQUIRED_CAPABILITIES = ("boolean indexing", "data-dependent shapes", "max dimensions")


def _executor_for(fname: str, device):
    return _exec.resolve_device(device, fname)[0]


class ArrayNamespaceInfo:
    """What arrayx supports here: capabilities, devices and data types."""

    __slots__ = ()
    __module__ = "arrayx"

    def capabilities(self) -> dict:
        """``{"boolean indexing": bool, "data-dependent shapes": bool, "max dimensions": int | None}``
        for the current executor."""
        caps = dict(_exec.get_executor().capabilities())
        missing = [k for k in _REQUIRED_CAPABILITIES if k not in caps]
        if missing:
            raise RuntimeError(f"capabilities: executor {_exec.get_executor().name!r} does not report {missing}")
        return caps

    def default_device(self):
        """The device new arrays are created on."""
        return _exec.get_executor().default_device()

    def devices(self) -> tuple:
        """Every device of every executor available here (each is a valid ``device=`` argument)."""
        out = []
        for name in _exec.executors():
            out.extend(_exec.get(name).devices())
        return tuple(out)

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtypes: "real floating", "complex floating", "integral" and "indexing"."""
        _executor_for("default_dtypes", device)
        return {
            "real floating": _dtypes.DEFAULT_FLOAT,
            "complex floating": _dtypes.DEFAULT_COMPLEX,
            "integral": _dtypes.DEFAULT_INT,
            "indexing": _dtypes.DEFAULT_INDEX,
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        """Supported dtypes by canonical name, optionally only those of ``kind`` (a kind or tuple)."""
        _executor_for("dtypes", device)
        if kind is None:
            members = _dtypes.CATEGORIES["all"]
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            members = set()
            for k in kinds:
                if k not in _KINDS:
                    raise ValueError(f"dtypes: unknown kind {k!r}; kinds are {_KINDS}")
                members |= _dtypes.CATEGORIES[k]
        return {dt.name: dt for dt in _dtypes.all_dtypes if dt in members}

    def __repr__(self) -> str:
        return "arrayx.__array_namespace_info__()"


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The standard's inspection object: capabilities(), devices(), default_device(), dtypes(), ..."""
    return ArrayNamespaceInfo()
