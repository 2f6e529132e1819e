"""Rules for indexing (``arrayx/api/indexing.py``): getitem, at_update (which also serves
the functionalised ``x[key] = v`` and ``x op= v``), take and take_along_axis.

Index arrays are integer (or boolean) operands: never differentiated.  Gathers
transpose to scatter-adds onto zeros; ``at[key].set`` is linear in (x, values)
jointly; the other updates are written as ``set`` of the updated elements, whose
tangent comes from the matching elementwise rule.  With repeated indices ``set``
keeps one write (which one is the executor's choice), so its derivative is only
meaningful without repeats (as in JAX).
"""
from __future__ import annotations

import numpy as np

import arrayx as ax
from arrayx.api import elementwise as ew
from arrayx.api import indexing as ix
from arrayx.transforms.rules._define import deflinear, is_undefined, unbroadcast, zeros_for



# -- getitem ------------------------------------------------------------------------------------------


def _getitem_transpose(ct, x, *index_arrays, key):
    zeros = zeros_for(x.aval, ct)
    return (ix.at_update_p.bind(zeros, ct, *index_arrays, key=key, op="add"),) + (None,) * len(index_arrays)


deflinear(ix.getitem_p, _getitem_transpose)


# -- at_update ------------------------------------------------------------------------------------------

_ELEMENTWISE_OF = {
    "multiply": ew.multiply_p, "divide": ew.divide_p, "power": ew.pow_p,
    "min": ew.minimum_p, "max": ew.maximum_p,
}


def _zero_scalar(x):
    return np.zeros((), dtype=x.dtype)[()]


def _at_update_jvp(primals, tangents, *, key, op):
    x, v, *index_arrays = primals
    tx, tv = tangents[0], tangents[1]
    out = ix.at_update_p.bind(x, v, *index_arrays, key=key, op=op)
    if tx is None and tv is None:
        return out, None
    base = tx if tx is not None else ax.zeros_like(x)
    if op in ("set", "add", "subtract"):  # linear in (x, v)
        value = tv if tv is not None else _zero_scalar(x)
        return out, ix.at_update_p.bind(base, value, *index_arrays, key=key, op=op)
    # out[key] = f(x[key], v): its tangent comes from f's rule, the rest of out is x
    prim = _ELEMENTWISE_OF[op]
    xk = ix.getitem_p.bind(x, *index_arrays, key=key)
    txk = None if tx is None else ix.getitem_p.bind(tx, *index_arrays, key=key)
    vk, tvk = v, tv
    if hasattr(v, "shape") and tuple(v.shape) != tuple(xk.shape):
        vk = ax.broadcast_to(v, xk.shape)
        tvk = None if tv is None else ax.broadcast_to(tv, xk.shape)
    _, t_new = prim.jvp([xk, vk], [txk, tvk])
    if t_new is None:
        t_new = _zero_scalar(x)
    return out, ix.at_update_p.bind(base, t_new, *index_arrays, key=key, op="set")


def _at_update_transpose(ct, x, v, *index_arrays, key, op):
    if op not in ("set", "add", "subtract"):
        raise ValueError(f"at_update: the {op!r} update is not linear")
    ct_x = ct_v = None
    if is_undefined(x):
        if op == "set":  # overwritten elements do not reach the output
            ct_x = ix.at_update_p.bind(ct, _zero_scalar(ct), *index_arrays, key=key, op="set")
        else:
            ct_x = ct
    if is_undefined(v):
        ct_v = unbroadcast(ix.getitem_p.bind(ct, *index_arrays, key=key), v.shape)
        if op == "subtract":
            ct_v = -ct_v
    return (ct_x, ct_v) + (None,) * len(index_arrays)


ix.at_update_p.jvp = _at_update_jvp
ix.at_update_p.transpose = _at_update_transpose


# -- take, take_along_axis ---------------------------------------------------------------------------------


def _take_transpose(ct, x, indices, *, axis):
    key = (("s", None, None, None),) * axis + (("a", 0),)
    zeros = zeros_for(x.aval, ct)
    return (ix.at_update_p.bind(zeros, ct, indices, key=key, op="add"), None)


deflinear(ix.take_p, _take_transpose)


def _take_along_axis_transpose(ct, x, indices, *, axis):
    ndim = len(x.shape)
    key = []
    for d in range(ndim):
        if d == axis:
            key.append(indices)
        else:
            shape = [1] * ndim
            shape[d] = x.shape[d]
            key.append(ax.reshape(ax.arange(x.shape[d], device=ct.device), tuple(shape)))
    zeros = zeros_for(x.aval, ct)
    return (ix.at_update(zeros, tuple(key), ct, "add"), None)


deflinear(ix.take_along_axis_p, _take_along_axis_transpose)
