"""Rules for the statistical functions (``arrayx/api/statistical.py``).

Reductions are linear (sum, mean, cumulative_sum) or reduce to them: the extrema
share the tangent among the tied maximal elements (as JAX), products use the
product of the other elements (exact at zeros), var/std differentiate the centred
second moment.
"""
from __future__ import annotations

import math

from arrayx import api as ax
from arrayx.api._checks import cast
from arrayx.api._dtypes import kind_of
from arrayx.api import statistical as st
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.transforms.rules._define import defabstract, deflinear


def _cast(x, dtype):
    return cast(x, dtype)


def reduced_shape(shape, axis, keepdims) -> tuple:
    axes = range(len(shape)) if axis is None else axis
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduced_size(shape, axis) -> int:
    axes = range(len(shape)) if axis is None else axis
    return math.prod(shape[i] for i in axes)


def expand_reduced(ct, in_shape, axis, keepdims):
    """``ct`` (the result of reducing over ``axis``) broadcast back to ``in_shape``."""
    if not keepdims and axis is not None:
        kept = reduced_shape(in_shape, axis, True)
        # no reshape needed when only leading axes were reduced (broadcasting adds them)
        if kept[len(kept) - ct.ndim:] != tuple(ct.shape) or any(d != 1 for d in kept[: len(kept) - ct.ndim]):
            ct = ax.reshape(ct, kept)
    return ax.broadcast_to(ct, tuple(in_shape))


# -- abstract evaluation ------------------------------------------------------------------------


def _reduction_abstract(x, *, axis, keepdims, dtype=None, **_):
    return ShapeDtypeStruct(reduced_shape(x.shape, axis, keepdims), x.dtype if dtype is None else dtype)


for _p in (st.sum_p, st.prod_p, st.max_p, st.min_p, st.mean_p, st.var_p, st.std_p):
    defabstract(_p, _reduction_abstract)


def _cumulative_abstract(x, *, axis, dtype, include_initial):
    shape = list(x.shape)
    shape[axis] += 1 if include_initial else 0
    return ShapeDtypeStruct(tuple(shape), dtype)


defabstract(st.cumulative_sum_p, _cumulative_abstract)
defabstract(st.cumulative_prod_p, _cumulative_abstract)


# -- sum, mean: linear ---------------------------------------------------------------------------


def _linear_jvp(prim):
    """The jvp of ``prim``, linear in its one operand, with a ``dtype`` param: the primitive of the
    tangent, or no tangent where the result dtype is integral (sum, cumulative_sum)."""
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        if kind_of(params["dtype"]) not in "fc":
            return out, None
        return out, prim.bind(t, **params)

    jvp.__name__ = f"{prim.name}_jvp"
    return jvp


def _sum_transpose(ct, x, *, axis, dtype, keepdims):
    ct = expand_reduced(ct, x.shape, axis, keepdims)
    if ct.dtype != x.dtype:
        ct = ax.astype(ct, x.dtype) if x.dtype.kind == "c" or ct.dtype.kind != "c" else ax.real(ct)
    return (ct,)


st.sum_p.jvp = _linear_jvp(st.sum_p)
st.sum_p.transpose = _sum_transpose


def _mean_transpose(ct, x, *, axis, keepdims):
    n = reduced_size(x.shape, axis)
    return (expand_reduced(ct / float(max(n, 1)), x.shape, axis, keepdims),)


deflinear(st.mean_p, _mean_transpose)


# -- cumulative_sum: linear ---------------------------------------------------------------------------


def _reverse_cumsum(a, axis):
    return ax.flip(ax.cumulative_sum(ax.flip(a, axis=axis), axis=axis, dtype=a.dtype), axis=axis)


def _cumsum_transpose(ct, x, *, axis, dtype, include_initial):
    if include_initial:  # out[0] = 0 does not depend on x
        key = (slice(None),) * axis + (slice(1, None),)
        ct = ct[key]
    ct = _reverse_cumsum(ct, axis)
    if ct.dtype != x.dtype:
        ct = ax.astype(ct, x.dtype)
    return (ct,)


st.cumulative_sum_p.jvp = _linear_jvp(st.cumulative_sum_p)
st.cumulative_sum_p.transpose = _cumsum_transpose


# -- products ------------------------------------------------------------------------------------------


def _exclusive_products(x, axis):
    """For each position along ``axis``, the product of all the other elements (exact with zeros)."""
    n = x.shape[axis]
    before = ax.cumulative_prod(x, axis=axis, include_initial=True)
    after = ax.flip(ax.cumulative_prod(ax.flip(x, axis=axis), axis=axis, include_initial=True), axis=axis)
    head = (slice(None),) * axis
    return before[head + (slice(0, n),)] * after[head + (slice(1, n + 1),)]


def _prod_jvp(primals, tangents, *, axis, dtype, keepdims):
    (x,), (t,) = primals, tangents
    out = st.prod_p.bind(x, axis=axis, dtype=dtype, keepdims=keepdims)
    if kind_of(dtype) not in "fc":
        return out, None
    axes = tuple(range(x.ndim)) if axis is None else axis
    if not axes:
        return out, _cast(t, dtype)
    keep = [i for i in range(x.ndim) if i not in axes]
    # move the reduced axes last and flatten them into one
    moved = ax.permute_dims(x, tuple(keep) + tuple(axes)) if x.ndim else x
    lead = tuple(x.shape[i] for i in keep)
    flat = ax.reshape(moved, lead + (-1,))
    others = _exclusive_products(flat, len(lead))
    t_flat = ax.reshape(ax.permute_dims(t, tuple(keep) + tuple(axes)) if x.ndim else t, lead + (-1,))
    tout = ax.sum(_cast(t_flat * others, dtype), axis=-1)
    return out, ax.reshape(tout, out.shape)


st.prod_p.jvp = _prod_jvp


def _cumprod_jvp(primals, tangents, *, axis, dtype, include_initial):
    (x,), (t,) = primals, tangents
    out = st.cumulative_prod_p.bind(x, axis=axis, dtype=dtype, include_initial=include_initial)
    if kind_of(dtype) not in "fc":
        return out, None
    # d out_k = sum_{i<=k} t_i * prod_{j<=k, j!=i} x_j; written with out_k / x_i where x_i != 0
    # and exactly (via the exclusive product of the prefix) for the first zero of each prefix.
    x = _cast(x, dtype)
    t = _cast(t, dtype)
    core = st.cumulative_prod_p.bind(x, axis=axis, dtype=dtype, include_initial=False)
    zero = x == 0
    safe = ax.where(zero, ax.ones_like(x), x)
    dense = core * ax.cumulative_sum(t / safe, axis=axis)
    # at a zero x_i the tangent t_i contributes prod_{j<=k, j!=i} x_j, which is nonzero
    # only until a second zero appears: the product of the prefix with zeros replaced by 1.
    seen = ax.cumulative_sum(_cast(zero, dtype), axis=axis)
    prefix_wo = st.cumulative_prod_p.bind(safe, axis=axis, dtype=dtype, include_initial=False)
    first_zero_t = ax.cumulative_sum(ax.where(zero, t, 0.0), axis=axis)
    tout = ax.where(seen == 0, dense, ax.where(seen == 1, prefix_wo * first_zero_t, 0.0))
    if include_initial:
        head = (slice(None),) * axis
        tout = ax.concat([ax.zeros_like(out[head + (slice(0, 1),)]), tout], axis=axis)
    return out, tout


st.cumulative_prod_p.jvp = _cumprod_jvp


# -- extrema -------------------------------------------------------------------------------------------------


def _extremum_jvp(prim):
    def jvp(primals, tangents, *, axis, keepdims):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, keepdims=keepdims)
        full = out if keepdims else ax.reshape(out, reduced_shape(x.shape, axis, True))
        hit = ax.astype(x == full, x.dtype)
        count = ax.sum(hit, axis=axis, keepdims=keepdims)
        weights = hit / expand_reduced(count, x.shape, axis, keepdims)
        return out, ax.sum(t * weights, axis=axis, keepdims=keepdims)

    jvp.__name__ = f"{prim.name}_jvp"
    return jvp


st.max_p.jvp = _extremum_jvp(st.max_p)
st.min_p.jvp = _extremum_jvp(st.min_p)


# -- moments -------------------------------------------------------------------------------------------------


def _var_tangent(x, t, axis, correction, keepdims):
    centred = x - ax.mean(x, axis=axis, keepdims=True)
    n = reduced_size(x.shape, axis)
    return ax.sum(t * (centred * (2.0 / (n - correction))), axis=axis, keepdims=keepdims)


def _var_jvp(primals, tangents, *, axis, correction, keepdims):
    (x,), (t,) = primals, tangents
    out = st.var_p.bind(x, axis=axis, correction=correction, keepdims=keepdims)
    return out, _var_tangent(x, t, axis, correction, keepdims)


def _std_jvp(primals, tangents, *, axis, correction, keepdims):
    (x,), (t,) = primals, tangents
    out = st.std_p.bind(x, axis=axis, correction=correction, keepdims=keepdims)
    return out, _var_tangent(x, t, axis, correction, keepdims) * (0.5 / out)


st.var_p.jvp = _var_jvp
st.std_p.jvp = _std_jvp


# -- batching: reductions and scans shift their axes past the batch axis -----------------------

from arrayx.transforms.rules._batch import defaxes  # noqa: E402

for _prim in (st.sum_p, st.prod_p, st.mean_p, st.max_p, st.min_p, st.std_p, st.var_p,
              st.cumulative_sum_p, st.cumulative_prod_p):
    defaxes(_prim, "axis")
