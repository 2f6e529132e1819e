"""The JAX executor's entries for ``arrayx.nn``'s primitives: ``erf``, ``erfc`` and ``erfinv`` are
``jax.scipy.special``'s.  The primitives and their rules: ``arrayx/nn.py``."""
from __future__ import annotations

__all__ = ["TABLE"]


def _special(name: str):
    def impl(x):
        import jax.scipy.special as jss

        return getattr(jss, name)(x)

    impl.__name__ = name
    return impl


#: primitive name -> the implementation (merged into ``JaxExecutor.overrides``)
TABLE = {name: _special(name) for name in ("erf", "erfc", "erfinv")}
