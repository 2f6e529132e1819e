"""Hashable keys of primitive params that are equal only when the params are the same bit for bit.

A leaf module (NumPy only): graph.cse and the jax executor's per-primitive program cache both use it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["AVAL_KEYED", "exact_key"]

#: buffer classes whose ``aval`` attribute gives shape, dtype and weak type in one read (about a fifth
#: of reading ``shape`` and ``dtype``): jit's cache-hit key takes it from them.  The jax executor adds
#: jaxlib's array class when it loads; a deferred stand-in is never added (asked for an aval, it would
#: compute its value)
AVAL_KEYED: set = set()


def exact_key(v):
    """A hashable form of a param value that tells apart what ``==`` confuses: ``-0.0 == 0.0`` and
    ``True == 1 == 1.0`` would let ``full((), -0.0)`` share the equation (or the compiled program) of
    ``full((), 0.0)``."""
    if isinstance(v, (float, np.floating)):
        return type(v), float(v).hex()
    if isinstance(v, (complex, np.complexfloating)):
        return type(v), complex(v).real.hex(), complex(v).imag.hex()
    if isinstance(v, tuple):
        return tuple, tuple(exact_key(e) for e in v)
    return type(v), v
