"""``arrayx.random``'s eager draws as Numba kernels: one pass, threefry2x32 and the transform per element.

Eagerly on the NumPy and Numba executors (with Numba installed) a draw is one loop over its
counters: each element's threefry2x32 hash, its float and the sampler's transform, written
once, instead of ~110 whole-array passes.  The values are the same bits as the arrayx
operations of ``arrayx.random`` (and so as ``jax.random``): the kernels do the same IEEE
operations in the same order, in the sampler's dtype, compiled with ``fastmath`` off (LLVM then
contracts nothing), and every multiply-add that XLA fuses (the Horner steps of erf^-1, of
log1p's rational approximation and of XLA's float32 log; uniform's ``u * span + min``) is an
explicit ``llvm.fma`` (``numba.math.fma``: correctly rounded everywhere, one instruction where
the CPU has FMA), where the arrayx operations emulate it.  Float64 log is the C library's
(``executors/libm.py``), as XLA's.

Besides the samplers (``kernel``, ``bits_kernel``, ``randint_kernel``: 64-bit remainders by
multiplying, ``randint_magic``) the draws from a set (``arrayx/_random_sampling.py``) have
``choice_kernel`` (the uniform, the query and jax.numpy.searchsorted's halvings per element),
``log_kernel`` (XLA's log of ``p``) and ``argsort_kernel`` (permutation's sort by its random
keys, a stable radix sort).

Kernels are generated per (sampler, dtype) into the Numba executor's kernel cache
(``kernels._cached``: a source file and Numba's disk cache in the verified folder) and compiled
on first use; they run on one thread without the GIL (``nogil``), so Dask's worker threads may
call them at once.

This module does not import Numba; ``kernel`` does (through ``kernels``).
"""
from __future__ import annotations

import math

import numpy as np

from arrayx.executors.numba import kernels as _kernels

__all__ = ["FLOAT_SAMPLERS", "kernel", "bits_kernel", "randint_kernel", "transform_kernel", "choice_kernel", "choice_guide",
           "log_kernel", "argsort_kernel", "run", "warm"]

#: samplers with a float kernel: (k0, k1, start, offset, out, lo, span, mode) -> None
FLOAT_SAMPLERS = ("uniform", "normal", "exponential", "gumbel", "gumbel_high")

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA


def _threefry_source() -> str:
    """threefry2x32 on 32-bit words held in uint64 (Numba widens uint32 arithmetic), unrolled."""
    lines = ["@njit(**_INLINE)", "def threefry(k0, k1, k2, x0, x1):", "    x0 = (x0 + k0) & M32",
             "    x1 = (x1 + k1) & M32"]
    ks = ("k0", "k1", "k2")
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            lines.append("    x0 = (x0 + x1) & M32")
            lines.append(f"    x1 = (((x1 << np.uint64({r})) | (x1 >> np.uint64({32 - r}))) & M32) ^ x0")
        lines.append(f"    x0 = (x0 + {ks[(i + 1) % 3]}) & M32")
        lines.append(f"    x1 = (x1 + {ks[(i + 2) % 3]} + np.uint64({i + 1})) & M32")
    lines.append("    return x0, x1")
    return "\n".join(lines) + "\n"


def _f(value: float, dtype: np.dtype) -> str:
    """A literal of ``dtype`` (rounded to it) in the generated source."""
    return f"T({float(dtype.type(value))!r})"


def _horner(name: str, coefficients, dtype: np.dtype) -> str:
    """``name(t)``: Horner's rule with an fma per step, coefficients rounded to ``dtype``."""
    body = [f"@njit(**_INLINE)", f"def {name}(t):", f"    p = {_f(coefficients[0], dtype)}"]
    body += [f"    p = nm.fma(p, t, {_f(c, dtype)})" for c in coefficients[1:]]
    body.append("    return p")
    return "\n".join(body) + "\n"


def _math_source(dtype: np.dtype, rm) -> str:
    """log, log1p and erf^-1 as XLA:CPU computes them, in ``dtype``; ``rm``: the module with their
    coefficients, ``arrayx._random_math`` (passed in: the executors do not import arrayx.random's modules)."""
    out = []
    if dtype == np.float32:
        for k, chain in enumerate(rm._LOG32_CHAINS):
            out.append(_horner(f"log_chain{k}", chain, dtype))
        out.append(f'''
TINY = {_f(rm._TINY32, dtype)}
SQRT_HALF = {_f(rm._SQRT_HALF32, dtype)}
LN2_HIGH = {_f(rm._LN2_HIGH, dtype)}
LN2_LOW = {_f(rm._LN2_LOW, dtype)}


@njit(**_INLINE)
def xla_log(x):
    """XLA:CPU's float32 log (Cephes' logf, its fmas), subnormal x read as zero."""
    if not (x >= TINY and x < T(np.inf)):
        if x < T(0.0):
            return T(np.nan)
        if x < TINY:
            return T(-np.inf)
        return x  # inf, NaN
    bits = nm.bits_of_f32(x)
    e = ((bits >> 23) & 0xFF) - 126  # x = m * 2**e, m in [0.5, 1)
    m = nm.f32_from_bits((bits & 0x7FFFFF) | (126 << 23))
    if m < SQRT_HALF:
        e -= 1
        r = (m - T(1.0)) + m  # 2m - 1, exact
    else:
        r = m - T(1.0)
    r2 = r * r
    r3 = r2 * r
    y = nm.fma(nm.fma(log_chain0(r), r3, log_chain1(r)), r3, log_chain2(r))
    e32 = T(e)
    y = nm.fma(y, r3, e32 * LN2_LOW)
    return ((r - T(0.5) * r2) + y) + e32 * LN2_HIGH
''')
    else:
        out.append('''
@njit(**_INLINE)
def xla_log(x):
    """XLA:CPU's float64 log: the C library's."""
    return c_log(x)
''')
    out.append(_horner("log1p_p", rm._LOG1P_P, dtype))
    out.append(_horner("log1p_q", rm._LOG1P_Q, dtype))
    out.append(f'''
@njit(**_INLINE)
def xla_log1p(x):
    if abs(x) < {_f(rm._SQRT2_MINUS_1, dtype)}:
        ratio = log1p_p(x) / log1p_q(x)
        z = x * x
        return x + (x * z * ratio - T(0.5) * z)
    return xla_log(x + T(1.0))


@njit(**_INLINE)
def log1p_is_near(x):
    return abs(x) < {_f(rm._SQRT2_MINUS_1, dtype)}


@njit(**_INLINE)
def log1p_near_or_argument(x):
    """xla_log1p(x) where it is a polynomial, else the argument x + 1 of its log (``log1p_finish``)."""
    if log1p_is_near(x):
        ratio = log1p_p(x) / log1p_q(x)
        z = x * x
        return x + (x * z * ratio - T(0.5) * z)
    return x + T(1.0)
''')
    pieces = rm._ERFINV32 if dtype == np.float32 else rm._ERFINV64
    for k, (_, _, coefficients) in enumerate(pieces):
        out.append(_horner(f"erf_inv_piece{k}", coefficients, dtype))
    branches = [f"    if w < {_f(pieces[0][0], dtype)}:\n        p = erf_inv_piece0(w - {_f(pieces[0][1], dtype)})"]
    for k, (bound, shift, _) in enumerate(pieces[1:], start=1):
        test = f"elif w < {_f(bound, dtype)}:" if bound != math.inf else "else:"
        branches.append(f"    {test}\n        p = erf_inv_piece{k}(np.sqrt(w) - {_f(shift, dtype)})")
    out.append(f'''
@njit(**_INLINE)
def xla_erf_inv(x):
    w = -xla_log1p(-(x * x))
{chr(10).join(branches)}
    if abs(x) == T(1.0):
        return T(np.inf) if x > T(0.0) else T(-np.inf)
    return p * x


@njit(**_INLINE)
def erf_inv_from_w(w, x):
    """xla_erf_inv(x) given its w = -log1p(-x * x)."""
{chr(10).join(branches)}
    if abs(x) == T(1.0):
        return T(np.inf) if x > T(0.0) else T(-np.inf)
    return p * x
''')
    return "\n".join(out)


_PRELUDE = '''
from numba import types

from arrayx.executors import libm as _libm
from arrayx.executors.numba import team as team
from arrayx.executors.numba import vectors as vec

_libm.register_log_symbol()
c_log = types.ExternalFunction(_libm.LOG_SYMBOL, types.float64(types.float64))

# fastmath off: no contraction, every operation rounded as written (the fmas are explicit)
_FLAGS = dict(cache=False, nogil=True, error_model="numpy", fastmath=False)
# the helpers are inlined by Numba itself, so that LLVM sees whole loops and vectorises them
_INLINE = dict(_FLAGS, inline="always")
M32 = np.uint64(0xFFFFFFFF)
PARITY = np.uint64(0x1BD11BDA)

'''

_FLOAT_BODY = '''

@njit(**_INLINE)
def unit(k0, k1, k2, c):
    """The [0, 1) float of counter c: its hash's high mantissa bits over 2**-nmant."""
    y0, y1 = threefry(k0, k1, k2, c >> np.uint64(32), c & M32)
{unit}


@njit(**_INLINE)
def affine(f, lo, span, mode):
    """max(lo, f * span + lo) as arrayx.random's _affine: 0 as is, 1 exact product, 2 one fma."""
    if mode == 0:
        return f
    u = f * span + lo if mode == 1 else nm.fma(f, span, lo)
    return u if u >= lo else lo


@njit(**_FLAGS)
def kernel(claims, k0, k1, start, offset, out, lo, span, mode):
{width}    # blocks of BLOCK values, claimed by the threads that enter (numba.team): in each, the hashes
    # in one loop and the transform in another, each vectorised (where the transform calls the C
    # library's log, that loop is scalar)
    k2 = k0 ^ k1 ^ PARITY
    n = out.size
    blocks = (n + BLOCK - 1) // BLOCK
    u = np.empty(BLOCK, T)
    v = np.empty(BLOCK, T)
    mine = 0
    b = team.claim(claims)
    while b < blocks:
        b0 = b * BLOCK
        m = min(BLOCK, n - b0)
        base = np.uint64(start + b0)
        o = out[b0:b0 + m]
{value}
        team.finish(claims)
        mine += 1
        b = team.claim(claims)
    return mine
'''

BLOCK = 1024

_UNIT = {
    "float32": "    return T((y0 ^ y1) >> np.uint64(9)) * T(2.0 ** -23)",
    # (through int64: the value is below 2**52, and int64 -> float64 vectorises)
    "float64": "    return T(np.int64(((y0 << np.uint64(32)) | y1) >> np.uint64(12))) * T(2.0 ** -52)",
}
_FILL = '''        for j in range(m):
            u[j] = affine(unit(k0, k1, k2, base + np.uint64(j)), lo, span, mode)
'''
#: sampler -> the loops that turn the block's uniforms u[:m] into o[:m] (v: scratch)
_TRANSFORMS = {
    "normal": '''        for j in range(m):
            o[j] = xla_erf_inv(u[j]) * SQRT2''',
    "exponential": '''        for j in range(m):
            o[j] = -xla_log1p(-u[j])''',
    "gumbel": '''        for j in range(m):
            o[j] = -xla_log(-xla_log(u[j]))''',
}
_VALUES = {
    "uniform": '''        for j in range(m):
            o[j] = affine(unit(k0, k1, k2, base + np.uint64(j)), lo, span, mode)''',
    # mode 'high': a second uniform (counter + offset) refines values below 0.5
    "gumbel_high": '''        second = base + np.uint64(offset)
        for j in range(m):
            u[j] = unit(k0, k1, k2, base + np.uint64(j))
            v[j] = unit(k0, k1, k2, second + np.uint64(j))
        for j in range(m):
            high = u[j]
            if not high >= T(0.5):
                high = (high + v[j] * EPS) + TINY_NORMAL
            o[j] = -xla_log(-xla_log1p(-high))''',
}

# Float64: XLA's log is the C library's, an external call that stops LLVM vectorising a loop, so
# log1p's polynomial (and erf^-1's pieces) run in vectorised loops and its log in a scalar loop
# over the elements that need it.
_LOG1P_SPLIT = '''        for j in range(m):
            v[j] = log1p_near_or_argument({a})
        for j in range(m):
            if not log1p_is_near({a}):
                v[j] = xla_log(v[j])
'''
_TRANSFORMS64 = {
    "normal": _LOG1P_SPLIT.format(a="-(u[j] * u[j])") + '''        for j in range(m):
            o[j] = erf_inv_from_w(-v[j], u[j]) * SQRT2''',
    "exponential": _LOG1P_SPLIT.format(a="-u[j]") + '''        for j in range(m):
            o[j] = -v[j]''',
}


def _transforms(dtype: np.dtype) -> dict:
    return {**_TRANSFORMS, **_TRANSFORMS64} if dtype == np.float64 else _TRANSFORMS


def _constants(dtype: np.dtype) -> str:
    info = np.finfo(dtype)
    return (f"\nSQRT2 = {_f(math.sqrt(2), dtype)}\nEPS = {_f(2.0 ** -info.nmant, dtype)}\n"
            f"TINY_NORMAL = {_f(float(info.tiny), dtype)}\nBLOCK = {BLOCK}\n")


#: draws of fewer values run on the calling thread alone (waking the team costs ~50 us)
TEAM_MIN = 1 << 15
_warm: set = set()  # kernels already compiled for their (only) signature


def warm(kernel, *args) -> None:
    """Compile ``kernel`` for ``args`` (on this thread, never in a worker), running no block."""
    if kernel not in _warm:
        from arrayx.executors.numba import team as _team

        kernel(_team.claimed_claims(), *args)
        _warm.add(kernel)


def run(kernel, out: np.ndarray, *args) -> None:
    """``kernel(claims, *args, out, ...)``-style call of one of this module's kernels over ``out``: its
    blocks claimed by the calling thread and, for large draws, the Numba executor's team of threads
    (``numba.team``; one thread where ``ARRAYX_NUMBA_PARALLEL=0``).  ``args`` are the kernel's
    arguments after ``claims`` (``out`` among them)."""
    from arrayx.core.executor import get
    from arrayx.executors.numba import team as _team

    warm(kernel, *args)
    blocks = -(-out.size // BLOCK)
    crew = get("numba")._team(blocks) if out.size >= TEAM_MIN else None
    if crew is None:
        kernel(_team.new_claims(), *args)
    else:
        crew.run(kernel, blocks, args)


def _width() -> str:
    """The kernel's first line asking for 512-bit vector loops where the CPU runs them at full speed."""
    from arrayx.executors.numba.vectors import kernel_line

    return kernel_line()


def kernel(sampler: str, dtype: np.dtype, tables):
    """``kernel(k0, k1, start, offset, out, lo, span, mode)``: ``out[i]`` = ``sampler``'s value of
    counter ``start + i`` (uint64 key words; ``lo``/``span`` of ``dtype``, ``mode`` as ``affine``;
    ``offset``: the second counter's distance, gumbel_high only).  ``tables``: ``arrayx._random_math``,
    whose coefficients the kernel evaluates."""
    dtype = np.dtype(dtype)

    def make():
        transforms = _transforms(dtype)
        value = _FILL + transforms[sampler] if sampler in transforms else _VALUES[sampler]
        text = (_kernels._HEADER.format(what=f"random {sampler}", dtype=dtype.name, acc=dtype.name) + _PRELUDE
                + _threefry_source() + "\n" + _math_source(dtype, tables) + _constants(dtype)
                + _FLOAT_BODY.format(unit=_UNIT[dtype.name], value=value, width=_width()))
        return f"random_{sampler}_{dtype.name}", text
    return _kernels._cached(("random", sampler, dtype), make)


_BITS_BODY = '''

@njit(**_FLAGS)
def kernel(claims, k0, k1, start, out):
{width}    k2 = k0 ^ k1 ^ PARITY
    n = out.size
    blocks = (n + BLOCK - 1) // BLOCK
    mine = 0
    b = team.claim(claims)
    while b < blocks:
        b0 = b * BLOCK
        m = min(BLOCK, n - b0)
        base = np.uint64(start + b0)
        o = out[b0:b0 + m]
        for j in range(m):
            c = base + np.uint64(j)
            y0, y1 = threefry(k0, k1, k2, c >> np.uint64(32), c & M32)
{value}
        team.finish(claims)
        mine += 1
        b = team.claim(claims)
    return mine
'''


def bits_kernel(dtype: np.dtype):
    """``kernel(k0, k1, start, out)``: random bits of counters ``start + i`` as ``arrayx.random.bits``
    lays them out (64 bits: the two words; fewer: their xor, truncated)."""
    dtype = np.dtype(dtype)

    def make():
        if dtype.itemsize == 8:
            value = "            o[j] = (y0 << np.uint64(32)) | y1"
        else:
            value = f"            o[j] = T((y0 ^ y1) & np.uint64({2 ** (8 * dtype.itemsize) - 1}))"
        text = (_kernels._HEADER.format(what="random bits", dtype=dtype.name, acc=dtype.name) + _PRELUDE
                + f"BLOCK = {BLOCK}\n" + _threefry_source() + _BITS_BODY.format(value=value, width=_width()))
        return f"random_bits_{dtype.name}", text
    return _kernels._cached(("random_bits", dtype), make)


_TRANSFORM_BODY = '''

@njit(**_FLAGS)
def kernel(units, out):
{width}    n = out.size
    v = np.empty(BLOCK, T)
    for b0 in range(0, n, BLOCK):
        m = min(BLOCK, n - b0)
        u = units[b0:b0 + m]
        o = out[b0:b0 + m]
{value}
'''


def transform_kernel(sampler: str, dtype: np.dtype, tables):
    """``kernel(units, out)``: the transform of ``sampler`` ("normal", "exponential" or "gumbel") applied
    to given uniforms (the draw's ``u`` after its bounds), the same loops as in ``kernel``: to check
    them on chosen inputs (every float32 uniform, in tests/test_random_kernels.py)."""
    dtype = np.dtype(dtype)

    def make():
        text = (_kernels._HEADER.format(what=f"random {sampler} transform", dtype=dtype.name, acc=dtype.name)
                + _PRELUDE + _math_source(dtype, tables) + _constants(dtype)
                + _TRANSFORM_BODY.format(value=_transforms(dtype)[sampler], width=_width()))
        return f"random_{sampler}_transform_{dtype.name}", text
    return _kernels._cached(("random_transform", sampler, dtype), make)


_RANDINT_BODY = '''

@njit(**_INLINE)
def bits(k0, k1, k2, c):
    y0, y1 = threefry(k0, k1, k2, c >> np.uint64(32), c & M32)
{bits}


{urem}


@njit(**_FLAGS)
def kernel(claims, a0, a1, b0, b1, start, out, lo, span, multiplier{params}):
{width}    # blocks claimed by the threads that enter: both hashes in one vectorised loop, the modular
    # arithmetic in another
    a2 = a0 ^ a1 ^ PARITY
    b2 = b0 ^ b1 ^ PARITY
    n = out.size
    blocks = (n + BLOCK - 1) // BLOCK
    hs = np.empty(BLOCK, np.uint64)
    ls = np.empty(BLOCK, np.uint64)
    mine = 0
    b = team.claim(claims)
    while b < blocks:
        q0 = b * BLOCK
        m = min(BLOCK, n - q0)
        base = np.uint64(start + q0)
        o = out[q0:q0 + m]
        for j in range(m):
            hs[j] = bits(a0, a1, a2, base + np.uint64(j))
            ls[j] = bits(b0, b1, b2, base + np.uint64(j))
        for j in range(m):
            offset = urem(((urem(hs[j], span{args}) * multiplier) & MASK) + urem(ls[j], span{args}) & MASK,
                          span{args})
            o[j] = T((lo + offset) & MASK)
        team.finish(claims)
        mine += 1
        b = team.claim(claims)
    return mine
'''


_UREM64 = '''@njit(**_INLINE)
def urem(a, b):
    """a % b with XLA's convention a % 0 == a."""
    return a if b == np.uint64(0) else a % b'''
# 32-bit operands: the quotient in float64 (off by at most one: |a / b| < 2**32, relative error
# 2**-53), corrected once; LLVM vectorises this, not an integer division
_UREM32 = '''@njit(**_INLINE)
def urem(a, b):
    """a % b for a, b < 2**32 (held in uint64), with XLA's convention a % 0 == a."""
    if b == np.uint64(0):
        return a
    ia, ib = np.int64(a), np.int64(b)
    r = ia - np.int64(np.floor(np.float64(ia) / np.float64(ib))) * ib
    if r < 0:
        r += ib
    elif r >= ib:
        r -= ib
    return np.uint64(r)'''


# 64-bit operands, a span of 2 or more: the remainder by the span's reciprocal (Granlund and
# Montgomery's division by invariant integers, rounding up, with the 65th bit of the multiplier
# added back), q = (t + ((a - t) >> 1)) >> shift with t the high word of a * magic; exact for every
# 64-bit a, and vectorised, where a 64-bit integer division is not (measured 1.8 ms against 23-45 ms
# for a million values' three remainders)
_UREM64_MAGIC = """@njit(**_INLINE)
def high_word(a, b):
    \"\"\"The high 64 bits of the 128-bit product a * b, from 32-bit halves.\"\"\"
    a0, a1 = a & M32, a >> np.uint64(32)
    b0, b1 = b & M32, b >> np.uint64(32)
    low = a0 * b0
    mid = a1 * b0 + (low >> np.uint64(32))
    mid2 = a0 * b1 + (mid & M32)
    return a1 * b1 + (mid >> np.uint64(32)) + (mid2 >> np.uint64(32))


@njit(**_INLINE)
def urem(a, b, magic, shift):
    \"\"\"a % b for b >= 2 (``magic``, ``shift``: ``randint_magic(b)``).\"\"\"
    t = high_word(a, magic)
    return a - ((t + ((a - t) >> np.uint64(1))) >> shift) * b"""


def randint_magic(span: int) -> tuple:
    """(magic, shift) of ``_UREM64_MAGIC`` for a 64-bit ``span`` >= 2: with s = ceil(log2(span)),
    magic = floor(2**(64 + s) / span) + 1 - 2**64 and shift = s - 1."""
    s = (int(span) - 1).bit_length()
    return np.uint64(((1 << (64 + s)) // int(span) + 1) - (1 << 64)), np.uint64(s - 1)


def randint_kernel(dtype: np.dtype, magic: bool = False):
    """``kernel(a0, a1, b0, b1, start, out, lo, span, multiplier)``: ``arrayx.random.randint``'s values of
    counters ``start + i`` for an integer ``dtype`` of 32 or 64 bits: twice the bits per value (keys
    ``a`` and ``b``, the halves of ``split(key)``), reduced modulo ``span`` as JAX does; ``lo``, ``span``
    and ``multiplier`` (``2**nbits % span``, squared, mod ``span``) as uint64 words, arithmetic wraps
    at the dtype's width.  ``magic`` (64-bit dtypes, span >= 2): the kernel that takes two more
    arguments, ``randint_magic(span)``, and divides by multiplying."""
    dtype = np.dtype(dtype)
    nbits = dtype.itemsize * 8
    magic = bool(magic) and nbits == 64

    def make():
        value = ("    return (y0 << np.uint64(32)) | y1" if nbits == 64 else "    return y0 ^ y1")
        urem = _UREM64_MAGIC if magic else _UREM64 if nbits == 64 else _UREM32
        extra = ", magic, shift" if magic else ""
        mask = 2 ** nbits - 1
        text = (_kernels._HEADER.format(what="random randint", dtype=dtype.name, acc=dtype.name) + _PRELUDE
                + f"MASK = np.uint64({mask})\nBLOCK = {BLOCK}\n" + _threefry_source()
                + _RANDINT_BODY.format(bits=value, urem=urem, width=_width(), params=extra, args=extra))
        return f"random_randint_{dtype.name}" + ("_magic" if magic else ""), text
    return _kernels._cached(("random_randint", dtype, magic), make)


_CHOICE_BODY = '''

@njit(**_INLINE)
def unit(k0, k1, k2, c):
    y0, y1 = threefry(k0, k1, k2, c >> np.uint64(32), c & M32)
{unit}


@njit(**_FLAGS)
def kernel(claims, k0, k1, start, out, cum, total, starts, scale, levels):
{width}    # per block: the query total * (1 - u) of each counter, its guide bucket (the index range
    # [starts[g], starts[g + 1]] that holds its answer), then `levels` halvings of that range as
    # jax.numpy.searchsorted's "scan" method does them (mid = low + (high - low) // 2, left when
    # query <= cum[mid]), one level at a time over the block so that the searches run side by side
    k2 = k0 ^ k1 ^ PARITY
    n = out.size
    buckets = starts.size - 1
    blocks = (n + BLOCK - 1) // BLOCK
    q = np.empty(BLOCK, T)
    low = np.empty(BLOCK, np.int64)
    high = np.empty(BLOCK, np.int64)
    mine = 0
    b = team.claim(claims)
    while b < blocks:
        b0 = b * BLOCK
        m = min(BLOCK, n - b0)
        base = np.uint64(start + b0)
        for j in range(m):  # (the hashes vectorise in a loop of their own)
            q[j] = total * (T(1.0) - unit(k0, k1, k2, base + np.uint64(j)))
        for j in range(m):
            x = np.float64(q[j]) * scale
            g = np.int64(x) if x < buckets else buckets - 1  # (NaN: the last bucket)
            low[j] = starts[g]
            high[j] = starts[g + 1]
        for _ in range(levels):
            for j in range(m):  # branch-free; mid < high <= cum.size, or mid == low < cum.size (a query is
                # at most total = cum[-1], so its bucket starts below cum.size)
                lo, hi = low[j], high[j]
                mid = (lo + hi) >> 1  # = low + (high - low) // 2
                left = q[j] <= cum[mid]
                high[j] = mid if left else hi
                low[j] = lo if left else mid
        for j in range(m):
            out[b0 + j] = high[j]
        team.finish(claims)
        mine += 1
        b = team.claim(claims)
    return mine
'''


def choice_guide(cum: np.ndarray) -> tuple:
    """(starts, scale, levels) of ``choice_kernel`` for ``cum`` (1-d, no NaN).  Sorted, from zero up,
    with a finite positive total: buckets of the query by ``int(query * scale)`` (float64, monotone in
    the query, so a query's answer, the count of ``cum`` below it, lies between the counts of ``cum``
    values in lower buckets and in buckets up to its own: ``starts``), and enough halvings for the
    fullest bucket; else one bucket [0, cum.size] and jax.numpy.searchsorted's own halvings, whose
    answer that is for any ``cum``."""
    n = cum.size
    total = float(cum[-1])
    if n >= 64 and cum[0] >= 0 and 0 < total < math.inf and bool(np.all(cum[1:] >= cum[:-1])):
        buckets = 1 << min(16, (2 * n - 1).bit_length())
        scale = buckets / total
        which = np.minimum((cum.astype(np.float64) * scale).astype(np.int64), buckets - 1)
        starts = np.searchsorted(which, np.arange(buckets + 1), side="left").astype(np.int64)
        return starts, scale, int(np.diff(starts).max()).bit_length()
    return np.array([0, n], np.int64), 0.0, n.bit_length()


def choice_kernel(dtype: np.dtype):
    """``kernel(k0, k1, start, out, cum, total, starts, scale, levels)``: ``out[i]`` (int64) =
    jax.numpy.searchsorted(cum, total * (1 - u)) (side left) with ``u`` the [0, 1) uniform of counter
    ``start + i`` and ``cum`` of float ``dtype`` without NaN: ``arrayx.random.choice`` with probabilities,
    with replacement; ``starts``, ``scale``, ``levels`` from ``choice_guide(cum)``."""
    dtype = np.dtype(dtype)

    def make():
        text = (_kernels._HEADER.format(what="random choice", dtype=dtype.name, acc=dtype.name) + _PRELUDE
                + f"BLOCK = {BLOCK}\n" + _threefry_source()
                + _CHOICE_BODY.format(unit=_UNIT[dtype.name], width=_width()))
        return f"random_choice_{dtype.name}", text
    return _kernels._cached(("random_choice", dtype), make)


_LOG_BODY = '''

@njit(**_FLAGS)
def kernel(claims, x, out):
{width}    n = out.size
    blocks = (n + BLOCK - 1) // BLOCK
    mine = 0
    b = team.claim(claims)
    while b < blocks:
        b0 = b * BLOCK
        for j in range(b0, min(b0 + BLOCK, n)):
            v = x[j]
{flush}            out[j] = xla_log(v)
        team.finish(claims)
        mine += 1
        b = team.claim(claims)
    return mine
'''


def log_kernel(dtype: np.dtype, tables):
    """``kernel(x, out)`` (through ``run``): XLA:CPU's log of each ``x`` (float32: its own, float64: the C
    library's), subnormal operands read as zero, the values of ``arrayx._random_sampling._xla_log_daz``'s arrayx
    operations (``arrayx.random.choice``'s log(p) without replacement)."""
    dtype = np.dtype(dtype)

    # float64: the C library's log after reading subnormal operands (either sign) as zero; float32's
    # xla_log reads positive ones as zero and gives NaN below zero, as the arrayx operations do
    flush = ("            if abs(v) < TINY_NORMAL:  # subnormal or zero: -inf (NaN passes on)\n"
             "                v = T(0.0)\n") if dtype == np.float64 else ""

    def make():
        text = (_kernels._HEADER.format(what="random log", dtype=dtype.name, acc=dtype.name) + _PRELUDE
                + _math_source(dtype, tables) + _constants(dtype) + _LOG_BODY.format(width=_width(), flush=flush))
        return f"random_log_{dtype.name}", text
    return _kernels._cached(("random_log", dtype), make)


_ARGSORT_BODY = '''

@njit(**_FLAGS)
def kernel(claims, keys, out):
    # on the one thread that claims chunk 0: three passes of 11 bits, least significant first, each
    # a stable counting scatter of (key, index) pairs, so the order is a stable sort's
    if team.claim(claims) != 0:
        return 0
    n = keys.size
    counts = np.zeros((3, 2049), np.int64)
    for i in range(n):
        k = np.int64(keys[i])
        counts[0, (k & 2047) + 1] += 1
        counts[1, ((k >> 11) & 2047) + 1] += 1
        counts[2, (k >> 22) + 1] += 1
    for d in range(3):
        for b in range(2048):
            counts[d, b + 1] += counts[d, b]
    key_a = keys.copy()
    key_b = np.empty_like(keys)
    index_a = np.arange(n)
    index_b = np.empty(n, np.int64)
    for d in range(3):
        shift = 11 * d
        for i in range(n):
            k = key_a[i]
            digit = (np.int64(k) >> shift) & 2047
            at = counts[d, digit]
            counts[d, digit] = at + 1
            key_b[at] = k
            index_b[at] = index_a[i]
        key_a, key_b = key_b, key_a
        index_a, index_b = index_b, index_a
    out[:] = index_a
    team.finish(claims)
    return 1
'''


def argsort_kernel():
    """``kernel(claims, keys, out)``: ``out`` (int64) = the stable argsort of the uint32 ``keys`` (1-d), a
    radix sort on the thread that claims chunk 0 of ``claims`` (``team.new_claims()``; not ``run``):
    ``arrayx.random.permutation``'s sort by random keys."""
    def make():
        text = (_kernels._HEADER.format(what="random argsort", dtype="uint32", acc="uint32") + _PRELUDE
                + _ARGSORT_BODY)
        return "random_argsort_uint32", text
    return _kernels._cached(("random_argsort",), make)
