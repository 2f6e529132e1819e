"""The JAX executor's entries for ``arrayx.lax``: ``conv`` is XLA's convolution (any layout, no
transposes), ``reduce_window`` XLA's reduce-window, and its derivative (``window_select``,
``window_scatter``) the host implementation (``executors/numpy/lax.py``) over jax.numpy, the
scatter's strided placement as interior padding, fused by XLA under jit.  The primitives, their
rules and compositions: ``arrayx/lax/_conv.py`` and ``arrayx/lax/_window_prims.py``.

On a TPU (chosen when XLA lowers for the device, ``jax.lax.platform_dependent``) two entries take
the form XLA:TPU handles well: a convolution with few output positions and a wide window (a kernel's
gradient) is products, and the max/min pooling's cotangent is XLA's select-and-scatter, as in JAX's
own program (tests/executors/test_jax_tpu_lowering.py lowers the CNN step for "tpu" on a CPU)."""
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
#: 0.0.42.1 on a CPU: 39 s of CPU at batch 64, 143 s at 256; with the products the whole process took
#: 5-6 s).  XLA:TPU's cost model puts that step at 0.12 / 0.24 ms with the products against 0.10 /
#: 0.20 ms with the convolution (batch 64 / 256): the compile decides.  XLA:CPU does well with it.
POSITION_PRODUCTS_ON = ("tpu",)
#: up to this many bytes of input windows (output positions x window slice), they are stacked and
#: contracted in one product (the cotangent read once: 5% less time than one product per position in
#: XLA:TPU's cost model for that step); past it, one product per position (no copies of the input)
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


def _position_products(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """The convolution as products: for each output position, the window of the (padded) input under
    it (a strided slice) contracted with the kernel over features and window; the slices stacked
    into one product while they are small (``_STACK_BYTES``), else one product each.  For a kernel's
    gradient: the input slices against the cotangent, 9 slices for a 3x3 kernel.  The operands keep
    their layouts; only the small result is transposed into ``out_spec``."""
    import itertools

    import jax

    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = lhs_spec[2:]
    config = [(0, 0, 0)] * lhs.ndim
    for a, (lo, hi) in zip(spatial, padding):
        config[a] = (lo, hi, 0)
    xp = jax.lax.pad(lhs, np.zeros((), dtype=lhs.dtype), config) if any(map(any, padding)) else lhs
    window = [rhs.shape[a] for a in rhs_spec[2:]]
    out = conv_shape(tuple(lhs.shape[a] for a in lhs_spec), tuple(rhs.shape[a] for a in rhs_spec), strides,
                     padding, lhs_dilation, rhs_dilation)
    contract = ((lhs_spec[1], *spatial), (rhs_spec[1], *rhs_spec[2:]))
    positions = list(itertools.product(*(range(n) for n in out[2:])))
    pieces = []
    for pos in positions:
        start, limit, step = [0] * lhs.ndim, list(xp.shape), [1] * lhs.ndim
        for a, p, s, k, d in zip(spatial, pos, strides, window, rhs_dilation):
            start[a], limit[a], step[a] = p * s, p * s + (k - 1) * d + 1, d
        pieces.append(jax.lax.slice(xp, start, limit, step))
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


def conv(lhs, rhs, **params):
    """XLA's convolution, except where ``_window_heavy`` on the platforms ``POSITION_PRODUCTS_ON``: products
    there (``_position_products``), chosen when XLA lowers for the device (``platform_dependent``: the
    program holds only the chosen branch; an eager call outside a trace goes by its data's device)."""
    import jax

    if not _window_heavy(lhs, rhs, **params):
        return _xla_conv(lhs, rhs, **params)
    if not isinstance(lhs, jax.core.Tracer) and not isinstance(rhs, jax.core.Tracer) and hasattr(lhs, "devices"):
        platform = next(iter(lhs.devices())).platform
        return (_position_products if platform in POSITION_PRODUCTS_ON else _xla_conv)(lhs, rhs, **params)
    return jax.lax.platform_dependent(
        lhs, rhs, default=lambda a, b: _xla_conv(a, b, **params),
        **{p: (lambda a, b: _position_products(a, b, **params)) for p in POSITION_PRODUCTS_ON})


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
    import jax

    if not _scatter_as_jax(x, **params):
        return _scatter_host_jnp(x, ct, **params)
    if not isinstance(x, jax.core.Tracer) and not isinstance(ct, jax.core.Tracer) and hasattr(x, "devices"):
        platform = next(iter(x.devices())).platform
        return (_select_and_scatter if platform in SELECT_AND_SCATTER_ON else _scatter_host_jnp)(x, ct, **params)
    return jax.lax.platform_dependent(
        x, ct, default=lambda a, b: _scatter_host_jnp(a, b, **params),
        **{p: (lambda a, b: _select_and_scatter(a, b, **params)) for p in SELECT_AND_SCATTER_ON})


#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {
    "conv": conv,
    "reduce_window": reduce_window,
    "window_select": window_select,
    "window_scatter": window_scatter,
}
