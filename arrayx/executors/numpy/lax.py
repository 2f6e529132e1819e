"""The NumPy executor's entries for ``arrayx.lax``: ``conv`` and the max/min window reduction with
its derivative (``reduce_window``, ``window_select``, ``window_scatter``).

The implementations are written over any NumPy-like array module ``m`` (``pad``, ``where``,
``out=``, ``as_strided``), so the CuPy, JAX and Dask executors' entries reuse them
(``executors/<name>/lax.py``); the Numba executor's table starts as this one's.

- ``conv``: im2col in cache-sized blocks (a block of images copied channels-last into a
  zero-padded frame, its windows, a strided view, copied into a (position, window x feature)
  matrix of at most ~16 MB) times the kernel matrix in one BLAS GEMM per block that writes the
  block's rows of a channels-last result, returned as an (N, O, *spatial) view; few output
  positions with a large window (a kernel's gradient) go by output position instead;
- ``reduce_window``: the maximum is separable, so it is taken one axis at a time: per axis, one
  elementwise ``maximum`` per window offset over strided views (2 + 2 for 2x2 pooling, on ever
  smaller arrays), written into the accumulator in place; ``window_select``/``window_scatter``
  take one comparison and one masked copy (add) per window offset.

The primitives, their rules and their compositions (what a third party's executor runs) are in
``arrayx/lax/_conv.py`` and ``arrayx/lax/_window_prims.py``.
"""
from __future__ import annotations

import math

import numpy as np

from arrayx.executors.common.windows import axis_out, conv_shape, crop, identity, winners

__all__ = ["TABLE", "conv_columns", "in_layout", "column_blocks", "reduce_host", "select_host", "scatter_host",
           "add_at_inplace", "COLUMN_BYTES"]

# im2col block on the host: at 32x64x56x56, 3x3 (load 8) the column copy took 0.08 s with 16 MB
# blocks and 0.30 s with 64 MB (out of cache); 4 MB blocks doubled the GEMM time (BLAS thread syncs)
COLUMN_BYTES = 16 << 20

_COMBINE = {"max": "maximum", "min": "minimum"}


# -- conv: blocked im2col + BLAS, over any NumPy-like module ``m`` ---------------------------------------


def _dilate(m, x, factors):
    if all(f == 1 for f in factors):
        return x
    shape = x.shape[:2] + tuple((n - 1) * f + 1 if n else 0 for n, f in zip(x.shape[2:], factors))
    out = m.zeros(shape, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, f) for f in factors)] = x
    return out


def _pad(m, x, padding):
    crop = tuple(slice(max(-lo, 0), max(max(-lo, 0), n - max(-hi, 0))) for n, (lo, hi) in zip(x.shape[2:], padding))
    x = x[(slice(None), slice(None)) + crop]  # negative padding removes elements
    widths = ((0, 0), (0, 0)) + tuple((max(lo, 0), max(hi, 0)) for lo, hi in padding)
    if any(w != (0, 0) for w in widths):
        x = m.pad(x, widths)
    return x


def conv_columns(m, as_strided, lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups, column_bytes):
    out_shape = conv_shape(lhs.shape, rhs.shape, strides, padding, lhs_dilation, rhs_dilation)
    dtype = np.result_type(lhs.dtype, rhs.dtype)
    if math.prod(out_shape) == 0 or math.prod(rhs.shape[1:]) == 0:
        return m.zeros(out_shape, dtype=dtype)
    lhs, kernel = m.asarray(lhs, dtype=dtype), m.asarray(rhs, dtype=dtype)
    if math.prod(out_shape[2:]) <= math.prod(rhs.shape[2:]):
        x = m.ascontiguousarray(_pad(m, _dilate(m, lhs, lhs_dilation), padding))
        return _by_output_position(m, x, kernel, out_shape, strides, rhs_dilation, groups, column_bytes)
    return _by_columns(m, as_strided, lhs, kernel, out_shape, strides, padding, lhs_dilation, rhs_dilation, groups,
                       column_bytes)


def _interior(sizes, padding, lhs_dilation):
    """Where the input's elements land in the dilated, padded frame: per spatial axis the source slice
    (elements cropped by negative padding dropped) and the destination slice (None: nothing lands)."""
    src, dest = [], []
    for n, (lo, hi), ld in zip(sizes, padding, lhs_dilation):
        frame = (n - 1) * ld + 1 + lo + hi if n else lo + hi
        first = max(0, -(lo // ld)) if lo < 0 else 0  # -(lo // ld) is ceil(-lo / ld)
        last = min(n - 1, (frame - 1 - lo) // ld)
        if last < first:
            return None
        src.append(slice(first, last + 1))
        dest.append(slice(first * ld + lo, (last * ld + lo) + 1, ld))
    return tuple(src), tuple(dest)


def column_blocks(n, spatial, row_bytes, column_bytes) -> tuple:
    """(images, leading output rows) per im2col block: whole images while one fits the budget, else
    rows of one image (at least one each)."""
    per_image = math.prod(spatial) * row_bytes
    if per_image <= column_bytes:
        return min(n, column_bytes // per_image), spatial[0]
    return 1, min(spatial[0], max(1, column_bytes // (math.prod(spatial[1:]) * row_bytes)))


def _by_columns(m, as_strided, lhs, rhs, out_shape, strides, padding, lhs_dilation, rhs_dilation, groups,
                column_bytes):
    """im2col in cache-sized blocks: a block of images (or of output rows of one image) copied
    channels-last into a zero frame (the padding and dilation), its windows gathered into a matrix
    (group, position, window x feature) and multiplied by the kernel matrices (group, window x
    feature, output feature) in one batched GEMM, whose product is the block's rows of a
    channels-last result (no transpose on the way out)."""
    n, c = lhs.shape[:2]
    o = rhs.shape[0]
    window, spatial = tuple(rhs.shape[2:]), tuple(out_shape[2:])
    d = len(window)
    cg, og = c // groups, o // groups
    depth = cg * math.prod(window)
    images, lead = column_blocks(n, spatial, depth * groups * lhs.dtype.itemsize, column_bytes)
    frame_shape = tuple((size - 1) * ld + 1 + lo + hi if size else lo + hi
                        for size, (lo, hi), ld in zip(lhs.shape[2:], padding, lhs_dilation))
    frame = m.zeros((images,) + frame_shape + (c,), dtype=lhs.dtype)  # zero where padding and dilation are
    place = _interior(lhs.shape[2:], padding, lhs_dilation)
    fs = frame.strides
    windows = as_strided(  # (image, *position, *window tap, group, feature): no copy yet
        frame, (images,) + spatial + window + (groups, cg),
        (fs[0],) + tuple(fs[1 + i] * s for i, s in enumerate(strides))
        + tuple(fs[1 + i] * r for i, r in enumerate(rhs_dilation)) + (fs[-1] * cg, fs[-1]))
    kernels = m.reshape(rhs, (groups, og, cg) + window).transpose((0,) + tuple(range(3, 3 + d)) + (2, 1))
    kernels = m.reshape(kernels, (groups, depth, og))  # (group, window x feature, output feature)
    positions, row_positions = math.prod(spatial), math.prod(spatial[1:])
    out = m.empty((n * positions, groups, og), dtype=lhs.dtype)  # channels-last: each GEMM writes its rows
    for start in range(0, n, images):
        stop = min(n, start + images)
        if place is not None:
            src, dest = place
            frame[(slice(0, stop - start),) + dest] = m.moveaxis(lhs[(slice(start, stop), slice(None)) + src], 1, -1)
        for r0 in range(0, spatial[0], lead):
            r1 = min(spatial[0], r0 + lead)
            rows = slice(start * positions + r0 * row_positions, (stop - 1) * positions + r1 * row_positions)
            columns = m.reshape(m.moveaxis(windows[:stop - start, r0:r1], -2, 0), (groups, -1, depth))  # im2col
            if groups == 1:
                m.matmul(columns[0], kernels[0], out=out[rows, 0])
            else:
                out[rows] = m.matmul(columns, kernels).transpose(1, 0, 2)
    # the result is a view in the canonical (N, O, *spatial) order; the next conv reads channels-last
    return m.moveaxis(m.reshape(out, (n,) + spatial + (o,)), -1, 1)


def _by_output_position(m, x, rhs, out_shape, strides, rhs_dilation, groups, column_bytes):
    """Few output positions and a large window (the kernel gradient): every position's input patch (a
    plain strided slice) stacked into one matrix (position x image, feature x window), times the
    kernel matrix, in blocks of features whose products are summed (one GEMM per block of each group:
    a 64 x 64 output per position would leave BLAS idle; blocks keep the patches in cache)."""
    n, c = x.shape[:2]
    o = rhs.shape[0]
    window, spatial = tuple(rhs.shape[2:]), tuple(out_shape[2:])
    cg, og = c // groups, o // groups
    positions = list(np.ndindex(*spatial))
    features = max(1, min(cg, column_bytes // (len(positions) * n * math.prod(window) * x.dtype.itemsize)))
    out = m.empty((len(positions) * n, o), dtype=x.dtype)
    for g in range(groups):
        total = out[:, g * og:(g + 1) * og]
        for f0 in range(0, cg, features):
            f1 = min(cg, f0 + features)
            patches = m.empty((len(positions), n, f1 - f0) + window, dtype=x.dtype)
            for j, pos in enumerate(positions):
                key = tuple(slice(p * s, p * s + (k - 1) * r + 1, r)
                            for p, s, k, r in zip(pos, strides, window, rhs_dilation))
                patches[j] = x[(slice(None), slice(g * cg + f0, g * cg + f1)) + key]
            kernel = m.reshape(rhs[g * og:(g + 1) * og, f0:f1], (og, (f1 - f0) * math.prod(window)))
            part = m.matmul(m.reshape(patches, (len(positions) * n, -1)), kernel.T)
            if f0 == 0:
                total[...] = part
            else:
                total += part
    return m.moveaxis(m.reshape(out, spatial + (n, o)), tuple(range(len(spatial))),
                      tuple(range(2, 2 + len(spatial))))


def in_layout(canonical_impl, lhs, rhs, dimension_numbers, params):
    """``canonical_impl`` (for the canonical layout) applied in any layout: transposed views in and out."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out = canonical_impl(lhs.transpose(lhs_spec), rhs.transpose(rhs_spec), **params)
    return out.transpose(tuple(np.argsort(out_spec)))


def conv_canonical(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups):
    """NumPy's convolution in the canonical layout (the Dask executor runs it per block of images)."""
    return conv_columns(np, np.lib.stride_tricks.as_strided, lhs, rhs, strides, padding, lhs_dilation,
                        rhs_dilation, groups, COLUMN_BYTES)


def conv(lhs, rhs, *, dimension_numbers, **params):
    return in_layout(conv_canonical, lhs, rhs, dimension_numbers, params)


# -- the max/min window reduction and its derivative, over any NumPy-like module ``m`` ---------------------


def _padded(m, x, padding, fill):
    x = x[crop(padding, x.shape)]
    widths = tuple((max(lo, 0), max(hi, 0)) for lo, hi in padding)
    return m.pad(x, widths, constant_values=fill) if any(w != (0, 0) for w in widths) else x


def reduce_host(m, x, *, kind, window, strides, padding, window_dilation):
    combine = getattr(m, _COMBINE[kind])
    x = _padded(m, x, padding, identity(kind, x.dtype))
    fresh = False  # whether x is already a new buffer (the result must never alias the operand)
    for axis, (k, s, d) in enumerate(zip(window, strides, window_dilation)):
        if k == 1 and s == 1:
            continue
        n = axis_out(x.shape[axis], k, s, d)

        def part(o, axis=axis, n=n, s=s, d=d):
            key = [slice(None)] * x.ndim
            key[axis] = slice(o * d, o * d + (n - 1) * s + 1, s) if n else slice(0, 0)
            return x[tuple(key)]

        if k == 1:
            x = part(0)
            continue
        acc = combine(part(0), part(1))
        for o in range(2, k):
            combine(acc, part(o), out=acc)
        x, fresh = acc, True
    return x if fresh else m.array(x, copy=True)


def _winners(m, x, out, *, kind, window, strides, padding, window_dilation):
    """``winners`` (executors/common/windows.py) of ``x`` padded with the reduction's identity."""
    return winners(_padded(m, x, padding, identity(kind, x.dtype)), out, window, strides, window_dilation)


def select_host(m, reduce, x, t, **params):
    out = reduce(x, **params)
    tp = _padded(m, t, params["padding"], 0)
    zero = m.zeros((), dtype=t.dtype)
    res = None
    for key, hit in _winners(m, x, out, **params):
        res = m.where(hit, tp[key], zero if res is None else res)
    return res if res is not None else m.zeros(out.shape, dtype=t.dtype)


def add_at_inplace(buf, key, value):
    view = buf[key]
    view += value
    return buf


def scatter_host(m, reduce, add_at, x, ct, **params):
    out = reduce(x, **params)
    padding = params["padding"]
    kept = crop(padding, x.shape)
    inner = tuple(k.stop - k.start for k in kept)
    dxp = m.zeros(tuple(n + max(lo, 0) + max(hi, 0) for n, (lo, hi) in zip(inner, padding)), dtype=ct.dtype)
    zero = m.zeros((), dtype=ct.dtype)
    for key, hit in _winners(m, x, out, **params):
        dxp = add_at(dxp, key, m.where(hit, ct, zero))
    dx = dxp[tuple(slice(max(lo, 0), max(lo, 0) + n) for n, (lo, _) in zip(inner, padding))]
    if inner == tuple(x.shape):
        return dx
    return add_at(m.zeros(tuple(x.shape), dtype=ct.dtype), kept, dx)  # cropped elements get no cotangent


def reduce_window(x, **params):
    return reduce_host(np, x, **params)


def window_select(x, t, **params):
    return select_host(np, reduce_window, x, t, **params)


def window_scatter(x, ct, **params):
    return scatter_host(np, reduce_window, add_at_inplace, x, ct, **params)


#: primitive name -> NumPy's implementation (merged into ``NumpyExecutor.overrides``)
TABLE = {
    "conv": conv,
    "reduce_window": reduce_window,
    "window_select": window_select,
    "window_scatter": window_scatter,
}
