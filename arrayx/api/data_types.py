"""Data type functions (the standard's "Data Type Functions" category)."""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.transforms.core import Primitive

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]

astype_p = Primitive("astype")


def _astype_any(buf, *, dtype, copy=True):
    if buf.dtype.kind == "f" and dtype.kind in "iu":
        return _float_to_int(buf, dtype)
    return buf.astype(dtype, copy=copy) if copy is not True else buf.astype(dtype)


def _float_to_int(buf, dtype):
    """The rule for float -> integer casts (README, "Rules"): out-of-range values saturate to the
    target's min/max, NaN gives 0 (JAX's rule; NumPy's own result is the C cast's undefined
    behaviour and differs by platform).  ``np.where`` dispatches to Dask/CuPy buffers."""
    info = np.iinfo(dtype)
    src = buf.dtype.type
    with np.errstate(invalid="ignore", over="ignore"):
        end = src(float(info.max) + 1.0)  # 2**k: exact in the float dtype, or inf
        start = src(info.min)  # 0 or -2**k: exact, or -inf
        hi = np.nextafter(end, src(0))  # the finite floats in [lo, hi] all cast into range
        lo = start if np.isfinite(start) else np.nextafter(start, src(0))
        out = np.where(buf != buf, src(0), buf.clip(lo, hi)).astype(dtype)
        if int(hi) != info.max:  # max itself has no float (e.g. int64): what reaches the end saturates
            out = np.where(buf >= end, dtype.type(info.max), out)
        if int(lo) != info.min:  # float16 to int32/int64: only -inf lies beyond lo
            out = np.where(buf < lo, dtype.type(info.min), out)
    return out


astype_p.impls["*"] = _astype_any


def astype(x, dtype, /, *, copy: bool = True, device=None) -> Array:
    """x converted to ``dtype`` (a copy unless ``copy=False`` and the dtype already matches)."""
    if not isinstance(x, Array):
        raise TypeError(f"astype: x must be an arrayx array, got {type(x).__name__}")
    dtype = _dtypes.as_dtype(dtype, "astype")
    if device is not None:
        x = x.to_device(device)
    if x.dtype == dtype and not copy:
        return x
    if x.dtype.kind == "c" and dtype.kind != "c":
        raise TypeError(
            f"astype: casting complex {x.dtype} to {dtype} would drop the imaginary part; "
            f"take real(x) or abs(x) first"
        )
    return astype_p.bind(x, dtype=dtype)


def can_cast(from_, to, /) -> bool:
    """True if ``from_`` (a dtype or an array) promotes to ``to`` without changing kind unsafely."""
    if isinstance(from_, Array):
        from_ = from_.dtype
    from_ = _dtypes.as_dtype(from_, "can_cast")
    to = _dtypes.as_dtype(to, "can_cast")
    # the standard's table only relates dtypes of one kind: bool, integers, floating (real < complex)
    groups = {"b": "b", "i": "i", "u": "i", "f": "f", "c": "f"}
    if groups[from_.kind] != groups[to.kind] or (from_.kind == "c" and to.kind == "f"):
        return False
    return _dtypes.PROMOTION[from_, to] == to


@dataclass(frozen=True)
class finfo_object:
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type, /) -> finfo_object:  # noqa: A002 - the standard's name
    """Machine limits of a floating-point dtype (or of an array's dtype)."""
    dt = type.dtype if isinstance(type, Array) else _dtypes.as_dtype(type, "finfo")
    if dt.kind not in "fc":
        raise TypeError(f"finfo: expected a floating-point dtype, got {dt}; use iinfo for integers")
    f = np.finfo(dt)
    return finfo_object(
        bits=int(f.bits), eps=float(f.eps), max=float(f.max), min=float(f.min),
        smallest_normal=float(f.smallest_normal), dtype=_dtypes.REAL_OF.get(dt, dt),
    )


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype (or of an array's dtype)."""
    dt = type.dtype if isinstance(type, Array) else _dtypes.as_dtype(type, "iinfo")
    if dt.kind not in "iu":
        raise TypeError(f"iinfo: expected an integer dtype, got {dt}; use finfo for floating point")
    i = np.iinfo(dt)
    return iinfo_object(bits=int(i.bits), max=int(i.max), min=int(i.min), dtype=dt)


_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
          "complex floating", "numeric")


def isdtype(dtype, kind) -> bool:
    """True if ``dtype`` is ``kind``: a dtype, a kind name, or a tuple of those."""
    if isinstance(dtype, Array):
        raise TypeError("isdtype: pass x.dtype, not the array x")
    dt = _dtypes.as_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; kinds are {_KINDS}")
        return dt in _dtypes.CATEGORIES[kind]
    return dt == _dtypes.as_dtype(kind, "isdtype")


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype the standard's promotion rules give for these arrays, dtypes and Python scalars."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array, dtype or scalar is required")
    dtypes = []
    scalars = []
    for a in arrays_and_dtypes:
        if isinstance(a, Array):
            dtypes.append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)):
            scalars.append(a)
        else:
            dtypes.append(_dtypes.as_dtype(a, "result_type"))
    if not dtypes:
        if len(scalars) == 1 or builtins.all(type(s) is type(scalars[0]) for s in scalars):
            return _dtypes.scalar_dtype(scalars[0])
        raise ValueError("result_type: needs at least one array or dtype to promote Python scalars against")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _dtypes.PROMOTION[out, d]
    for s in scalars:
        out = _dtypes.scalar_result_dtype(out, s)
    return out
