"""Rules for the set functions (``arrayx/api/sets.py``): none of them is differentiated
(their results are values selected by equality, counts and indices)."""
from __future__ import annotations

import numpy as np

from arrayx.api import _dtypes
from arrayx.api import sets as se
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import count_known_values, defabstract, defjvp_zero

defjvp_zero(se.isin_p, se.unique_all_p, se.unique_counts_p, se.unique_inverse_p, se.unique_values_p)

# -- abstract evaluation: the number of unique values is known only from the values --------------------

_UNIQUE_HINT = "compute unique_* eagerly (outside make_graph/jit); a size= argument is not offered yet"


def _n_unique(x, name):
    return len(np.unique(count_known_values(x, name)))


def _unique_values_abstract(x):
    return ShapeDtypeStruct((_n_unique(x, "unique_values"),), x.dtype)


# index and count results have the ``index_dtype`` param's dtype, else int64 (api/_device_dtypes.py)
_INT64 = _dtypes.int64


def _unique_counts_abstract(x, *, index_dtype=_INT64):
    n = _n_unique(x, "unique_counts")
    return ShapeDtypeStruct((n,), x.dtype), ShapeDtypeStruct((n,), index_dtype)


def _unique_inverse_abstract(x, *, index_dtype=_INT64):
    n = _n_unique(x, "unique_inverse")
    return ShapeDtypeStruct((n,), x.dtype), ShapeDtypeStruct(tuple(x.shape), index_dtype)


def _unique_all_abstract(x, *, index_dtype=_INT64):
    n = _n_unique(x, "unique_all")
    return (ShapeDtypeStruct((n,), x.dtype), ShapeDtypeStruct((n,), index_dtype),
            ShapeDtypeStruct(tuple(x.shape), index_dtype), ShapeDtypeStruct((n,), index_dtype))


defabstract(se.isin_p, lambda x1, x2, *, invert: ShapeDtypeStruct(tuple(getattr(x1, "shape", ())), _dtypes.bool))
defabstract(se.unique_values_p, _unique_values_abstract, data_dependent=_UNIQUE_HINT)
defabstract(se.unique_counts_p, _unique_counts_abstract, data_dependent=_UNIQUE_HINT)
defabstract(se.unique_inverse_p, _unique_inverse_abstract, data_dependent=_UNIQUE_HINT)
defabstract(se.unique_all_p, _unique_all_abstract, data_dependent=_UNIQUE_HINT)


# -- batching ------------------------------------------------------------------------------------------

from arrayx import api as ax  # noqa: E402
from arrayx.transforms.rules._batch import moveaxis_to  # noqa: E402
from arrayx.transforms.rules._batch import defbatch, size_of  # noqa: E402


def _isin_batch(vals, dims, *, invert):
    (x1, x2), (d1, d2) = vals, dims
    if d2 is None:  # the same set for every member: x1's batch axis is one more axis of the queries
        return se.isin_p.bind(x1, x2, invert=invert), d1
    # a set per member: compare each query with its member's elements (NaN is in no set, as in NumPy)
    size = size_of(vals, dims)
    elements = ax.reshape(moveaxis_to(x2, d2, 0, size), (size, -1))
    q = moveaxis_to(x1 if isinstance(x1, ax.Array) else ax.asarray(x1, device=x2.device), d1, 0, size)
    found = ax.any(ax.expand_dims(q, axis=-1) == ax.reshape(elements, (size,) + (1,) * (q.ndim - 1) + (-1,)),
                   axis=-1)
    return (~found if invert else found), 0


defbatch(se.isin_p, _isin_batch)
