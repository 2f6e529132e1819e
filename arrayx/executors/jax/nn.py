"""The JAX executor's entries for ``arrayx.nn``'s primitives: ``erf``, ``erfc`` and ``erfinv`` are
``jax.scipy.special``'s.  The primitives and their rules: ``arrayx/nn.py``."""
from __future__ import annotations

__all__ = ["TABLE"]


def erf(x):
    import jax.scipy.special as jss

    return jss.erf(x)


def erfc(x):
    import jax.scipy.special as jss

    return jss.erfc(x)


def erfinv(x):
    import jax.scipy.special as jss

    return jss.erfinv(x)


#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {"erf": erf, "erfc": erfc, "erfinv": erfinv}
