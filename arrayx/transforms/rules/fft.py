"""Rules for the Fourier transforms (``arrayx/api/fft.py``): all of them are linear.

The DFT matrix is symmetric, so ``fft``/``ifft`` (and their n-dimensional forms)
transpose to themselves, followed by undoing the padding or truncation to ``n``.
The real transforms follow JAX's convention for complex transposes (real-to-complex
transposes take the real part):

- rfft = keep the first n//2+1 terms of fft(x): transpose = real(fft(zero-padded ct));
- irfft(X)[t] = Re(sum_k w_k/n X_k e^{2 pi i k t/n}) with w_k = 1 for the zero and
  Nyquist terms, 2 otherwise: transpose = conj(rfft(ct)) * w / n (n -> the norm's scale);
- hfft(x) = irfft(conj(x)) and ihfft(x) = conj(rfft(x)) with the swapped norm;
- fftshift and ifftshift are each other's transposes.
"""
from __future__ import annotations

import math

from arrayx import api as ax
from arrayx.api import _dtypes
from arrayx.api import fft as ff
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import defabstract, deflinear

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}



def _resize(a, axis: int, length: int):
    """``a`` truncated or zero-padded along ``axis`` to ``length`` (undoing fft's ``n``)."""
    n = a.shape[axis]
    if n == length:
        return a
    head = (slice(None),) * axis
    if n > length:
        return a[head + (slice(0, length),)]
    pad_shape = list(a.shape)
    pad_shape[axis] = length - n
    return ax.concat([a, ax.zeros(tuple(pad_shape), dtype=a.dtype, device=a.device)], axis=axis)


# -- complex-to-complex ----------------------------------------------------------------------------


def _fft_transpose(prim):
    def transpose(ct, x, *, n, axis, norm):
        return (_resize(prim.bind(ct, n=n, axis=axis, norm=norm), axis, x.shape[axis]),)

    return transpose


def _fftn_transpose(prim):
    def transpose(ct, x, *, s, axes, norm):
        out = prim.bind(ct, s=s, axes=axes, norm=norm)
        for a in axes:
            out = _resize(out, a, x.shape[a])
        return (out,)

    return transpose


deflinear(ff.fft_p, _fft_transpose(ff.fft_p))
deflinear(ff.ifft_p, _fft_transpose(ff.ifft_p))
deflinear(ff.fftn_p, _fftn_transpose(ff.fftn_p))
deflinear(ff.ifftn_p, _fftn_transpose(ff.ifftn_p))


# -- real transforms ---------------------------------------------------------------------------------


def _rfft_t(ct, length, *, n, axis, norm):
    """Transpose of rfft(x, n) for an x of ``length`` along ``axis``."""
    # the n//2+1 kept terms, zero-padded to n by fft's own n
    y = ff.fft_p.bind(ct, n=n, axis=axis, norm=norm)
    return _resize(ax.real(y), axis, length)


def _hermitian_weights(n, axis, ndim, dtype, device, scale):
    """w_k * scale along ``axis`` (1 for the zero and, for even n, the Nyquist term; 2 otherwise)."""
    m = n // 2 + 1
    w = [2.0 * scale] * m
    w[0] = scale
    if n % 2 == 0:
        w[-1] = scale
    shape = [1] * ndim
    shape[axis] = m
    return ax.reshape(ax.asarray(w, dtype=dtype, device=device), tuple(shape))


def _norm_scale(n, norm):
    return {"backward": 1.0 / n, "ortho": 1.0 / math.sqrt(n), "forward": 1.0}[norm]


def _irfft_t(ct, length, *, n, axis, norm):
    """Transpose of irfft(X, n) for an X of ``length`` along ``axis``."""
    spectrum = ff.rfft_p.bind(ct, n=n, axis=axis, norm="backward")
    real = ct.dtype
    weights = _hermitian_weights(n, axis, ct.ndim, real, ct.device, _norm_scale(n, norm))
    return _resize(ax.conj(spectrum) * weights, axis, length)


deflinear(ff.rfft_p, lambda ct, x, *, n, axis, norm: (_rfft_t(ct, x.shape[axis], n=n, axis=axis, norm=norm),))
deflinear(ff.irfft_p, lambda ct, x, *, n, axis, norm: (_irfft_t(ct, x.shape[axis], n=n, axis=axis, norm=norm),))
deflinear(ff.hfft_p, lambda ct, x, *, n, axis, norm: (
    ax.conj(_irfft_t(ct, x.shape[axis], n=n, axis=axis, norm=_SWAP[norm])),))
deflinear(ff.ihfft_p, lambda ct, x, *, n, axis, norm: (
    _rfft_t(ax.conj(ct), x.shape[axis], n=n, axis=axis, norm=_SWAP[norm]),))


def _rfftn_transpose(ct, x, *, s, axes, norm):
    # rfftn = complex transforms over axes[:-1] after an rfft over axes[-1]
    out = ct
    if len(axes) > 1:
        out = ff.fftn_p.bind(out, s=s[:-1], axes=axes[:-1], norm=norm)
        for a in axes[:-1]:
            out = _resize(out, a, x.shape[a])
    return (_rfft_t(out, x.shape[axes[-1]], n=s[-1], axis=axes[-1], norm=norm),)


def _irfftn_transpose(ct, x, *, s, axes, norm):
    # irfftn = irfft over axes[-1] after inverse complex transforms over axes[:-1]
    last = axes[-1]
    out = _irfft_t(ct, x.shape[last], n=s[-1], axis=last, norm=norm)
    if len(axes) > 1:
        out = ff.ifftn_p.bind(out, s=s[:-1], axes=axes[:-1], norm=norm)
        for a in axes[:-1]:
            out = _resize(out, a, x.shape[a])
    return (out,)


deflinear(ff.rfftn_p, _rfftn_transpose)
deflinear(ff.irfftn_p, _irfftn_transpose)

deflinear(ff.fftshift_p, lambda ct, x, *, axes: (ff.ifftshift_p.bind(ct, axes=axes),))
deflinear(ff.ifftshift_p, lambda ct, x, *, axes: (ff.fftshift_p.bind(ct, axes=axes),))

# -- abstract evaluation ---------------------------------------------------------------------------------


def _complex_of(dtype):
    return _dtypes.COMPLEX_OF.get(dtype, dtype)


def _real_of(dtype):
    return _dtypes.REAL_OF.get(dtype, dtype)


def _resized(x, axes, lengths):
    shape = list(x.shape)
    for a, n in zip(axes, lengths):
        shape[a] = n
    return tuple(shape)


def _one_dim_abstract(out_length, out_dtype):
    def rule(x, *, n, axis, norm):
        return ShapeDtypeStruct(_resized(x, (axis,), (out_length(n),)), out_dtype(x.dtype))
    return rule


def _n_dim_abstract(half_last, out_dtype):
    def rule(x, *, s, axes, norm):
        lengths = list(s)
        if half_last and lengths:
            lengths[-1] = lengths[-1] // 2 + 1
        return ShapeDtypeStruct(_resized(x, axes, lengths), out_dtype(x.dtype))
    return rule


def _same_length(n):
    return n


def _half_length(n):
    return n // 2 + 1


defabstract(ff.fft_p, _one_dim_abstract(_same_length, _complex_of))
defabstract(ff.ifft_p, _one_dim_abstract(_same_length, _complex_of))
defabstract(ff.rfft_p, _one_dim_abstract(_half_length, _complex_of))
defabstract(ff.irfft_p, _one_dim_abstract(_same_length, _real_of))
defabstract(ff.hfft_p, _one_dim_abstract(_same_length, _real_of))
defabstract(ff.ihfft_p, _one_dim_abstract(_half_length, _complex_of))
defabstract(ff.fftn_p, _n_dim_abstract(False, _complex_of))
defabstract(ff.ifftn_p, _n_dim_abstract(False, _complex_of))
defabstract(ff.rfftn_p, _n_dim_abstract(True, _complex_of))
defabstract(ff.irfftn_p, _n_dim_abstract(False, _real_of))
defabstract(ff.fftshift_p, lambda x, *, axes: ShapeDtypeStruct(tuple(x.shape), x.dtype))
defabstract(ff.ifftshift_p, lambda x, *, axes: ShapeDtypeStruct(tuple(x.shape), x.dtype))


# -- batching: every transform acts on named axes, which move by one behind the batch axis ---------

from arrayx.transforms.rules._batch import defaxes  # noqa: E402

for _prim in (ff.fft_p, ff.ifft_p, ff.rfft_p, ff.irfft_p, ff.hfft_p, ff.ihfft_p):
    defaxes(_prim, "axis")
for _prim in (ff.fftn_p, ff.ifftn_p, ff.rfftn_p, ff.irfftn_p, ff.fftshift_p, ff.ifftshift_p):
    defaxes(_prim, "axes")
