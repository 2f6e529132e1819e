"""Rules for the sorting functions (``arrayx/api/sorting.py``).

``sort`` moves elements: its tangent is the tangent gathered by the sorting
permutation (``argsort`` with the same parameters), so ties keep the stable order.
"""
from __future__ import annotations

from arrayx import api as ax
from arrayx.api import _dtypes
from arrayx.api import sorting as so
from arrayx.api._device_dtypes import index_params
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import defabstract, defjvp_zero

defjvp_zero(so.argsort_p)


def _sort_jvp(primals, tangents, *, axis, descending, stable):
    (x,), (t,) = primals, tangents
    out = so.sort_p.bind(x, axis=axis, descending=descending, stable=stable)
    # the permutation in x's device's index dtype, as argsort(x) would give it
    perm = so.argsort_p.bind(x, axis=axis, descending=descending, stable=stable, **index_params(x))
    return out, ax.take_along_axis(t, perm, axis=axis)


so.sort_p.jvp = _sort_jvp

defabstract(so.sort_p, lambda x, *, axis, descending, stable: ShapeDtypeStruct(tuple(x.shape), x.dtype))
defabstract(so.argsort_p, lambda x, *, axis, descending, stable, index_dtype=_dtypes.int64: ShapeDtypeStruct(
    tuple(x.shape), index_dtype))


# -- batching ------------------------------------------------------------------------------------

from arrayx.transforms.rules._batch import defaxes  # noqa: E402

defaxes(so.sort_p, "axis")
defaxes(so.argsort_p, "axis")
