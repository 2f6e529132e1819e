"""Floating-point building blocks of ``arrayx.random``'s samplers, in arrayx operations.

An exactly rounded fused multiply-add (XLA fuses ``u * span + min``), and log1p, erf and
erf^-1 evaluated the way XLA evaluates them, so that samples match ``jax.random``.
"""
from __future__ import annotations

import math
from typing import Sequence

import arrayx as xp
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.transforms.core import current_trace

# XLA fuses ``floats * span + minval`` into one fused multiply-add.  The standard has no fma,
# so it is emulated exactly with error-free transformations and rounding to odd (Boldo and
# Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding
# to odd", IEEE Trans. Computers 57(4), 2008).  Operands are arrays or Python floats.
_VELTKAMP = 134217729.0  # 2**27 + 1: splits a double into two halves of at most 26 bits


def _split_halves(x):
    t = x * _VELTKAMP
    high = t - (t - x)
    return high, x - high


def _two_product(a, b) -> tuple:
    """(p, e) with p = fl(a * b) and p + e == a * b exactly."""
    p = a * b
    ah, al = _split_halves(a)
    bh, bl = _split_halves(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a, b) -> tuple:
    """(s, e) with s = fl(a + b) and s + e == a + b exactly."""
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


def _add_round_to_odd(a, b) -> Array:
    """a + b rounded to odd: when inexact, the neighbour with an odd last significand bit."""
    s, e = _two_sum(a, b)
    magnitude = xp.abs(s)
    ulp = xp.nextafter(magnitude, math.inf) - magnitude
    even = xp.remainder(magnitude / ulp, 2.0) == 0
    return xp.where((e != 0) & even, xp.nextafter(s, xp.copysign(math.inf, e)), s)


def _fma(a: Array, b, c) -> Array:
    """a * b + c with a single rounding, in a's float dtype."""
    if a.dtype == _dtypes.float32:  # exact product in float64, round to odd, then to float32
        wide = [xp.astype(v, _dtypes.float64) if isinstance(v, Array) else v for v in (a, b, c)]
        return xp.astype(_add_round_to_odd(wide[0] * wide[1], wide[2]), _dtypes.float32)
    p, e = _two_product(a, b)
    high, low = _two_sum(c, p)
    return high + _add_round_to_odd(low, e)


# XLA's float64 log1p: for |x| < sqrt(2) - 1 a rational approximation (Cephes' log1p
# coefficients), else log(1 + x).  Following it keeps normal/exponential/gumbel within an
# ulp of jax.random; NumPy's log1p differs from it by up to ~100 ulp near x = -0.4.
_LOG1P_P = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
            2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
            2.0039553499201281259648e1)
_LOG1P_Q = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
            3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)


def _horner(coefficients: Sequence[float], x: Array) -> Array:
    p = x * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        p = p * x + c
    return p


def _log1p(x: Array) -> Array:
    """log(1 + x) as XLA computes it (float64), the executor's log1p otherwise."""
    if x.dtype != _dtypes.float64:
        return xp.log1p(x)
    z = x * x
    small = x + (x * z * (_horner(_LOG1P_P, x) / _horner(_LOG1P_Q, x)) - 0.5 * z)
    return xp.where(xp.abs(x) < 0.41421356237309504880, small, xp.log(x + 1.0))


def _erf_inv(x: Array) -> Array:
    """Inverse error function on [-1, 1] (Giles' approximation, evaluated as XLA does)."""
    w = -_log1p(-(x * x))
    (bound, shift, coefficients), *tails = _ERFINV64 if x.dtype == _dtypes.float64 else _ERFINV32
    p = _horner(coefficients, w - shift)
    far = w >= bound  # the tails: |x| > 0.9966 (float32) or 0.9981 (float64), and NaN-free
    if _concrete(w):
        # Eager: evaluate the tail polynomials only where they apply (same values, a fraction of the work).
        where_far = xp.nonzero(xp.reshape(far, (-1,)))[0]
        if where_far.shape[0]:
            flat = xp.reshape(p, (-1,))
            tail = _erf_inv_tails(xp.take(xp.reshape(w, (-1,)), where_far), tails)
            p = xp.reshape(flat.at[where_far].set(tail), p.shape)
    else:
        p = xp.where(far, _erf_inv_tails(w, tails), p)
    out = p * x
    return xp.where(xp.abs(x) == 1.0, xp.copysign(math.inf, x), out)


def _erf_inv_tails(w: Array, tails) -> Array:
    root_w = xp.sqrt(w)
    p = None
    for bound, shift, coefficients in reversed(tails):
        value = _horner(coefficients, root_w - shift)
        p = value if p is None else xp.where(w < bound, value, p)
    return p


def _concrete(x: Array) -> bool:
    """True outside transforms on an executor whose arrays know their shapes (data-dependent sizes are fine)."""
    return current_trace() is None and not x._ex.unknown_shapes


# Cephes' erf / erfc rational approximations (ndtr.c), used for truncated_normal's bounds.
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4)
_ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
           6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
_ERFC_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)


def _erf(x: Array) -> Array:
    """erf(x) in float64 arrayx operations (relative error ~1e-16)."""
    x = xp.clip(x, -30.0, 30.0)  # erf is +-1 to double precision beyond; keeps infinities out of the rationals
    a = xp.abs(x)
    z = x * x
    inner = x * _horner(_ERF_T, z) / _horner(_ERF_U, z)
    tail = xp.where(a < 8.0, _horner(_ERFC_P, a) / _horner(_ERFC_Q, a), _horner(_ERFC_R, a) / _horner(_ERFC_S, a))
    erfc = xp.exp(-z) * tail
    outer = xp.where(x < 0, erfc - 1.0, 1.0 - erfc)
    return xp.where(a < 1.0, inner, outer)


# Giles, "Approximating the erfinv function" (GPU Computing Gems Jade, 2011): polynomial
# coefficients, highest degree first.  XLA (hence jax.random) uses the same ones.
_ERFINV32 = (
    (5.0, 2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)),
    (math.inf, 3.0, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)),
)
_ERFINV64 = (
    (6.25, 3.125, (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
                   1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
                   6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
                   2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
                   1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
                   4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
                   0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
                   0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
                  1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
                  2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
                  6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
                  0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
                  -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
                  3.0838856104922207635)),
    (math.inf, 5.0, (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
                     -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
                     2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
                     -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
                     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
                     1.0103004648645343977, 4.8499064014085844221)),
)
