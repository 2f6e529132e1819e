"""Discrete Fourier transforms: the standard's ``fft`` extension (``arrayx.fft``).

Each transform checks its arguments, resolves the defaults (``n``, ``s`` and
``axes`` become concrete ints, so a primitive's params say exactly what is
computed), casts real input to the complex dtype of its precision where the
transform needs complex input, and binds the primitive of its name.  Results keep
the input's precision (float32 -> complex64 and back): arrayx decides the result
dtype and casts when an executor returns a wider one.

``fftfreq`` and ``rfftfreq`` are creation functions (no array input): they run on
the executor chosen by ``device=`` or the selection rules.
"""
from __future__ import annotations

import numbers

import numpy as np

from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import array_arg, cast, float_arg, int_arg, normalize_axis
from arrayx.core.primitives import Primitive

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_CAT = _dtypes.CATEGORIES
_NORMS = ("backward", "ortho", "forward")

fft_p = Primitive("fft", impl_name="fft.fft")
ifft_p = Primitive("ifft", impl_name="fft.ifft")
fftn_p = Primitive("fftn", impl_name="fft.fftn")
ifftn_p = Primitive("ifftn", impl_name="fft.ifftn")
rfft_p = Primitive("rfft", impl_name="fft.rfft")
irfft_p = Primitive("irfft", impl_name="fft.irfft")
rfftn_p = Primitive("rfftn", impl_name="fft.rfftn")
irfftn_p = Primitive("irfftn", impl_name="fft.irfftn")
hfft_p = Primitive("hfft", impl_name="fft.hfft")
ihfft_p = Primitive("ihfft", impl_name="fft.ihfft")
fftshift_p = Primitive("fftshift", impl_name="fft.fftshift")
ifftshift_p = Primitive("ifftshift", impl_name="fft.ifftshift")


# -- argument checks ------------------------------------------------------------------


def _input(fname: str, x, kind: str) -> Array:
    """``x`` checked for ``kind`` ('complex': any floating dtype, real ones cast; 'real': real floating)."""
    x = array_arg(fname, x)
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension, got a 0-d array")
    if x.dtype.kind in "biu":  # the default mode computes it in float64 (NumPy 2); strict mode refuses it
        x = float_arg(fname, x, "real floating" if kind == "real" else "floating-point")
    dt = x.dtype
    if kind == "real":
        if dt not in _CAT["real floating"]:
            hint = "; take real(x) or use fft for complex input" if dt.kind == "c" else "; convert with astype first"
            raise TypeError(f"{fname}: x must have a real floating-point dtype, got {dt}{hint}")
        return x
    if dt not in _CAT["floating-point"]:
        raise TypeError(
            f"{fname}: x must have a floating-point dtype (complex64/complex128, or float32/float64 "
            f"which are cast to complex), got {dt}; convert with astype first"
        )
    return cast(x, _dtypes.COMPLEX_OF.get(dt, dt))


def _norm(fname: str, norm) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"{fname}: norm must be one of {_NORMS}, got {norm!r}")
    return norm


def _length(fname: str, n, name: str = "n") -> int:
    n = int_arg(fname, n, name)
    if n < 1:
        raise ValueError(f"{fname}: {name} must be a positive number of points, got {n}")
    return n


def _axes_arg(fname: str, axes, ndim: int) -> tuple:
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (axes,)
    if not isinstance(axes, (tuple, list)):
        raise TypeError(f"{fname}: axes must be a sequence of ints, got {type(axes).__name__}")
    return tuple(normalize_axis(fname, a, ndim, "axes") for a in axes)


def _s_axes(fname: str, x: Array, s, axes, *, last_default=None) -> tuple:
    """Concrete ``(s, axes)``: ``s`` defaults to the input sizes (``last_default`` for the last axis)."""
    if axes is None:
        if s is not None:
            raise ValueError(f"{fname}: s was given without axes; pass axes too (the standard requires both)")
        axes = tuple(range(x.ndim))
    else:
        axes = _axes_arg(fname, axes, x.ndim)
    default = [x.shape[a] for a in axes]
    if axes and last_default is not None:
        default[-1] = last_default(default[-1])
    if s is None:
        s = default
    else:
        if not isinstance(s, (tuple, list)):
            raise TypeError(f"{fname}: s must be a sequence of ints, got {type(s).__name__}")
        if len(s) != len(axes):
            raise ValueError(f"{fname}: s has {len(s)} entries but axes has {len(axes)}: {tuple(s)} vs {axes}")
        s = [d if _is_minus_one(v) else v for v, d in zip(s, default)]
    return tuple(_length(fname, v, "s entries") for v in s), axes


def _is_minus_one(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, np.integer)) and v == -1


def _hermitian_length(m: int) -> int:
    return 2 * (m - 1)


def _explicit_zeros(x: Array, axes: tuple) -> Array:
    """``x`` with each empty transform axis given one zero (the padding ``n``/``s`` asks for anyway).

    NumPy's pocketfft pads an empty Hermitian axis with uninitialised memory; one explicit
    zero makes every executor transform zeros (and give zeros).
    """
    if x.size == 0 and all(d for i, d in enumerate(x.shape) if i not in axes):
        from arrayx.api.creation import zeros

        shape = tuple(1 if i in axes and d == 0 else d for i, d in enumerate(x.shape))
        return zeros(shape, dtype=x.dtype, device=x.device)
    return x


# -- one-dimensional transforms ---------------------------------------------------------


def _one_dim(fname, prim, x, n, axis, norm, kind, out_kind, default_n=None):
    x = _input(fname, x, kind)
    axis = normalize_axis(fname, axis, x.ndim)
    if n is None:
        n = x.shape[axis] if default_n is None else default_n(x.shape[axis])
    n = _length(fname, n)
    x = _explicit_zeros(x, (axis,))
    out = prim.bind(x, n=n, axis=axis, norm=_norm(fname, norm))
    real = _dtypes.REAL_OF.get(x.dtype, x.dtype)
    return cast(out, real if out_kind == "real" else _dtypes.COMPLEX_OF.get(real))


def fft(x, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """One-dimensional discrete Fourier transform along ``axis``."""
    return _one_dim("fft", fft_p, x, n, axis, norm, "complex", "complex")


def ifft(x, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """One-dimensional inverse discrete Fourier transform along ``axis``."""
    return _one_dim("ifft", ifft_p, x, n, axis, norm, "complex", "complex")


def rfft(x, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """Transform of real input along ``axis``: the n//2 + 1 non-negative frequency terms."""
    return _one_dim("rfft", rfft_p, x, n, axis, norm, "real", "complex")


def irfft(x, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """Inverse of ``rfft``: a real signal of length ``n`` (default 2*(m-1)) along ``axis``."""
    return _one_dim("irfft", irfft_p, x, n, axis, norm, "complex", "real", _hermitian_length)


def hfft(x, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """Transform of a Hermitian-symmetric signal given by its first half; real output of length ``n``."""
    return _one_dim("hfft", hfft_p, x, n, axis, norm, "complex", "real", _hermitian_length)


def ihfft(x, /, *, n=None, axis: int = -1, norm: str = "backward") -> Array:
    """Inverse of ``hfft`` for real input: n//2 + 1 complex terms along ``axis``."""
    return _one_dim("ihfft", ihfft_p, x, n, axis, norm, "real", "complex")


# -- n-dimensional transforms -------------------------------------------------------------


def _n_dim(fname, prim, x, s, axes, norm, kind, out_kind, last_default=None):
    x = _input(fname, x, kind)
    s, axes = _s_axes(fname, x, s, axes, last_default=last_default)
    if not axes and prim in (rfftn_p, irfftn_p):
        raise ValueError(f"{fname}: needs at least one axis to transform, got axes=()")
    if not axes:  # no axis to transform: a copy of the (complex) input (NumPy's fftn returns the input itself)
        from arrayx.api.data_types import astype

        return astype(x, x.dtype, copy=True)
    x = _explicit_zeros(x, axes)
    out = prim.bind(x, s=s, axes=axes, norm=_norm(fname, norm))
    real = _dtypes.REAL_OF.get(x.dtype, x.dtype)
    return cast(out, real if out_kind == "real" else _dtypes.COMPLEX_OF.get(real))


def fftn(x, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """n-dimensional discrete Fourier transform over ``axes`` (default all) with sizes ``s``."""
    return _n_dim("fftn", fftn_p, x, s, axes, norm, "complex", "complex")


def ifftn(x, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """n-dimensional inverse discrete Fourier transform over ``axes`` with sizes ``s``."""
    return _n_dim("ifftn", ifftn_p, x, s, axes, norm, "complex", "complex")


def rfftn(x, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """n-dimensional transform of real input (the last axis keeps s[-1]//2 + 1 terms)."""
    return _n_dim("rfftn", rfftn_p, x, s, axes, norm, "real", "complex")


def irfftn(x, /, *, s=None, axes=None, norm: str = "backward") -> Array:
    """Inverse of ``rfftn``: real output with sizes ``s`` (last axis default 2*(m-1))."""
    return _n_dim("irfftn", irfftn_p, x, s, axes, norm, "complex", "real", _hermitian_length)


# -- frequencies and shifts ------------------------------------------------------------------


def _frequencies(fname: str, n, d, dtype, device, host_fn) -> Array:
    from arrayx.api.creation import asarray

    n = _length(fname, n)
    if isinstance(d, bool) or not isinstance(d, numbers.Real):
        raise TypeError(f"{fname}: d must be a float, got {type(d).__name__}")
    if d == 0:
        raise ValueError(f"{fname}: the sample spacing d must not be zero")
    if dtype is None:
        from arrayx.api._device_dtypes import for_request

        dt = for_request(device, fname)[2].real  # the default float of the device asked for
    else:
        dt = _dtypes.as_dtype(dtype, fname)
    if dt not in _CAT["real floating"]:
        raise TypeError(f"{fname}: dtype must be a real floating-point dtype, got {dt}")
    return asarray(host_fn(n, float(d)).astype(dt), device=device)


def fftfreq(n, /, *, d: float = 1.0, dtype=None, device=None) -> Array:
    """Sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    return _frequencies("fftfreq", n, d, dtype, device, np.fft.fftfreq)


def rfftfreq(n, /, *, d: float = 1.0, dtype=None, device=None) -> Array:
    """Non-negative sample frequencies of an ``n``-point ``rfft`` (n//2 + 1 of them)."""
    return _frequencies("rfftfreq", n, d, dtype, device, np.fft.rfftfreq)


def _shift(fname, prim, x, axes):
    x = array_arg(fname, x)
    axes = tuple(range(x.ndim)) if axes is None else _axes_arg(fname, axes, x.ndim)
    if not axes:  # shifting no axis (every axis of a 0-d array) is the identity: a new array, as always
        from arrayx.api.data_types import astype

        return astype(x, x.dtype, copy=True)
    return prim.bind(x, axes=axes)


def fftshift(x, /, *, axes=None) -> Array:
    """Move the zero-frequency term to the centre of ``axes`` (default all)."""
    return _shift("fftshift", fftshift_p, x, axes)


def ifftshift(x, /, *, axes=None) -> Array:
    """Inverse of ``fftshift`` (differs by one sample for odd lengths)."""
    return _shift("ifftshift", ifftshift_p, x, axes)
