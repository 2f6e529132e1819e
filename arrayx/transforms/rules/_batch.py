"""Helpers that register batch rules (``prim.batch``), used by the rule modules.

A batch rule is ``rule(args, dims, **params) -> (out, out_dim)``: ``dims[i]`` is the
batch axis of operand i, ``None`` when it is not batched (see ``transforms/batching``).
Every helper first moves the batch axis to 0, so only params need rewriting:

- ``defvectorized(*prims)``: elementwise; operands broadcast to ``(B, *result shape)``
  (primitives are strict about shapes, so unbatched operands are broadcast too).
- ``defleading(*prims)``: the primitive maps over leading axes already (linalg's
  stacks of matrices, axis params counted from the end); the batch axis goes first.
- ``defbatch(prim, rule)``: a rule written for ``prim`` (registered as "native"); rules may
  return any batch axis for their result, or a list of axes for multiple results.
- ``defaxes(prim, *names, none_means="all")``: params ``names`` hold axes (an int,
  a tuple of ints or None); they shift by one.  ``None`` means every axis
  (reductions) or, with ``none_means="flat"``, the flattened array (argmax, roll).
"""
from __future__ import annotations

from arrayx.api._checks import broadcast_shapes_for
from arrayx.api.manipulation import broadcast_to, moveaxis, reshape
from arrayx.api._array import Array

__all__ = ["defbatch", "defvectorized", "defleading", "defaxes", "to_front", "full_batch", "size_of", "BATCH_RULES"]

#: how each primitive is batched: name -> helper ("vectorized", "leading", "axes", "native")
BATCH_RULES: dict = {}


def size_of(vals, dims) -> int:
    for v, d in zip(vals, dims):
        if d is not None:
            return v.shape[d]
    raise ValueError("batch rule called without a batched operand")


def to_front(x, d):
    """``x`` with its batch axis ``d`` first (``d`` is not None)."""
    return x if d == 0 else moveaxis(x, d, 0)


def full_batch(x, d, size, shape):
    """``x`` as an array of shape ``(size, *shape)``, batch axis first."""
    if d is None:
        x = reshape(x, (1,) * (len(shape) - x.ndim + 1) + tuple(x.shape))
    else:
        x = to_front(x, d)
        x = reshape(x, (size,) + (1,) * (len(shape) - x.ndim + 1) + tuple(x.shape[1:])) \
            if x.ndim - 1 < len(shape) else x
    target = (size,) + tuple(shape)
    return x if tuple(x.shape) == target else broadcast_to(x, target)


def defbatch(prim, rule) -> None:
    """Register ``rule(args, dims, **params) -> (out, out_dim)`` as ``prim``'s batch rule."""
    prim.batch = rule
    BATCH_RULES[prim.name] = "native"


def defvectorized(*prims) -> None:
    for prim in prims:
        def rule(vals, dims, _prim=prim, **params):
            size = size_of(vals, dims)
            shapes = [v.shape if d is None else v.shape[:d] + v.shape[d + 1:]
                      for v, d in zip(vals, dims) if isinstance(v, Array)]
            shape = broadcast_shapes_for(_prim.name, *shapes)
            args = [full_batch(v, d, size, shape) if isinstance(v, Array) else v for v, d in zip(vals, dims)]
            return _prim.bind(*args, **params), 0

        rule.__name__ = f"{prim.name}_batch_vectorized"
        prim.batch = rule
        BATCH_RULES[prim.name] = "vectorized"


def defleading(*prims) -> None:
    for prim in prims:
        def rule(vals, dims, _prim=prim, **params):
            size = size_of(vals, dims)
            args = []
            for v, d in zip(vals, dims):
                if not isinstance(v, Array):
                    args.append(v)
                elif d is None:
                    args.append(broadcast_to(reshape(v, (1,) + tuple(v.shape)), (size,) + tuple(v.shape)))
                else:
                    args.append(to_front(v, d))
            return _prim.bind(*args, **params), 0

        rule.__name__ = f"{prim.name}_batch_leading"
        prim.batch = rule
        BATCH_RULES[prim.name] = "leading"


def _shift(axes, ndim):
    if axes is None:
        return None
    if isinstance(axes, tuple):
        return tuple((a % ndim) + 1 for a in axes)
    return (axes % ndim) + 1


def defaxes(prim, *names, none_means: str = "all") -> None:
    """Unary ``prim`` whose params ``names`` are axes of its operand (see the module doc)."""

    def rule(vals, dims, **params):
        (x,), (d,) = vals, dims
        x = to_front(x, d)
        ndim = x.ndim - 1
        flat = none_means == "flat" and all(params.get(n) is None for n in names)
        if flat:
            shape = tuple(x.shape)
            out = prim.bind(reshape(x, (shape[0], -1)), **{**params, **{n: 1 for n in names}})
            if out.ndim == 2 and out.shape[1] == x.size // max(shape[0], 1) and prim.name == "roll":
                return reshape(out, shape), 0  # roll of the flattened array keeps the shape
            if params.get("keepdims"):
                out = reshape(out, (shape[0],) + (1,) * ndim)
            return out, 0
        new = {}
        for n in names:
            a = params[n]
            new[n] = tuple(range(1, ndim + 1)) if a is None else _shift(a, ndim)
        out = prim.bind(x, **{**params, **new})
        return out, 0

    rule.__name__ = f"{prim.name}_batch_axes"
    prim.batch = rule
    BATCH_RULES[prim.name] = "axes"


def moveaxis_to(x, src: int | None, dst: int, size: int):
    """``x`` with its batch axis ``src`` at ``dst`` (broadcast along a new axis when src is None)."""
    from arrayx.api.manipulation import broadcast_to, expand_dims, moveaxis

    if src is None:
        x = expand_dims(x, axis=dst)
        shape = list(x.shape)
        shape[dst] = size
        return broadcast_to(x, tuple(shape))
    if src == dst:
        return x
    return moveaxis(x, src, dst)


def loop_rule(prim, size):
    """Fallback: bind ``prim`` on each batch member and stack the results along axis 0."""
    from arrayx.api.manipulation import stack, unstack

    def rule(vals, dims, **params):
        split = [None if d is None else unstack(v, axis=d) for v, d in zip(vals, dims)]
        outs = []
        for i in range(size):
            member = [v if s is None else s[i] for v, s in zip(vals, split)]
            outs.append(prim.bind(*member, **params))
        first = outs[0] if prim.multiple_results else (outs[0],)
        for o in outs[1:]:
            for a, b in zip(first, o if prim.multiple_results else (o,)):
                if tuple(a.shape) != tuple(b.shape):
                    raise ValueError(
                        f"vmap: {prim.name} gives results of different shapes for different batch members "
                        f"({tuple(a.shape)} and {tuple(b.shape)}): its result's shape depends on the values, "
                        f"which vmap cannot batch; use a fixed-size formulation (e.g. arrayx.where with a mask)"
                    )
        if prim.multiple_results:
            return tuple(stack([o[k] for o in outs], axis=0) for k in range(len(outs[0]))), 0
        return stack(outs, axis=0), 0

    return rule
