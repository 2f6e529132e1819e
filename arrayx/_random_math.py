"""Floating-point building blocks of ``arrayx.random``'s samplers, in arrayx operations.

jax.random's samplers are compiled by XLA:CPU, which contracts ``a * b + c`` into fused
multiply-adds and has its own float32 log.  To give the same bits, this module emulates them:
an exactly rounded fma (uniform's ``u * span + min``), Horner's rule with an fma per step
(erf^-1 and log1p), and XLA's log1p and float32 log; erf (Cephes) gives truncated_normal's bounds.
The one transcendental left to a native routine is float64 log: the primitive ``libm_log`` calls
the C library's, which is XLA's, on every executor (never NumPy's SIMD log, which differs on
CPUs with AVX-512).  float16 and bfloat16 use the float32 routines (see the section at the end).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from arrayx import api as xp
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.core.primitives import Primitive, current_trace
from arrayx.core.executor import get as _executor
from arrayx.transforms.rules._define import defabstract, defjvp, defjvp_coef
from arrayx.transforms.rules._batch import defvectorized

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


# -- XLA's fused multiply-adds ----------------------------------------------------------------------
# XLA:CPU compiles with LLVM's fp-contraction on: an ``a * b + c`` whose product has no other use
# becomes one fma (seen in the LLVM IR and object code that jax.random.normal compiles to).  That
# makes every Horner step of erf^-1, of log1p's rational approximation and of XLA's float32 log an
# fma; ``-(x * x) + 1`` stays unfused because the square has other uses.  Emulating these fmas
# is what makes normal and exponential bit-identical to jax.random (before, 5-8% of values
# were 1-3 ulp off).  These emulations are cheaper than _fma: a Horner step's variable is
# split once for all its steps, and float32 steps are done in float64.

def _fused_horner(coefficients: Sequence[float], t: Array, t_max: float = math.inf) -> Array:
    """Horner's rule with one rounding per step, p = fma(p, t, c), highest degree first.

    ``t_max`` bounds |t| where the result is used (elsewhere it may be inexact).
    """
    if t.dtype == _dtypes.float32:
        return _fused_horner32(coefficients, xp.astype(t, _dtypes.float64))
    t_halves = _split_halves(t)
    p = coefficients[0]
    for c, small in zip(coefficients[1:], _products_below_coefficients(coefficients, t_max)):
        p = _fma_halves(p, t, t_halves, c, small)
    return p


def _products_below_coefficients(coefficients: Sequence[float], t_max: float) -> list:
    """For each Horner step, whether |p * t| <= |c| for all |t| <= t_max (a bound by absolute values)."""
    bound, out = abs(coefficients[0]), []
    for c in coefficients[1:]:
        out.append(bound * t_max <= 0.99 * abs(c))
        bound = bound * t_max + abs(c)
    return out


def _fma_halves(a, b: Array, b_halves: tuple, c, small: bool = False) -> Array:
    """fma(a, b, c) in float64, b already split by _split_halves (b is the variable of a Horner sum).

    a * b is exactly product + error (Dekker) and product + c is exactly total + rounding
    (Knuth's two-sum, or Dekker's three-operation one when the caller knows |product| <= |c|:
    ``small``), so the fma is total + (rounding + error), rounded once.  Unlike _fma this does
    not round rounding + error to odd: that matters only when that sum is inexact and the last
    addition lands on a tie, which takes a product or a sum that rounds to exactly a power of
    two with a tail below 2**-53 of it (about 2**-52 per step for data not built to hit it);
    it saves ten array operations per step.
    """
    if not isinstance(a, Array) and a == 1.0:  # a leading coefficient of 1: b + c rounds once
        return b + c
    product = a * b
    a_high, a_low = _split_halves(a)
    b_high, b_low = b_halves
    error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    if small:
        total = product + c
        rounding = product - (total - c)
    else:
        total, rounding = _two_sum(product, c)
    return total + (rounding + error)


def _fused_horner32(coefficients: Sequence[float], wide: Array) -> Array:
    """Float32 Horner with fmas, for float32 values of t held in a float64 array ``wide``.

    A float32 fma is float32(a * b + c) evaluated in float64: the product of two 24-bit
    significands is exact, so only the float64 sum rounds before the rounding to float32.  The
    two roundings could differ from one only when the float64 sum lands exactly halfway between
    two float32 numbers although a * b + c does not (about 2**-29 per inexact step); for
    normal and exponential no input hits it (all 2**23 float32 uniforms are checked against JAX).
    """
    cs = [float(_dtypes.float32.type(c)) for c in coefficients]
    p = wide + cs[1] if cs[0] == 1.0 else wide * cs[0] + cs[1]
    for c in cs[2:]:
        p = _round32(p) * wide + c
    return xp.astype(p, _dtypes.float32)


def _round32(x: Array) -> Array:
    """x rounded to float32, kept in float64."""
    return xp.astype(xp.astype(x, _dtypes.float32), _dtypes.float64)


# -- log1p and log as XLA computes them ----------------------------------------------------------
# XLA's log1p: for |x| < sqrt(2) - 1 a rational approximation (Cephes' log1p coefficients, in the
# operand's dtype), else log(1 + x).  NumPy's log1p differs from it by up to ~100 ulp near x = -0.4.
_LOG1P_P = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
            2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
            2.0039553499201281259648e1)
_LOG1P_Q = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
            3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)
_SQRT2_MINUS_1 = 0.41421356237309504880


def _horner(coefficients: Sequence[float], x: Array) -> Array:
    p = x * coefficients[0] + coefficients[1]
    for c in coefficients[2:]:
        p = p * x + c
    return p


def _log1p(x: Array) -> Array:
    """log(1 + x) for float32 or float64 x, bit for bit as XLA:CPU computes it."""
    near_zero = xp.abs(x) < float(x.dtype.type(_SQRT2_MINUS_1))
    if not _eager_subsets(x):
        return xp.where(near_zero, _log1p_near_zero(x), _log1p_far(x))
    flat = xp.reshape(x, (-1,))
    near = xp.nonzero(xp.reshape(near_zero, (-1,)))[0]
    far = xp.nonzero(xp.reshape(~near_zero, (-1,)))[0]
    out = xp.empty_like(flat)
    if near.shape[0]:
        out = out.at[near].set(_log1p_near_zero(xp.take(flat, near)))
    if far.shape[0]:
        out = out.at[far].set(_log1p_far(xp.take(flat, far)))
    return xp.reshape(out, x.shape)


def _log1p_near_zero(x: Array) -> Array:
    if x.dtype == _dtypes.float32:
        wide = xp.astype(x, _dtypes.float64)  # shared by both polynomials
        ratio = _fused_horner32(_LOG1P_P, wide) / _fused_horner32(_LOG1P_Q, wide)
    else:
        ratio = _fused_horner(_LOG1P_P, x, _SQRT2_MINUS_1) / _fused_horner(_LOG1P_Q, x, _SQRT2_MINUS_1)
    z = x * x
    return x + (x * z * ratio - 0.5 * z)


def _log1p_far(x: Array) -> Array:
    return libm_log(x + 1.0) if x.dtype == _dtypes.float64 else _log32(x + 1.0)


# -- XLA's float64 log: the C library's ----------------------------------------------------------
# XLA:CPU calls the C library's log for float64 (it follows glibc even when glibc's FMA variant
# is switched off), while NumPy's float64 log runs NumPy's own AVX-512 code on CPUs that have it
# (1 ulp off in ~0.35% of inputs).  So the bit-exact paths call that routine by name, through
# this primitive: one entry per executor, no executor's SIMD dispatch in between.
libm_log_p = Primitive("libm_log")


def libm_log(x: Array) -> Array:
    """Natural log of float64 ``x``, each element by the C library's ``log`` (as XLA:CPU computes it)."""
    if x.dtype != _dtypes.float64:
        raise TypeError(f"libm_log: x must be float64, got {x.dtype}; use _log32 for XLA's float32 log")
    return libm_log_p.bind(x)


defabstract(libm_log_p, lambda x: ShapeDtypeStruct(tuple(x.shape), x.dtype))
libm_log_p.composition = xp.log  # where no table has it: the executor's own log (within an ulp of the C library's)
defjvp_coef(libm_log_p, lambda y, x: 1.0 / x)
defvectorized(libm_log_p)


# XLA:CPU's float32 log is not libm's: Cephes' logf polynomial (the constants below), evaluated
# as three short Horner chains joined by powers r**3, all with fmas.  NumPy's float32 log differs
# from it in ~17% of values, by 1 ulp.
_LOG32_CHAINS = ((7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1),
                 (-1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1),
                 (2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_LN2_HIGH, _LN2_LOW = 0.693359375, -2.12194440e-4  # ln 2 in two parts; an exponent times the first is exact
_SQRT_HALF32 = float(_dtypes.float32.type(math.sqrt(0.5)))
_TINY32 = float(_dtypes.float32.type(2.0 ** -126))


def _log32(x: Array) -> Array:
    """Natural log of float32 x as XLA:CPU computes it (which reads subnormal x as zero)."""
    f32, f64 = _dtypes.float32, _dtypes.float64
    regular = (x >= _TINY32) & (x < math.inf)
    wide = xp.astype(xp.where(regular, x, 1.0), f64)
    # x = m * 2**e with m in [0.5, 1).  log2 of a float32 is an integer or at least 8e-8 away
    # from one, so any float64 log2 gives the right floor after this nudge; the scaling is exact.
    e = xp.floor(xp.log2(wide) + 2.0 ** -30) + 1.0
    index = xp.reshape(xp.astype(e, _dtypes.int64) + 126, (-1,))  # take's indices are 1-D
    m = wide * xp.reshape(xp.take(_powers_of_two(x), index), x.shape)
    below = xp.astype(m < _SQRT_HALF32, f64)
    e = e - below
    r = (m - 1.0) + m * below  # m - 1, or 2m - 1 for m < sqrt(1/2): exact either way
    r32 = xp.astype(r, f32)
    r2 = r32 * r32
    r3 = xp.astype(r2 * r32, f64)
    y1, y2, y3 = (xp.astype(_fused_horner32(chain, r), f64) for chain in _LOG32_CHAINS)
    y = _round32(y1 * r3 + y2) * r3 + y3  # two more fmas
    e32 = xp.astype(e, f32)
    y = xp.astype(_round32(y) * r3 + xp.astype(e32 * _LN2_LOW, f64), f32)  # and one
    # r - r2 / 2 and the final + e * ln2_high are fmas with exact products: plain float32 operations
    out = ((r32 - 0.5 * r2) + y) + e32 * _LN2_HIGH
    special = xp.where(x < 0, math.nan, xp.where(x < _TINY32, -math.inf, x))  # NaN and inf stay
    return xp.where(regular, out, special)


def _powers_of_two(like: Array) -> Array:
    """2**-k for k = -126 .. 129: exact scale factors for float32 exponents, on like's device."""
    return xp.asarray([2.0 ** -k for k in range(-126, 130)], dtype=_dtypes.float64, device=like.device)


def _erf_inv(x: Array) -> Array:
    """Inverse error function on [-1, 1] (Giles' approximation, evaluated as XLA:CPU does)."""
    w = -_log1p(-(x * x))
    pieces = _ERFINV64 if x.dtype == _dtypes.float64 else _ERFINV32
    if _eager_subsets(w):
        (bound, shift, coefficients), *tails = pieces
        p = _fused_horner(coefficients, w - shift, shift)  # |t| <= shift where the central piece applies
        # The tails: |x| > 0.9966 (float32) or 0.9981 (float64), the second about once in 10**7.
        flat_w, flat_p = xp.reshape(w, (-1,)), xp.reshape(p, (-1,))
        for upper, shift, coefficients in tails:
            where = xp.nonzero(xp.reshape((w >= bound) & (w < upper), (-1,)))[0]
            if where.shape[0]:
                tail = _fused_horner(coefficients, xp.sqrt(xp.take(flat_w, where)) - shift)
                flat_p = flat_p.at[where].set(tail)
            bound = upper
        p = xp.reshape(flat_p, p.shape)
    else:
        p = _erf_inv_one_chain(w, pieces)
    out = p * x
    return xp.where(xp.abs(x) == 1.0, xp.copysign(math.inf, x), out)


def _erf_inv_one_chain(w: Array, pieces) -> Array:
    """All pieces of erf^-1 as one Horner chain with coefficients chosen per element, as XLA does.

    The shorter polynomials get leading zero coefficients, which change no value (fma(0, t, c)
    is c); one chain of 23 steps costs half of the 22 + 18 + 16 steps of the pieces one by one.
    """
    (bound, shift, _), *tails = pieces
    below = [w < upper for upper, _, _ in pieces[:-1]]  # which piece: the first whose bound exceeds w
    root_w = xp.sqrt(w)
    t = root_w - tails[-1][1]
    for (_, tail_shift, _), is_below in zip(reversed(tails[:-1]), reversed(below[1:])):
        t = xp.where(is_below, root_w - tail_shift, t)
    t = xp.where(below[0], w - shift, t)
    wide = xp.astype(t, _dtypes.float64) if t.dtype == _dtypes.float32 else t
    dtype = t.dtype.type
    length = max(len(c) for _, _, c in pieces)
    padded = [(0.0,) * (length - len(c)) + tuple(float(dtype(v)) for v in c) for _, _, c in pieces]

    def column(k: int) -> Array:  # the k-th coefficient of each element's piece
        value = xp.full_like(wide, padded[-1][k])
        for piece, is_below in zip(reversed(padded[:-1]), reversed(below)):
            value = xp.where(is_below, piece[k], value)
        return value

    if t.dtype == _dtypes.float32:
        p = column(0) * wide + column(1)  # exact product, one rounding in float64, then to float32
        for k in range(2, length):
            p = _round32(p) * wide + column(k)
        return xp.astype(p, _dtypes.float32)
    t_halves = _split_halves(t)
    p = column(0)
    for k in range(1, length):
        p = _fma_halves(p, t, t_halves, column(k))
    return p


# Eagerly on NumPy and Numba, a branch (or piece) is evaluated only on the elements that take
# it: same values, a fraction of the work.  Not on JAX (every operation compiles again for each
# new subset size, and those vary from draw to draw), nor on CuPy and Dask, which prefer whole
# arrays, nor under transforms: there everything is evaluated everywhere and then selected.
_SUBSET_EXECUTORS = frozenset({"numpy", "numba"})


def _eager_subsets(x: Array) -> bool:
    return current_trace() is None and x._ex.name in _SUBSET_EXECUTORS


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


# -- XLA's own operations, as primitives ------------------------------------------------------------
# The emulations above give XLA's bits only when each of their steps is rounded on its own: on
# the jax executor under arrayx.jit, XLA:CPU compiles the whole emulation into one loop and
# contracts its error-free ``a * b - p`` steps into fmas, which breaks them (1-2 ulp off in
# 0.03% of normals, and in a fifth of float64 uniforms with a span that is not a power of two).
# So each operation the samplers emulate is a primitive: where an executor has that operation
# itself (the jax executor: XLA's), its impl is that operation, so XLA compiles the same program
# as for jax.random, eagerly and under jit; on the other executors it is the emulation, in
# arrayx operations (so it is staged, batched and differentiated as they are).

def _same_avals(name: str):
    def rule(*xs):
        first = xs[0]
        for x in xs[1:]:
            if tuple(x.shape) != tuple(first.shape) or x.dtype != first.dtype:
                raise TypeError(f"{name}: operands must have one shape and dtype, got "
                                f"{[(tuple(v.shape), str(v.dtype)) for v in xs]}; broadcast and cast them first")
        if first.dtype not in (_dtypes.float32, _dtypes.float64):
            raise TypeError(f"{name}: expects float32 or float64, got {first.dtype}")
        return ShapeDtypeStruct(tuple(first.shape), first.dtype)
    return rule


XLA_OPS: dict = {}  # name -> (primitive, emulation): the table _xla_op reads


def _xla_primitive(name: str, emulation) -> Primitive:
    prim = Primitive(f"xla_{name}")  # only the jax executor's table has it (executors/jax/random.py)
    defabstract(prim, _same_avals(prim.name))
    defvectorized(prim)
    XLA_OPS[name] = (prim, emulation)
    return prim


def _has_own(prim: Primitive, x: Array) -> bool:
    """Whether ``x``'s executor has ``prim`` in its table (XLA's own operation: the jax executor)."""
    return _executor(x.device.executor).table.get(prim.name) is not None


def _xla_op(name: str, x: Array) -> Array:
    """XLA's operation ``name`` on ``x``: the executor's own where it has it, else the emulation."""
    if is_half(x.dtype):
        return _half_via_float32(name, x)
    prim, emulation = XLA_OPS[name]
    return prim.bind(x) if _has_own(prim, x) else emulation(x)


def _erf_in_dtype(x: Array) -> Array:
    return xp.astype(_erf(xp.astype(x, _dtypes.float64)), x.dtype)


def _xla_log_emulated(x: Array) -> Array:
    return _log32(x) if x.dtype == _dtypes.float32 else libm_log(x)


_SQRT_PI = math.sqrt(math.pi)
xla_fma_p = _xla_primitive("fma", _fma)
defjvp(xla_fma_p, lambda t, out, a, b, c: t * b, lambda t, out, a, b, c: a * t, lambda t, out, a, b, c: t)
defjvp_coef(_xla_primitive("log1p", _log1p), lambda y, x: 1.0 / (x + 1.0))
defjvp_coef(_xla_primitive("log", _xla_log_emulated), lambda y, x: 1.0 / x)
defjvp_coef(_xla_primitive("erf", _erf_in_dtype), lambda y, x: (2.0 / _SQRT_PI) * xp.exp(-(x * x)))
defjvp_coef(_xla_primitive("erf_inv", _erf_inv), lambda y, x: (_SQRT_PI / 2.0) * xp.exp(y * y))


def fma(a: Array, b, c) -> Array:
    """a * b + c rounded once, in a's float dtype (b and c: arrays or Python floats, broadcast to a).

    For float16 and bfloat16 ``a``: two roundings, as XLA:CPU computes 16-bit arithmetic (below).
    """
    if is_half(a.dtype):
        return a * b + c
    if not _has_own(xla_fma_p, a):
        return _fma(a, b, c)
    b, c = (xp.broadcast_to(xp.astype(v, a.dtype) if isinstance(v, Array)
                            else xp.asarray(v, dtype=a.dtype, device=a.device), a.shape) for v in (b, c))
    return xla_fma_p.bind(a, b, c)


def log1p(x: Array) -> Array:
    """log(1 + x) as XLA:CPU computes it."""
    return _xla_op("log1p", x)


def log(x: Array) -> Array:
    """log as XLA:CPU computes it: its own float32 polynomial; the C library's float64 log."""
    return _xla_op("log", x)


def erf(x: Array) -> Array:
    """erf in x's dtype: XLA's on the jax executor, Cephes' (in float64) elsewhere (agrees to ~1e-16)."""
    return _xla_op("erf", x)


def erf_inv(x: Array) -> Array:
    """Inverse error function on [-1, 1] as XLA:CPU computes it."""
    return _xla_op("erf_inv", x)


# -- float16 and bfloat16 --------------------------------------------------------------------------
# Measured on XLA:CPU (jax.random's compiled samplers and lax's operations, over every 16-bit
# value): 16-bit arithmetic is done one operation at a time, each result rounded to the 16-bit
# type (no fused multiply-adds: ``u * span + lo`` rounds twice); log, log1p, erf and erf^-1
# convert their operand to float32, evaluate the float32 routine and round its result to the
# 16-bit type once.  Float32 subnormals are read and written as zero there (XLA:CPU's
# flush-to-zero), which shows for bfloat16, whose exponent range is float32's.  So a 16-bit
# sampler is the same arrayx operations in the 16-bit dtype (NumPy's float16 and ml_dtypes'
# bfloat16 arithmetic round correctly, as XLA's does), and each function the float32 one
# (XLA's own on the jax executor, the emulations above elsewhere) between two conversions.

def is_half(dt) -> bool:
    """Whether ``dt`` is float16 or bfloat16."""
    return dt.itemsize == 2 and _dtypes.kind_of(dt) == "f"


def _flush32(x: Array) -> Array:
    """Float32 subnormals of ``x`` replaced by zeros of their sign, as XLA:CPU reads and writes them."""
    return xp.where(xp.abs(x) < _TINY32, x * 0.0, x)


def flush_bfloat16(x):
    """``x`` with bfloat16 subnormals replaced by zeros of their sign, as XLA:CPU's bfloat16 arithmetic
    reads and writes them; values of other dtypes unchanged.  An arrayx array or a NumPy scalar."""
    if getattr(x, "dtype", None) is None or x.dtype.name != "bfloat16":
        return x  # (Python floats: the 0 and 1 of unit bounds)
    if isinstance(x, Array):
        return xp.where(xp.abs(x) < _TINY32, x * 0.0, x)
    return x * x.dtype.type(0.0) if abs(float(x)) < _TINY32 else x


def divide_bfloat16(x: Array, divisor: float) -> Array:
    """x / divisor for bfloat16 ``x`` as XLA:CPU computes it: in float32, subnormals read and written as zero."""
    return xp.astype(_flush32(_flush32(xp.astype(x, _dtypes.float32)) / divisor), x.dtype)


def affine_bfloat16(floats: Array, minval, maxval) -> Array:
    """max(minval, floats * (maxval - minval) + minval) in bfloat16 as XLA:CPU computes it: each
    operation rounded, subnormal operands and results read as zero (bounds: NumPy scalars or arrays)."""
    lo = flush_bfloat16(minval)
    span = flush_bfloat16(flush_bfloat16(maxval) - lo)
    # NumPy scalars as Python floats (exact in bfloat16, weakly typed): literals of the operations, where a
    # NumPy scalar would be a constant array, broadcast eagerly when the draw is staged (a program each)
    lo, span = (float(v) if isinstance(v, np.generic) else v for v in (lo, span))
    out = flush_bfloat16(flush_bfloat16(floats * span) + lo)
    return xp.where(out < lo, lo, out)  # XLA's max(lo, out): out where they compare equal (+0 for lo = -0)


# The float16 operands whose erf Cephes' erf (in float64, then rounded to float32 and to float16)
# rounds to the other float16 neighbour than XLA's float32 erf does: the exact erf of each lies
# within float32 rounding error of a float16 midpoint.  Found by comparing all 65,536 float16
# values with jax.lax.erf (tests/test_random_half.py checks it again); no bfloat16 value differs.
# Bit patterns of |x| -> of XLA's |erf(x)|.
_ERF16_XLA = {0x1612: 0x16D9, 0x2A6C: 0x2B3D}


def _half_via_float32(name: str, x: Array) -> Array:
    wide = _flush32(xp.astype(x, _dtypes.float32))
    out = xp.astype(_flush32(_xla_op(name, wide)), x.dtype)
    if name == "erf" and x.dtype == _dtypes.float16 and not _has_own(XLA_OPS[name][0], wide):
        for operand, value in _ERF16_XLA.items():
            pair = np.array([operand, value], np.uint16).view(np.float16)
            out = xp.where(xp.abs(x) == float(pair[0]), xp.copysign(float(pair[1]), x), out)
    return out
