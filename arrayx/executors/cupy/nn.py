"""The CuPy executor's entries for ``arrayx.nn``'s primitives: ``erf``, ``erfc`` and ``erfinv`` are
``cupyx.scipy.special``'s.  The primitives and their rules: ``arrayx/nn.py``."""
from __future__ import annotations

__all__ = ["TABLE"]


def erf(x):
    import cupyx.scipy.special as cps

    return cps.erf(x)


def erfc(x):
    import cupyx.scipy.special as cps

    return cps.erfc(x)


def erfinv(x):
    import cupyx.scipy.special as cps

    return cps.erfinv(x)


#: primitive name -> CuPy's implementation (merged into ``CupyExecutor.overrides``)
TABLE = {"erf": erf, "erfc": erfc, "erfinv": erfinv}
