"""The JAX executor's entries for ``arrayx.lax``: ``conv`` is XLA's convolution (any layout, no
transposes), ``reduce_window`` XLA's reduce-window, and its derivative (``window_select``,
``window_scatter``) the host implementation (``executors/numpy/lax.py``) over jax.numpy, the
scatter's strided placement as interior padding, fused by XLA under jit.  The primitives, their
rules and compositions: ``arrayx/lax/_conv.py`` and ``arrayx/lax/_window_prims.py``."""
from __future__ import annotations

import numpy as np

from arrayx.executors.common.windows import identity
from arrayx.executors.numpy.lax import scatter_host, select_host

__all__ = ["TABLE"]


def conv(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    import jax

    dn = jax.lax.ConvDimensionNumbers(*dimension_numbers)  # XLA takes any layout: no transposes
    return jax.lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation,
                                        dimension_numbers=dn, feature_group_count=groups)


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


def window_scatter(x, ct, **params):
    import jax.numpy as jnp

    return scatter_host(jnp, reduce_window, _add_at_jax, x, ct, **params)


#: primitive name -> JAX's implementation (merged into ``JaxExecutor.overrides``)
TABLE = {
    "conv": conv,
    "reduce_window": reduce_window,
    "window_select": window_select,
    "window_scatter": window_scatter,
}
