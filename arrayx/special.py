"""``arrayx.special``: SciPy's special functions on arrayx arrays, results on the operands' device.

SciPy (``SCIPY_ARRAY_API=1``) looks a special function up in ``xp.special`` for a namespace it has
no native library for (``scipy/special/_support_alternative_backends.py``: the hook for the planned
``special`` extension of the standard).  Without it, SciPy's last resort computes
``xp.asarray(f(*[np.asarray(a) for a in args]))``: the result is created without ``device=``, so for
inputs on another executor than the default (``asarray(x, device="numba:cpu")``) it lands on the
default one, and the next operation mixes executors (SciPy's ``test_device_dtype`` tests).

Each attribute here is the ufunc of ``scipy.special`` of that name.  Called on arrayx arrays it runs
through ``Array.__array_ufunc__`` (``arrayx/api/_numpy_dispatch.py``): SciPy's implementation on NumPy
copies of the operands, the results moved back to the operands' executor and device.  So, as with
SciPy's own last resort, a Dask operand is computed, a device array is copied to the host, and a
traced operand (inside ``jit``/``grad``/``vmap``) raises the error ``numpy.asarray`` of it raises.
Operands on two executors raise the TypeError that ``x + y`` raises for them.

Not served (``AttributeError``, so SciPy takes its own path): names that are not ufuncs of
``scipy.special``, and ``rel_entr`` and ``xlogy``, which SciPy composes from standard functions
(lazy on Dask, traceable).  Needs SciPy installed (the ``clients`` extra); without it every name
raises an ``AttributeError`` that says so.
"""
from __future__ import annotations

import numpy as np

#: composed by SciPy from the standard's functions for any namespace: left to SciPy
_COMPOSED_BY_SCIPY = frozenset({"rel_entr", "xlogy"})


def __getattr__(name: str):
    if name.startswith("__") or name in _COMPOSED_BY_SCIPY:
        raise AttributeError(f"module 'arrayx.special' has no attribute {name!r}")
    try:
        import scipy.special as sc
    except ImportError:
        raise AttributeError(f"arrayx.special.{name}: needs SciPy (pip install scipy)") from None
    fn = getattr(sc, name, None)
    while fn is not None and not isinstance(fn, np.ufunc) and hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__  # with SCIPY_ARRAY_API=1 SciPy's names are dispatching wrappers
    if not isinstance(fn, np.ufunc):
        raise AttributeError(f"module 'arrayx.special' has no attribute {name!r} "
                             f"(only scipy.special's ufuncs are served)")
    return fn
