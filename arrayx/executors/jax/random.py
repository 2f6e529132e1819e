"""The JAX executor's entries for ``arrayx.random``'s primitives, which make its samplers give
jax.random's bits: ``libm_log`` is XLA:CPU's float64 log (the C library's), and the ``xla_*``
operations (``xla_fma``, ``xla_log1p``, ``xla_log``, ``xla_erf``, ``xla_erf_inv``) are XLA's own, each
one ``jax.jit`` call (XLA contracts ``a * b + c`` into an fma only when it compiles it).  Other
executors have no ``xla_*`` entry and run the exact emulations of ``arrayx/_random_math.py``, where
the primitives and their rules are."""
from __future__ import annotations

__all__ = ["TABLE"]


def libm_log(x):
    import jax.numpy as jnp  # XLA:CPU's float64 log is the C library's (tests/test_random.py checks it)

    return jnp.log(x)


def _jax_impl(fn: str):
    def impl(*bufs):
        import jax  # jitted on its own too: eagerly with ARRAYX_JAX_JIT_OPS=0, a * b + c is an fma only in XLA

        return _JAX_JITTED.setdefault(fn, jax.jit(getattr(_JaxOps, fn)))(*bufs)

    impl.__name__ = f"xla_{fn}"
    return impl


class _JaxOps:
    """XLA's operations as jax.random's samplers call them."""

    @staticmethod
    def fma(a, b, c):
        return a * b + c  # one fma: XLA contracts a product with no other use into the addition

    @staticmethod
    def log1p(x):
        import jax

        return jax.lax.log1p(x)

    @staticmethod
    def log(x):
        import jax

        return jax.lax.log(x)

    @staticmethod
    def erf(x):
        import jax  # the barrier: XLA would evaluate erf of constant bounds itself, rounding otherwise

        return jax.lax.erf(jax.lax.optimization_barrier(x))

    @staticmethod
    def erf_inv(x):
        import jax

        return jax.lax.erf_inv(x)


_JAX_JITTED: dict = {}

#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {"libm_log": libm_log, **{f"xla_{name}": _jax_impl(name) for name in ("fma", "log1p", "log", "erf", "erf_inv")}}
