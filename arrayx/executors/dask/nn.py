"""The Dask executor's entries for ``arrayx.nn``'s primitives: ``erf``, ``erfc`` and ``erfinv`` are the
NumPy executor's (``executors/numpy/nn.py``: SciPy's ufuncs) per block.  The primitives and their
rules: ``arrayx/nn.py``."""
from __future__ import annotations

from arrayx.executors.numpy.nn import TABLE as _NUMPY

__all__ = ["TABLE"]


def erf(x):
    return x.map_blocks(_NUMPY["erf"], dtype=x.dtype)


def erfc(x):
    return x.map_blocks(_NUMPY["erfc"], dtype=x.dtype)


def erfinv(x):
    return x.map_blocks(_NUMPY["erfinv"], dtype=x.dtype)


#: primitive name -> Dask's implementation (merged into ``DaskExecutor.overrides``)
TABLE = {"erf": erf, "erfc": erfc, "erfinv": erfinv}
