"""Counter-based pseudo-random numbers: explicit keys and the threefry2x32 hash, as in ``jax.random``.

A key is a plain arrayx ``uint32`` array of shape ``(2,)``.  ``key(seed)`` and
``PRNGKey(seed)`` both return one (arrayx has no separate key dtype, so a key
moves through ``grad``, ``vmap``, ``jit`` and pytrees like any integer array).
Samplers never change a key: derive fresh keys with ``split`` or ``fold_in``.

    >>> import arrayx as xp
    >>> k = xp.random.key(0)
    >>> k1, k2 = xp.random.split(k)
    >>> x = xp.random.normal(k1, (3,))            # float64, like jax with x64 enabled

Compatibility with ``jax.random``
    Everything is written once, in arrayx operations on ``uint32`` arrays (add
    wraps, rotations are two shifts and an or), with no host round-trip on data,
    so every executor produces the same bits, and the transforms can stage it.
    (Eagerly on the NumPy and Numba executors a draw is one Numba kernel that hashes each
    counter and applies the sampler's transform in the same loop, the same IEEE operations
    and XLA's fmas: same values; without Numba, the arrayx operations in cache-sized slices
    of the counter range.  See ``KERNELS`` below.  Eagerly on the jax executor a draw is one
    compiled XLA program of those operations, its Python number parameters among its inputs:
    ``arrayx/_random_programs.py``.)
    The bits equal those of ``jax.random`` with its default ``threefry2x32``
    implementation and JAX 0.10's default ``jax_threefry_partitionable=True``:
    element ``i`` (row-major) of an array of random bits is the hash of the
    counter pair ``(i >> 32, i & 0xffffffff)``, so a value does not depend on the
    shape it was drawn with.  ``threefry_partitionable(False)`` selects JAX's
    older layout (one flat run of counters split into halves).  Defaults follow
    JAX with 64-bit types enabled: float64 for floats, int64 for ``randint``,
    uint64 for ``bits``.

    Bit for bit (tested against JAX): ``key``/``PRNGKey``, ``split``, ``fold_in``,
    ``bits``, ``uniform`` (float32 and float64, any bounds: XLA fuses
    ``u * (maxval - minval) + minval`` into an fma, which is emulated exactly),
    ``normal`` (real and complex) and ``exponential`` (float32 and float64: XLA
    evaluates the erf^-1 and log1p polynomials with fused multiply-adds and has its
    own float32 ``log``; both are emulated), ``randint``, ``bernoulli``,
    ``permutation``, ``choice``, ``gumbel`` (every mode) and ``categorical``.  ``truncated_normal`` uses JAX's formula and agrees to ~1e-13
    (float64) or ~1e-6 (float32): JAX computes the erf of its bounds its own way (on the jax
    executor that is XLA's erf, so there it is bit for bit too).  Under ``jit`` and ``vmap`` the
    values are the same bits as eagerly (tests/test_random_jit.py).
    In float16 and bfloat16 (8 random bits per bfloat16 value, as in JAX) every float sampler,
    truncated_normal included, and bernoulli's, categorical's and choice's 16-bit parameters give
    jax.random's bits on every executor: XLA:CPU rounds 16-bit arithmetic after each operation and
    evaluates log, log1p, erf and erf^-1 in float32, which arrayx follows (``_random_math``; the
    measurements are in tests/test_random_half.py).

Seeds
    A Python int in [-2**63, 2**63) (its 64-bit two's complement is split into
    two 32-bit words), a NumPy integer scalar, or a 0-d integer arrayx array;
    seeds of 32 bits or fewer use a zero high word, as in JAX.
"""
from __future__ import annotations

import contextlib
import math
import sys
from contextvars import ContextVar

import numpy as np

from arrayx import api as xp
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._device_dtypes import for_array as _defaults_of
from arrayx.api._checks import check_size, shape_arg
from arrayx.core.primitives import current_trace
from arrayx import _random_math
from arrayx import _random_programs as _programs
from arrayx import _random_sampling as _sampling
from arrayx._random_math import affine_bfloat16, divide_bfloat16, erf, erf_inv, flush_bfloat16, fma, log, log1p

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "threefry_partitionable",
    "bits", "uniform", "normal", "randint", "bernoulli", "categorical", "choice", "permutation",
    "gumbel", "truncated_normal", "exponential", "threefry2x32",
]

from arrayx._threefry import (  # noqa: E402  the bit generator (threefry2x32, counters, draws)
    _PARTITIONABLE, _U32, _U64, _UINT_OF_BITS, _bits_range, _draw, _hash_flat, _hash_pairs, _hash_range,
    threefry2x32, threefry_partitionable, values_partitionable,
)
from arrayx._threefry import _random_bits as _threefry_random_bits  # noqa: E402
from arrayx._random_checks import (  # noqa: E402  argument checks
    _check_key, _check_shape, _float_dtype, _float_param, _shape_of,
)

# -- eager draws as one compiled loop (NumPy and Numba executors) -----------------------------------
# Eagerly on the NumPy and Numba executors, with Numba installed, a draw is one Numba kernel
# (arrayx/executors/numba/random_kernels.py): each element's threefry2x32 hash and the
# sampler's transform in one loop, the same IEEE operations (and XLA's fmas, as llvm.fma), so
# the same bits as the arrayx operations below, which every other case runs: under a transform
# (jit, vmap, grad, make_graph), on the other executors, in threefry_partitionable(False), and
# without Numba (then the NumPy executor runs them in cache-sized slices, ``_draw``).
# ``KERNELS = False`` switches the kernels off (to measure or compare the two routes).
KERNELS = True
_KERNEL_EXECUTORS = frozenset({"numpy", "numba"})
_KERNEL_FLOATS = frozenset({_dtypes.float32, _dtypes.float64})  # (float16 draws: the arrayx operations)
_numba_found: bool | None = None
_kernel_problem: str | None = None  # why the kernels failed to build, once they did


def _kernel_route(key: Array) -> bool:
    """Whether this draw runs as a compiled kernel (see above)."""
    global _numba_found
    if not KERNELS or _kernel_problem is not None or current_trace() is not None or not _PARTITIONABLE.get():
        return False
    if key._ex.name not in _KERNEL_EXECUTORS or not isinstance(key._buf, np.ndarray):
        return False
    if _numba_found is None:
        import importlib.util

        _numba_found = importlib.util.find_spec("numba") is not None
    return _numba_found


def _kernel_call(build, *args, whole: bool = False) -> bool:
    """Run the kernel that ``build()`` returns on ``args`` (its output among them: the one array of
    them that is written, ``random_kernels.run``; ``whole``: one call on this thread, for kernels that
    are not split in blocks); False (after one warning) if it cannot be built."""
    global _kernel_problem
    from arrayx.executors.numba import random_kernels

    try:
        fn = build()
        out = next(a for a in args if isinstance(a, np.ndarray))
        random_kernels.warm(fn, *args)  # compiled here, so that a failure is caught
    except Exception as e:  # a broken Numba/LLVM install: the arrayx operations give the same bits
        _kernel_problem = f"{type(e).__name__}: {e}"
        import warnings

        warnings.warn(f"arrayx.random: eager draws run as arrayx operations (several times slower) because "
                      f"their Numba kernels failed to build ({_kernel_problem}); reinstall Numba for speed",
                      RuntimeWarning, stacklevel=4)
        return False
    if whole:
        from arrayx.executors.numba import team

        fn(team.new_claims(), *args)
    else:
        random_kernels.run(fn, out, *args)
    return True


def _key_words(key: Array) -> tuple:
    words = np.asarray(key._buf)
    return np.uint64(words[0]), np.uint64(words[1])


def _scalar_of(value, dtype):
    """A bound as a NumPy scalar of ``dtype`` (Python numbers, NumPy scalars, 0-d host arrays), else None."""
    if isinstance(value, Array):
        if value.ndim or not isinstance(value._buf, np.ndarray):
            return None
        value = value._buf[()]
    return dtype.type(value)


def _affine_mode(lo, hi, dtype, always_fma: bool = False):
    """(lo, span, mode) of ``_affine`` for scalar bounds (mode 0: as is, 1: exact product, 2: fma),
    or None where a bound or the span is not finite (the kernels assume finite ones)."""
    lo, span = dtype.type(lo), dtype.type(hi) - dtype.type(lo)
    if not (np.isfinite(lo) and np.isfinite(span)):
        return None
    if always_fma:
        return lo, span, 2
    if span == 1 and lo == 0 and not np.signbit(lo):
        return lo, span, 0
    if span == 0 or abs(math.frexp(float(span))[0]) == 0.5:
        return lo, span, 1
    return lo, span, 2


def _kernel_floats(sampler: str, key: Array, shape: tuple, dtype, lo=0.0, hi=1.0, *,
                   always_fma: bool = False, offset: int = 0):
    """``sampler``'s values over ``shape`` from its kernel, or None where the kernels do not apply."""
    if dtype not in _KERNEL_FLOATS or not _kernel_route(key):
        return None
    params = _affine_mode(lo, hi, dtype, always_fma)
    if params is None:
        return None
    from arrayx.executors.numba import random_kernels

    out = np.empty(math.prod(shape), dtype)
    if not _kernel_call(lambda: random_kernels.kernel(sampler, dtype, _random_math), *_key_words(key), 0, offset, out, *params):
        return None
    return Array._new(out.reshape(shape), key._ex)


def _random_bits(key: Array, bit_width: int, shape: tuple) -> Array:
    """Random unsigned integers of ``bit_width`` bits and the given shape (no argument checks)."""
    if _kernel_route(key):
        from arrayx.executors.numba import random_kernels

        dtype = _UINT_OF_BITS[bit_width]
        out = np.empty(math.prod(shape), dtype)
        if _kernel_call(lambda: random_kernels.bits_kernel(dtype), *_key_words(key), 0, out):
            return Array._new(out.reshape(shape), key._ex)
    return _threefry_random_bits(key, bit_width, shape)



# -- keys ---------------------------------------------------------------------------------------------

def _seed_words(fname: str, seed):
    """(high, low) words of a host seed, or None when the seed is an arrayx array."""
    if isinstance(seed, Array):
        return None
    if isinstance(seed, (float, complex, np.floating, np.complexfloating)):
        raise TypeError(f"{fname}: seed must be an integer, got {type(seed).__name__} {seed!r}; pass int(seed)")
    if isinstance(seed, int):  # Python ints (and bools) are taken as int64, as JAX does
        if not -2**63 <= seed < 2**63:
            raise OverflowError(f"{fname}: seed {seed} does not fit in 64 bits; use a seed in [-2**63, 2**63)")
        bits = 64
        value = seed
    elif isinstance(seed, (np.integer, np.ndarray)):
        arr = np.asarray(seed)
        if arr.ndim:
            raise TypeError(
                f"{fname}: seed must be a scalar, got an array of shape {arr.shape}; use arrayx.vmap for batches"
            )
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{fname}: seed must be an integer, got dtype {arr.dtype}")
        bits = 64 if arr.dtype.itemsize == 8 else 32
        value = int(arr)
    else:
        raise TypeError(
            f"{fname}: seed must be an int or a 0-d integer arrayx array, got {type(seed).__name__}"
        )
    value %= 2**bits
    return (value >> 32, value & 0xFFFFFFFF)


def _seed_key(fname: str, seed, device) -> Array:
    words = _seed_words(fname, seed)
    if words is not None:
        return xp.asarray(np.array(words, dtype=np.uint32), device=device)
    if seed.ndim:
        raise TypeError(
            f"{fname}: seed must be a scalar, got an array of shape {seed.shape}; use arrayx.vmap for batches"
        )
    if seed.dtype.kind not in "iu":
        raise TypeError(f"{fname}: seed must have an integer dtype, got {seed.dtype}")
    if device is not None:
        seed = xp.asarray(seed, device=device)
    low = xp.astype(seed, _U32)  # two's complement truncation
    high = xp.astype(seed >> 32, _U32) if seed.dtype.itemsize == 8 else xp.zeros_like(low)
    return xp.stack([high, low])


def PRNGKey(seed, *, device=None) -> Array:
    """A key (a ``uint32`` array of shape (2,)) from an integer seed, as ``jax.random.PRNGKey``.

    >>> PRNGKey(42)
    Array([ 0, 42], dtype=uint32, device=numpy:cpu)
    """
    return _seed_key("PRNGKey", seed, device)


def key(seed, *, device=None) -> Array:
    """A key from an integer seed.  Same as :func:`PRNGKey`: arrayx keys are raw ``uint32[2]`` arrays.

    See also: ``split``, ``fold_in``.
    """
    return _seed_key("key", seed, device)


def key_data(keys) -> Array:
    """The ``uint32`` words of a key or a batch of keys (the key itself: keys are raw arrays here)."""
    if not isinstance(keys, Array) or keys.dtype != _U32 or keys.ndim < 1 or keys.shape[-1] != 2:
        raise TypeError(f"key_data: expected keys (a uint32 array of shape (..., 2)), got {_describe(keys)}")
    return keys


def wrap_key_data(key_bits_array) -> Array:
    """Keys from their ``uint32`` words (identity after checking the shape and dtype)."""
    if not isinstance(key_bits_array, Array) or key_bits_array.dtype != _U32 or key_bits_array.shape[-1:] != (2,):
        raise TypeError(
            f"wrap_key_data: expected a uint32 array of shape (..., 2), got {_describe(key_bits_array)}"
        )
    return key_bits_array


def _describe(v) -> str:
    return f"{v.dtype} array of shape {v.shape}" if isinstance(v, Array) else type(v).__name__


def split(key, num: int | tuple = 2) -> Array:
    """``num`` new keys (shape ``(num, 2)``; a tuple ``num`` gives shape ``(*num, 2)``).

    >>> k1, k2 = split(key(0))
    """
    key = _check_key("split", key)
    dims = tuple(num) if isinstance(num, (tuple, list)) else (num,)
    shape = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"split: num must be a non-negative int or a tuple of them, got {num!r}")
        if d < 0:
            raise ValueError(f"split: num must be non-negative, got {num!r}")
        shape.append(int(d))
    return _programs.draw(_split, key, tuple(shape))


def _split(key: Array, shape: tuple) -> Array:
    if not _PARTITIONABLE.get():
        counts = xp.arange(2 * math.prod(shape), dtype=_U32, device=key.device)
        return xp.reshape(_hash_flat(key, counts), (*shape, 2))
    if _kernel_route(key):  # the two words of each counter's hash, from the 64-bit bits kernel
        from arrayx.executors.numba import random_kernels

        words = np.empty(math.prod(shape), np.uint64)
        if _kernel_call(lambda: random_kernels.bits_kernel(_U64), *_key_words(key), 0, words):
            pairs = np.stack([(words >> np.uint64(32)).astype(np.uint32), words.astype(np.uint32)], axis=-1)
            return Array._new(pairs.reshape((*shape, 2)), key._ex)
    y1, y2 = _hash_range(key, 0, math.prod(shape))
    return xp.reshape(xp.stack([y1, y2], axis=-1), (*shape, 2))


def fold_in(key, data) -> Array:
    """A new key that depends on ``key`` and the 32-bit integer ``data`` (an int in [0, 2**32) or a 0-d integer array).

    >>> k = fold_in(key(0), 7)
    """
    key = _check_key("fold_in", key)
    if isinstance(data, Array):
        if data.ndim:
            raise TypeError(f"fold_in: data must be a scalar, got shape {data.shape}; use arrayx.vmap for batches")
        if data.dtype.kind not in "iu":
            raise TypeError(f"fold_in: data must be an integer, got dtype {data.dtype}")
        word = data
    elif isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
        if not 0 <= int(data) < 2**32:
            raise OverflowError(f"fold_in: data {int(data)} is out of bounds for uint32 [0, 2**32)")
        word = np.uint32(data) if _programs.route(key) else int(data)  # (a program's input, not its constant)
    else:
        raise TypeError(f"fold_in: data must be an int or a 0-d integer arrayx array, got {type(data).__name__}")
    return _programs.draw(_fold_in, key, word)


def _fold_in(key: Array, word) -> Array:
    if isinstance(word, Array) and word.dtype != _U32:
        word = xp.astype(word, _U32)  # wraps, as JAX's conversion does
    y1, y2 = _hash_pairs(key, 0, word)
    return xp.stack([y1, y2])


# -- samplers -------------------------------------------------------------------------------------------

def bits(key, shape=(), dtype=None) -> Array:
    """Uniformly random unsigned integers (default dtype uint64).

    >>> bits(key(0), (2,), xp.uint32)
    Array([4070199207, 4202968722], dtype=uint32, device=numpy:cpu)
    """
    key = _check_key("bits", key)
    shape = shape_arg("bits", shape)
    dt = _U64 if dtype is None else _dtypes.as_dtype(dtype, "bits")
    check_size("bits", shape, dt, key._ex)
    if dt.kind != "u":
        raise TypeError(f"bits: dtype must be an unsigned integer dtype (uint8..uint64), got {dt}")
    return _programs.draw(_random_bits, key, dt.itemsize * 8, shape)


def _uniform_range(key: Array, dtype, minval, maxval, start: int, count: int) -> Array:
    """Uniform values of the flat elements [start, start + count) of a draw (bounds: scalars or 0-d arrays)."""
    nbits = dtype.itemsize * 8
    nmant = np.finfo(dtype).nmant
    if nbits == 16:  # float16 and bfloat16: 16 random bits per value, or 8 where they suffice (bfloat16), as JAX
        drawn = 8 if nmant < 8 else 16
        mantissa = xp.astype(_bits_range(key, drawn, start, count), _dtypes.uint16) >> (drawn - nmant)
        floats = xp.astype(xp.astype(mantissa, _dtypes.float32) * (2.0 ** -nmant), dtype)  # exact
        return _affine(floats, minval, maxval)
    mantissa = _bits_range(key, nbits, start, count) >> (nbits - nmant)
    # JAX ORs the mantissa into the bits of 1.0 and subtracts 1.0: the same number, exactly.
    return _affine(xp.astype(mantissa, dtype) * (2.0 ** -nmant), minval, maxval)


def _uniform(key: Array, shape: tuple, dtype, minval, maxval) -> Array:
    if _is_scalar(minval) and _is_scalar(maxval):
        lo, hi = _scalar_of(minval, dtype), _scalar_of(maxval, dtype)
        array_bounds = isinstance(minval, Array) or isinstance(maxval, Array)  # _affine: always an fma
        fast = None if lo is None or hi is None else _kernel_floats(
            "uniform", key, shape, dtype, lo, hi, always_fma=array_bounds)
        if fast is not None:
            return fast
        return _draw(key, shape, lambda ops, start, count: _uniform_range(ops[0], dtype, ops[1], ops[2], start, count),
                     minval, maxval)
    floats = _kernel_floats("uniform", key, shape, dtype)  # [0, 1), then the array bounds
    if floats is None:
        floats = _draw(key, shape, lambda ops, start, count: _uniform_range(ops[0], dtype, 0.0, 1.0, start, count))
    return _affine(floats, minval, maxval)


def _is_scalar(value) -> bool:
    return not isinstance(value, Array) or value.ndim == 0


def _affine(floats: Array, minval, maxval) -> Array:
    """max(minval, floats * (maxval - minval) + minval) with one rounding, as XLA computes it."""
    if floats.dtype.name == "bfloat16":
        return affine_bfloat16(floats, minval, maxval)
    if not isinstance(minval, Array) and not isinstance(maxval, Array):
        span = maxval - minval  # NumPy scalars of dtype (or Python floats): rounded as JAX rounds
        if span == 1 and minval == 0 and not np.signbit(minval):
            return floats  # floats * 1 + 0 and max(0, .) change nothing
        if span == 0 or abs(math.frexp(float(span))[0]) == 0.5:  # exact product: one rounding, as in an fma
            out = floats * float(span) + float(minval)
        else:
            out = fma(floats, float(span), float(minval))
        return xp.maximum(out, float(minval))
    return xp.maximum(fma(floats, maxval - minval, minval), minval)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0) -> Array:
    """Uniform floats in [minval, maxval) (default float64); minval/maxval broadcast to ``shape``.

    >>> uniform(key(0), (3,), minval=-1.0, maxval=1.0)
    Array([-0.16308578, -0.56740909,  0.93064292], dtype=float64, device=numpy:cpu)
    """
    key = _check_key("uniform", key)
    shape = shape_arg("uniform", shape)
    dt = _float_dtype("uniform", dtype, key)
    check_size("uniform", shape, dt, key._ex)
    lo = _float_param("uniform", "minval", minval, dt)
    hi = _float_param("uniform", "maxval", maxval, dt)
    _check_shape("uniform", shape, _shape_of(lo), _shape_of(hi))
    return _programs.draw(_uniform, key, shape, dt, lo, hi)


def normal(key, shape=(), dtype=None) -> Array:
    """Standard normal values (default float64; complex dtypes give unit-variance complex normals).

    Computed as sqrt(2) * erfinv(u) for u uniform in (-1, 1), as JAX does.
    """
    key = _check_key("normal", key)
    shape = shape_arg("normal", shape)
    dt = _float_dtype("normal", dtype, key, complex_ok=True)
    check_size("normal", shape, dt, key._ex)
    return _programs.draw(_normal, key, shape, dt)


def _normal(key: Array, shape: tuple, dt) -> Array:
    if dt.kind == "c":
        real = _dtypes.REAL_OF[dt]
        k_re, k_im = split(key)
        re = xp.astype(_normal_real(k_re, shape, real), dt)
        im = xp.astype(_normal_real(k_im, shape, real), dt)
        return (re + im * 1j) / float(real.type(math.sqrt(2)))
    return _normal_real(key, shape, dt)


def _normal_real(key: Array, shape: tuple, dtype) -> Array:
    lo, hi = np.nextafter(dtype.type(-1.0), dtype.type(0.0)), dtype.type(1.0)
    fast = _kernel_floats("normal", key, shape, dtype, lo, hi)
    if fast is not None:
        return fast
    sqrt2 = float(dtype.type(math.sqrt(2)))
    return _draw(key, shape, lambda ops, start, count: erf_inv(_uniform_range(ops[0], dtype, lo, hi, start, count)) * sqrt2)


def truncated_normal(key, lower, upper, shape=None, dtype=None) -> Array:
    """Standard normal values conditioned on lower < x < upper (bounds broadcast to ``shape``)."""
    key = _check_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype, key)
    lo = _float_param("truncated_normal", "lower", lower, dt)
    hi = _float_param("truncated_normal", "upper", upper, dt)
    if shape is None:
        shape = xp.broadcast_shapes(_shape_of(lo), _shape_of(hi))
    else:
        shape = shape_arg("truncated_normal", shape)
        check_size("truncated_normal", shape, dt, key._ex)
        _check_shape("truncated_normal", shape, _shape_of(lo), _shape_of(hi))
    return _programs.draw(_truncated_normal, key, lo, hi, shape, dt)


def _truncated_normal(key: Array, lo, hi, shape: tuple, dt) -> Array:
    sqrt2 = dt.type(math.sqrt(2))
    lo_a = lo if isinstance(lo, Array) else xp.asarray(lo, device=key.device)
    hi_a = hi if isinstance(hi, Array) else xp.asarray(hi, device=key.device)
    inv_sqrt2 = float(dt.type(1.0) / sqrt2)  # XLA compiles jax's division by the constant sqrt(2) to this product
    above, below = xp.nextafter(lo_a, math.inf), xp.nextafter(hi_a, -math.inf)  # the open interval
    above, below = flush_bfloat16(above), flush_bfloat16(below)  # (XLA's clip reads bfloat16 subnormals as 0)
    if lo_a.ndim == 0 and hi_a.ndim == 0 and dt in _KERNEL_FLOATS and _kernel_route(key):
        ends = erf(xp.stack([lo_a, hi_a]) * inv_sqrt2)  # both erfs in one pass: the same values
        fast = _kernel_floats("normal", key, shape, dt, _scalar_of(ends[0], dt), _scalar_of(ends[1], dt),
                              always_fma=True)  # erf_inv(u) * sqrt(2), u = fma(floats, b - a, a)
        if fast is not None:
            return xp.clip(fast, above, below)
    if dt.name == "bfloat16":  # XLA:CPU divides bfloat16 in float32 (flushing subnormals), float16 by a product
        a, b = erf(divide_bfloat16(lo_a, float(sqrt2))), erf(divide_bfloat16(hi_a, float(sqrt2)))
    else:
        a, b = erf(lo_a * inv_sqrt2), erf(hi_a * inv_sqrt2)

    def clipped(u, above, below):
        return xp.clip(erf_inv(u) * float(sqrt2), above, below)

    if _is_scalar(a) and _is_scalar(b):
        return _draw(key, shape, lambda ops, start, count: clipped(
            _uniform_range(ops[0], dt, ops[1], ops[2], start, count), ops[3], ops[4]), a, b, above, below)
    return clipped(_uniform(key, shape, dt, a, b), above, below)


def exponential(key, shape=(), dtype=None) -> Array:
    """Exponential(1) values: -log(1 - u)."""
    key = _check_key("exponential", key)
    shape = shape_arg("exponential", shape)
    dt = _float_dtype("exponential", dtype, key)
    check_size("exponential", shape, dt, key._ex)
    return _programs.draw(_exponential, key, shape, dt)


def _exponential(key: Array, shape: tuple, dt) -> Array:
    zero, one = dt.type(0.0), dt.type(1.0)
    fast = _kernel_floats("exponential", key, shape, dt, zero, one)
    if fast is not None:
        return fast
    return _draw(key, shape, lambda ops, start, count: -log1p(-_uniform_range(ops[0], dt, zero, one, start, count)))


_GUMBEL_MODES = ("low", "high", "highest")


def gumbel(key, shape=(), dtype=None, mode: str | None = None) -> Array:
    """Standard Gumbel values.  ``mode="high"`` spends two uniforms per value to reach further into the tail
    (``"highest"`` is the same for float64)."""
    key = _check_key("gumbel", key)
    shape = shape_arg("gumbel", shape)
    dt = _float_dtype("gumbel", dtype, key)
    check_size("gumbel", shape, dt, key._ex)
    return _programs.draw(_gumbel, key, shape, dt, _gumbel_mode("gumbel", mode))


def _gumbel_mode(fname: str, mode) -> str:
    mode = "low" if mode is None else mode
    if mode not in _GUMBEL_MODES:
        raise ValueError(f"{fname}: mode must be None, 'low', 'high' or 'highest', got {mode!r}")
    return mode


def _gumbel(key: Array, shape: tuple, dtype, mode: str) -> Array:
    info = np.finfo(dtype)
    if mode == "highest":
        if dtype == _dtypes.float32:  # JAX builds these floats from 64 random bits with count-leading-zeros
            raise NotImplementedError("gumbel: mode='highest' is not implemented for float32; use 'high' or float64")
        mode = "high"  # as in JAX, 'highest' is 'high' for float64
    if mode == "high":
        fast = _kernel_floats("gumbel_high", key, shape, dtype, offset=math.prod(shape))
        if fast is not None:  # u[1] below: counters size .. 2 * size - 1
            return fast
        u = _uniform(key, (2, *shape), dtype, dtype.type(0.0), dtype.type(1.0))
        high, low = u[0], u[1]
        x = xp.where(high >= 0.5, high, high + low * float(2.0 ** -info.nmant) + float(info.tiny))
        return -log(-log1p(-x))
    tiny, one = dtype.type(info.tiny), dtype.type(1.0)
    if dtype.itemsize == 2:  # float16, bfloat16: XLA folds JAX's u - 1 + tiny into u + fl(tiny - 1) = u - 1 (the
        # constants are added first, which rounds the tiny away), so its uniform(tiny, 1) is max(tiny, u)
        return _draw(key, shape, lambda ops, start, count: -log(-log(xp.maximum(
            _uniform_range(ops[0], dtype, dtype.type(0.0), one, start, count), float(tiny)))))
    fast = _kernel_floats("gumbel", key, shape, dtype, tiny, one)
    if fast is not None:
        return fast
    return _draw(key, shape, lambda ops, start, count: -log(-log(_uniform_range(ops[0], dtype, tiny, one, start, count))))


def bernoulli(key, p=0.5, shape=None, mode: str = "low") -> Array:
    """Booleans that are True with probability ``p`` (a float or a float array broadcasting to ``shape``)."""
    key = _check_key("bernoulli", key)
    if mode not in ("low", "high"):
        raise ValueError(f"bernoulli: mode must be 'low' or 'high', got {mode!r}")
    if isinstance(p, Array):
        if _dtypes.kind_of(p.dtype) != "f":
            raise TypeError(f"bernoulli: p must have a real floating-point dtype, got {p.dtype}")
        dt = p.dtype
    elif isinstance(p, (float, np.floating)) or _is_bfloat16_scalar(p):
        dt = _defaults_of(key).real if isinstance(p, float) else np.dtype(type(p))
        p = float(flush_bfloat16(p))
    else:
        raise TypeError(f"bernoulli: p must be a float or a float arrayx array, got {type(p).__name__}")
    shape = _shape_of(p) if shape is None else shape_arg("bernoulli", shape)
    check_size("bernoulli", shape, dt, key._ex)
    _check_shape("bernoulli", shape, _shape_of(p))
    if not isinstance(p, Array) and _programs.route(key):
        p = dt.type(p)  # a program's input (a float p compares in dt, as the weakly typed float did)
    return _programs.draw(_bernoulli, key, p, shape, dt, mode)


def _bernoulli(key: Array, p, shape: tuple, dt, mode: str) -> Array:
    if isinstance(p, Array):
        p = flush_bfloat16(p)  # XLA:CPU reads a subnormal bfloat16 p as zero
    if mode == "high":
        u = _uniform(key, (2, *shape), dt, dt.type(0.0), dt.type(1.0))
        return u[1] * float(2.0 ** -np.finfo(dt).nmant) < p - u[0]
    zero, one = dt.type(0.0), dt.type(1.0)
    if _is_scalar(p):
        fast = _kernel_floats("uniform", key, shape, dt, zero, one)
        if fast is not None:
            return fast < p
        return _draw(key, shape, lambda ops, start, count: _uniform_range(ops[0], dt, zero, one, start, count) < ops[1], p)
    return _uniform(key, shape, dt, zero, one) < p


def _is_bfloat16_scalar(value) -> bool:
    """An ml_dtypes bfloat16 scalar (not a NumPy floating subclass)."""
    return type(value).__name__ == "bfloat16" and np.dtype(type(value)) == _dtypes.load_bfloat16()


def _int_param(fname: str, name: str, value, device, host: Array | None = None):
    """An integer bound as an arrayx array (or, with ``host``, a key routed to a compiled program, Python
    numbers as NumPy scalars of the device's default integer)."""
    if isinstance(value, Array):
        if value.dtype.kind == "f":
            return xp.astype(value, _defaults_of(value).integral)
        if value.dtype.kind not in "iu":
            raise TypeError(f"{fname}: {name} must be an integer array, got dtype {value.dtype}")
        return value
    if isinstance(value, (bool, int, float, np.integer, np.floating)):  # floats truncate, as astype(int)
        if host is not None:  # a program's input (_random_programs): what asarray makes, as a NumPy scalar
            dt = _defaults_of(host).integral
            info = np.iinfo(dt)
            if not info.min <= int(value) <= info.max:
                raise OverflowError(f"asarray: the Python integer {int(value)} is out of range for {dt}")
            return dt.type(int(value))
        return xp.asarray(int(value), device=device)  # the device's default integer
    raise TypeError(f"{fname}: {name} must be an int or an integer arrayx array, got {type(value).__name__}")


def _clip_convert(value: Array, dtype) -> Array:
    """``value`` converted to integer ``dtype``, saturating instead of wrapping."""
    to, src = np.iinfo(dtype), np.iinfo(value.dtype)
    return xp.astype(xp.clip(value, max(to.min, src.min), min(to.max, src.max)), dtype)


def _urem(a, b: Array) -> Array:
    """Unsigned a % b with XLA's convention a % 0 == a (the full-range case of randint)."""
    zero = b == 0
    return xp.where(zero, a, a % xp.where(zero, 1, b))


def randint(key, shape, minval, maxval, dtype=None) -> Array:
    """Integers in [minval, maxval) (default int64); bounds broadcast to ``shape``, ``maxval`` may exceed the dtype.

    Uses twice the dtype's bits per value and a modulus, as JAX does (slightly biased
    unless ``maxval - minval`` is a power of two).
    """
    key = _check_key("randint", key)
    shape = shape_arg("randint", shape)
    dt = _defaults_of(key).integral if dtype is None else _dtypes.as_dtype(dtype, "randint")
    check_size("randint", shape, dt, key._ex)
    if dt.kind not in "iu":
        raise TypeError(f"randint: dtype must be an integer dtype, got {dt}")
    host = key if _programs.route(key) else None
    lo = _int_param("randint", "minval", minval, key.device, host)
    hi = _int_param("randint", "maxval", maxval, key.device, host)
    _check_shape("randint", shape, np.shape(lo), np.shape(hi))
    return _programs.draw(_randint_of, key, shape, lo, hi, dt)


def _randint_of(key: Array, shape: tuple, lo: Array, hi: Array, dt) -> Array:
    info = np.iinfo(dt)
    if info.bits < 32:  # sample in 32 bits to keep the modulus bias small, as JAX does
        lo = xp.clip(xp.astype(lo, _dtypes.int32), int(info.min), int(info.max))
        hi = xp.clip(xp.astype(hi, _dtypes.int32), int(info.min), int(info.max) + 1)
        return xp.astype(_randint(key, shape, lo, hi, _dtypes.int32), dt)
    return _randint(key, shape, lo, hi, dt)


def _randint(key: Array, shape: tuple, lo: Array, hi: Array, dtype) -> Array:
    info = np.iinfo(dtype)
    nbits = info.bits
    udt = _UINT_OF_BITS[nbits]
    hi_out_of_range = hi > min(int(info.max), int(np.iinfo(hi.dtype).max))
    lo = _clip_convert(lo, dtype)
    hi = _clip_convert(hi, dtype)
    span = xp.astype(hi - lo, udt)
    span = xp.where(hi <= lo, 1, span)  # an empty range returns minval
    span = xp.where(hi_out_of_range & (hi > lo), span + 1, span)  # may wrap to 0: the full range
    multiplier = _urem(xp.astype(xp.full_like(span, 2 ** (nbits // 2)), udt), span)  # 2**nbits % span
    multiplier = _urem(multiplier * multiplier, span)
    k1, k2 = split(key)

    def values(higher, lower, lo, span, multiplier):  # twice the bits per value, reduced modulo span as JAX does
        offset = _urem(_urem(higher, span) * multiplier + _urem(lower, span), span)
        return lo + xp.astype(offset, dtype)

    if span.ndim == 0 and lo.ndim == 0 and _kernel_route(key) and all(
            isinstance(v._buf, np.ndarray) for v in (lo, span, multiplier)):
        from arrayx.executors.numba import random_kernels

        words = [np.uint64(int(np.asarray(v._buf).astype(np.uint64 if v.dtype.kind == "u" else np.int64))
                           % 2**64) for v in (lo, span, multiplier)]
        out = np.empty(math.prod(shape), dtype)
        magic = nbits == 64 and int(words[1]) >= 2  # (64-bit remainders by multiplying: randint_magic)
        extra = random_kernels.randint_magic(int(words[1])) if magic else ()
        if _kernel_call(lambda: random_kernels.randint_kernel(dtype, magic), *_key_words(k1), *_key_words(k2), 0,
                        out, *words, *extra):
            return Array._new(out.reshape(shape), key._ex)
    if span.ndim == 0 and lo.ndim == 0 and not _kernel_route(key):
        return _draw(k1, shape, lambda ops, start, count: values(
            _bits_range(ops[0], nbits, start, count), _bits_range(ops[1], nbits, start, count), *ops[2:]),
            k2, lo, span, multiplier)
    return values(_random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape), lo, span, multiplier)


# -- draws from a set: permutation, choice, categorical (arrayx/_random_sampling.py) ------------------------

_SELF = sys.modules[__name__]  # passed to _random_sampling, which does not import this module


def permutation(key, x, axis: int = 0, independent: bool = False) -> Array:
    """A shuffled ``arange(x)`` (for an int ``x``) or ``x`` shuffled along ``axis``
    (each slice separately when ``independent``).
    """
    return _sampling.permutation(_SELF, key, x, axis, independent)


def choice(key, a, shape=(), replace: bool = True, p=None, axis: int = 0, mode: str | None = None) -> Array:
    """A random sample from ``arange(a)`` (int ``a``) or from ``a`` along ``axis``, with optional probabilities ``p``."""
    return _sampling.choice(_SELF, key, a, shape, replace, p, axis, mode)


def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True, mode: str | None = None) -> Array:
    """Indices drawn from softmax(logits) along ``axis`` (Gumbel-max; Gumbel-top-k without replacement)."""
    return _sampling.categorical(_SELF, key, logits, axis, shape, replace, mode)
