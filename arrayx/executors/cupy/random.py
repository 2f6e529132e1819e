"""The CuPy executor's entry for ``arrayx.random``'s primitive ``libm_log``: the GPU's own log, not the
C library's (tests compare it with a tolerance).  The primitive and its rules: ``arrayx/_random_math.py``."""
from __future__ import annotations

__all__ = ["TABLE"]


def libm_log(x):
    import cupy

    return cupy.log(x)


#: primitive name -> CuPy's implementation (merged into ``CupyExecutor.overrides``)
TABLE = {"libm_log": libm_log}
