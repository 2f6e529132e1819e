"""Rules for ``astype`` (``arrayx/api/data_types.py``).

Between floating-point dtypes a cast is linear (the tangent is cast the same way;
the cotangent is cast back, keeping the real part when going back from complex, as
JAX does); casts to or from integers and bools have no derivative.
"""
from __future__ import annotations

from arrayx import api as ax
from arrayx.api import data_types as dt
from arrayx.api._dtypes import kind_of
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import defabstract

defabstract(dt.astype_p, lambda x, *, dtype: ShapeDtypeStruct(x.shape, dtype))


def _astype_jvp(primals, tangents, *, dtype):
    (x,), (t,) = primals, tangents
    out = dt.astype_p.bind(x, dtype=dtype)
    if kind_of(dtype) not in "fc" or kind_of(x.dtype) not in "fc":
        return out, None
    return out, dt.astype_p.bind(t, dtype=dtype)


def _astype_transpose(ct, x, *, dtype):
    if ct.dtype.kind == "c" and x.dtype.kind != "c":
        ct = ax.real(ct)
    return (ct if ct.dtype == x.dtype else dt.astype_p.bind(ct, dtype=x.dtype),)


dt.astype_p.jvp = _astype_jvp
dt.astype_p.transpose = _astype_transpose


# -- batching ------------------------------------------------------------------------------------

from arrayx.transforms.rules._batch import defvectorized  # noqa: E402

defvectorized(dt.astype_p)
