"""Rules for the set functions (``arrayx/api/sets.py``): none of them is differentiated
(their results are values selected by equality, counts and indices)."""
from __future__ import annotations

import numpy as np

from arrayx.api import _dtypes
from arrayx.api import sets as se
from arrayx.transforms._tracer import ShapeDtypeStruct
from arrayx.transforms.rules._define import count_known_values, defabstract, defjvp_zero

defjvp_zero(se.isin_p, se.unique_all_p, se.unique_counts_p, se.unique_inverse_p, se.unique_values_p)

# -- abstract evaluation: the number of unique values is known only from the values --------------------

_UNIQUE_HINT = "compute unique_* eagerly (outside make_graph/jit); a size= argument is not offered yet"


def _n_unique(x, name):
    return len(np.unique(count_known_values(x, name)))


def _unique_values_abstract(x):
    return ShapeDtypeStruct((_n_unique(x, "unique_values"),), x.dtype)


def _unique_counts_abstract(x):
    n = _n_unique(x, "unique_counts")
    return ShapeDtypeStruct((n,), x.dtype), ShapeDtypeStruct((n,), _dtypes.DEFAULT_INDEX)


def _unique_inverse_abstract(x):
    n = _n_unique(x, "unique_inverse")
    return ShapeDtypeStruct((n,), x.dtype), ShapeDtypeStruct(tuple(x.shape), _dtypes.DEFAULT_INDEX)


def _unique_all_abstract(x):
    n = _n_unique(x, "unique_all")
    return (ShapeDtypeStruct((n,), x.dtype), ShapeDtypeStruct((n,), _dtypes.DEFAULT_INDEX),
            ShapeDtypeStruct(tuple(x.shape), _dtypes.DEFAULT_INDEX), ShapeDtypeStruct((n,), _dtypes.DEFAULT_INDEX))


defabstract(se.isin_p, lambda x1, x2, *, invert: ShapeDtypeStruct(tuple(getattr(x1, "shape", ())), _dtypes.bool))
defabstract(se.unique_values_p, _unique_values_abstract, data_dependent=_UNIQUE_HINT)
defabstract(se.unique_counts_p, _unique_counts_abstract, data_dependent=_UNIQUE_HINT)
defabstract(se.unique_inverse_p, _unique_inverse_abstract, data_dependent=_UNIQUE_HINT)
defabstract(se.unique_all_p, _unique_all_abstract, data_dependent=_UNIQUE_HINT)
