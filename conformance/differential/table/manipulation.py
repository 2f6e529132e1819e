"""Manipulation functions."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.strategies import Input
from conformance.differential.table._core import SIGNATURES, _dt, add


def _concat(draw, fn):
    base = draw(S.shapes(1, 3))
    axis = draw(st.integers(-len(base), len(base) - 1))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        shape = list(base)
        shape[axis] = draw(st.integers(0, 3))
        parts.append(draw(S.inputs(_dt(draw, fn), tuple(shape), fn.values)))
    kw = {"axis": axis} if axis != 0 or draw(st.booleans()) else {}
    if draw(st.integers(0, 4)) == 0:
        kw = {"axis": None}
    return (tuple(parts),), kw


def _stack(draw, fn):
    shape = draw(S.shapes(0, 2))
    dt = _dt(draw, fn)
    parts = tuple(draw(S.inputs(dt if draw(st.booleans()) else _dt(draw, fn), shape, fn.values))
                  for _ in range(draw(st.integers(1, 3))))
    return (parts,), {"axis": draw(st.integers(-len(shape) - 1, len(shape)))}


def _repeat(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    nd = x.values.ndim
    axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1))) if nd else None
    n = x.values.size if axis is None else x.values.shape[axis]
    if draw(st.booleans()):
        reps = draw(st.integers(0, 3))
    else:
        reps = Input(np.asarray(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64))
    return (x, reps), ({} if axis is None else {"axis": axis})


def _reshape(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    size = x.values.size
    divisors = [d for d in range(1, 5) if size % d == 0] if size else [0, 1, 2]
    first = draw(st.sampled_from(divisors))
    shape = draw(st.sampled_from([(size,), (first, -1) if first else (0, 3), (-1,), ((1,) * 2 + (size,))]))
    return (x, shape), ({"copy": draw(st.sampled_from([None, True]))} if draw(st.booleans()) else {})


def _tile(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    return (x, tuple(draw(st.lists(st.integers(0, 3), max_size=4)))), {}


def _broadcast_to(draw, fn):
    small, big = draw(S.broadcast_pair())
    big = np.broadcast_shapes(small, big)
    return (draw(S.inputs(_dt(draw, fn), small, fn.values)), big), {}


def _broadcast_arrays(draw, fn):
    s1, s2 = draw(S.broadcast_pair())
    return (draw(S.inputs(_dt(draw, fn), s1, fn.values)), draw(S.inputs(_dt(draw, fn), s2, fn.values))), {}


def _broadcast_shapes(draw, fn):
    s1, s2 = draw(S.broadcast_pair())
    return (s1, s2), {}


def _expand_dims(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    nd = x.values.ndim + 1
    axes = tuple(draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=1)))
    return (x,), {"axis": axes[0] if draw(st.booleans()) else axes}


def _moveaxis(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    nd = x.values.ndim
    k = draw(st.integers(1, nd))
    src = draw(st.permutations(range(nd)))[:k]
    dst = draw(st.permutations(range(nd)))[:k]
    return (x, tuple(src) if k > 1 else src[0], tuple(dst) if k > 1 else dst[0]), {}


def _permute_dims(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    return (x, tuple(draw(st.permutations(range(x.values.ndim))))), {}


def _squeeze(draw, fn):
    shape = draw(S.shapes(1, 3))
    shape = tuple(1 if draw(st.booleans()) else n for n in shape)
    x = draw(S.inputs(_dt(draw, fn), shape, fn.values))
    ones = [i for i, n in enumerate(shape) if n == 1] or [0]
    return (x,), {"axis": tuple(draw(st.lists(st.sampled_from(ones), unique=True, min_size=1)))}


def _roll(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes()), fn.values))
    nd = x.values.ndim
    if nd and draw(st.booleans()):
        axes = tuple(draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd)))
        shift = tuple(draw(st.integers(-5, 5)) for _ in axes)
        return (x,), {"shift": shift if len(axes) > 1 else shift[0], "axis": axes if len(axes) > 1 else axes[0]}
    return (x,), {"shift": draw(st.integers(-5, 5))}


def _unstack(draw, fn):
    x = draw(S.inputs(_dt(draw, fn), draw(S.shapes(1, 3)), fn.values))
    return (x,), {"axis": draw(st.integers(-x.values.ndim, x.values.ndim - 1))}


SIGNATURES.update(concat=_concat, stack=_stack, repeat=_repeat, reshape=_reshape, tile=_tile,
                  broadcast_to=_broadcast_to, broadcast_arrays=_broadcast_arrays, broadcast_shapes=_broadcast_shapes,
                  expand_dims=_expand_dims, moveaxis=_moveaxis, permute_dims=_permute_dims, squeeze=_squeeze,
                  roll=_roll, unstack=_unstack)

# every entry is compared exactly (elements only move); most draw with the signature of their own name
for _name in ("broadcast_arrays", "broadcast_to", "concat", "expand_dims", "moveaxis", "permute_dims", "repeat",
              "reshape", "roll", "squeeze", "stack", "tile", "unstack"):
    add(_name, _name, "any", tolerance="exact")
add("broadcast_shapes", "broadcast_shapes", tolerance="exact")
add("flip", "unary", "any", kw=("axes",), tolerance="exact")
