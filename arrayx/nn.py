"""Neural-network functions with JAX's signatures (``jax.nn`` / ``jax.scipy.special``), on every executor.

Everything but ``erf``/``erfc``/``erfinv`` is composed of the standard's functions, so grad, vmap
and jit come from their rules.  Each formula is the numerically careful one: no intermediate
overflows (``sigmoid(-800)`` is 0 without a warning, ``logsumexp`` of ±1e4 is finite) and the
derivatives are finite wherever the function is smooth.

``erf``, ``erfc`` and ``erfinv`` are primitives (the standard has no error function): each
executor's table calls its own special-function library (``arrayx/executors/<name>/nn.py``: SciPy on
NumPy/Numba buffers, blockwise on Dask, ``jax.scipy.special``, ``cupyx.scipy.special``); without
SciPy, NumPy buffers use the C library's ``erf``/``erfc`` element by element (slow, exact) and
Newton steps on it for ``erfinv``.  Any other executor runs their compositions below.

(This module is ``arrayx.nn``; there is deliberately no ``arrayx.special``: SciPy's array-API
dispatch would route its own ``special`` functions to an attribute of that name.)
"""
from __future__ import annotations

import math

from arrayx import api as ax
from arrayx.api._checks import array_arg, normalize_axes
from arrayx.api._device_dtypes import for_array
from arrayx.api._dtypes import kind_of
from arrayx.core.primitives import Primitive
from arrayx.core.tracers import ShapeDtypeStruct, is_weak
from arrayx.transforms.custom import stop_gradient

__all__ = [
    "logsumexp", "sigmoid", "expit", "log_sigmoid", "softmax", "log_softmax", "softplus", "relu",
    "gelu", "silu", "swish", "elu", "one_hot", "erf", "erfc", "erfinv",
]


def _inexact(fname: str, x):
    """``x`` as a floating array: integers and bools become the default float, as JAX promotes them."""
    x = array_arg(fname, x)
    if x.dtype.kind == "c":
        raise TypeError(f"{fname}: complex input ({x.dtype}) is not supported; pass real(x) or abs(x)")
    # the default float of x's device (float32 on a TPU); bfloat16's NumPy kind is "V"
    return x if kind_of(x.dtype) == "f" else ax.astype(x, for_array(x).real)


# -- the error function: primitives (executor libraries) --------------------------------------------

erf_p = Primitive("erf")
erfc_p = Primitive("erfc")
erfinv_p = Primitive("erfinv")

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0
_SQRT_PI = math.sqrt(math.pi)


for _prim in (erf_p, erfc_p, erfinv_p):
    _prim.abstract_eval = lambda x: ShapeDtypeStruct._trusted(tuple(x.shape), x.dtype, is_weak(x))


# -- the same functions in arrayx operations: what an executor without its own gets (a third party's) -----

def _erf_series(x):
    """erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1*3*...*(2n+1)): positive terms only (no
    cancellation), to double precision for |x| <= 6 in 160 terms; erf is +-1 in double beyond."""
    x = ax.clip(x, -6.0, 6.0)
    x2 = x * x
    term = x
    total = x
    for n in range(1, 160):
        term = term * (2.0 * x2) / (2 * n + 1)
        total = total + term
    return _TWO_OVER_SQRT_PI * ax.exp(-x2) * total


def _erfc_fraction(x):
    """erfc(x) for x >= 2: exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), 80 levels
    evaluated from the bottom (relative precision, where 1 - erf would lose it)."""
    tail = x
    for k in range(80, 0, -1):
        tail = x + (k / 2.0) / tail
    return ax.exp(-x * x) / (_SQRT_PI * tail)


def _erf_composed(x):
    return ax.where(x >= 2.0, 1.0 - _erfc_fraction(ax.maximum(x, 2.0)),
                    ax.where(x <= -2.0, _erfc_fraction(ax.maximum(-x, 2.0)) - 1.0, _erf_series(x)))


def _erfc_composed(x):
    return ax.where(x >= 2.0, _erfc_fraction(ax.maximum(x, 2.0)), 1.0 - _erf_composed(x))


def _erfinv_composed(y):
    """Newton steps on :func:`_erf_composed` from a log-based first guess."""
    inside = ax.abs(y) < 1
    yc = ax.where(inside, y, 0.0)
    w = -ax.log((1.0 - yc) * (1.0 + yc))
    t = 4.33 - w / 2  # Winitzki's guess: 2 / (pi * 0.147) + log(1 - y^2) / 2
    x = ax.sign(yc) * ax.sqrt(ax.maximum(ax.sqrt(t * t + w / 0.147) - t, 0.0))
    for _ in range(6):
        x = x - (_erf_composed(x) - yc) / (_TWO_OVER_SQRT_PI * ax.exp(-x * x))
    x = ax.where(y == 1, ax.inf, ax.where(y == -1, -ax.inf, x))
    return ax.where(ax.abs(y) > 1, ax.nan, x)


erf_p.composition = _erf_composed
erfc_p.composition = _erfc_composed
erfinv_p.composition = _erfinv_composed


def _define_special_rules():
    from arrayx.transforms.rules import defjvp_coef
    from arrayx.transforms.rules._batch import defvectorized

    defjvp_coef(erf_p, lambda y, x: _TWO_OVER_SQRT_PI * ax.exp(-(x * x)))
    defjvp_coef(erfc_p, lambda y, x: -_TWO_OVER_SQRT_PI * ax.exp(-(x * x)))
    defjvp_coef(erfinv_p, lambda y, x: _SQRT_PI_OVER_TWO * ax.exp(y * y))
    defvectorized(erf_p, erfc_p, erfinv_p)


def erf(x, /):
    """The error function (``jax.scipy.special.erf``)."""
    return erf_p.bind(_inexact("erf", x))


def erfc(x, /):
    """``1 - erf(x)``, accurate where erf(x) is close to 1 (``jax.scipy.special.erfc``)."""
    return erfc_p.bind(_inexact("erfc", x))


def erfinv(x, /):
    """The inverse of ``erf`` on (-1, 1): ±inf at ±1, NaN outside (``jax.scipy.special.erfinv``)."""
    return erfinv_p.bind(_inexact("erfinv", x))


# -- reductions -----------------------------------------------------------------------------------


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """``log(sum(b * exp(a)))`` over ``axis`` without overflow (``jax.nn.logsumexp``).

    With ``return_sign`` the result is ``(log|s|, sign(s))``; otherwise a negative sum gives NaN.
    An empty reduction gives -inf.
    """
    a = _inexact("logsumexp", a)
    if b is not None:
        if not isinstance(b, ax.Array):
            b = ax.asarray(b, dtype=a.dtype, device=a.device)
        b = _inexact("logsumexp", b)
        dt = ax.result_type(a, b)
        a, b = ax.broadcast_arrays(ax.astype(a, dt), ax.astype(b, dt))
    axes = normalize_axes("logsumexp", axis, a.ndim)
    reduced = a.shape if axes is None else tuple(a.shape[i] for i in axes)
    if math.prod(reduced) == 0:
        shape = _reduced_shape(a.shape, axes, keepdims)
        out = ax.full(shape, -math.inf, dtype=a.dtype, device=a.device)
        return (out, ax.zeros(shape, dtype=a.dtype, device=a.device)) if return_sign else out
    # shift by the (finite) maximum: the largest term becomes exp(0) = 1; its derivative cancels
    amax = stop_gradient(ax.max(a, axis=axes, keepdims=True))
    amax = ax.where(ax.isfinite(amax), amax, ax.zeros_like(amax))
    terms = ax.exp(a - amax)
    if b is not None:
        terms = terms * b
    total = ax.sum(terms, axis=axes, keepdims=keepdims)
    shift = amax if keepdims else ax.reshape(amax, total.shape)
    if return_sign:
        sign = ax.sign(stop_gradient(total))
        return ax.log(ax.abs(total)) + shift, sign
    if b is None:
        return ax.log(total) + shift
    return ax.where(total < 0, ax.asarray(math.nan, dtype=a.dtype, device=a.device), ax.log(ax.abs(total)) + shift)


def _reduced_shape(shape, axes, keepdims):
    axes = range(len(shape)) if axes is None else axes
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _shifted_exp(fname, x, axis, where):
    """``(x - max(x), exp(x - max(x)), axes)``: the max is a constant (stop_gradient), masked entries
    are left out of it and are 0 in the exponential."""
    if where is None:
        top = ax.max(x, axis=axis, keepdims=True)
    else:
        top = ax.max(ax.where(where, x, -math.inf), axis=axis, keepdims=True)
    shifted = x - stop_gradient(top)
    e = ax.exp(shifted)
    if where is not None:
        e = ax.where(where, e, 0.0)
    return shifted, e, normalize_axes(fname, axis, x.ndim)


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (``jax.nn.softmax``); ``where`` masks entries out (0 there)."""
    _, e, axes = _shifted_exp("softmax", _inexact("softmax", x), axis, where)
    return e / ax.sum(e, axis=axes, keepdims=True)


def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x)`` along ``axis`` (``jax.nn.log_softmax``); ``where`` masks entries out (-inf there)."""
    shifted, e, axes = _shifted_exp("log_softmax", _inexact("log_softmax", x), axis, where)
    out = shifted - ax.log(ax.sum(e, axis=axes, keepdims=True))
    return out if where is None else ax.where(where, out, -math.inf)


# -- activations ---------------------------------------------------------------------------------------


def sigmoid(x, /):
    """``1 / (1 + exp(-x))``, computed from ``exp(-|x|)`` so nothing overflows (``jax.nn.sigmoid``)."""
    x = _inexact("sigmoid", x)
    z = ax.exp(-ax.abs(x))
    return ax.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))


expit = sigmoid


def softplus(x, /):
    """``log(1 + exp(x))`` as ``max(x, 0) + log1p(exp(-|x|))`` (``jax.nn.softplus``)."""
    x = _inexact("softplus", x)
    return ax.maximum(x, 0.0) + ax.log1p(ax.exp(-ax.abs(x)))


def log_sigmoid(x, /):
    """``log(sigmoid(x)) = -softplus(-x)`` (``jax.nn.log_sigmoid``)."""
    return -softplus(-_inexact("log_sigmoid", x))


def relu(x, /):
    """``max(x, 0)`` with derivative 0 at 0, as ``jax.nn.relu``; integer input stays integer."""
    x = array_arg("relu", x)
    return ax.where(x > 0, x, 0)


def silu(x, /):
    """``x * sigmoid(x)`` (``jax.nn.silu``, also ``swish``)."""
    x = _inexact("silu", x)
    return x * sigmoid(x)


swish = silu


def gelu(x, /, approximate: bool = True):
    """The Gaussian error linear unit: the tanh approximation by default, ``x * Phi(x)`` when
    ``approximate=False`` (``jax.nn.gelu``)."""
    x = _inexact("gelu", x)
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + ax.tanh(c * (x + 0.044715 * (x * x * x))))
    return x * (erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5


def elu(x, /, alpha: float = 1.0):
    """``x`` for x > 0, ``alpha * expm1(x)`` otherwise (``jax.nn.elu``); expm1 never sees a positive x."""
    x = _inexact("elu", x)
    safe = ax.where(x > 0, 0.0, x)
    return ax.where(x > 0, x, alpha * ax.expm1(safe))


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """``x[..., None] == arange(num_classes)`` as ``dtype`` (default float), the class axis at ``axis``;
    out-of-range classes give all zeros (``jax.nn.one_hot``)."""
    x = array_arg("one_hot", x)
    if x.dtype.kind not in "iub":
        raise TypeError(f"one_hot: x must hold integer class indices, got {x.dtype}; cast with astype(x, int64)")
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be a non-negative Python int, got {num_classes!r}")
    dtype = for_array(x).real if dtype is None else dtype  # the device's default float, as jax.nn's
    out_ndim = x.ndim + 1
    if not -out_ndim <= axis < out_ndim:
        raise ValueError(f"one_hot: axis {axis} is out of range for a result of {out_ndim} dimension(s)")
    axis %= out_ndim
    if x.dtype == ax.bool or num_classes - 1 > ax.iinfo(x.dtype).max:
        x = ax.astype(x, for_array(x).integral)  # the device's default int (int32 on a TPU, no emulated int64)
    classes = ax.arange(num_classes, dtype=x.dtype, device=x.device)
    shape = [1] * out_ndim
    shape[axis] = num_classes
    hot = ax.expand_dims(x, axis=axis) == ax.reshape(classes, tuple(shape))
    return ax.astype(hot, dtype)


_define_special_rules()
