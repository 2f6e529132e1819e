"""The NumPy executor: eager, the default and the reference every other executor is compared with.

Its namespace is array-api-compat's NumPy namespace (which mostly returns NumPy's
own functions, so it costs nothing).  ``overrides`` lists the primitives whose
NumPy implementation differs from ``getattr(xp, name)``.
"""
from __future__ import annotations

import numpy as np

from arrayx.executors import _linalg
from arrayx.executors.base import Device, Executor


def _expm1(x):
    if x.dtype.kind != "c":
        return np.expm1(x)
    # NumPy's complex expm1 gives NaN + NaN j wherever a part is infinite or NaN; there
    # exp(z) - 1 (C99's special cases) is what the standard asks for, and exact.  It also
    # gives -0 + 0j for -0 + 0j, where the standard asks for +0 + 0j.
    with np.errstate(invalid="ignore"):
        out = np.asarray(np.expm1(x))
        bad = ~np.isfinite(x)
        if bad.any():
            out[bad] = np.exp(x[bad]) - 1
        out.real[x == 0] = 0.0
    return out


def _tanh(x):
    out = np.tanh(x)
    if x.dtype.kind == "c":
        # tanh(±inf + bj) for finite b: NumPy (C99) gives ±1 + 0*sin(2b) j, whose zero takes
        # sin(2b)'s sign; the standard asks for the sign of b.
        out = np.asarray(out)
        edge = np.isinf(x.real) & np.isfinite(x.imag)
        if edge.any():
            out.imag[edge] = np.copysign(0.0, x.imag[edge])
    return out


class NumpyExecutor(Executor):
    name = "numpy"
    array_type = np.ndarray
    overrides: dict = {
        "expm1": _expm1,
        "tanh": _tanh,
        # NumPy 2's own functions already have the standard's semantics; array-api-compat's
        # Python wrappers around them would only add per-call cost.
        "matmul": np.matmul,
        "matrix_transpose": np.matrix_transpose,
        "permute_dims": np.permute_dims,
        # singular / non-positive-definite matrices give NaN, not LinAlgError (executors/_linalg.py)
        **{name: _linalg.nan_on_failure(name) for name in _linalg.FAILING},
    }

    def _load(self):
        import array_api_compat.numpy as xp

        return xp

    def coerce(self, out):
        return np.asarray(out)

    def compile(self, graph, donate_argnums: tuple = ()):
        # generated straight-line Python over this executor's table; buffers are never reused, so
        # donation has nothing to give back
        return self.lower(graph)

    def asarray(self, obj, dtype=None, copy=None, device=None):
        if copy is False:
            out = np.asarray(obj, dtype=dtype)
            if dtype is not None and isinstance(obj, np.ndarray) and out is not obj:
                raise ValueError("asarray: copy=False but converting the dtype needs a copy")
            return out
        return np.array(obj, dtype=dtype, copy=True) if copy else np.asarray(obj, dtype=dtype)

    def from_dlpack(self, obj, copy=None):
        return np.from_dlpack(obj, copy=copy)

    def to_host(self, buf) -> np.ndarray:
        return buf

    def devices(self):
        return [_CPU]


_CPU = Device("numpy", "cpu")
