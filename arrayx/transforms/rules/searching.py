"""Rules for the searching functions (``arrayx/api/searching.py``).

Index results (argmax, argmin, nonzero, searchsorted, count_nonzero) have no
derivative; ``where`` is linear in its two value operands (the condition is a
constant), and its operands are already broadcast to one shape under transforms.
"""
from __future__ import annotations

from arrayx.api import _dtypes
from arrayx.api import searching as se
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import count_known_values, defabstract, defjvp_zero, is_undefined
from arrayx.transforms.rules.statistical import reduced_shape

defjvp_zero(se.argmax_p, se.argmin_p, se.count_nonzero_p, se.nonzero_p, se.searchsorted_p)


def _where_abstract(condition, x1, x2):
    dtype = x1.dtype if hasattr(x1, "shape") else x2.dtype
    return ShapeDtypeStruct(condition.shape, dtype)


defabstract(se.where_p, _where_abstract)


def _where_jvp(primals, tangents):
    condition, x1, x2 = primals
    _, t1, t2 = tangents
    out = se.where_p.bind(condition, x1, x2)
    if t1 is None and t2 is None:
        return out, None
    # a missing tangent is a zero of the result's dtype (a scalar operand of where)
    zero = out.dtype.type(0)
    return out, se.where_p.bind(condition, zero if t1 is None else t1, zero if t2 is None else t2)


def _where_transpose(ct, condition, x1, x2):
    zero = ct.dtype.type(0)
    return (
        None,
        se.where_p.bind(condition, ct, zero) if is_undefined(x1) else None,
        se.where_p.bind(condition, zero, ct) if is_undefined(x2) else None,
    )


se.where_p.jvp = _where_jvp
se.where_p.transpose = _where_transpose

# -- abstract evaluation ----------------------------------------------------------------------------


# index results have the ``index_dtype`` param's dtype, else int64 (api/_device_dtypes.py: the
# api layer passes the device's index dtype where it is not int64)
_INT64 = _dtypes.int64


def _arg_reduce_abstract(x, *, axis, keepdims, index_dtype=_INT64):
    axes = None if axis is None else (axis,)
    return ShapeDtypeStruct(reduced_shape(x.shape, axes, keepdims), index_dtype)


def _nonzero_abstract(x, *, index_dtype=_INT64):
    # one index array per dimension, as long as the number of non-zero elements
    n = int(count_known_values(x, "nonzero").astype(bool).sum())
    return tuple(ShapeDtypeStruct((n,), index_dtype) for _ in x.shape)


defabstract(se.argmax_p, _arg_reduce_abstract)
defabstract(se.argmin_p, _arg_reduce_abstract)
defabstract(se.count_nonzero_p, lambda x, *, axis, keepdims, index_dtype=_INT64: ShapeDtypeStruct(
    reduced_shape(x.shape, axis, keepdims), index_dtype))
defabstract(se.nonzero_p, _nonzero_abstract,
            data_dependent="call nonzero eagerly (outside make_graph/jit), or keep a fixed shape with "
                           "where(x != 0, ...) (a size= argument is not offered yet)")
defabstract(se.searchsorted_p, lambda x1, x2, *, side, index_dtype=_INT64: ShapeDtypeStruct(
    tuple(getattr(x2, "shape", ())), index_dtype))


# -- batching ------------------------------------------------------------------------------------

from arrayx import api as ax  # noqa: E402
from arrayx.transforms.rules._batch import moveaxis_to  # noqa: E402
from arrayx.transforms.rules._batch import defaxes, defbatch, defvectorized, size_of, to_front  # noqa: E402

defaxes(se.argmax_p, "axis", none_means="flat")
defaxes(se.argmin_p, "axis", none_means="flat")
defaxes(se.count_nonzero_p, "axis")
defvectorized(se.where_p)


def _searchsorted_batch(vals, dims, *, side, **index):
    (x1, x2), (d1, d2) = vals, dims
    if d1 is None:  # one sorted array: x2's batch axis is one more axis of the queries
        return se.searchsorted_p.bind(x1, x2, side=side, **index), d2
    # one sorted array per member: count, per query, the elements before it (NaN sorts last)
    size = size_of(vals, dims)
    x1 = to_front(x1, d1)
    if isinstance(x2, ax.Array):
        x2 = moveaxis_to(x2, d2, 0, size)
    else:
        x2 = ax.full((size,), x2, dtype=x1.dtype, device=x1.device)
    q = ax.expand_dims(x2, axis=-1)
    s = ax.reshape(x1, (size,) + (1,) * (x2.ndim - 1) + (x1.shape[1],))
    if side == "left":
        before = (s < q) | (ax.isnan(q) & ~ax.isnan(s)) if x1.dtype.kind == "f" else s < q
    else:
        before = (s <= q) | ax.isnan(q) if x1.dtype.kind == "f" else s <= q
    dt = index.get("index_dtype", _INT64)
    return ax.astype(ax.sum(ax.astype(before, dt), axis=-1), dt), 0


defbatch(se.searchsorted_p, _searchsorted_batch)
