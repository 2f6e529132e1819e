"""The NumPy executor's entries for ``arrayx.lax``: ``conv`` and the max/min window reduction with
its derivative (``reduce_window``, ``window_select``, ``window_scatter``).

The implementations are written over any NumPy-like array module ``m`` (``pad``, ``where``,
``out=``, ``as_strided``), so the CuPy, JAX and Dask executors' entries reuse them
(``executors/<name>/lax.py``); the Numba executor's table starts as this one's.

- ``conv``: im2col in cache-sized blocks (a block of images copied channels-last into a
  zero-padded frame, its windows, a strided view, copied into a (position, window x feature)
  matrix of at most ~16 MB) times the kernel matrix in one BLAS GEMM per block that writes the
  block's rows of a channels-last result, returned as an (N, O, *spatial) view; few output
  positions with a large window (a kernel's gradient) go by input feature instead (one GEMM per
  feature over its patches, summed), or by output position where the window is small;
- ``reduce_window``: the maximum is separable, so it is taken one axis at a time: per axis, one
  elementwise ``maximum`` per window offset over strided views (2 + 2 for 2x2 pooling, on ever
  smaller arrays), written into the accumulator in place; ``window_select``/``window_scatter``
  take one comparison and one masked copy (add) per window offset: on NumPy (this executor, Numba's,
  Dask's blocks) the masked copy is branch-free, the masked elements' bits times the mask, and
  disjoint windows (pooling whose stride is its window) are written in place, not added; CuPy and
  JAX run the plain ``where`` form (``select_host``/``scatter_host``).  Large results and scratch
  buffers come from the executor's buffer pool.

The primitives, their rules and their compositions (what a third party's executor runs) are in
``arrayx/lax/_conv.py`` and ``arrayx/lax/_window_prims.py``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from arrayx.executors.common import buffer_pool as _buffer_pool
from arrayx.executors.common.windows import axis_out, conv_shape, crop, identity, offset_key, winners

__all__ = ["TABLE", "conv_columns", "in_layout", "column_blocks", "reduce_host", "select_host", "scatter_host",
           "add_at_inplace", "COLUMN_BYTES"]

# im2col block on the host: at 32x64x56x56, 3x3 (load 8) the column copy took 0.08 s with 16 MB
# blocks and 0.30 s with 64 MB (out of cache); 4 MB blocks doubled the GEMM time (BLAS thread syncs)
COLUMN_BYTES = 16 << 20


def per_feature(taps: int, rows: int, outputs: int) -> bool:
    """Whether a convolution with few output positions (a kernel's gradient) goes by input feature (one
    GEMM per feature with K = the window's ``taps``, summed: ``_by_feature``) rather than by output
    position (one GEMM with K = features x taps): where the window is large, or where the product
    (``rows`` x ``outputs`` per group) is too small for BLAS to spread a long K over.  Timed on the host
    (float32, one BLAS thread, 3x3 kernels): bench_cnn's 64 x 1 x 28 x 28 images, 16 kernels (a 9 x 16
    product, 784 taps) 1.10 -> 0.44 ms; 32 x 4 x 16 x 16, 32 kernels 0.59 -> 0.42 ms; 8 x 16 x 28 x 28,
    64 kernels 1.87 -> 1.74 ms; but 64 x 16 x 14 x 14, 32 kernels (196 taps, a 144 x 32 product) 3.03
    -> 3.22 ms and 4 x 128 x 8 x 8 (64 taps) 1.08 -> 1.18 ms, so those stay by output position."""
    return taps >= 256 or (taps >= 64 and rows * outputs <= 1024)


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


def conv_columns(m, as_strided, lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups, column_bytes,
                 empty=None):
    """The convolution in the canonical layout over the array module ``m``; ``empty(shape, dtype)``
    allocates the kernel gradient's patches (default ``m.empty``; NumPy: from the buffer pool)."""
    out_shape = conv_shape(lhs.shape, rhs.shape, strides, padding, lhs_dilation, rhs_dilation)
    dtype = np.result_type(lhs.dtype, rhs.dtype)
    if math.prod(out_shape) == 0 or math.prod(rhs.shape[1:]) == 0:
        return m.zeros(out_shape, dtype=dtype)
    lhs, kernel = m.asarray(lhs, dtype=dtype), m.asarray(rhs, dtype=dtype)
    if math.prod(out_shape[2:]) <= math.prod(rhs.shape[2:]):
        x = m.ascontiguousarray(_pad(m, _dilate(m, lhs, lhs_dilation), padding))
        rows, outputs = lhs.shape[0] * math.prod(out_shape[2:]), rhs.shape[0] // groups
        if per_feature(math.prod(rhs.shape[2:]), rows, outputs):
            return _by_feature(m, as_strided, x, kernel, out_shape, strides, rhs_dilation, groups, column_bytes,
                               empty or m.empty)
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


def _by_feature(m, as_strided, x, rhs, out_shape, strides, rhs_dilation, groups, column_bytes, empty):
    """Few output positions and a large window (a kernel's gradient: the input correlated with the
    cotangent), one batched GEMM per block of input features: for each feature, its patches (every
    image's window at every output position: a strided view of ``x``, copied into an (image x
    position, window) matrix) times that feature's kernel matrix (window, output feature: a view of
    the cotangent when it is contiguous), the products summed over the features.  One GEMM whose K is
    features x window instead left BLAS a few output rows and columns over a K of tens of thousands
    (the CNN of bench_cnn.py: 16 x 9 outputs, K = 64 x 784, 1.2 ms; K per call = 784, ~0.5 ms), and
    needed the cotangent copied into (output feature, feature x window) first."""
    n, c = x.shape[:2]
    o = rhs.shape[0]
    window, spatial = tuple(rhs.shape[2:]), tuple(out_shape[2:])
    cg, og = c // groups, o // groups
    taps, rows = math.prod(window), n * math.prod(spatial)
    # a block's patches and products stay within the im2col budget
    features = max(1, min(cg, column_bytes // (rows * max(taps, og) * x.dtype.itemsize)))
    out = m.empty((rows, o), dtype=x.dtype)
    for g in range(groups):
        total = out[:, g * og:(g + 1) * og]
        for f0 in range(0, cg, features):
            f1 = min(cg, f0 + features)
            block = x[:, g * cg + f0:g * cg + f1]
            bs = block.strides
            view = as_strided(  # (feature, image, *position, *window tap): no copy yet
                block, (f1 - f0, n) + spatial + window,
                (bs[1], bs[0]) + tuple(bs[2 + i] * s for i, s in enumerate(strides))
                + tuple(bs[2 + i] * r for i, r in enumerate(rhs_dilation)))
            patches = empty((f1 - f0, rows, taps), x.dtype)
            m.reshape(patches, view.shape)[...] = view
            kernels = m.reshape(rhs[g * og:(g + 1) * og, f0:f1], (og, f1 - f0, taps)).transpose(1, 2, 0)
            part = m.matmul(patches, kernels)  # (feature, image x position, output feature)
            if f0 == 0:
                m.sum(part, axis=0, out=total)
            else:
                total += m.sum(part, axis=0)
    return m.moveaxis(m.reshape(out, (n,) + spatial + (o,)), -1, 1)


def in_layout(canonical_impl, lhs, rhs, dimension_numbers, params):
    """``canonical_impl`` (for the canonical layout) applied in any layout: transposed views in and out."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out = canonical_impl(lhs.transpose(lhs_spec), rhs.transpose(rhs_spec), **params)
    return out.transpose(tuple(np.argsort(out_spec)))


def conv_canonical(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups):
    """NumPy's convolution in the canonical layout (the Dask executor runs it per block of images)."""
    return conv_columns(np, np.lib.stride_tricks.as_strided, lhs, rhs, strides, padding, lhs_dilation,
                        rhs_dilation, groups, COLUMN_BYTES, _empty)


def conv(lhs, rhs, *, dimension_numbers, **params):
    return in_layout(conv_canonical, lhs, rhs, dimension_numbers, params)


# -- the max/min window reduction and its derivative, over any NumPy-like module ``m`` ---------------------


def _padded(m, x, padding, fill):
    x = x[crop(padding, x.shape)]
    widths = tuple((max(lo, 0), max(hi, 0)) for lo, hi in padding)
    return m.pad(x, widths, constant_values=fill) if any(w != (0, 0) for w in widths) else x


def reduce_host(m, x, *, kind, window, strides, padding, window_dilation, empty=None):
    """The max/min of every window, separably (see the module doc); ``empty(shape, dtype)`` allocates the
    accumulators (default: each first ``combine`` allocates its own)."""
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
        first, second = part(0), part(1)
        acc = combine(first, second) if empty is None else combine(first, second, out=empty(first.shape, x.dtype))
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


def _empty(shape, dtype):
    """``np.empty`` from the executor's buffer pool (executors/common/buffer_pool.py): a large result
    written into memory the process already touched, not a fresh mapping paid page by page."""
    return _buffer_pool.POOL.empty(tuple(shape), dtype) if _buffer_pool.ENABLED else np.empty(shape, dtype)


def reduce_window(x, **params):
    return reduce_host(np, x, empty=_empty, **params)


# -- NumPy's derivative of the window reduction: branch-free masked copies ------------------------------
#
# ``where(hit, v, 0)`` with a winners mask (about one element in prod(window) set, at random) ran at
# ~6 ns an element in NumPy 2.4 (a data-dependent branch per element: 1.2 ms for 200k float32), 25x
# slower than arithmetic.  The same values come branch-free from the elements' bits: an unsigned
# integer view of ``v`` times the boolean mask is ``v``'s bits where the mask holds and 0 (+0.0)
# elsewhere, exactly; disjoint masks combine with ``|``.


def _bits_dtype(dtype):
    """The unsigned integer type of ``dtype``'s width, or None where the bit path does not apply."""
    dtype = np.dtype(dtype)
    return np.dtype(f"u{dtype.itemsize}") if dtype.kind in "biuf" and dtype.itemsize in (1, 2, 4, 8) else None


def _first_winners(xp, out, window, strides, window_dilation):
    """``winners`` (executors/common/windows.py) with its boolean bookkeeping done in place."""
    offsets = list(itertools.product(*(range(k) for k in window)))
    taken = None
    for i, offset in enumerate(offsets):
        key = offset_key(offset, window_dilation, tuple(out.shape), strides) + (Ellipsis,)  # views, 0-d too
        hit = np.equal(xp[key], out)
        if taken is None:
            taken = hit.copy() if len(offsets) > 1 else hit
        else:
            np.greater(hit, taken, out=hit)  # hit and not taken before: the first winner only
            if i + 1 < len(offsets):
                np.logical_or(taken, hit, out=taken)
        yield key, hit


def _disjoint(window, strides, window_dilation) -> bool:
    """Whether no element lies in two windows (every window's span fits in its stride)."""
    return all(k == 1 or (k - 1) * d < s for k, s, d in zip(window, strides, window_dilation))


def _covered(shape, out_shape, window, strides, window_dilation) -> bool:
    """Whether disjoint windows take in every element of ``shape`` (nothing left at zero)."""
    return all((k == 1 or d == 1) and s == k and m * k == n
               for n, m, k, s, d in zip(shape, out_shape, window, strides, window_dilation))


def _in_order_of(like, a):
    """A copy of ``a`` laid out in memory as ``like`` (a C-ordered buffer) is."""
    out = _empty(like.shape, a.dtype)
    np.copyto(out, a)
    return out


def window_select(x, t, **params):
    return window_select_out(x, None, t, **params)


def window_select_out(x, out, t, **params):
    """``window_select`` given the reduction's result ``out`` (None: reduce ``x`` here)."""
    x, t = np.asarray(x), np.asarray(t)
    bits = _bits_dtype(t.dtype)
    if bits is None:
        return select_host(np, reduce_window, x, t, **params)
    out = reduce_window(x, **params) if out is None else np.asarray(out)
    xp = _padded(np, x, params["padding"], identity(params["kind"], x.dtype))
    tp = _padded(np, t, params["padding"], 0)
    res = _empty(out.shape, t.dtype)
    acc = res.view(bits)
    part = None
    for key, hit in _first_winners(xp, out, params["window"], params["strides"], params["window_dilation"]):
        if part is None:
            np.multiply(tp[key].view(bits), hit, out=acc)
            part = _empty(out.shape, bits)
        else:  # the winners of different offsets are disjoint: or-ing their bits is exact
            np.multiply(tp[key].view(bits), hit, out=part)
            np.bitwise_or(acc, part, out=acc)
    return res


def window_scatter(x, ct, **params):
    return window_scatter_out(x, None, ct, **params)


def window_scatter_out(x, out, ct, **params):
    """``window_scatter`` given the reduction's result ``out`` (None: reduce ``x`` here)."""
    x, ct = np.asarray(x), np.asarray(ct)
    bits = _bits_dtype(ct.dtype)
    if bits is None:
        return scatter_host(np, reduce_window, add_at_inplace, x, ct, **params)
    window, strides, dilation, padding = (params["window"], params["strides"], params["window_dilation"],
                                          params["padding"])
    out = reduce_window(x, **params) if out is None else np.asarray(out)
    xp = _padded(np, x, padding, identity(params["kind"], x.dtype))
    disjoint = _disjoint(window, strides, dilation)
    # disjoint windows: each winner's cotangent is written straight to its place, every other element
    # is zero (an empty buffer where the windows cover the operand); overlapping: masked, then added
    dxp = _empty(xp.shape, ct.dtype)
    if not (disjoint and _covered(xp.shape, out.shape, window, strides, dilation)):
        dxp.fill(0)
    part = None if disjoint else _empty(out.shape, ct.dtype)
    if disjoint and ct.dtype.kind == "f":
        # as adding into zeros does, -0.0 cotangents become +0.0: added to the cotangent (in the windows'
        # order), not afterwards to the result prod(window) times as large
        normal = _empty(out.shape, ct.dtype)
        ct = np.add(ct, ct.dtype.type(0), out=normal)
    elif ct.strides != out.strides:  # once in the windows' order, not once per window offset
        ct = _in_order_of(out, ct)
    cb = ct.view(bits)
    for key, hit in _first_winners(xp, out, window, strides, dilation):
        if disjoint:
            np.multiply(cb, hit, out=dxp[key].view(bits))
        else:
            np.multiply(cb, hit, out=part.view(bits))
            add_at_inplace(dxp, key, part)
    kept = crop(padding, x.shape)
    inner = tuple(k.stop - k.start for k in kept)
    dx = dxp[tuple(slice(max(lo, 0), max(lo, 0) + n) for n, (lo, _) in zip(inner, padding))]
    if inner == tuple(x.shape):
        return dx
    return add_at_inplace(np.zeros(tuple(x.shape), dtype=ct.dtype), kept, dx)  # cropped: no cotangent


#: primitive name -> NumPy's implementation (merged into ``NumpyExecutor.overrides``)
TABLE = {
    "conv": conv,
    "reduce_window": reduce_window,
    "window_select": window_select,
    "window_scatter": window_scatter,
    "window_select_out": window_select_out,
    "window_scatter_out": window_scatter_out,
}
