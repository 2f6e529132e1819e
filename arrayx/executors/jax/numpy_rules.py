"""Where ``jax.numpy`` differs from NumPy on values the standard leaves open, the jax executor's
implementations that follow NumPy (as every other executor does): floor division and remainder
(signed zeros, huge/tiny ratios, integer division by zero), sums from +0, complex mean and product,
NaN-propagating max/min, ``abs`` at infinite parts, ``sign(-0.0)``.  Split from executor.py; the
executor's table (``JaxExecutor.overrides``) names them.  ``load`` gives this module JAX once the
executor loads (JAX is imported only when the executor is used).

Some corrections answer a deviation of one XLA backend only; ``NOT_NEEDED`` lists, per correction,
the platforms where plain ``jax.numpy`` was measured to give NumPy's value already.  There the
correction is left out of the compiled program (``jax.lax.platform_dependent``: the choice is made
when XLA lowers for the device, so a program costs nothing for the branch it does not take, and a
CPU array on a TPU machine still gets the CPU's correction).  On the TPU the corrected matmul and
sums added a compare and a select over every product's output (issue 41: the default-dtype MLP).
"""
from __future__ import annotations

import numpy as np

jnp = None  # jax.numpy, set by load
_jax = None


def load(jax) -> None:
    global jnp, _jax
    import jax.numpy

    jnp, _jax = jax.numpy, jax


#: correction -> platforms where jax.numpy already gives NumPy's value (measured on the chip with
#: tests/executors/test_tpu_numpy_rules.py, JAX 0.10.2, libtpu 0.0.42.1): the correction is not run there
NOT_NEEDED: dict[str, tuple[str, ...]] = {
    "sum_from_plus_zero": ("tpu",),  # XLA:TPU's reductions and MXU products of -0 terms give +0
    "nan_propagating": ("tpu",),  # XLA:TPU's max/min reductions keep NaN at every length
}


#: correction -> the only platforms whose jax.numpy needs it (seen in the official suite on the chip,
#: JAX 0.10.2, libtpu 0.0.42.1); every other platform runs plain jax.numpy
ONLY_ON: dict[str, tuple[str, ...]] = {
    "signed_zero": ("tpu",),  # XLA:TPU's float32 expm1(-0.0) and sinh(-0.0) are +0.0 (C99 and NumPy: -0.0)
    # XLA:TPU's svd, eigh and qr do not scale their input: entries near 1e19 overflowed to NaN singular
    # values (the official suite's test_svd/test_svdvals at 20 examples, session 23), eigenvalues and
    # Q R were far off at 1e19, 1e-19 and 1e-30 (session 24); linalg.py scales by powers of two
    "power_of_two_scaled": ("tpu",),
    # (no correction of round: plain jnp.round gives large integral float32 and bfloat16 values back on
    # the chip, eager and compiled: benchmarks/tpu_check.sh env, session 21; the suite failure that
    # once suggested otherwise drew a Python float that float32 cannot hold, known_failures/jax-tpu.txt)
}


def _per_platform(correction: str, corrected, raw):
    """``corrected`` except on the platforms of ``NOT_NEEDED[correction]`` (or, for a correction in
    ``ONLY_ON``, on the platforms it does not name), where ``raw`` runs."""
    only = ONLY_ON.get(correction)
    skip = NOT_NEEDED.get(correction, ())
    if only is None and not skip:
        return corrected

    def wants(platform: str) -> bool:
        return platform in only if only is not None else platform not in skip

    def run(*args, **params):
        arrays = [a for a in args if isinstance(a, _jax.Array)]
        if arrays and not any(isinstance(a, _jax.core.Tracer) for a in arrays):
            # an eager call outside any trace: the data's device decides (not JAX's default backend)
            platform = next(iter(arrays[0].devices())).platform
            return (corrected if wants(platform) else raw)(*args, **params)
        if only is not None:
            return _jax.lax.platform_dependent(*args, **{p: (lambda *a: corrected(*a, **params)) for p in only},
                                               default=lambda *a: raw(*a, **params))
        return _jax.lax.platform_dependent(
            *args, **{p: (lambda *a: raw(*a, **params)) for p in skip},
            default=lambda *a: corrected(*a, **params))

    run.__name__ = run.__qualname__ = getattr(corrected, "__name__", correction)
    run.corrected, run.raw = corrected, raw  # what runs where (for tests and readers)
    return run


def keeping_signed_zero(name: str):
    """``name`` (expm1, sinh: odd functions with f(-0) = -0) giving a zero input back as it is, where
    the platform's own function loses its sign."""
    def corrected(x):
        return jnp.where(x == 0, x, getattr(jnp, name)(x))

    def raw(x):
        return getattr(jnp, name)(x)

    corrected.__name__ = raw.__name__ = name
    return _per_platform("signed_zero", corrected, raw)


# -- NumPy's floor division and remainder (arrayx follows NumPy where the standard leaves room;
# JAX differs on signed zeros, on huge/tiny float ratios and on integer division by zero)

def _float_divmod(a, b):
    """(a // b, a % b) for floats, as NumPy's npy_divmod computes them."""
    # fmod(a, +-inf) is a for finite a (C99); XLA:TPU computes a - trunc(a / b) * b there, NaN
    mod = jnp.where(jnp.isinf(b) & jnp.isfinite(a), a, jnp.fmod(a, b))
    div = (a - mod) / b
    exact = mod == 0
    fix = ~exact & ((b < 0) != (mod < 0))
    mod = jnp.where(fix, mod + b, mod)
    div = jnp.where(fix, div - 1, div)
    mod = jnp.where(exact, jnp.copysign(jnp.zeros_like(mod), b), mod)
    floor = jnp.floor(div)
    floor = jnp.where(div - floor > 0.5, floor + 1, floor)
    floor = jnp.where(div == 0, jnp.copysign(jnp.zeros_like(div), a / b), floor)
    return jnp.where(b == 0, a / b, floor), mod


def _floor_divide(x1, x2):
    x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
    if x1.dtype.kind == "f":
        return _float_divmod(x1, x2)[0]
    zero = x2 == 0  # NumPy gives 0 for integer division by zero
    return jnp.where(zero, 0, jnp.floor_divide(x1, jnp.where(zero, 1, x2)))


def _remainder(x1, x2):
    x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
    if x1.dtype.kind == "f":
        return _float_divmod(x1, x2)[1]
    zero = x2 == 0
    return jnp.where(zero, 0, jnp.remainder(x1, jnp.where(zero, 1, x2)))


def _truth_reduction(name):
    """``any``/``all`` where a complex element is true when either part is non-zero (XLA reads only the real part)."""
    def impl(x, *, axis=None, keepdims=False):
        if x.dtype.kind == "c":
            x = x != 0
        return getattr(jnp, name)(x, axis=axis, keepdims=keepdims)

    impl.__name__ = name
    return impl


def _sum_from_plus_zero(name):
    """``name`` as a sum that starts from +0, as NumPy's sum and BLAS do: a sum of -0 terms is +0 (XLA:CPU gives -0)."""
    def impl(*args, **params):
        return _plus_zero(getattr(jnp, name)(*args, **params))

    def raw(*args, **params):
        return getattr(jnp, name)(*args, **params)

    impl.__name__ = raw.__name__ = name
    return _per_platform("sum_from_plus_zero", impl, raw)


def _mean_corrected(x, **params):
    """NumPy's complex mean divides the sum by the count as a complex number, (a + b*0)/n + i(b - a*0)/n,
    so a non-finite part makes the other part NaN (mean of nan+1j is nan+nanj); XLA divides each part."""
    if not jnp.issubdtype(x.dtype, jnp.complexfloating):
        return _plus_zero(jnp.mean(x, **params))
    total = _plus_zero(jnp.sum(x, **params))
    a, b = total.real, total.imag
    zero = jnp.zeros((), a.dtype)
    scale = jnp.ones((), a.dtype) / jnp.asarray(x.size // max(total.size, 1) if x.size else 0, a.dtype)
    return _jax.lax.complex((a + b * zero) * scale, (b - a * zero) * scale)


def _mean_raw(x, **params):
    return jnp.mean(x, **params)


_real_mean = _per_platform("sum_from_plus_zero", _mean_corrected, _mean_raw)  # built once, not per call


def _mean(x, **params):
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return _mean_corrected(x, **params)
    return _real_mean(x, **params)


def _prod(x, **params):
    """NumPy's complex product starts from 1+0j, so one element a+bi gives (a*1 - b*0) + (a*0 + b*1)i:
    nan+0j becomes nan+nanj; XLA returns a lone element as it is."""
    out = jnp.prod(x, **params)
    if out.dtype.kind != "c":
        return out
    re, im = out.real, out.imag
    zero = jnp.zeros((), re.dtype)
    return _jax.lax.complex(re - im * zero, re * zero + im)


def _nan_propagating(name: str):
    """``max``/``min`` that return NaN for a slice holding one: XLA:CPU (jax 0.10) loses NaNs in
    reductions of some lengths (3x2048 float32 with a NaN: -inf or 1.0 instead of nan, eager and jit)."""
    def run(x, **params):
        reduce = getattr(jnp, name)  # jnp is set when the executor loads
        if not jnp.issubdtype(x.dtype, jnp.floating):
            return reduce(x, **params)
        nan = jnp.isnan(x)
        fill = jnp.asarray(-jnp.inf if name == "max" else jnp.inf, x.dtype)
        out = reduce(jnp.where(nan, fill, x), **params)
        return jnp.where(jnp.any(nan, **params), jnp.asarray(jnp.nan, x.dtype), out)

    def raw(x, **params):
        return getattr(jnp, name)(x, **params)

    run.__name__ = run.__qualname__ = f"_nan_propagating_{name}"
    return _per_platform("nan_propagating", run, raw)


def _plus_zero(out):
    """``out + 0`` in IEEE arithmetic (-0 becomes +0), written so that XLA cannot simplify it away."""
    if out.dtype.kind == "f":
        return jnp.where(out == 0, jnp.zeros((), out.dtype), out)
    if out.dtype.kind == "c":
        re, im = out.real, out.imag
        zero = jnp.zeros((), re.dtype)
        return _jax.lax.complex(jnp.where(re == 0, zero, re), jnp.where(im == 0, zero, im))
    return out


def _abs(x):
    out = jnp.abs(x)
    if x.dtype.kind != "c":
        return out
    # |a+bj| is +inf when a part is infinite, even if the other is NaN (the standard, C99's hypot)
    return jnp.where(jnp.isinf(x.real) | jnp.isinf(x.imag), jnp.asarray(np.inf, out.dtype), out)


def _sign(x):
    return jnp.where(x == 0, jnp.zeros((), x.dtype), jnp.sign(x))  # sign(-0.0) is 0, not -0.0
