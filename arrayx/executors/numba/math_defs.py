"""Scalar math for the Numba executor's kernels, written so that LLVM vectorises the loops that call it.

Numba's ``math.exp``/``math.sin``/``math.tanh`` are calls into the C library, one element at a
time; NumPy's own loops are SIMD (or the same C library), so a parallel loop over those calls
loses to NumPy on this kind of machine.  The functions here are plain arithmetic (range
reduction, a polynomial, exponent bits put together by hand) with selects instead of branches,
so a loop over them becomes AVX2 code.  Special values (NaN, ±inf, ±0, overflow, subnormal
results) come out exactly as NumPy's.

exp/expm1/tanh are LLVM IR that Numba intrinsics emit into the calling kernel (``_Emit``);
polynomials are evaluated by Estrin's scheme (short dependency chains: the loops were latency
bound), float32 in float32 (eight lanes) with int32 exponent arithmetic.  Max error against the
correctly rounded value (benchmarks/bench_fused_math.py: all 2**32 float32 inputs, a dense float64
sample): float32 exp 1 ulp, expm1 2, tanh 6 (a rational x * N(x**2) / D(x**2): one division, no range
reduction; XLA's float32 tanh, of the same form, is 4.8 ulp); float64 exp 1.09, expm1 2.22, tanh 2.58.  sin/cos
are @njit functions compiled once each (within 1-2 ulp).

This file is not imported: ``numba.math`` runs it into its own namespace on first use (the
functions are ``numba.math``'s; see there why).  Running it imports Numba.
"""
from __future__ import annotations

import math
from typing import NamedTuple

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
    ``numba.fusion.contract``, which emits it only there)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        ty = args[0].type
        return builder.call(builder.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty] * 3)), args)
    return a(a, b, c), codegen


# -- exp, expm1, tanh: LLVM IR emitted into the calling kernel ---------------------------------
# Intrinsics, not @njit functions: Numba types one call instead of ~40 operations, and no
# function is compiled on its own (cold compile: exp64 ~300 ms, tanh64 ~400 ms before).  The IR
# is straight-line (selects, no branches), strict IEEE; only llvm.fmuladd may fuse, which LLVM
# does where the CPU has FMA (the results are within the same bounds either way).

class _Width(NamedTuple):
    """The constants of exp/expm1/tanh for one float width."""
    fty: ir.Type
    ity: ir.IntType
    mant: int  # mantissa bits
    bias: int  # exponent bias
    shift: float  # 1.5 * 2**mant: adding it rounds to an integer, kept in the low bits
    inv_ln2: float
    ln2_hi: float  # ln 2 in two parts; k * ln2_hi is exact for every k reached
    ln2_lo: float
    exp_range: tuple  # exp's input clamped to this (beyond it: 0 or inf)
    expm1_range: tuple  # expm1's (below it the result rounds to -1)
    tanh_clamp: float  # |x| beyond it: tanh rounds to 1
    # P(r) = (exp(r) - 1 - r) / r**2 on |r| <= 0.35, near-minimax (Chebyshev nodes; 0.13 ulp)
    poly: tuple
    # tanh(x) = x * N(x**2) / D(x**2) for |x| <= tanh_clamp (relative minimax, 6.8e-9), or None: from expm1
    tanh_rational: tuple | None = None


_W64 = _Width(ir.DoubleType(), ir.IntType(64), 52, 1023, 6755399441055744.0, 1.4426950408889634,
              6.93147180369123816490e-01, 1.90821492927058770002e-10, (-746.0, 710.0), (-60.0, 710.0), 20.0,
              tuple(float.fromhex(h) for h in (
                  "0x1.0000000000001p-1", "0x1.5555555555556p-3", "0x1.5555555553b71p-5", "0x1.11111111108f9p-7",
                  "0x1.6c16c1794c18ap-10", "0x1.a01a01a848f75p-13", "0x1.a019b629cf646p-16",
                  "0x1.71de0bc3910aap-19", "0x1.2894ebe834121p-22", "0x1.af3d13c177b08p-26")))
_W32 = _Width(ir.FloatType(), ir.IntType(32), 23, 127, 12582912.0, float(np.float32(1.44269504088896341)),
              0.693359375, float(np.float32(-2.12194440e-4)), (-104.0, 89.0), (-20.0, 89.0), 9.02,
              tuple(float.fromhex(h) for h in (
                  "0x1.0000000000000p-1", "0x1.5554d80000000p-3", "0x1.5555160000000p-5", "0x1.12105c0000000p-7",
                  "0x1.6d15f80000000p-10")),
              ((1.0, 0.1308315545320511, 0.0031030001118779182, 1.1144245036120992e-05, -2.018392741831576e-08,
                5.2577622811078584e-11, -8.436009730399333e-14),
               (1.0, 0.4641648232936859, 0.02449137717485428, 0.0002544749586377293)))


class _Emit:
    """Operations on one float width, appended to ``builder``'s current block."""

    def __init__(self, builder: ir.IRBuilder, w: _Width):
        self.b, self.w, self.f, self.i = builder, w, w.fty, w.ity

    def c(self, v: float):
        return ir.Constant(self.f, v)

    def ci(self, v: int):
        return ir.Constant(self.i, v)

    def _intrinsic(self, name: str, n: int):
        return self.b.module.declare_intrinsic(name, [self.f], ir.FunctionType(self.f, [self.f] * n))

    def fma(self, a, b, c):  # a * b + c, fused where the CPU has FMA
        return self.b.call(self._intrinsic("llvm.fmuladd", 3), [a, b, c])

    def fabs(self, a):
        return self.b.call(self._intrinsic("llvm.fabs", 1), [a])

    def copysign(self, a, b):
        return self.b.call(self._intrinsic("llvm.copysign", 2), [a, b])

    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def clamp(self, x, lo: float, hi: float):  # NaN stays NaN
        x = self.b.select(self.lt(x, self.c(lo)), self.c(lo), x)
        return self.b.select(self.lt(self.c(hi), x), self.c(hi), x)

    def poly(self, x, x2, coeffs):
        """coeffs[0] + coeffs[1] * x + ... by Estrin's scheme (a dependency chain of log2(n) fmas)."""
        terms = [self.fma(self.c(coeffs[j + 1]), x, self.c(coeffs[j])) if j + 1 < len(coeffs) else self.c(coeffs[j])
                 for j in range(0, len(coeffs), 2)]
        power = x2
        while len(terms) > 1:
            terms = [self.fma(terms[j + 1], power, terms[j]) if j + 1 < len(terms) else terms[j]
                     for j in range(0, len(terms), 2)]
            power = self.b.fmul(power, power) if len(terms) > 1 else power
        return terms[0]

    def reduce(self, x):
        """(t, kf, exp(r) - 1) with x = kf * ln2 + r, |r| <= ln2/2 (x clamped); kf + bias in t's low bits."""
        b, w = self.b, self.w
        shift = self.c(w.shift + w.bias)
        t = self.fma(x, self.c(w.inv_ln2), shift)
        kf = b.fsub(t, shift)
        r = self.fma(kf, self.c(-w.ln2_hi), x)
        r = self.fma(kf, self.c(-w.ln2_lo), r)
        r2 = b.fmul(r, r)
        return t, kf, self.fma(r2, self.poly(r, r2, w.poly), r)

    def pow2(self, t):
        """2**k from reduce's t (k + bias in [1, 2 * bias]: the shift pushes the shift constant's bits out)."""
        return self.b.bitcast(self.b.shl(self.b.bitcast(t, self.i), self.ci(self.w.mant)), self.f)

    def exp(self, x):
        b, w = self.b, self.w
        t, _, p = self.reduce(self.clamp(x, *w.exp_range))  # a NaN goes through as NaN
        y = b.fadd(self.c(1.0), p)
        # 2**k in two factors, so that overflow (k = bias + 1) and subnormal results round once
        k = b.sub(b.bitcast(t, self.i), b.bitcast(self.c(w.shift + w.bias), self.i))
        e1 = b.add(b.ashr(k, self.ci(1)), self.ci(w.bias))
        e2 = b.sub(b.add(k, self.ci(2 * w.bias)), e1)
        return b.fmul(b.fmul(y, b.bitcast(b.shl(e1, self.ci(w.mant)), self.f)),
                      b.bitcast(b.shl(e2, self.ci(w.mant)), self.f))

    def expm1_scaled(self, s, p):
        """s * (1 + p) - 1 without cancelling p (s = 2**k)."""
        return self.fma(s, p, self.b.fsub(s, self.c(1.0)))

    def expm1(self, x):
        b, w = self.b, self.w
        t, kf, p = self.reduce(self.clamp(x, *w.expm1_range))
        is_top = b.fcmp_ordered("==", kf, self.c(w.bias + 1))  # 2**k overflows: 2**(k - 1), then double
        y = self.expm1_scaled(b.select(is_top, self.c(2.0 ** w.bias), self.pow2(t)), p)
        y = b.select(is_top, b.fmul(y, self.c(2.0)), y)
        return b.select(b.fcmp_ordered("==", x, self.c(0.0)), x, y)  # ±0 as it is (NaN went through)

    def tanh(self, x):
        """tanh of |x| (clamped: beyond the clamp tanh rounds to 1), the sign of x; ±0 and NaN go through."""
        b, w = self.b, self.w
        clamp = self.c(w.tanh_clamp)
        ax = self.fabs(x)
        ax = b.select(self.lt(clamp, ax), clamp, ax)
        if w.tanh_rational is None:  # u / (u + 2) with u = expm1(2|x|)
            t, _, p = self.reduce(b.fmul(ax, self.c(2.0)))  # 0 <= 2|x| <= 2 * clamp: no overflow, no -1
            u = self.expm1_scaled(self.pow2(t), p)
            th = b.fdiv(u, b.fadd(u, self.c(2.0)))
        else:  # one division, no range reduction; at the clamp N/D is just below 1: 1 from there on
            z = b.fmul(ax, ax)
            z2 = b.fmul(z, z)
            num, den = (self.poly(z, z2, coeffs) for coeffs in w.tanh_rational)
            th = b.fdiv(b.fmul(ax, num), den)  # rounding takes it to 1 + 2 ulp near the clamp: at most 1
            one = b.or_(b.fcmp_ordered(">=", ax, clamp), self.lt(self.c(1.0), th))
            th = b.select(one, self.c(1.0), th)
        return self.copysign(th, x)


def _unary_ir(method: str, w: _Width, nbtype):
    """An intrinsic computing ``_Emit(builder, w).<method>(x)`` for an ``nbtype`` x."""
    def typer(typingctx, x):
        if x != nbtype:
            return None

        def codegen(context, builder, sig, args):
            return getattr(_Emit(builder, w), method)(args[0])
        return nbtype(nbtype), codegen
    typer.__name__ = f"{method}{w.fty}"
    return intrinsic(typer)


exp64 = _unary_ir("exp", _W64, types.float64)
expm1_64 = _unary_ir("expm1", _W64, types.float64)
tanh64 = _unary_ir("tanh", _W64, types.float64)
exp32 = _unary_ir("exp", _W32, types.float32)
expm1_32 = _unary_ir("expm1", _W32, types.float32)
tanh32 = _unary_ir("tanh", _W32, types.float32)


# -- constants -------------------------------------------------------------------------------

_ROUND_SHIFT = 6755399441055744.0  # 1.5 * 2**52: adding it rounds |v| < 2**51 to an integer
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e+00  # pi/2 in four parts, the first three of 33 bits each
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_3 = 2.02226624871116645580e-21
_PIO2_4 = 8.47842766036889956997e-32
#: sin/cos range reduction above is accurate for |x| below this; larger x go to the C library
TRIG_LIMIT = 1.0e5
_TWO52 = 4503599627370496.0


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
ENTRY_POINTS = (sin64, cos64, sin32, cos32, fma_into)


def _attach_disk_cache() -> None:
    from arrayx.executors.numba import cache as _numba_cache
    from arrayx.executors.numba import kernels as K

    folder = K.cache_dir()
    if folder is not None:
        for fn in ENTRY_POINTS:
            _numba_cache.attach(fn, folder)


_attach_disk_cache()
