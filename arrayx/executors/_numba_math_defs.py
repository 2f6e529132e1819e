"""Scalar math for the Numba executor's kernels, written so that LLVM vectorises the loops that call it.

Numba's ``math.exp``/``math.sin``/``math.tanh`` are calls into the C library, one element at a
time; NumPy's own loops are SIMD (or the same C library), so a parallel loop over those calls
loses to NumPy on this kind of machine.  The functions here are plain arithmetic (range
reduction, a polynomial, exponent bits put together by hand) with selects instead of branches,
so a loop over them becomes AVX2 code.  Every result is within 1-2 ulp of the C library's, and
special values (NaN, ±inf, ±0, overflow, subnormal results) come out exactly as NumPy's.

The float32 versions compute in float32 (eight lanes per AVX2 register, as NumPy's own float32
loops do), with polynomials of lower degree; they are within 1-3 ulp of correctly rounded.

This file is not imported: ``_numba_math`` runs it into its own namespace on first use (the
functions are ``_numba_math``'s; see there why).  Running it imports Numba.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_INLINE = dict(inline="always", fastmath={"contract"}, error_model="numpy")
# The large functions that kernels call are compiled once each (and kept in the kernel disk cache)
# and inlined by LLVM: Numba's own inlining would type their bodies again in every kernel (~300 ms)
_ENTRY = dict(nogil=True, fastmath={"contract"}, error_model="numpy")


# -- float64 <-> int64 bit patterns (a bitcast, which LLVM vectorises) -------------------------

@intrinsic
def f64_from_bits(typingctx, bits):
    """The float64 whose IEEE bit pattern is the int64 ``bits``."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def bits_of_f64(typingctx, value):
    """The IEEE bit pattern of the float64 ``value`` as an int64."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def f32_from_bits(typingctx, bits):
    """The float32 whose IEEE bit pattern is the low 32 bits of the integer ``bits``."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())
    return types.float32(types.int64), codegen


@intrinsic
def bits_of_f32(typingctx, value):
    """The IEEE bit pattern of the float32 ``value`` as an int64 (sign-extended)."""
    def codegen(context, builder, sig, args):
        return builder.sext(builder.bitcast(args[0], ir.IntType(32)), ir.IntType(64))
    return types.int64(types.float32), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's ``llvm.fma``: one instruction on a CPU with FMA; see
    ``_numba_contract``, which emits it only there)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        ty = args[0].type
        return builder.call(builder.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty] * 3)), args)
    return a(a, b, c), codegen


# -- constants -------------------------------------------------------------------------------

_ROUND_SHIFT = 6755399441055744.0  # 1.5 * 2**52: adding it rounds |v| < 2**51 to an integer
_INV_LN2 = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts; k * _LN2_HI is exact for |k| < 2**20
_LN2_LO = 1.90821492927058770002e-10
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e+00  # pi/2 in four parts, the first three of 33 bits each
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_3 = 2.02226624871116645580e-21
_PIO2_4 = 8.47842766036889956997e-32
#: sin/cos range reduction above is accurate for |x| below this; larger x go to the C library
TRIG_LIMIT = 1.0e5
_TWO52 = 4503599627370496.0


@njit(**_INLINE)
def _reduce_ln2(x):
    """(k, r) with x = k*ln2 + r, |r| <= ln2/2 (x already clamped to a finite range)."""
    t = x * _INV_LN2 + _ROUND_SHIFT
    kf = t - _ROUND_SHIFT
    k = bits_of_f64(t) - bits_of_f64(_ROUND_SHIFT)
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    return k, r


@njit(**_INLINE)
def _expm1_poly(r):
    """exp(r) - 1 for |r| <= ln2/2: Taylor series to r**13 (truncation below 2**-56)."""
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    return (p * r) * r + r


@njit(**_ENTRY)
def exp64(x):
    """exp(x) for float64 x."""
    k, r = _reduce_ln2(min(max(x, -746.0), 710.0))
    y = 1.0 + _expm1_poly(r)
    # scale by 2**k in two steps so that k = 1024 (overflow) and k < -1022 (subnormal) round once
    k1 = k >> 1
    y = y * f64_from_bits((k1 + 1023) << 52) * f64_from_bits((k - k1 + 1023) << 52)
    return x if x != x else y


@njit(**_INLINE)
def _expm1_64(x):
    """exp(x) - 1 for float64 x (accurate near 0; ±0 and NaN returned as they are)."""
    k, r = _reduce_ln2(min(max(x, -60.0), 710.0))  # below -60 the result rounds to -1
    p = _expm1_poly(r)
    s = f64_from_bits((min(k, 1023) + 1023) << 52)
    y = s * p + (s - 1.0)  # 2**k * (1 + p) - 1 without cancelling p
    y = y * 2.0 if k == 1024 else y
    return x if (x != x) | (x == 0.0) else y


expm1_64 = njit(**_ENTRY)(_expm1_64.py_func)  # the entry point; _expm1_64 is inlined where it is called


@njit(**_INLINE)
def _expm1_nonneg_64(x):
    """_expm1_64 for 0 <= x <= 40, the same operations less the selects no such x needs
    (overflow, below -60, ±0 and NaN): tanh's argument (~15% fewer instructions per element)."""
    k, r = _reduce_ln2(x)
    p = _expm1_poly(r)
    s = f64_from_bits((k + 1023) << 52)
    return s * p + (s - 1.0)


@njit(**_ENTRY)
def tanh64(x):
    """tanh(x) for float64 x, as u / (u + 2) with u = expm1(2|x|)."""
    ax = abs(x)
    u = _expm1_nonneg_64(2.0 * min(ax, 20.0))  # tanh(x) rounds to ±1 beyond |x| = 19.1
    return x if x != x else math.copysign(u / (u + 2.0), x)


@njit(**_INLINE)
def _sin_poly(r):
    """sin(r) for |r| <= pi/4: Taylor series to r**17."""
    z = r * r
    p = 1.0 / 355687428096000.0
    p = p * z - 1.0 / 1307674368000.0
    p = p * z + 1.0 / 6227020800.0
    p = p * z - 1.0 / 39916800.0
    p = p * z + 1.0 / 362880.0
    p = p * z - 1.0 / 5040.0
    p = p * z + 1.0 / 120.0
    p = p * z - 1.0 / 6.0
    return r + (r * z) * p


@njit(**_INLINE)
def _cos_poly(r):
    """cos(r) for |r| <= pi/4: Taylor series to r**16."""
    z = r * r
    p = 1.0 / 20922789888000.0
    p = p * z - 1.0 / 87178291200.0
    p = p * z + 1.0 / 479001600.0
    p = p * z - 1.0 / 3628800.0
    p = p * z + 1.0 / 40320.0
    p = p * z - 1.0 / 720.0
    p = p * z + 1.0 / 24.0
    return (1.0 - 0.5 * z) + (z * z) * p


@njit(**_INLINE)
def _sincos_quadrant(x, shift):
    """sin(x + shift*pi/2) for |x| <= TRIG_LIMIT (other x give garbage: the kernels redo them)."""
    xc = min(max(x, -TRIG_LIMIT), TRIG_LIMIT)
    t = xc * _TWO_OVER_PI + _ROUND_SHIFT
    kf = t - _ROUND_SHIFT
    q = bits_of_f64(t) - bits_of_f64(_ROUND_SHIFT) + shift
    r = ((xc - kf * _PIO2_1) - kf * _PIO2_2) - kf * _PIO2_3 - kf * _PIO2_4
    v = _cos_poly(r) if (q & 1) != 0 else _sin_poly(r)
    return -v if (q & 2) != 0 else v


@njit(**_ENTRY)
def sin64(x):
    """sin(x) for float64 x with |x| <= TRIG_LIMIT; NaN gives NaN, ±0 stays ±0."""
    y = _sincos_quadrant(x, 0)
    return x if (x != x) | (x == 0.0) else y


@njit(**_ENTRY)
def cos64(x):
    """cos(x) for float64 x with |x| <= TRIG_LIMIT; NaN gives NaN."""
    y = _sincos_quadrant(x, 1)
    return x if x != x else y


@njit(**_INLINE)
def trig_needs_libm64(x):
    """True where sin64/cos64 are not accurate (|x| beyond TRIG_LIMIT, ±inf)."""
    return abs(x) > TRIG_LIMIT


@njit(**_INLINE)
def round_half_even64(x):
    """Round to the nearest integer, ties to even, keeping the sign of zero (NumPy's ``round``)."""
    ax = abs(x)
    r = math.copysign((ax + _TWO52) - _TWO52, x)
    return r if ax < _TWO52 else x


@njit(**_INLINE)
def sign_float(x, one, zero):
    """NumPy's ``sign`` for floats: ±1, +0 for ±0, NaN for NaN (one/zero in x's dtype)."""
    if x > zero:
        return one
    if x < zero:
        return -one
    return x if x != x else zero


# -- float32 ------------------------------------------------------------------------------------
# Constants are float32 scalars (a bare Python float would make Numba compute in float64).

_F = np.float32
_ROUND_SHIFT_F = _F(12582912.0)  # 1.5 * 2**23
_INV_LN2_F = _F(1.44269504088896341)
_LN2_HI_F = _F(0.693359375)  # 9 significant bits: k * _LN2_HI_F is exact
_LN2_LO_F = _F(-2.12194440e-4)
_PIO2_1F = _F(1.5703125)  # pi/2 in three float32 parts of 8, 11 and 24 bits
_PIO2_2F = _F(4.837512969970703125e-4)
_PIO2_3F = _F(7.54978995489188216e-8)
_TWO_OVER_PI_F = _F(0.636619772367581343)
#: float32 sin/cos reduction is accurate for |x| below this (k * _PIO2_2F exact for k < 2**13)
TRIG_LIMIT_F = _F(8192.0)
_TWO23_F = _F(8388608.0)
_ZERO_F = _F(0.0)
_ONE_F = _F(1.0)
_TWO_F = _F(2.0)
_HALF_F = _F(0.5)


@njit(**_INLINE)
def _reduce_ln2_f32(x):
    t = x * _INV_LN2_F + _ROUND_SHIFT_F
    kf = t - _ROUND_SHIFT_F
    k = bits_of_f32(t) - bits_of_f32(_ROUND_SHIFT_F)
    r = (x - kf * _LN2_HI_F) - kf * _LN2_LO_F
    return k, r


@njit(**_INLINE)
def _expm1_poly_f32(r):
    """exp(r) - 1 for |r| <= ln2/2 in float32: Taylor series to r**7."""
    p = _F(1.0 / 5040.0)
    p = p * r + _F(1.0 / 720.0)
    p = p * r + _F(1.0 / 120.0)
    p = p * r + _F(1.0 / 24.0)
    p = p * r + _F(1.0 / 6.0)
    p = p * r + _HALF_F
    return (p * r) * r + r


@njit(**_ENTRY)
def exp32(x):
    """exp(x) for float32 x."""
    k, r = _reduce_ln2_f32(min(max(x, _F(-104.0)), _F(89.0)))
    y = _ONE_F + _expm1_poly_f32(r)
    k1 = k >> 1
    y = y * f32_from_bits((k1 + 127) << 23) * f32_from_bits((k - k1 + 127) << 23)
    return x if x != x else y


@njit(**_INLINE)
def _expm1_32(x):
    """exp(x) - 1 for float32 x."""
    k, r = _reduce_ln2_f32(min(max(x, _F(-20.0)), _F(89.0)))  # below -17.4 the result rounds to -1
    p = _expm1_poly_f32(r)
    s = f32_from_bits((min(k, 127) + 127) << 23)
    y = s * p + (s - _ONE_F)
    y = y * _TWO_F if k == 128 else y
    return x if (x != x) | (x == _ZERO_F) else y


expm1_32 = njit(**_ENTRY)(_expm1_32.py_func)


@njit(**_INLINE)
def _expm1_nonneg_32(x):
    """_expm1_32 for 0 <= x <= 20 (see _expm1_nonneg_64)."""
    k, r = _reduce_ln2_f32(x)
    p = _expm1_poly_f32(r)
    s = f32_from_bits((k + 127) << 23)
    return s * p + (s - _ONE_F)


@njit(**_ENTRY)
def tanh32(x):
    """tanh(x) for float32 x."""
    ax = abs(x)
    u = _expm1_nonneg_32(_TWO_F * min(ax, _F(10.0)))  # tanh rounds to ±1 beyond |x| = 9.1
    return x if x != x else math.copysign(u / (u + _TWO_F), x)


@njit(**_INLINE)
def _sin_poly_f32(r):
    z = r * r
    p = _F(1.0 / 362880.0)
    p = p * z - _F(1.0 / 5040.0)
    p = p * z + _F(1.0 / 120.0)
    p = p * z - _F(1.0 / 6.0)
    return r + (r * z) * p


@njit(**_INLINE)
def _cos_poly_f32(r):
    z = r * r
    p = _F(-1.0 / 3628800.0)
    p = p * z + _F(1.0 / 40320.0)
    p = p * z - _F(1.0 / 720.0)
    p = p * z + _F(1.0 / 24.0)
    return (_ONE_F - _HALF_F * z) + (z * z) * p


@njit(**_INLINE)
def _sincos_quadrant_f32(x, shift):
    """sin(x + shift*pi/2); the quadrant is found with float operations (eight lanes, no int64)."""
    xc = min(max(x, -TRIG_LIMIT_F), TRIG_LIMIT_F)
    t = xc * _TWO_OVER_PI_F + _ROUND_SHIFT_F
    kf = t - _ROUND_SHIFT_F
    r = ((xc - kf * _PIO2_1F) - kf * _PIO2_2F) - kf * _PIO2_3F
    q = kf + shift
    q = q - _F(4.0) * np.floor(q * _F(0.25))  # q mod 4, exactly, in 0..3
    v = _cos_poly_f32(r) if (q == _ONE_F) | (q == _F(3.0)) else _sin_poly_f32(r)
    return -v if q >= _TWO_F else v


@njit(**_ENTRY)
def sin32(x):
    """sin(x) for float32 x with |x| <= TRIG_LIMIT_F."""
    y = _sincos_quadrant_f32(x, _ZERO_F)
    return x if (x != x) | (x == _ZERO_F) else y


@njit(**_ENTRY)
def cos32(x):
    """cos(x) for float32 x with |x| <= TRIG_LIMIT_F."""
    y = _sincos_quadrant_f32(x, _ONE_F)
    return x if x != x else y


@njit(**_INLINE)
def trig_needs_libm32(x):
    return abs(x) > TRIG_LIMIT_F


@njit(**_INLINE)
def round_half_even32(x):
    ax = abs(x)
    r = math.copysign((ax + _TWO23_F) - _TWO23_F, x)
    return r if ax < _TWO23_F else x


@njit(**_ENTRY)
def fma_into(a, b, c, out):
    """out[i] = fma(a[i], b[i], c[i]) over flat float64 arrays (a numba_fma outside a fused kernel)."""
    for i in range(out.shape[0]):
        out[i] = fma(a[i], b[i], c[i])


#: the functions compiled on their own (see _ENTRY), given the kernels' disk cache
ENTRY_POINTS = (exp64, expm1_64, tanh64, sin64, cos64, exp32, expm1_32, tanh32, sin32, cos32, fma_into)


def _attach_disk_cache() -> None:
    from arrayx.executors import _numba_cache
    from arrayx.executors import _numba_kernels as K

    folder = K.cache_dir()
    if folder is not None:
        for fn in ENTRY_POINTS:
            _numba_cache.attach(fn, folder)


_attach_disk_cache()
