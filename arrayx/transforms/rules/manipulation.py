"""Rules for the manipulation functions (``arrayx/api/manipulation.py``).

Every manipulation is linear; the transposes undo the data movement
(sum over broadcast or repeated copies, split concatenations, inverse permutations).
"""
from __future__ import annotations

import math

from arrayx import api as ax
from arrayx.api._checks import broadcast_shapes_for
from arrayx.api._index_updates import at_update
from arrayx.api import manipulation as mp
from arrayx.core.tracers import ShapeDtypeStruct, Tracer
from arrayx.transforms.rules._define import defabstract, deflinear, is_undefined, unbroadcast, zeros_for


# -- abstract evaluation (the common, cheap ones; the rest use the generic fallback) ---------------

defabstract(mp.broadcast_to_p, lambda x, *, shape: ShapeDtypeStruct(shape, x.dtype))
defabstract(mp.reshape_p, lambda x, *, shape, copy=None: ShapeDtypeStruct(shape, x.dtype))
defabstract(mp.permute_dims_p, lambda x, *, axes: ShapeDtypeStruct(tuple(x.shape[a] for a in axes), x.dtype))


def _expand_dims_abstract(x, *, axis):
    shape = list(x.shape)
    for a in axis:
        shape.insert(a, 1)
    return ShapeDtypeStruct(tuple(shape), x.dtype)


defabstract(mp.expand_dims_p, _expand_dims_abstract)
defabstract(mp.squeeze_p, lambda x, *, axis: ShapeDtypeStruct(
    tuple(d for i, d in enumerate(x.shape) if i not in axis), x.dtype))


def _repeat_abstract(x, *rest, axis, repeats=None):
    shape = list(x.shape)
    if rest:  # a repeats array: the result's length is its sum, so it must be concrete
        counts = rest[0]
        if isinstance(counts, Tracer):
            raise TypeError("repeat: a traced repeats array gives a result of unknown length; pass concrete repeats")
        import numpy as np

        host = np.asarray(counts._ex.to_host(counts._buf))
        shape[axis] = int(host.sum()) if host.size != 1 else int(host.reshape(())) * shape[axis]
    else:
        shape[axis] *= repeats
    return ShapeDtypeStruct(tuple(shape), x.dtype)


defabstract(mp.repeat_p, _repeat_abstract)


# -- broadcasting -------------------------------------------------------------------------------------

deflinear(mp.broadcast_to_p, lambda ct, x, *, shape: (unbroadcast(ct, x.shape),))


def _broadcast_arrays_jvp(primals, tangents):
    outs = mp.broadcast_arrays_p.bind(*primals)
    touts = tuple(None if t is None else ax.broadcast_to(t, o.shape) for t, o in zip(tangents, outs))
    return outs, touts


def _broadcast_arrays_transpose(cts, *xs):
    return [unbroadcast(c, x.shape) if c is not None and is_undefined(x) else None for c, x in zip(cts, xs)]


mp.broadcast_arrays_p.jvp = _broadcast_arrays_jvp
mp.broadcast_arrays_p.transpose = _broadcast_arrays_transpose


# -- joining and splitting ------------------------------------------------------------------------------


def _concat_transpose(ct, *xs, axis):
    out = []
    start = 0
    head = (slice(None),) * axis
    for x in xs:
        n = x.shape[axis]
        out.append(ct[head + (slice(start, start + n),)] if is_undefined(x) else None)
        start += n
    return out


def _stack_transpose(ct, *xs, axis):
    head = (slice(None),) * axis
    return [ct[head + (i,)] if is_undefined(x) else None for i, x in enumerate(xs)]


def _all_linear(prim, transpose):
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(t is None for t in tangents):
            return out, None
        ts = [ax.zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]
        return out, prim.bind(*ts, **params)

    jvp.__name__ = f"{prim.name}_jvp_linear"
    prim.jvp = jvp
    prim.transpose = transpose


_all_linear(mp.concat_p, _concat_transpose)
_all_linear(mp.stack_p, _stack_transpose)


def _unstack_jvp(primals, tangents, *, axis):
    (x,), (t,) = primals, tangents
    return mp.unstack_p.bind(x, axis=axis), mp.unstack_p.bind(t, axis=axis)


def _unstack_transpose(cts, x, *, axis):
    like = next(c for c in cts if c is not None)
    parts = [c if c is not None else _zeros_slice(x, axis, like) for c in cts]
    return (ax.stack(parts, axis=axis),)


def _zeros_slice(x, axis, like):
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return zeros_for(ShapeDtypeStruct(shape, x.dtype), like)


mp.unstack_p.jvp = _unstack_jvp
mp.unstack_p.transpose = _unstack_transpose


# -- shape changes and reordering ---------------------------------------------------------------------------


def _reshape_back(ct, x, **params):
    return (ax.reshape(ct, x.shape),)


deflinear(mp.expand_dims_p, _reshape_back)
deflinear(mp.squeeze_p, _reshape_back)
deflinear(mp.reshape_p, _reshape_back)
deflinear(mp.flip_p, lambda ct, x, *, axis: (ax.flip(ct, axis=axis),))
deflinear(mp.moveaxis_p, lambda ct, x, *, source, destination: (ax.moveaxis(ct, destination, source),))


def _permute_transpose(ct, x, *, axes):
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (ax.permute_dims(ct, tuple(inverse)),)


deflinear(mp.permute_dims_p, _permute_transpose)


def _roll_transpose(ct, x, *, shift, axis):
    if axis is None:
        return (ax.roll(ct, -shift),)
    return (ax.roll(ct, tuple(-s for s in shift), axis=axis),)


deflinear(mp.roll_p, _roll_transpose)


# -- repetition ---------------------------------------------------------------------------------------------


def _repeat_transpose(ct, x, *rest, axis, repeats=None):
    """Sum each run of copies: scatter-add the cotangent onto the source index of every copy."""
    n = x.shape[axis]
    source = ax.arange(n, device=ct.device)
    counts = rest[0] if rest else repeats
    index = ax.repeat(source, counts, axis=0)
    key = (slice(None),) * axis + (index,)
    return (_scatter_add(x, ct, key),) + (None,) * len(rest)


def _scatter_add(x_aval, ct, key):
    return at_update(zeros_for(x_aval, ct), key, ct, "add")


deflinear(mp.repeat_p, _repeat_transpose)


def _tile_transpose(ct, x, *, repetitions):
    reps = tuple(repetitions)
    shape = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    interleaved = []
    for r, s in zip(reps, shape):
        interleaved.extend((r, s))
    summed = ax.sum(ax.reshape(ct, tuple(interleaved)), axis=tuple(range(0, 2 * len(reps), 2)))
    return (ax.reshape(summed, x.shape),)


deflinear(mp.tile_p, _tile_transpose)

# -- abstract evaluation of the rest ------------------------------------------------------------------


def _broadcast_arrays_abstract(*xs):
    shape = broadcast_shapes_for("broadcast_arrays", *(x.shape for x in xs))
    return tuple(ShapeDtypeStruct(shape, x.dtype) for x in xs)


def _concat_abstract(*xs, axis):
    if axis is None:
        return ShapeDtypeStruct((sum(math.prod(x.shape) for x in xs),), xs[0].dtype)
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return ShapeDtypeStruct(tuple(shape), xs[0].dtype)


def _stack_abstract(*xs, axis):
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    return ShapeDtypeStruct(tuple(shape), xs[0].dtype)


def _unstack_abstract(x, *, axis):
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return tuple(ShapeDtypeStruct(shape, x.dtype) for _ in range(x.shape[axis]))


def _moveaxis_abstract(x, *, source, destination):
    order = [i for i in range(x.ndim) if i not in source]
    for dst, src in sorted(zip(destination, source)):
        order.insert(dst, src)
    return ShapeDtypeStruct(tuple(x.shape[i] for i in order), x.dtype)


def _tile_abstract(x, *, repetitions):
    reps = tuple(repetitions)
    n = max(len(reps), x.ndim)
    shape = (1,) * (n - x.ndim) + tuple(x.shape)
    reps = (1,) * (n - len(reps)) + reps
    return ShapeDtypeStruct(tuple(d * r for d, r in zip(shape, reps)), x.dtype)


defabstract(mp.broadcast_arrays_p, _broadcast_arrays_abstract)
defabstract(mp.concat_p, _concat_abstract)
defabstract(mp.stack_p, _stack_abstract)
defabstract(mp.unstack_p, _unstack_abstract)
defabstract(mp.flip_p, lambda x, *, axis: ShapeDtypeStruct(tuple(x.shape), x.dtype))
defabstract(mp.roll_p, lambda x, *, shift, axis: ShapeDtypeStruct(tuple(x.shape), x.dtype))
defabstract(mp.moveaxis_p, _moveaxis_abstract)
defabstract(mp.tile_p, _tile_abstract)


# -- batching: the batch axis goes first and the axis/shape params skip it ---------------------

from arrayx.transforms.rules._batch import (  # noqa: E402
    BATCH_RULES, defaxes, defvectorized, full_batch, size_of, to_front,
)

for _prim in (mp.flip_p, mp.squeeze_p, mp.unstack_p):
    defaxes(_prim, "axis")
defaxes(mp.roll_p, "axis", none_means="flat")


def _expand_dims_batch(vals, dims, *, axis):
    return mp.expand_dims_p.bind(to_front(vals[0], dims[0]), axis=tuple(a + 1 for a in axis)), 0


def _reshape_batch(vals, dims, *, shape, copy):
    x = to_front(vals[0], dims[0])
    return mp.reshape_p.bind(x, shape=(x.shape[0],) + tuple(shape), copy=copy), 0


def _permute_dims_batch(vals, dims, *, axes):
    return mp.permute_dims_p.bind(to_front(vals[0], dims[0]), axes=(0,) + tuple(a + 1 for a in axes)), 0


def _moveaxis_batch(vals, dims, *, source, destination):
    x = to_front(vals[0], dims[0])
    n = x.ndim - 1
    return mp.moveaxis_p.bind(x, source=tuple(s % n + 1 for s in source),
                              destination=tuple(d % n + 1 for d in destination)), 0


def _broadcast_to_batch(vals, dims, *, shape):
    return full_batch(vals[0], dims[0], size_of(vals, dims), shape), 0


def _join_batch(prim):
    def rule(vals, dims, *, axis):
        size = size_of(vals, dims)
        args = [to_front(v, d) if d is not None else
                mp.broadcast_to(mp.expand_dims(v, axis=0), (size,) + tuple(v.shape)) for v, d in zip(vals, dims)]
        return prim.bind(*args, axis=axis + 1), 0

    rule.__name__ = f"{prim.name}_batch"
    return rule


def _tile_batch(vals, dims, *, repetitions):
    x = to_front(vals[0], dims[0])
    n = x.ndim - 1
    reps = tuple(repetitions)
    reps = (1,) * (n - len(reps)) + reps if len(reps) < n else reps
    if len(reps) > n:  # tile adds leading axes: make them after the batch axis first
        x = mp.reshape(x, (x.shape[0],) + (1,) * (len(reps) - n) + tuple(x.shape[1:]))
    return mp.tile_p.bind(x, repetitions=(1,) + reps), 0


for _prim, _rule in ((mp.expand_dims_p, _expand_dims_batch), (mp.reshape_p, _reshape_batch),
                     (mp.permute_dims_p, _permute_dims_batch), (mp.moveaxis_p, _moveaxis_batch),
                     (mp.broadcast_to_p, _broadcast_to_batch), (mp.concat_p, _join_batch(mp.concat_p)),
                     (mp.stack_p, _join_batch(mp.stack_p)), (mp.tile_p, _tile_batch)):
    _prim.batch = _rule
    BATCH_RULES[_prim.name] = "native"


def _broadcast_arrays_batch(vals, dims):
    from arrayx.api._checks import broadcast_shapes_for

    size = size_of(vals, dims)
    shape = broadcast_shapes_for("broadcast_arrays", *(
        v.shape if d is None else v.shape[:d] + v.shape[d + 1:] for v, d in zip(vals, dims)))
    return tuple(full_batch(v, d, size, shape) for v, d in zip(vals, dims)), 0


mp.broadcast_arrays_p.batch = _broadcast_arrays_batch
BATCH_RULES["broadcast_arrays"] = "native"


def _repeat_batch(vals, dims, *, axis, **params):
    (x, *counts), (dx, *dc) = vals, dims
    if counts and dc[0] is not None:
        # per-member counts: each member's length depends on its values (a counted loop, which
        # raises when the lengths differ)
        from arrayx.transforms.rules._batch import loop_rule as _loop_rule

        return _loop_rule(mp.repeat_p, size_of(vals, dims))(vals, dims, axis=axis, **params)
    return mp.repeat_p.bind(to_front(x, dx), *counts, axis=axis + 1, **params), 0


mp.repeat_p.batch = _repeat_batch
BATCH_RULES["repeat"] = "native"
