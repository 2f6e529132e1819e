"""Rules for the creation functions that take arrays (``arrayx/api/creation.py``).

``full_like`` depends only on its operand's shape (zero derivative); ``tril`` and
``triu`` keep a triangle, a linear map that is its own transpose.
"""
from __future__ import annotations

from arrayx.api import creation as cr
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import defabstract, defjvp_zero, deflinear

defjvp_zero(cr.full_like_p)
# under reverse mode full_like may be applied to a tangent: its result does not depend on it
cr.full_like_p.transpose = lambda ct, x, **params: (None,)
defabstract(cr.full_like_p, lambda x, *, fill_value, dtype: ShapeDtypeStruct(x.shape, dtype))

deflinear(cr.tril_p, lambda ct, x, *, k: (cr.tril_p.bind(ct, k=k),))
deflinear(cr.triu_p, lambda ct, x, *, k: (cr.triu_p.bind(ct, k=k),))

# creation functions without array inputs: a result of the shape and dtype asked for, no operand
# to differentiate or batch (their batch rule is never reached: traces only see operands)
for _prim in (cr.full_p, cr.arange_p, cr.eye_p, cr.linspace_p):
    defabstract(_prim, lambda *, shape, dtype, device, **_: ShapeDtypeStruct(tuple(shape), dtype))
    defjvp_zero(_prim)
    _prim.batch = lambda vals, dims, _p=_prim, **params: (_p.bind(**params), None)

defabstract(cr.tril_p, lambda x, *, k: ShapeDtypeStruct(tuple(x.shape), x.dtype))
defabstract(cr.triu_p, lambda x, *, k: ShapeDtypeStruct(tuple(x.shape), x.dtype))


# -- batching ------------------------------------------------------------------------------------

from arrayx.transforms.rules._batch import defleading, defvectorized  # noqa: E402

defvectorized(cr.full_like_p)
defleading(cr.tril_p, cr.triu_p)
