"""The NumPy executor's entries for ``arrayx.nn``'s primitives ``erf``, ``erfc`` and ``erfinv``: SciPy's
ufuncs where SciPy is installed; without SciPy the C library's ``erf``/``erfc`` element by element
(slow, exact) and Newton steps on it for ``erfinv``.  The Dask executor runs these per block; the
Numba executor's table starts as this one's.  The primitives and their rules: ``arrayx/nn.py``."""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["TABLE", "host_special"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erfinv_newton(y: np.ndarray) -> np.ndarray:
    """erfinv on the host without SciPy: a log-based first guess, then Newton steps on libm's erf."""
    y = np.asarray(y)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - y) * (1.0 + y))
        x = np.sign(y) * np.sqrt(np.sqrt((4.33 + w / 2) ** 2 - w / 0.147) - (4.33 + w / 2))
        erf = np.frompyfunc(math.erf, 1, 1)
        for _ in range(4):
            x = x - (erf(x).astype(y.dtype) - y) / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
        x = np.where(y == 1, np.inf, np.where(y == -1, -np.inf, x))
        return np.where(np.abs(y) > 1, np.nan, x).astype(y.dtype)


def host_special(name: str):
    """``name`` for NumPy buffers: SciPy's ufunc where SciPy is installed, else the fallbacks above."""
    try:
        from scipy import special
    except ImportError:
        if name == "erfinv":
            return _erfinv_newton
        fn = np.frompyfunc(getattr(math, name), 1, 1)
        return lambda x: np.asarray(fn(x), dtype=x.dtype)
    return getattr(special, name)


@functools.cache
def _resolved(name: str):
    return host_special(name)


def _loaded_on_first_call(name: str):
    """``name`` as a function that imports SciPy on its first call, not with arrayx (``scipy.special``
    takes ~0.45 s to import, which every process that imports arrayx paid before); ``.ufunc_when_loaded()``
    gives the function itself (SciPy's ufunc: the buffer pool writes large results into its buffers,
    ``common/buffer_pool.pooled``)."""
    def call(x):
        return _resolved(name)(x)

    call.__name__ = call.__qualname__ = name  # this module's ``name``: Dask names its tasks alike in every process
    call.ufunc_when_loaded = functools.partial(_resolved, name)
    return call


erf, erfc, erfinv = (_loaded_on_first_call(name) for name in ("erf", "erfc", "erfinv"))

#: primitive name -> NumPy's implementation (merged into ``NumpyExecutor.overrides``)
TABLE = {"erf": erf, "erfc": erfc, "erfinv": erfinv}
