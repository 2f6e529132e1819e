"""Large eager float64 matrix products of the jax executor on CPU computed by NumPy's BLAS.

Why: XLA:CPU runs a float64 ``dot`` through Eigen's contraction, which took 1.3-1.9x the CPU time
of the OpenBLAS that NumPy links on products with a long inner dimension that dominates the
result's (Gram and covariance matrices, ``X.T @ Y``).  array-api-extra's ``cov`` of 120,000 x 64
float64 computes ``m_c @ m_c.T`` (m = 64 variables, k = 120,000 observations): 37-42 ms of CPU on
two XLA threads against 19-23 ms for OpenBLAS's ``dsyrk`` on one, which NumPy picks because both
operands are views of one buffer.  On a loaded machine the second XLA thread gets no core of its
own, so the whole CPU time is what a caller waits (benchmarks/bench_clients.py: ``xpx.cov`` at
0.68-0.73x NumPy's time without this module, 0.97x with it).  Elsewhere XLA was as fast or faster
(4,000 x 4,000 by 4,000 x 64: 0.6-0.7x OpenBLAS's CPU time; ``X @ Y.T`` on 2,000 x 64 and 4,000 x
64, scikit-learn's distances: within 10%, and the same bits), and float32 gains nothing
(benchmarks/bench_jax_blas.py, benchmarks/results/jax_blas_matmul.json).

How: on a process whose JAX default backend is one CPU device (``load``), the eager ``matmul`` of
two 2-D float64 ``jax.Array`` operands (a deferred transpose, ``permuted.Permuted``, enters as the
host view of its base transposed; a recorded ``fused.Pending`` is computed first) whose shapes pass
:func:`worth` runs ``numpy.matmul`` on zero-copy host views of the operands (``numpy.asarray`` of a
CPU ``jax.Array`` waits for it and reads its memory) into a 64-byte aligned result, which
``jax.device_put`` then takes without a copy (XLA:CPU adopts an aligned host buffer).  Only eager
calls: a traced or compiled product (``jit``, ``lazy()``, a user's ``jax.jit``) is XLA's, through the
executor's raw implementation; nothing here runs for another device or a process with several.

Values: the NumPy executor's bit for bit (the same ``numpy.matmul`` on operands of the same
layout, so the same BLAS routine), not XLA's: the two sum long products in different orders, so
3,878 of the 4,096 elements of ``cov``'s 120,000-term product differ from XLA's in the last bits
(relative differences of order 1e-15; the error against a long-double reference is the same size
either way).  ``jit`` of the same product is XLA's, so an eager product and its jitted twin may
differ in those bits.  Subnormal operands and results are kept (XLA:CPU flushes them), a sum of
-0 terms is +0, and ``inf * 0`` is a NaN without NumPy's warning.  ``ARRAYX_JAX_BLAS_MATMUL=0``
keeps every product XLA's (docs/executors.rst: the deviation).
"""
from __future__ import annotations

import numpy as np

from arrayx.executors.jax.host_transfer import ALIGNMENT as ALIGN, aligned_empty  # noqa: F401  (results taken without a copy)

__all__ = ["Routed", "ENABLED", "worth", "load", "stats"]

_jax = None
_ARRAY = None  # jaxlib's ArrayImpl, set by ``load``
_PERMUTED = None
_PENDING = None
ENABLED = False
#: the dtypes routed (float32 measured no faster through BLAS than through XLA's own kernels)
DTYPES = frozenset({np.dtype(np.float64)})
#: the fewest multiply-adds (m * k * n) routed; smaller products cost XLA less than the round trip
MIN_MACS = 1 << 24
#: the shortest inner dimension routed
MIN_INNER = 4096
_calls = [0]
#: route every 2-D float64 product whatever its shape (benchmarks/bench_jax_blas.py's comparison)
FORCE = False


def load(jax, array_type, enabled: bool) -> None:
    """Take JAX from the executor; ``enabled``: one CPU device and ARRAYX_JAX_BLAS_MATMUL on."""
    global _jax, _ARRAY, _PERMUTED, _PENDING, ENABLED
    from arrayx.executors.jax.fused import Pending
    from arrayx.executors.jax.permuted import Permuted

    _jax, _ARRAY, _PERMUTED, _PENDING = jax, array_type, Permuted, Pending
    ENABLED = bool(enabled)


def worth(m: int, k: int, n: int) -> bool:
    """Whether an (m, k) @ (k, n) float64 product goes to BLAS: a long inner dimension that
    dominates the result's (Gram and covariance matrices, ``X.T @ Y``), where XLA's Eigen
    contraction took 1.3-1.9x OpenBLAS's CPU time (``dsyrk`` for ``X.T @ X``); elsewhere XLA was as
    fast or faster (4,000 x 4,000 by 4,000 x 64: 0.6-0.7x OpenBLAS's time), and below
    :data:`MIN_MACS` the round trip costs more than it saves (benchmarks/bench_jax_blas.py)."""
    if FORCE:
        return True
    return m * k * n >= MIN_MACS and k >= MIN_INNER and k >= 8 * max(m, n)


def stats() -> dict:
    """How many products went through BLAS since the process started."""
    return {"routed": _calls[0]}


def _operand(x):
    """(shape, what gives the host view) of an eager CPU operand, or None when it is not one."""
    cls = x.__class__
    if cls is _PENDING:
        x = x.materialize()
        cls = x.__class__
    if cls is _ARRAY:
        return x
    if cls is _PERMUTED and x.axes == (1, 0) and x.base.__class__ is _ARRAY:
        return x
    return None


def _host(x) -> np.ndarray:
    if x.__class__ is _PERMUTED:
        return np.asarray(x.base).T  # the base's memory, read transposed (Fortran order for BLAS)
    return np.asarray(x)


def product(a, b):
    """``a @ b`` through NumPy's BLAS as a ``jax.Array``, or None when the call is not one to route."""
    a, b = _operand(a), _operand(b)
    if a is None or b is None:
        return None
    dtype = a.dtype
    if dtype not in DTYPES or b.dtype != dtype or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or not worth(m, k, n):
        return None
    out = aligned_empty((m, n), dtype)
    with np.errstate(all="ignore"):  # XLA's product warns of nothing (inf * 0 is a NaN, silently)
        np.matmul(_host(a), _host(b), out=out)
    _calls[0] += 1
    return _jax.device_put(out)  # aligned: XLA:CPU takes this memory as the result's buffer


class Routed:
    """The eager ``matmul`` (``inner``: the executor's, Permuted-aware) with large float64 products
    of CPU operands through :func:`product`."""

    __slots__ = ("inner",)

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, *bufs, **params):
        if ENABLED and len(bufs) == 2 and not params:
            out = product(*bufs)
            if out is not None:
                return out
        return self.inner(*bufs, **params)
