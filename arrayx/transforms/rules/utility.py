"""Rules for the utility functions (``arrayx/api/utility.py``).

``all``/``any`` return bools (no derivative); ``diff`` is linear, and the transpose
of one difference, out[i] = x[i+1] - x[i], is ct[i-1] - ct[i] (with zeros past the
ends), applied n times.
"""
from __future__ import annotations

from arrayx import api as ax
from arrayx.api import _dtypes
from arrayx.api import utility as ut
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import defabstract, defjvp_zero, deflinear
from arrayx.transforms.rules.statistical import reduced_shape

defjvp_zero(ut.all_p, ut.any_p)


def _diff_transpose(ct, x, *, axis, n):
    for _ in range(n):
        edge = list(ct.shape)
        edge[axis] = 1
        zeros = ax.zeros(tuple(edge), dtype=ct.dtype, device=ct.device)
        ct = ax.concat([zeros, ct], axis=axis) - ax.concat([ct, zeros], axis=axis)
    return (ct,)


deflinear(ut.diff_p, _diff_transpose)

def _diff_abstract(x, *, axis, n):
    shape = list(x.shape)
    shape[axis] = max(shape[axis] - n, 0)
    return ShapeDtypeStruct(tuple(shape), x.dtype)


defabstract(ut.all_p, lambda x, *, axis, keepdims: ShapeDtypeStruct(reduced_shape(x.shape, axis, keepdims), _dtypes.bool))
defabstract(ut.any_p, lambda x, *, axis, keepdims: ShapeDtypeStruct(reduced_shape(x.shape, axis, keepdims), _dtypes.bool))
defabstract(ut.diff_p, _diff_abstract)


# -- batching ------------------------------------------------------------------------------------

from arrayx.transforms.rules._batch import defaxes  # noqa: E402

defaxes(ut.all_p, "axis")
defaxes(ut.any_p, "axis")
defaxes(ut.diff_p, "axis")
