"""The CuPy executor's entries for ``arrayx.nn``'s primitives: ``erf``, ``erfc`` and ``erfinv`` are
``cupyx.scipy.special``'s.  The primitives and their rules: ``arrayx/nn.py``."""
from __future__ import annotations

__all__ = ["TABLE"]


def _special(name: str):
    def impl(x):
        import cupyx.scipy.special as cps

        return getattr(cps, name)(x)

    impl.__name__ = name
    return impl


#: primitive name -> the implementation (merged into ``CupyExecutor.overrides``)
TABLE = {name: _special(name) for name in ("erf", "erfc", "erfinv")}
