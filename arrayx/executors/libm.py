"""The C library's float64 ``log``, element by element, for host (NumPy) buffers.

This is the routine XLA:CPU calls for float64 ``log`` (measured: ``jax.jit(jnp.log)`` equals
``math.log`` on 4e6 inputs, and follows glibc when its FMA variant is switched off with
``GLIBC_TUNABLES``), so ``arrayx.random``'s bit-exact paths use it instead of ``numpy.log``,
whose float64 loop NumPy dispatches to its own AVX-512 code on CPUs that have it.

Two routes to the same routine, same bits:

- a Numba loop calling the C library's ``log`` through a symbol of its own (``LOG_SYMBOL``):
  an opaque external call, which LLVM can neither vectorise (SVML) nor replace; the kernel is
  compiled once and cached like the Numba executor's kernels;
- without Numba, ``math.log`` (CPython calls the C library's ``log``) through
  ``numpy.frompyfunc``: about 25x slower.

Zeros, negatives, infinities and NaN are exact in every implementation and go through
``numpy.log`` on the second route (a NaN's sign bit may differ between the routes).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import math
import threading
import warnings

import numpy as np

__all__ = ["LOG_SYMBOL", "log", "route"]

#: the name under which the C library's ``log`` is given to Numba-compiled code
LOG_SYMBOL = "arrayx_libm_log"

_FLOAT64 = np.dtype(np.float64)
_python_log = np.frompyfunc(math.log, 1, 1)
_lock = threading.Lock()
_kernel = None  # the compiled Numba loop, once built
_route: str | None = None  # "numba" or "python", decided on first use


def c_log_address() -> int:
    """Address of the C library's ``log`` (the one CPython's ``math.log`` and XLA call)."""
    name = ctypes.util.find_library("m")
    lib = ctypes.CDLL(name) if name else ctypes.CDLL(None)  # no separate libm: the process's symbols
    return ctypes.cast(lib.log, ctypes.c_void_p).value


def register_log_symbol() -> None:
    """Make ``LOG_SYMBOL`` resolve to the C library's ``log`` in Numba-compiled code (idempotent)."""
    import llvmlite.binding as llvm

    llvm.add_symbol(LOG_SYMBOL, c_log_address())


def _log_python(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(x)  # only its special values are kept
    finite = (x > 0) & (x < math.inf)
    out[finite] = _python_log(x[finite]).astype(_FLOAT64)
    return out


def _log_numba(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, _FLOAT64)
    _kernel(np.ascontiguousarray(x).reshape(-1), out.reshape(-1))
    return out


def route() -> str:
    """Which route ``log`` takes here: ``"numba"`` or ``"python"`` (decided on first use)."""
    global _kernel, _route
    if _route is None:
        with _lock:
            if _route is None:
                reason = None
                if importlib.util.find_spec("numba") is None:
                    reason = "Numba is not installed"
                else:
                    try:
                        from arrayx.executors.numba import kernels as _numba_kernels

                        _kernel = _numba_kernels.libm_log_kernel()
                    except Exception as e:  # a broken Numba/LLVM install: same bits, slower
                        reason = f"its Numba kernel failed to build ({type(e).__name__}: {e})"
                if reason is not None and _kernel is None and "installed" not in reason:
                    warnings.warn(f"arrayx: the C library's log runs through math.log, about 25x slower, "
                                  f"because {reason}; install Numba for speed", RuntimeWarning, stacklevel=3)
                _route = "python" if reason else "numba"
    return _route


def log(x: np.ndarray) -> np.ndarray:
    """Natural log of a float64 NumPy array, each element by the C library's ``log``."""
    if x.dtype != _FLOAT64:
        raise TypeError(f"libm_log: expects float64, got {x.dtype}; convert with arrayx.astype(x, arrayx.float64)")
    return _log_numba(x) if route() == "numba" else _log_python(np.asarray(x))
