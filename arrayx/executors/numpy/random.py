"""The NumPy executor's entry for ``arrayx.random``'s primitive ``libm_log``: the C library's float64
``log`` element by element (``executors/libm.py``: a Numba loop, or ``math.log`` without Numba),
which is XLA:CPU's, never NumPy's SIMD log.  The Numba executor's table starts as this one's; the
primitive and its rules are in ``arrayx/_random_math.py``."""
from __future__ import annotations

from arrayx.executors import libm as _libm

__all__ = ["TABLE"]


def libm_log(x):
    return _libm.log(x)


#: primitive name -> NumPy's implementation (merged into ``NumpyExecutor.overrides``)
TABLE = {"libm_log": libm_log}
