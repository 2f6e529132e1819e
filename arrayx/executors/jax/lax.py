"""The JAX executor's entries for ``arrayx.lax``: ``conv`` is XLA's convolution (any layout, no
transposes), ``reduce_window`` XLA's reduce-window, and its derivative (``window_select``,
``window_scatter``) the host implementation (``executors/numpy/lax.py``) over jax.numpy, the
scatter's strided placement as interior padding, fused by XLA under jit.  The primitives, their
rules and compositions: ``arrayx/lax/_conv.py`` and ``arrayx/lax/_window_prims.py``.

On a TPU (chosen when XLA lowers for the device, ``jax.lax.platform_dependent``) two entries take
the form XLA:TPU handles well: a convolution with few output positions and a wide window (a kernel's
gradient) is products (one product and a diagonal sum where that is small: ``_diagonal_products``),
and the max/min pooling's cotangent is XLA's select-and-scatter, as in JAX's own program
(tests/executors/test_jax_tpu_lowering.py lowers the CNN step for "tpu" on a CPU;
benchmarks/tpu_aot_rows.py compiles it for a v5e with XLA:TPU's cost model)."""
from __future__ import annotations

import math

import numpy as np

from arrayx.executors.common.windows import conv_shape, identity
from arrayx.executors.numpy.lax import scatter_host, select_host

__all__ = ["TABLE"]


def _xla_conv(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    import jax

    dn = jax.lax.ConvDimensionNumbers(*dimension_numbers)  # XLA takes any layout: no transposes
    return jax.lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation,
                                        dimension_numbers=dn, feature_group_count=groups)


#: a convolution with at most this many output positions and a window of at least ``_WIDE_WINDOW``
#: elements (a kernel's gradient: the input correlated with the cotangent, one position per kernel
#: element) runs as products on the platforms ``POSITION_PRODUCTS_ON`` (``_position_products``)
_FEW_POSITIONS = 64
_WIDE_WINDOW = 64
#: XLA:TPU takes minutes to compile the 28x28-window convolution of a 3x3 kernel's gradient (the CNN
#: step of benchmarks/bench_tpu.py, JAX's own program too, compiled ahead of time for a v5e with libtpu
#: 0.0.42.1 on a CPU: 48 s at batch 64, 311 s at 256, at load 6-8; arrayx's whole step 6-8 s).
#: XLA:CPU does well with it.
POSITION_PRODUCTS_ON = ("tpu",)
#: the products' first form (``_diagonal_products``) while its product's result (output positions but
#: the last spatial axis, x batch x features x the last axis' window and input extent) takes at most
#: this many bytes and the input extent along the last axis is at most ``_DIAGONAL_SPAN`` output
#: positions' worth (the product's work grows by that factor).  XLA:TPU's cost model for a 3x3 kernel's
#: gradient alone at batch 256 (28x28 images, 16 features): 0.026 ms and 19 MB this way, 0.088 ms and
#: 65 MB for XLA's convolution, 0.124 ms and 92 MB with one window slice per output position stacked
#: (the slices' copies, padded to the TPU's tiles, are most of it); the whole CNN step
#: (benchmarks/results/tpu_aot.json): 0.201 ms (0.245 stacked; JAX 0.195), compiled in 6.6 s of CPU
_DIAGONAL_BYTES = 32 << 20
_DIAGONAL_SPAN = 16
#: otherwise, up to this many bytes of input windows (output positions x window slice), they are stacked
#: and contracted in one product (the cotangent read once); past it, one product per position
_STACK_BYTES = 64 << 20


def _window_heavy(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """Whether this convolution has few output positions and a wide window (see ``_FEW_POSITIONS``)."""
    lhs_spec, rhs_spec, _ = dimension_numbers
    if groups != 1 or any(f != 1 for f in lhs_dilation) or len(lhs_spec) < 3:
        return False
    window = [rhs.shape[a] for a in rhs_spec[2:]]
    out = conv_shape(tuple(lhs.shape[a] for a in lhs_spec), tuple(rhs.shape[a] for a in rhs_spec), strides,
                     padding, lhs_dilation, rhs_dilation)[2:]
    return 0 < math.prod(out) <= _FEW_POSITIONS and math.prod(window) >= _WIDE_WINDOW


def _geometry(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers):
    """(the padded input, the window sizes, the output shape in canonical order (N, O, *spatial))."""
    import jax

    lhs_spec, rhs_spec, _ = dimension_numbers
    config = [(0, 0, 0)] * lhs.ndim
    for a, (lo, hi) in zip(lhs_spec[2:], padding):
        config[a] = (lo, hi, 0)
    xp = jax.lax.pad(lhs, np.zeros((), dtype=lhs.dtype), config) if any(map(any, padding)) else lhs
    window = [rhs.shape[a] for a in rhs_spec[2:]]
    out = conv_shape(tuple(lhs.shape[a] for a in lhs_spec), tuple(rhs.shape[a] for a in rhs_spec), strides,
                     padding, lhs_dilation, rhs_dilation)
    return xp, window, out


def _slices(xp, spatial, positions, strides, window, rhs_dilation, last=None):
    """For each output position, the (padded) input under its window: a strided slice; with ``last``
    (axis, extent), the positions leave out that spatial axis, which is taken from 0 to ``extent``."""
    import jax

    pieces = []
    for pos in positions:
        start, limit, step = [0] * xp.ndim, list(xp.shape), [1] * xp.ndim
        for a, p, s, k, d in zip(spatial, pos, strides, window, rhs_dilation):
            start[a], limit[a], step[a] = p * s, p * s + (k - 1) * d + 1, d
        if last is not None:
            limit[last[0]] = last[1]
        pieces.append(jax.lax.slice(xp, start, limit, step))
    return pieces


def _diagonal_extent(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """The input extent along the last spatial axis ``_diagonal_products`` contracts against the whole
    last window axis, or None where its product would be too large (``_DIAGONAL_BYTES``, ``_DIAGONAL_SPAN``)."""
    lhs_spec, rhs_spec, _ = dimension_numbers
    window = [rhs.shape[a] for a in rhs_spec[2:]]
    out = conv_shape(tuple(lhs.shape[a] for a in lhs_spec), tuple(rhs.shape[a] for a in rhs_spec), strides,
                     padding, lhs_dilation, rhs_dilation)
    extent = (out[-1] - 1) * strides[-1] + (window[-1] - 1) * rhs_dilation[-1] + 1
    size = math.prod(out[2:-1]) * out[0] * out[1] * window[-1] * extent * max(np.dtype(lhs.dtype).itemsize, 4)
    return extent if size <= _DIAGONAL_BYTES and extent <= _DIAGONAL_SPAN * out[-1] else None


def _diagonal_products(lhs, rhs, extent, *, strides, padding, lhs_dilation, rhs_dilation, groups,
                       dimension_numbers):
    """The convolution as one product: the input windows over the spatial axes but the last (one slice
    per output position there, stacked), each with its whole ``extent`` along the last axis, contracted
    with the kernel over features and the other window axes; that leaves, per last-axis window element
    ``c`` and input position ``x``, a partial sum, and output position ``j`` is the sum over ``c`` of
    those at ``x = j * stride + c * dilation``: a diagonal of the (x, c) plane, taken as a strided
    slice of it flattened (no arithmetic on the other elements) and summed.  For a 3x3 kernel's
    gradient: 3 row slices of the input (not 9 window copies) against the cotangent, read once."""
    import itertools

    import jax

    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = lhs_spec[2:]
    xp, window, out = _geometry(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers)
    positions = list(itertools.product(*(range(n) for n in out[2:-1])))
    pieces = _slices(xp, spatial[:-1], positions, strides, window, rhs_dilation, (spatial[-1], extent))
    stacked = jax.lax.concatenate([jax.lax.expand_dims(p, (0,)) for p in pieces], 0)
    contract = (tuple(a + 1 for a in (lhs_spec[1], *spatial[:-1])), (rhs_spec[1], *rhs_spec[2:-1]))
    low = np.dtype(lhs.dtype).kind == "f" and np.dtype(lhs.dtype).itemsize < 4
    res = jax.lax.dot_general(stacked, rhs, (contract, ((), ())),
                              preferred_element_type=np.float32 if low else None)
    # the product's free axes: the positions, then the input's batch and last axis in its order, then
    # the kernel's output features and last window axis in its order -> (P, N, O, extent, window)
    lhs_free = sorted([(lhs_spec[0] + 1, "n"), (spatial[-1] + 1, "x")])
    rhs_free = sorted([(rhs_spec[0], "o"), (rhs_spec[-1], "c")])
    names = ["p"] + [n for _, n in lhs_free] + [n for _, n in rhs_free]
    res = jax.lax.transpose(res, tuple(names.index(n) for n in "pnoxc"))
    k, d, s, n_out = window[-1], rhs_dilation[-1], strides[-1], out[-1]
    head = (len(positions), out[0], out[1])
    # element (c * d + j * s, c) of the (extent, window) plane is at (c * d + j * s) * k + c of it
    # flattened: for output position j, k elements from j * s * k on, (d * k + 1) apart
    flat = jax.lax.reshape(res, (*head, extent * k))
    diagonals = [jax.lax.slice_in_dim(flat, j * s * k, j * s * k + (k - 1) * (d * k + 1) + 1, d * k + 1, axis=3)
                 for j in range(n_out)]
    stacked = jax.lax.concatenate([jax.lax.expand_dims(g, (3,)) for g in diagonals], 3)  # (P, N, O, out, k)
    res = jax.lax.reduce(stacked, np.zeros((), dtype=stacked.dtype), jax.lax.add, (4,))
    res = res.astype(lhs.dtype) if low else res  # (P, N, O, last axis)
    res = jax.lax.reshape(res, (*out[2:-1], out[0], out[1], n_out))
    nsp = len(out) - 3
    res = jax.lax.transpose(res, (nsp, nsp + 1, *range(nsp), nsp + 2))  # canonical (N, O, *spatial)
    return jax.lax.transpose(res, tuple(int(i) for i in np.argsort(out_spec)))


def _position_products(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """The convolution as products: ``_diagonal_products`` where its product is small enough (a
    kernel's gradient), else for each output position the window of the (padded) input under it (a
    strided slice) contracted with the kernel over features and window; the slices stacked into one
    product while they are small (``_STACK_BYTES``), else one product each.  The operands keep their
    layouts; only the small result is transposed into ``out_spec``."""
    import itertools

    import jax

    params = dict(strides=strides, padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                  groups=groups, dimension_numbers=dimension_numbers)
    extent = _diagonal_extent(lhs, rhs, **params)
    if extent is not None:
        return _diagonal_products(lhs, rhs, extent, **params)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = lhs_spec[2:]
    xp, window, out = _geometry(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers)
    contract = ((lhs_spec[1], *spatial), (rhs_spec[1], *rhs_spec[2:]))
    positions = list(itertools.product(*(range(n) for n in out[2:])))
    pieces = _slices(xp, spatial, positions, strides, window, rhs_dilation)
    if len(positions) * pieces[0].size * pieces[0].dtype.itemsize <= _STACK_BYTES:
        stacked = jax.lax.concatenate([jax.lax.expand_dims(p, (0,)) for p in pieces], 0)
        shifted = (tuple(a + 1 for a in contract[0]), contract[1])
        res = jax.lax.dot_general(stacked, rhs, (shifted, ((), ())))  # (P, N, O)
        res = jax.lax.transpose(res, (1, 2, 0))
    else:
        res = jax.lax.concatenate([jax.lax.expand_dims(jax.lax.dot_general(p, rhs, (contract, ((), ()))), (2,))
                                   for p in pieces], 2)  # (N, O, P)
    res = jax.lax.reshape(res, tuple(out))  # the canonical layout (N, O, *out spatial)
    return jax.lax.transpose(res, tuple(int(i) for i in np.argsort(out_spec)))  # out axis out_spec[i]: canonical i


def _by_platform(a, b, platforms, special, default, params):
    """``special(a, b, **params)`` on ``platforms``, else ``default``: an eager call outside a trace goes by
    its data's device; a traced one is chosen when XLA lowers for the device (``platform_dependent``)."""
    import jax

    if not isinstance(a, jax.core.Tracer) and not isinstance(b, jax.core.Tracer) and hasattr(a, "devices"):
        return (special if next(iter(a.devices())).platform in platforms else default)(a, b, **params)
    return jax.lax.platform_dependent(a, b, default=lambda u, v: default(u, v, **params),
                                      **{p: (lambda u, v: special(u, v, **params)) for p in platforms})


def conv(lhs, rhs, **params):
    """XLA's convolution, except where ``_window_heavy`` on the platforms ``POSITION_PRODUCTS_ON``: products
    there (``_position_products``), chosen when XLA lowers for the device (``platform_dependent``: the
    program holds only the chosen branch; an eager call outside a trace goes by its data's device)."""
    if not _window_heavy(lhs, rhs, **params):
        return _xla_conv(lhs, rhs, **params)
    return _by_platform(lhs, rhs, POSITION_PRODUCTS_ON, _position_products, _xla_conv, params)


def _add_at_jax(buf, key, value):
    """``buf`` plus ``value`` placed at the strided slices ``key``: a padding with holes (interior
    padding), which XLA fuses into the sum; ``.at[].add`` would be a serial XLA scatter on CPU."""
    import jax

    if value.size == 0:
        return buf
    config = []
    for sl, n, m in zip(key, buf.shape, value.shape):
        start, _, step = sl.indices(n)
        config.append((start, n - start - (m - 1) * step - 1, step - 1))
    return buf + jax.lax.pad(value, np.zeros((), dtype=value.dtype), config)


def reduce_window(x, *, kind, window, strides, padding, window_dilation):
    import jax

    init = np.array(identity(kind, x.dtype), dtype=x.dtype)
    reducer = jax.lax.max if kind == "max" else jax.lax.min
    return jax.lax.reduce_window(x, init, reducer, window, strides, padding, window_dilation=window_dilation)


def window_select(x, t, **params):
    import jax.numpy as jnp

    return select_host(jnp, reduce_window, x, t, **params)


def _scatter_host_jnp(x, ct, **params):
    import jax.numpy as jnp

    return scatter_host(jnp, reduce_window, _add_at_jax, x, ct, **params)


#: the platforms where the max/min pooling's cotangent is XLA's select-and-scatter (JAX's own program
#: there); elsewhere one masked copy per window offset placed by interior padding (fused by XLA:CPU)
SELECT_AND_SCATTER_ON = ("tpu",)


def _select_and_scatter(x, ct, *, kind, window, strides, padding, window_dilation):
    """``ct`` added at each window's winner by XLA's select-and-scatter: the first element in window
    order that no later one beats (``>=`` keeps it: the first maximum, arrayx's tie rule).  NaN never
    wins (it equals nothing): it enters as the reduction's identity, and a window whose maximum is NaN
    (where XLA's max propagates it) drops its cotangent, as the host implementation does.  One case
    still differs: a NaN before an identity-valued (-inf for max) element that is the window's
    maximum; the host implementation picks the element, this the NaN's position."""
    import jax

    if np.dtype(x.dtype).kind == "f":
        out = reduce_window(x, kind=kind, window=window, strides=strides, padding=padding,
                            window_dilation=window_dilation)
        if np.dtype(out.dtype) == np.float32:  # NaN stays NaN in bfloat16: the test reads the pooled values
            out = out.astype(jax.numpy.bfloat16)  # a product at the default precision takes (XLA:TPU keeps
            # them in bfloat16, not also in float32: 3% fewer bytes in the CNN step, tpu_aot_rows.py)
        ct = jax.lax.select(out == out, ct, jax.lax.full_like(ct, 0))
        x = jax.lax.select(x == x, x, jax.lax.full_like(x, identity(kind, x.dtype)))
    # JAX's public primitive for it (jax.lax.select_and_scatter_add_p: source, operand, then the params)
    return jax.lax.select_and_scatter_add_p.bind(
        ct, x, select_prim=jax.lax.ge_p if kind == "max" else jax.lax.le_p, window_dimensions=tuple(window),
        window_strides=tuple(strides), padding=tuple(tuple(p) for p in padding))


def _scatter_as_jax(x, **params) -> bool:
    """select-and-scatter gives the host implementation's answer here: no window dilation, no padding
    (XLA never picks a padded element, the host implementation can on an all-identity window), a real
    type (no ordering of booleans or complex values)."""
    import jax

    return (all(d == 1 for d in params["window_dilation"]) and not any(map(any, params["padding"]))
            and np.dtype(x.dtype).kind in "iuf" and hasattr(jax.lax, "select_and_scatter_add_p"))


def window_scatter(x, ct, **params):
    """The pooling's cotangent: select-and-scatter on the platforms ``SELECT_AND_SCATTER_ON`` (chosen
    when XLA lowers for the device; an eager call outside a trace goes by its data's device), the
    host implementation over jax.numpy elsewhere."""
    if not _scatter_as_jax(x, **params):
        return _scatter_host_jnp(x, ct, **params)
    return _by_platform(x, ct, SELECT_AND_SCATTER_ON, _select_and_scatter, _scatter_host_jnp, params)


#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {
    "conv": conv,
    "reduce_window": reduce_window,
    "window_select": window_select,
    "window_scatter": window_scatter,
}
