"""Data type functions (the standard's "Data Type Functions" category)."""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np

from arrayx.api import _device_dtypes, _dtypes
from arrayx.api._array import Array
from arrayx.core.primitives import Primitive
from arrayx.core.executor import GENERIC

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]

astype_p = Primitive("astype")


def _astype_any(buf, *, dtype, copy=True):
    if _dtypes.kind_of(buf.dtype) == "f" and dtype.kind in "iu":
        return _float_to_int(buf, dtype)
    return buf.astype(dtype, copy=copy) if copy is not True else buf.astype(dtype)


def _float_to_int(buf, dtype):
    """The rule for float -> integer casts: NumPy's results on x86-64, on every executor and platform.

    Values whose truncation toward zero fits the target convert exactly.  For the rest (NaN, +-inf,
    out of range), C leaves the cast undefined and NumPy's answer differs by platform; arrayx
    gives x86-64's, which clients rely on (``nan -> int64`` is INT64_MIN, pandas' and xarray's NaT):

    - int32, int64: the "integer indefinite" value, the target's minimum;
    - int8, int16, uint8, uint16: the int32 result wrapped to the width (C casts through int:
      ``nan -> 0``, ``300.0 -> int8 44``, ``-1.0 -> uint8 255``);
    - uint32, uint64: exact in [0, 2**bits); otherwise the int64 result wrapped (``-1.0 -> 2**bits - 1``;
      NaN, +-inf and larger values give 0 for uint32 and 2**63 for uint64, where NumPy's own result
      depends on the compiler).

    Written with the buffer's namespace, so NumPy, Numba, Dask, CuPy and JAX buffers (eager or under
    ``jax.jit``) all follow it.
    """
    from arrayx.api.manipulation import buffer_namespace

    xp = buffer_namespace(buf)
    if dtype.itemsize < 4:
        return xp.astype(_cast_or_indefinite(xp, buf, _dtypes.int32), dtype)  # int -> int wraps everywhere
    if dtype.kind == "i":
        return _cast_or_indefinite(xp, buf, dtype)
    wrapped = xp.astype(_cast_or_indefinite(xp, buf, _dtypes.int64), dtype)
    if dtype == _dtypes.uint32:
        return wrapped
    src = buf.dtype.type  # uint64: [2**63, 2**64) has no int64; v - 2**63 is exact there
    top = (buf >= src(2.0 ** 63)) & (buf < src(2.0 ** 64))
    high = xp.astype(xp.astype(xp.where(top, buf - src(2.0 ** 63), xp.zeros_like(buf)), _dtypes.int64), dtype)
    return xp.where(top, high + dtype.type(2 ** 63), wrapped)


def _cast_or_indefinite(xp, buf, dtype):
    """``buf`` cast to int32 or int64 where its truncation fits, else the dtype's minimum."""
    info = np.iinfo(dtype)
    src = buf.dtype.type
    t = xp.trunc(buf)
    top = finfo(buf.dtype).max  # float16's is 65504: every finite value fits int32 and int64
    if -float(info.min) > top:
        fits = (t >= src(-top)) & (t <= src(top))  # the finite values; NaN fails both
    else:
        fits = (t >= src(info.min)) & (t < src(-float(info.min)))  # both powers of two, exact; NaN fails both
    out = xp.astype(xp.where(fits, buf, xp.zeros_like(buf)), dtype)
    return xp.where(fits, out, xp.full_like(out, info.min))


GENERIC[astype_p.name] = _astype_any


def astype(x, dtype, /, *, copy: bool = True, device=None) -> Array:
    """x converted to ``dtype`` (a copy unless ``copy=False`` and the dtype already matches)."""
    if not isinstance(x, Array):  # a Python scalar or NumPy array in the default mode, as jax.numpy
        from arrayx.api._checks import array_arg

        x = array_arg("astype", x)
    dtype = _dtypes.as_dtype(dtype, "astype")
    if device is not None:
        x = x.to_device(device)
    if x.dtype == dtype and not copy:
        return x
    if dtype in _device_dtypes.WIDE and dtype != x.dtype:  # 64-bit asked for on a TPU: its setting decides
        dd = _device_dtypes.for_array(x)
        if not dd.native64:
            _device_dtypes.requested(dtype, dd, x._ex, x.device, "astype")
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
    kind_from, kind_to = _dtypes.kind_of(from_), _dtypes.kind_of(to)
    if groups[kind_from] != groups[kind_to] or (kind_from == "c" and kind_to == "f"):
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
    out = _FINFO.get(dt)  # the objects are frozen: one per dtype (clients ask per call: 1.3 -> ~0.4 us)
    if out is None:
        if _dtypes.kind_of(dt) not in "fc":
            raise TypeError(f"finfo: expected a floating-point dtype, got {dt}; use iinfo for integers")
        f = np.finfo(dt) if dt.kind != "V" else _ml_finfo(dt)  # bfloat16: NumPy's finfo lacks it
        out = _FINFO[dt] = finfo_object(
            bits=int(f.bits), eps=float(f.eps), max=float(f.max), min=float(f.min),
            smallest_normal=float(f.smallest_normal), dtype=_dtypes.REAL_OF.get(dt, dt),
        )
    return out


_FINFO: dict = {}  # dtype -> its finfo_object


def _ml_finfo(dt):
    import ml_dtypes  # loaded already: dt is its bfloat16

    return ml_dtypes.finfo(dt)


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
    from arrayx.api._checks import promote_dtypes

    out = promote_dtypes("result_type", dtypes)  # strict mode: the standard's pairs only
    for s in scalars:
        out = _dtypes.scalar_result_dtype(out, s)
    return out
