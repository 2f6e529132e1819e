"""``conv_general_dilated`` (JAX's signature) on one primitive, ``conv``, in the canonical layout.

The public function turns ``dimension_numbers`` into transpositions (the standard's
``permute_dims``, differentiable for free) and string padding into explicit pairs, so the
primitive sees one layout only: lhs ``(N, C, *spatial)``, rhs ``(O, C / groups, *window)``,
result ``(N, O, *out)``.  Its params are ``strides``, ``padding`` (a (low, high) pair per
spatial axis, negative crops), ``lhs_dilation``, ``rhs_dilation`` and ``groups``.

Each executor's table has its own implementation (``arrayx/executors/<name>/lax.py``): XLA's
convolution on jax; blocked im2col + BLAS on numpy / numba / cupy (per block of images on dask).
Any other executor runs ``conv_p.composition``, the convolution in arrayx operations (shift and add).

The rules are convolutions again (the primitive is bilinear): the lhs cotangent is the
cotangent convolved with the flipped kernel (lhs dilation = the strides), the rhs cotangent
the input correlated with the cotangent (batch and feature axes swapped); groups are
moved through reshapes.  Batching folds a batch axis into the images or the groups.
"""
from __future__ import annotations

import math

import numpy as np

from arrayx.api._checks import array_arg
from arrayx.core.primitives import Primitive
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.executors.common.windows import conv_shape

__all__ = ["conv_general_dilated", "conv", "conv_p", "ConvDimensionNumbers", "conv_dimension_numbers"]

conv_p = Primitive("conv")


def _take(shape, spec) -> tuple:
    return tuple(shape[i] for i in spec)


def _place(canonical, spec) -> tuple:
    """The shape whose axis ``spec[i]`` has size ``canonical[i]``."""
    out = [0] * len(spec)
    for size, axis in zip(canonical, spec):
        out[axis] = size
    return tuple(out)


def layout_shape(lhs_shape, rhs_shape, *, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                 **_) -> tuple:
    """The result shape of ``conv`` in its out layout."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    canonical = conv_shape(_take(lhs_shape, lhs_spec), _take(rhs_shape, rhs_spec), strides, padding, lhs_dilation,
                           rhs_dilation)
    return _place(canonical, out_spec)


def _conv_abstract(lhs, rhs, **params):
    return ShapeDtypeStruct._trusted(layout_shape(tuple(lhs.shape), tuple(rhs.shape), **params), lhs.dtype, False)


conv_p.abstract_eval = _conv_abstract


# -- the convolution in arrayx operations (any executor without its own: a third party's) ------------

def _conv_composed(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """Shift and add: one ``tensordot`` per kernel position over a strided slice of the dilated,
    padded input (per group), in the canonical layout between two ``permute_dims``."""
    import itertools

    from arrayx import api as ax

    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x, w = ax.permute_dims(lhs, tuple(lhs_spec)), ax.permute_dims(rhs, tuple(rhs_spec))
    out_shape = conv_shape(tuple(x.shape), tuple(w.shape), strides, padding, lhs_dilation, rhs_dilation)
    for axis, f in enumerate(lhs_dilation, start=2):  # f - 1 zeros between neighbours
        n = x.shape[axis]
        if f != 1 and n:
            gaps = ax.zeros(tuple(x.shape[:axis + 1]) + (f - 1,) + tuple(x.shape[axis + 1:]), dtype=x.dtype,
                            device=x.device)
            x = ax.concat([ax.expand_dims(x, axis=axis + 1), gaps], axis=axis + 1)
            x = ax.reshape(x, tuple(x.shape[:axis]) + (n * f,) + tuple(x.shape[axis + 2:]))
            x = x[(slice(None),) * axis + (slice(0, (n - 1) * f + 1),)]
    for axis, (lo, hi) in enumerate(padding, start=2):  # negative padding crops
        n = x.shape[axis]
        x = x[(slice(None),) * axis + (slice(max(-lo, 0), max(max(-lo, 0), n - max(-hi, 0))),)]
        sides = []
        for width in (max(lo, 0), max(hi, 0)):
            sides.append(ax.zeros(tuple(x.shape[:axis]) + (width,) + tuple(x.shape[axis + 1:]), dtype=x.dtype,
                                  device=x.device) if width else None)
        if sides[0] is not None or sides[1] is not None:
            x = ax.concat([v for v in (sides[0], x, sides[1]) if v is not None], axis=axis)
    per_in, per_out = w.shape[1], w.shape[0] // groups
    out = None
    if math.prod(out_shape) and math.prod(w.shape[2:]):
        for offset in itertools.product(*(range(k) for k in w.shape[2:])):
            key = (slice(None), slice(None)) + tuple(
                slice(o * rd, o * rd + (n - 1) * st + 1, st)
                for o, rd, n, st in zip(offset, rhs_dilation, out_shape[2:], strides))
            patch, taps = x[key], w[(slice(None), slice(None)) + offset]
            parts = [ax.tensordot(patch[:, g * per_in:(g + 1) * per_in], taps[g * per_out:(g + 1) * per_out],
                                  axes=([1], [1])) for g in range(groups)]
            term = parts[0] if groups == 1 else ax.concat(parts, axis=-1)
            out = term if out is None else out + term
    if out is None:
        dtype = ax.result_type(x.dtype, w.dtype)
        out = ax.zeros(out_shape, dtype=dtype, device=x.device)
    else:
        out = ax.moveaxis(out, -1, 1)  # (N, *spatial, O) -> (N, O, *spatial)
    return ax.permute_dims(out, tuple(int(i) for i in np.argsort(out_spec)))


conv_p.composition = _conv_composed


# -- the public function ------------------------------------------------------------------------------


class ConvDimensionNumbers(tuple):
    """(lhs_spec, rhs_spec, out_spec): for each operand the positions of (batch|out feature,
    feature|in feature, ``*spatial``), as JAX's ``ConvDimensionNumbers``."""

    def __new__(cls, lhs_spec, rhs_spec, out_spec):
        return super().__new__(cls, (tuple(lhs_spec), tuple(rhs_spec), tuple(out_spec)))

    lhs_spec = property(lambda self: self[0])
    rhs_spec = property(lambda self: self[1])
    out_spec = property(lambda self: self[2])


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Positions of each operand's axes from None (NC..., OI..., NC...), a ConvDimensionNumbers, or
    three strings such as ("NHWC", "HWIO", "NHWC"); spatial axes pair by their order in the rhs string."""
    nd = len(lhs_shape)
    if dimension_numbers is None:
        canonical = tuple(range(nd))
        return ConvDimensionNumbers(canonical, canonical, canonical)
    if isinstance(dimension_numbers, ConvDimensionNumbers) or (
            len(dimension_numbers) == 3 and not isinstance(dimension_numbers[0], str)):
        return ConvDimensionNumbers(*dimension_numbers)
    lhs_s, rhs_s, out_s = dimension_numbers
    if not (len(lhs_s) == len(rhs_s) == len(out_s) == nd):
        raise ValueError(f"conv_general_dilated: dimension_numbers {dimension_numbers} must have {nd} letters "
                         f"each (the operands have {nd} dimensions)")
    spatial = [ch for ch in rhs_s if ch not in "OI"]
    try:
        return ConvDimensionNumbers(
            (lhs_s.index("N"), lhs_s.index("C")) + tuple(lhs_s.index(ch) for ch in spatial),
            (rhs_s.index("O"), rhs_s.index("I")) + tuple(rhs_s.index(ch) for ch in spatial),
            (out_s.index("N"), out_s.index("C")) + tuple(out_s.index(ch) for ch in spatial),
        )
    except ValueError:
        raise ValueError(
            f"conv_general_dilated: dimension_numbers {dimension_numbers} must be three strings with N and C "
            f"(lhs, out), O and I (rhs) and the same spatial letters in each"
        ) from None


def padding_pairs(fname, padding, in_shape, window, strides) -> tuple:
    """Explicit (low, high) pairs from "VALID", "SAME", "SAME_LOWER" or a sequence of pairs (JAX's rule)."""
    if isinstance(padding, str):
        kind = padding.upper()
        if kind == "VALID":
            return tuple((0, 0) for _ in in_shape)
        if kind not in ("SAME", "SAME_LOWER"):
            raise ValueError(f"{fname}: padding must be 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs, got "
                             f"{padding!r}")
        pairs = []
        for n, k, s in zip(in_shape, window, strides):
            out = -(-n // s)
            total = max((out - 1) * s + k - n, 0)
            lo = total // 2 if kind == "SAME" else total - total // 2
            pairs.append((lo, total - lo))
        return tuple(pairs)
    pairs = tuple(tuple(int(v) for v in p) for p in padding)
    if len(pairs) != len(in_shape) or any(len(p) != 2 for p in pairs):
        raise ValueError(f"{fname}: padding needs one (low, high) pair per spatial dimension ({len(in_shape)}), "
                         f"got {padding!r}")
    return pairs


def _ints(fname, name, value, n, default=1) -> tuple:
    if value is None:
        return (default,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n or any(v < 1 for v in value):
        raise ValueError(f"{fname}: {name} needs {n} positive integers (one per spatial dimension), got {value}")
    return value


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    """N-d convolution (cross-correlation, as in deep learning) with JAX's signature.

    ``padding``: "SAME", "SAME_LOWER", "VALID" or (low, high) per spatial axis (negative crops);
    ``lhs_dilation`` inserts zeros between input elements (transposed convolution),
    ``rhs_dilation`` between kernel taps (atrous); ``feature_group_count`` splits the features
    into groups convolved separately.  ``precision`` is accepted and ignored (every executor
    computes in the operands' dtype).
    """
    from arrayx import api as ax

    fname = "conv_general_dilated"
    lhs = array_arg(fname, lhs, "lhs")
    rhs = array_arg(fname, rhs, "rhs")
    if lhs.ndim != rhs.ndim or lhs.ndim < 3:
        raise ValueError(f"{fname}: lhs and rhs need the same number (>= 3) of dimensions, got shapes "
                         f"{lhs.shape} and {rhs.shape}")
    if batch_group_count != 1:
        raise NotImplementedError(f"{fname}: batch_group_count={batch_group_count} is not implemented on any "
                                  f"executor (only 1)")
    if preferred_element_type is not None:
        raise NotImplementedError(f"{fname}: preferred_element_type is not implemented; cast the operands instead")
    dt = ax.result_type(lhs, rhs)
    if dt.kind not in "fiu":
        raise TypeError(f"{fname}: operands must be real numbers, got {lhs.dtype} and {rhs.dtype}")
    lhs, rhs = ax.astype(lhs, dt, copy=False), ax.astype(rhs, dt, copy=False)
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    x_shape, w_shape = _take(lhs.shape, dn.lhs_spec), _take(rhs.shape, dn.rhs_spec)
    d = lhs.ndim - 2
    strides = _ints(fname, "window_strides", window_strides, d)
    lhs_dilation = _ints(fname, "lhs_dilation", lhs_dilation, d)
    rhs_dilation = _ints(fname, "rhs_dilation", rhs_dilation, d)
    g = int(feature_group_count)
    if g < 1 or x_shape[1] != w_shape[1] * g or w_shape[0] % g:
        raise ValueError(
            f"{fname}: lhs has {x_shape[1]} features and rhs {w_shape[1]} input features with "
            f"{w_shape[0]} outputs; with feature_group_count={g} lhs features must be {w_shape[1]} x {g} "
            f"and the outputs a multiple of {g}"
        )
    window = tuple((k - 1) * r + 1 for k, r in zip(w_shape[2:], rhs_dilation))
    pads = padding_pairs(fname, padding, x_shape[2:], window, strides)
    return conv_p.bind(lhs, rhs, strides=strides, padding=pads, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                       groups=g, dimension_numbers=tuple(dn))


def _permuted(x, perm):
    from arrayx import api as ax

    perm = tuple(int(p) for p in perm)
    return x if perm == tuple(range(x.ndim)) else ax.permute_dims(x, perm)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """``conv_general_dilated`` without dilation, in the NC.../OI... layout (``jax.lax.conv``)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


# -- rules -----------------------------------------------------------------------------------------------


_CANONICAL = {n: (tuple(range(n)),) * 3 for n in range(3, 9)}


def _lhs_transpose(ct, x, w, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """The input's cotangent: the cotangent convolved with the flipped kernel (lhs dilation = strides),
    produced directly in the input's layout."""
    from arrayx import api as ax

    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if math.prod(ct.shape) == 0:  # no output: nothing flows back (XLA refuses an empty window)
        return ax.zeros(tuple(x.shape), dtype=ct.dtype, device=ct.device)
    window = _take(w.shape, rhs_spec)[2:]
    d = len(window)
    if groups == 1:  # the flipped kernel in its own layout, its O and I axes exchanged by the specs
        kernel = ax.flip(w, axis=tuple(rhs_spec[2:]))
        kernel_spec = (rhs_spec[1], rhs_spec[0]) + tuple(rhs_spec[2:])
    else:  # each group's kernel transposed on its own: canonical (groups x I, O / groups, *window)
        wc = _permuted(w, rhs_spec)
        o, cg = wc.shape[:2]
        kernel = ax.reshape(wc, (groups, o // groups, cg) + window)
        kernel = ax.permute_dims(kernel, (0, 2, 1) + tuple(range(3, 3 + d)))
        kernel = ax.flip(ax.reshape(kernel, (groups * cg, o // groups) + window), axis=tuple(range(2, 2 + d)))
        kernel_spec = _CANONICAL[d + 2][1]
    pads = []
    for n, k, s, (lo, hi), ld, rd, m in zip(_take(x.shape, lhs_spec)[2:], window, strides, padding, lhs_dilation,
                                            rhs_dilation, _take(ct.shape, out_spec)[2:]):
        dilated, k_eff = (n - 1) * ld + 1, (k - 1) * rd + 1
        pads.append((k_eff - 1 - lo, dilated + lo - (m - 1) * s - 1))
    dx = conv_p.bind(ct, kernel, strides=(1,) * d, padding=tuple(pads), lhs_dilation=strides,
                     rhs_dilation=rhs_dilation, groups=groups,
                     dimension_numbers=(out_spec, kernel_spec, lhs_spec))
    if any(ld != 1 for ld in lhs_dilation):
        key = [slice(None)] * dx.ndim
        for axis, ld in zip(lhs_spec[2:], lhs_dilation):
            key[axis] = slice(None, None, ld)
        dx = dx[tuple(key)]
    return dx


def _rhs_transpose(ct, x, w, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """The kernel's cotangent: the input correlated with the cotangent, images as the features (and
    the input's features as the images), produced directly in the kernel's layout."""
    from arrayx import api as ax

    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if math.prod(ct.shape) == 0:
        return ax.zeros(tuple(w.shape), dtype=ct.dtype, device=ct.device)
    x_shape, w_shape, ct_shape = _take(x.shape, lhs_spec), _take(w.shape, rhs_spec), _take(ct.shape, out_spec)
    pads = []
    for size, k, s, (lo, hi), ld, rd, m in zip(x_shape[2:], w_shape[2:], strides, padding, lhs_dilation,
                                               rhs_dilation, ct_shape[2:]):
        padded = (size - 1) * ld + 1 + lo + hi
        excess = padded - ((m - 1) * s + (k - 1) * rd + 1)
        pads.append((lo, hi - excess))
    params = dict(strides=rhs_dilation, padding=tuple(pads), lhs_dilation=lhs_dilation, rhs_dilation=strides)
    swap = lambda spec: (spec[1], spec[0]) + tuple(spec[2:])  # noqa: E731
    if groups == 1:
        return conv_p.bind(x, ct, groups=1, dimension_numbers=(swap(lhs_spec), swap(out_spec), swap(rhs_spec)),
                           **params)
    # groups: each group's images become features of its own group (canonical layout, then w's)
    n, c = x_shape[:2]
    d = len(x_shape) - 2
    spatial = tuple(range(2, 2 + d))
    cg = c // groups
    xs = ax.reshape(_permuted(x, lhs_spec), (n, groups, cg) + x_shape[2:])
    xs = ax.reshape(ax.permute_dims(xs, (2, 1, 0) + tuple(s + 1 for s in spatial)), (cg, groups * n) + x_shape[2:])
    cts = ax.permute_dims(_permuted(ct, out_spec), (1, 0) + spatial)
    dw = conv_p.bind(xs, cts, groups=groups, dimension_numbers=_CANONICAL[d + 2], **params)
    return _permuted(ax.permute_dims(dw, (1, 0) + spatial), np.argsort(rhs_spec))


def _member_canonical(v, d, spec):
    """A batched operand as (batch, *canonical layout) (``d``: its batch axis)."""
    from arrayx import api as ax
    from arrayx.transforms.rules._batch import to_front

    v = to_front(v, d)
    perm = (0,) + tuple(1 + p for p in spec)
    return v if perm == tuple(range(v.ndim)) else ax.permute_dims(v, perm)


def _conv_batch(vals, dims, *, dimension_numbers, **params):
    from arrayx import api as ax

    (x, w), (dx, dw) = vals, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    canonical = _CANONICAL[len(lhs_spec)]
    groups = params["groups"]
    if dw is None:  # images of the batch members are more images
        x = _member_canonical(x, dx, lhs_spec)
        b, n = x.shape[:2]
        out = conv_p.bind(ax.reshape(x, (b * n,) + tuple(x.shape[2:])), _permuted(w, rhs_spec),
                          dimension_numbers=canonical, **params)
        out = ax.reshape(out, (b, n) + tuple(out.shape[1:]))
    else:
        w = _member_canonical(w, dw, rhs_spec)
        b = w.shape[0]
        if dx is None:
            x = _permuted(x, lhs_spec)
            x = ax.broadcast_to(ax.expand_dims(x, axis=0), (b,) + tuple(x.shape))
        else:
            x = _member_canonical(x, dx, lhs_spec)
        # both batched: each member is its own set of feature groups
        n, c = x.shape[1:3]
        xs = ax.reshape(ax.moveaxis(x, 0, 1), (n, b * c) + tuple(x.shape[3:]))
        ws = ax.reshape(w, (b * w.shape[1],) + tuple(w.shape[2:]))
        out = conv_p.bind(xs, ws, dimension_numbers=canonical, **{**params, "groups": groups * b})
        out = ax.moveaxis(ax.reshape(out, (n, b, w.shape[1]) + tuple(out.shape[2:])), 1, 0)
    return _permuted(out, (0,) + tuple(1 + p for p in np.argsort(out_spec))), 0


def _define_rules():
    from arrayx.transforms.rules import defbilinear

    defbilinear(conv_p, _lhs_transpose, _rhs_transpose)
    conv_p.batch = _conv_batch


_define_rules()

