"""Rules for the internal primitives (``arrayx/api/_internal.py``).

broadcast_in_dim is linear (its transpose sums the new and stretched axes away);
convert_element_type follows astype (linear between floating dtypes, no derivative
to or from integers); select is linear in its two branches; iota has no operand.
"""
from __future__ import annotations

from arrayx import api as ax
from arrayx.api import _internal as it
from arrayx.api._dtypes import kind_of
from arrayx.api.manipulation import reshape
from arrayx.api.statistical import sum as _sum
from arrayx.core.tracers import ShapeDtypeStruct, is_weak
from arrayx.transforms.rules._batch import BATCH_RULES, defvectorized, to_front
from arrayx.transforms.rules._define import defabstract, defjvp_zero, deflinear, is_undefined, zeros_for

# -- broadcast_in_dim ---------------------------------------------------------------------------

defabstract(it.broadcast_in_dim_p, lambda x, *, shape, broadcast_dimensions: ShapeDtypeStruct(shape, x.dtype))


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    kept = set(broadcast_dimensions)
    new = tuple(d for d in range(len(shape)) if d not in kept)
    stretched = tuple(d for i, d in enumerate(broadcast_dimensions) if x.aval.shape[i] == 1 and shape[d] != 1)
    axes = tuple(sorted(new + stretched))
    out = _sum(ct, axis=axes, dtype=ct.dtype) if axes else ct
    return (reshape(out, tuple(x.aval.shape)),)


deflinear(it.broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _broadcast_in_dim_batch(vals, dims, *, shape, broadcast_dimensions):
    x = to_front(vals[0], dims[0])
    return it.broadcast_in_dim_p.bind(
        x, shape=(x.shape[0],) + tuple(shape), broadcast_dimensions=(0,) + tuple(d + 1 for d in broadcast_dimensions)), 0


it.broadcast_in_dim_p.batch = _broadcast_in_dim_batch
BATCH_RULES["broadcast_in_dim"] = "native"

# -- convert_element_type ---------------------------------------------------------------------

defabstract(it.convert_element_type_p,
            lambda x, *, dtype, weak_type: ShapeDtypeStruct(x.shape, dtype, weak_type))


def _convert_jvp(primals, tangents, *, dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = it.convert_element_type_p.bind(x, dtype=dtype, weak_type=weak_type)
    if kind_of(dtype) not in "fc" or kind_of(x.dtype) not in "fc":
        return out, None
    return out, it.convert_element_type_p.bind(t, dtype=dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, dtype, weak_type):
    src = x.aval.dtype
    if ct.dtype.kind == "c" and src.kind != "c":
        ct = ax.real(ct)
    return (ct if ct.dtype == src else it.convert_element_type_p.bind(ct, dtype=src, weak_type=False),)


it.convert_element_type_p.jvp = _convert_jvp
it.convert_element_type_p.transpose = _convert_transpose
defvectorized(it.convert_element_type_p)

# -- select --------------------------------------------------------------------------------------

defabstract(it.select_p, lambda pred, a, b: ShapeDtypeStruct(a.shape, a.dtype, is_weak(a) and is_weak(b)))


def _select_transpose(ct, pred, on_true, on_false):
    if is_undefined(pred):
        raise ValueError("select: the predicate is not a linear operand")
    zero = zeros_for(ct, ct)
    return (None,
            it.select_p.bind(pred, ct, zero) if is_undefined(on_true) else None,
            it.select_p.bind(pred, zero, ct) if is_undefined(on_false) else None)


deflinear(it.select_p, _select_transpose, linear_argnums=(1, 2))
defvectorized(it.select_p)

# -- iota ------------------------------------------------------------------------------------------

defabstract(it.iota_p, lambda *, dtype, shape, dimension, device: ShapeDtypeStruct(shape, dtype))
defjvp_zero(it.iota_p)
it.iota_p.batch = lambda vals, dims, **params: (it.iota_p.bind(**params), None)
BATCH_RULES["iota"] = "native"

# the Numba executor's fused multiply-add, which its jit lowering stages in place of an exact fma
# emulation: elementwise like the emulation (no loop-and-stack fallback under vmap)
from arrayx.executors.numba.fusion.contract import fma_p  # noqa: E402

defvectorized(fma_p)
