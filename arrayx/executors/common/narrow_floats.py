"""bfloat16 and float16 on executors of NumPy buffers (NumPy, Numba's NumPy paths, Dask's chunks).

NumPy runs ``ml_dtypes``' bfloat16 through the loops ml_dtypes registers, and its own float16:
elementwise results are rounded to the narrow dtype after each operation, as JAX's are.  Its
reductions and contractions are not JAX's: a bfloat16 sum accumulates in bfloat16 (4096 ones sum to
256), a float16 running sum in float16 (2048), and a bfloat16 matmul returns float32.  XLA
accumulates both dtypes in float32 and rounds the result once, so the functions listed in
``WIDENED`` do the same here: operands of a narrow dtype are cast to float32, the NumPy function runs,
and the result is rounded back.  Other dtypes go straight to the function: one dtype test, ~0.1 us
in front of ``np.matmul`` (``widened_pair``), ~0.3 us in front of a function with params (the NumPy
executor tests inside its own ``sum`` and ``prod`` instead, which are called most).
"""
from __future__ import annotations

import numpy as np

_F32 = np.dtype(np.float32)

#: the primitives whose NumPy functions accumulate: computed in float32 for the narrow floats
WIDENED = ("sum", "prod", "mean", "var", "std", "cumulative_sum", "cumulative_prod",
           "matmul", "tensordot", "vecdot")


def is_narrow(dt) -> bool:
    """float16, or ml_dtypes' bfloat16 (NumPy kind "V", 2 bytes), without importing ml_dtypes."""
    return dt.itemsize == 2 and (dt.kind == "f" or dt.kind == "V" and dt.name == "bfloat16")


def widened(fn):
    """``fn(*buffers, **params)`` computed in float32 where its first operand is float16 or
    bfloat16 (a ``dtype`` param of that dtype too), the result rounded back to that dtype."""
    def run(x, /, *rest, **params):
        dt = getattr(x, "dtype", _F32)
        if dt.itemsize != 2 or not is_narrow(dt):
            return fn(x, *rest, **params)
        wide = [b.astype(_F32) if getattr(b, "dtype", None) == dt else b for b in (x, *rest)]
        target = params.get("dtype", dt)  # the result's dtype (a sum's dtype param may ask for another)
        if target == dt:
            params = {**params, "dtype": _F32} if "dtype" in params else params
        out = fn(*wide, **params)
        return out.astype(dt) if target == dt and out.dtype != dt else out

    run.__name__ = getattr(fn, "__name__", "widened")
    run.__wrapped__ = fn
    run.widens_narrow_floats = True
    return run


def widened_pair(fn):
    """``widened(fn)`` for a function of two operands and no params (matmul): a cheaper test."""
    def run(x1, x2, /):
        dt = x1.dtype
        if dt.itemsize != 2 or not is_narrow(dt):
            return fn(x1, x2)
        out = fn(x1.astype(_F32), x2.astype(_F32) if x2.dtype == dt else x2)
        return out.astype(dt) if out.dtype != dt else out

    run.__name__ = getattr(fn, "__name__", "widened")
    run.__wrapped__ = fn
    run.widens_narrow_floats = True
    return run
