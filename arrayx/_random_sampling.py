"""``arrayx.random``'s draws from a set: ``permutation``, ``choice`` and ``categorical`` (re-exported there).

They follow ``jax.random`` bit for bit (tests/test_random.py, tests/test_random_sampling_bits.py):

- ``permutation`` (and ``choice`` without replacement or probabilities): sorting by fresh random
  32-bit keys, enough rounds that ties are unlikely, as JAX does.
- ``choice`` with probabilities ``p``, with replacement: the insertion points of
  ``cumsum(p)[-1] * (1 - u)`` in ``cumsum(p)``.  Both halves are XLA:CPU's: its cumulative sum is
  a scan over tiles of 16 (each tile summed in order from zero, then the running totals of the
  tiles added, ``_xla_cumsum``), not one running sum, and jax.numpy.searchsorted is a fixed number
  of halvings (``_search``), which fixes its answer for any ``cumsum`` (sorted or not).
- ``choice`` with ``p`` without replacement, and ``categorical``: Gumbel noise plus the log
  probabilities (logits), then the index of the maximum, or the ``k`` largest (ties to the lower
  index, as lax.top_k).

``arrayx.random`` defines the public functions and passes itself in (``rnd``: its samplers, checks
and kernel switches), so this module does not import it (tests/test_layering.py: no import cycles
between top-level modules).

Eagerly on the NumPy and Numba executors (``arrayx.random.KERNELS``, Numba installed), ``choice``
with ``p`` and replacement is one Numba kernel (the uniform, the query and the search per element,
``random_kernels.choice_kernel``), the log of ``p`` another (``random_kernels.log_kernel``), the
sort of a 1-d permutation by its random keys a radix sort (``random_kernels.argsort_kernel``;
without Numba, NumPy's radix sorts of the keys' 16-bit halves), and the ``k`` largest of a 1-d
array are a partition and a sort of the candidates (NumPy), not a sort of everything.  Everywhere else (under a transform, on the other executors, without Numba) the
arrayx operations below give the same values.
"""
from __future__ import annotations

import math

import numpy as np

from arrayx import api as xp
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import check_size, normalize_axis, shape_arg
from arrayx.api._device_dtypes import for_array as _defaults_of
from arrayx.core.primitives import current_trace

__all__ = ["permutation", "choice", "categorical"]

_EAGER_HOSTS = frozenset({"numpy", "numba"})  # executors whose buffers are NumPy arrays
_SCAN_TILE = 16  # XLA:CPU's cumulative sums: scans of tiles of this length, then the tiles' totals


def _host(x: Array) -> bool:
    """Whether ``x`` is eager on the NumPy or Numba executor (its buffer a NumPy array)."""
    return current_trace() is None and x._ex.name in _EAGER_HOSTS and isinstance(x._buf, np.ndarray)


# -- permutation -----------------------------------------------------------------------------------------

def _shuffle(rnd, key: Array, x: Array, axis: int) -> Array:
    """Sort by fresh random 32-bit keys, enough rounds that ties are unlikely (JAX's scheme)."""
    rounds = math.ceil(3 * math.log(max(1, math.prod(x.shape))) / math.log(2**32 - 1))
    for _ in range(rounds):
        pair = rnd.split(key)
        key, subkey = pair[0], pair[1]
        sort_keys = rnd._random_bits(subkey, 32, x.shape)
        order = _sort_order(rnd, sort_keys) if x.ndim == 1 else None
        if order is None:
            order = xp.argsort(sort_keys, axis=axis, stable=True)
        x = xp.take_along_axis(x, order, axis=axis)
    return x


_RADIX_MIN = 4096  # fewer keys: NumPy's sort


def _sort_order(rnd, keys: Array):
    """The stable argsort (int64) of 1-d uint32 ``keys`` held eagerly in NumPy, or None: a radix sort
    (``random_kernels.argsort_kernel``) with the kernels, else NumPy's radix sorts of the two 16-bit
    halves (low half first: stable, so the same order as one stable sort of the 32-bit keys)."""
    if keys.shape[0] < _RADIX_MIN or not _host(keys):
        return None
    values = np.ascontiguousarray(keys._buf)
    if rnd._kernel_route(keys):
        from arrayx.executors.numba import random_kernels

        out = np.empty(values.shape, np.int64)
        if rnd._kernel_call(lambda: random_kernels.argsort_kernel(), values, out, whole=True):
            return Array._new(out, keys._ex)
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    high = (values >> 16).astype(np.uint16)[order]
    return Array._new(order[np.argsort(high, kind="stable")].astype(np.int64, copy=False), keys._ex)


def permutation(rnd, key, x, axis: int = 0, independent: bool = False) -> Array:
    """``arrayx.random.permutation`` (``rnd``: the module arrayx.random, for its bits and checks)."""
    key = rnd._check_key("permutation", key)
    if isinstance(x, Array) and x.ndim:
        axis = normalize_axis("permutation", axis, x.ndim)
        return rnd._programs.draw(_permute, key, x, axis, bool(independent), rnd)
    n = _static_int("permutation", x, "x")
    return rnd._programs.draw(_permute, key, n, 0, False, rnd)


def _permute(key: Array, x, axis: int, independent: bool, rnd) -> Array:
    """``x`` (an array, or the int n: ``arange(n)``) shuffled along ``axis`` (checked)."""
    if not isinstance(x, Array):
        return _shuffle(rnd, key, xp.arange(x, device=key.device), 0)
    if independent or x.ndim == 1:
        return _shuffle(rnd, key, x, axis)
    index = _shuffle(rnd, key, xp.arange(x.shape[axis], device=key.device), 0)
    return xp.take(x, index, axis=axis)


def _static_int(fname: str, value, name: str) -> int:
    if isinstance(value, Array):
        if value.dtype.kind not in "iu":
            raise TypeError(f"{fname}: {name} must be an integer or an array with at least one dimension")
        return int(value)  # a size: must be known when the computation is built
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"{fname}: {name} must be an int or an arrayx array, got {type(value).__name__}; "
            f"convert sequences with arrayx.asarray"
        )
    return int(value)


# -- the k largest ---------------------------------------------------------------------------------------

def _top_k_indices(values: Array, k: int) -> Array:
    """Indices of the k largest values along the last axis, ties to the lower index (like lax.top_k;
    NaN above everything, -0 equal to 0, as a stable descending argsort orders them)."""
    if values.ndim == 1 and 0 < k < values.shape[0] and _host(values):
        fast = _top_k_host(values._buf, k)
        if fast is not None:
            return Array._new(fast, values._ex)
    return xp.argsort(values, axis=-1, descending=True, stable=True)[..., :k]


def _top_k_host(v: np.ndarray, k: int):
    """``_top_k_indices`` of a 1-d NumPy array without NaN (else None): the k-th largest value by a
    partition, every index at or above it (in index order), then those sorted, stably, by value."""
    if np.isnan(v).any():
        return None
    n = v.shape[0]
    threshold = np.partition(v, n - k)[n - k]
    candidates = np.flatnonzero(v >= threshold)
    order = np.argsort(-v[candidates], kind="stable")[:k]  # (negation is exact: ties stay ties)
    return candidates[order].astype(np.int64, copy=False)


# -- choice ----------------------------------------------------------------------------------------------

def _xla_cumsum(x: Array) -> Array:
    """The cumulative sum of a 1-d ``x`` with XLA:CPU's roundings: a running sum from zero within each
    tile of 16 values, plus the (recursively summed) totals of the tiles before it."""
    n = x.shape[0]
    if n <= _SCAN_TILE:
        return xp.cumulative_sum(x)
    padded = -(-n // _SCAN_TILE) * _SCAN_TILE
    if padded != n:
        x = xp.concat([x, xp.zeros(padded - n, dtype=x.dtype, device=x.device)])
    within = xp.cumulative_sum(xp.reshape(x, (padded // _SCAN_TILE, _SCAN_TILE)), axis=1)
    before = _xla_cumsum(within[:, -1])[:-1]  # the totals of the tiles before each tile
    before = xp.concat([xp.zeros(1, dtype=x.dtype, device=x.device), before])
    return xp.reshape(within + before[:, None], (padded,))[:n]


def _search(sorted_: Array, query: Array, index_dtype) -> Array:
    """jax.numpy.searchsorted(sorted_, query) (side left, its default "scan" method) for a 1-d ``query``."""
    n = sorted_.shape[0]
    if (_host(sorted_) and _host(query) and sorted_._ex is query._ex and not np.isnan(sorted_._buf).any()
            and bool(np.all(sorted_._buf[1:] >= sorted_._buf[:-1]))):
        # sorted without NaN: every left binary search gives the first index whose value is >= the query
        return Array._new(np.searchsorted(sorted_._buf, query._buf, side="left").astype(index_dtype), sorted_._ex)
    low = xp.zeros(query.shape, dtype=index_dtype, device=query.device)
    high = xp.full(query.shape, n, dtype=index_dtype, device=query.device)
    for _ in range(n.bit_length()):  # ceil(log2(n + 1)) halvings of [low, high)
        mid = low + (high - low) // 2
        value = xp.take(sorted_, xp.minimum(mid, n - 1))
        left = xp.isnan(value) | (query <= value)  # the sort order: NaN above everything
        low, high = xp.where(left, low, mid), xp.where(left, mid, high)
    return high


def _choice_kernel(rnd, key: Array, shape: tuple, cumulative: Array):
    """``choice``'s indices (int64) with ``p`` and replacement as one kernel, or None where it does not apply."""
    if (cumulative.dtype not in rnd._KERNEL_FLOATS or not rnd._kernel_route(key) or not _host(cumulative)
            or cumulative._ex is not key._ex):
        return None
    cum = np.ascontiguousarray(cumulative._buf)
    if np.isnan(cum).any():  # (the kernel compares as IEEE does, which orders no NaN)
        return None
    from arrayx.executors.numba import random_kernels

    out = np.empty(math.prod(shape), np.int64)
    starts, scale, levels = random_kernels.choice_guide(cum)
    if not rnd._kernel_call(lambda: random_kernels.choice_kernel(cum.dtype), *rnd._key_words(key), 0, out, cum,
                            cum[-1], starts, scale, levels):
        return None
    return Array._new(out, key._ex)


def _xla_log_daz(rnd, x: Array) -> Array:
    """log of any input as XLA:CPU computes it, which reads subnormal operands as zero (log gives -inf there)."""
    if x.dtype in rnd._KERNEL_FLOATS and x.size and rnd._kernel_route(x):
        from arrayx import _random_math
        from arrayx.executors.numba import random_kernels

        values = np.ascontiguousarray(x._buf).reshape(-1)
        out = np.empty(values.shape, x.dtype)
        if rnd._kernel_call(lambda: random_kernels.log_kernel(x.dtype, _random_math), values, out):
            return Array._new(out.reshape(x.shape), x._ex)
    if x.dtype == _dtypes.float32:
        return rnd.log(x)  # whose emulation reads them as zero already
    return rnd.log(xp.where(xp.abs(x) < float(np.finfo(x.dtype).tiny), 0.0, x))


def choice(rnd, key, a, shape=(), replace: bool = True, p=None, axis: int = 0, mode: str | None = None) -> Array:
    """``arrayx.random.choice`` (``rnd``: the module arrayx.random, for its samplers and checks)."""
    key = rnd._check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"choice: shape must be a tuple of ints, got {type(shape).__name__}")
    shape = shape_arg("choice", shape)
    check_size("choice", shape, _defaults_of(key).integral, key._ex)
    is_array = isinstance(a, Array) and a.ndim > 0
    if is_array:
        axis = normalize_axis("choice", axis, a.ndim)
        n_inputs = a.shape[axis]
        out_dtype = a.dtype
    else:
        n_inputs = _static_int("choice", a, "a")
        out_dtype = _defaults_of(key).integral
    n_draws = math.prod(shape)
    out_shape = (*a.shape[:axis], *shape, *a.shape[axis + 1:]) if is_array else shape
    if n_draws == 0:
        return xp.zeros(out_shape, dtype=out_dtype, device=key.device)
    if n_inputs <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"choice: cannot take a larger sample (size {n_draws}) than the population (size {n_inputs}) "
            f"when replace=False"
        )
    if p is not None:
        if not isinstance(p, Array):
            raise TypeError(f"choice: p must be an arrayx array or None, got {type(p).__name__}")
        if p.shape != (n_inputs,):
            raise ValueError(
                f"choice: p must be None or a 1-D array of size a.shape[axis] ({n_inputs}), got shape {p.shape}"
            )
        if not replace:
            mode = rnd._gumbel_mode("choice", mode)
    lo = hi = None
    if p is None and replace:  # randint's bounds (inputs of the draw's program: see randint)
        host = key if rnd._programs.route(key) else None
        lo, hi = (rnd._int_param("choice", "a", v, key.device, host) for v in (0, n_inputs))
    return rnd._programs.draw(_choice, key, a if is_array else None, shape, bool(replace), p, axis, mode,
                              n_inputs, out_dtype, out_shape, lo, hi, rnd)


def _choice(key: Array, a, shape: tuple, replace: bool, p, axis: int, mode, n_inputs: int, out_dtype,
            out_shape: tuple, lo, hi, rnd) -> Array:
    """``choice``'s draw, its arguments checked (``a``: the array sampled, or None for ``arange``;
    ``lo``, ``hi``: 0 and ``n_inputs`` as randint's bounds, where it draws with randint)."""
    n_draws = math.prod(shape)
    if p is None:
        if replace:
            index = xp.reshape(rnd._randint_of(key, shape, lo, hi, _defaults_of(key).integral), (-1,))
        else:  # the first draws of a permutation, as JAX does
            index = permutation(rnd, key, n_inputs)[:n_draws]
    else:
        if _dtypes.kind_of(p.dtype) != "f":
            p = xp.astype(p, _defaults_of(p).real)
        if replace:
            cumulative = _xla_cumsum(p)
            index = _choice_kernel(rnd, key, shape, cumulative)
            if index is None:
                u = rnd._uniform(key, shape, p.dtype, p.dtype.type(0.0), p.dtype.type(1.0))
                r = cumulative[-1] * (1 - u)
                index = _search(cumulative, xp.reshape(r, (-1,)), _defaults_of(key).integral)
        else:
            g = rnd._gumbel(key, (n_inputs,), p.dtype, mode) + _xla_log_daz(rnd, p)
            index = _top_k_indices(g, n_draws)
    if a is None:
        return xp.reshape(xp.astype(index, out_dtype), shape)
    return xp.reshape(xp.take(a, index, axis=axis), out_shape)


# -- categorical -----------------------------------------------------------------------------------------

def categorical(rnd, key, logits, axis: int = -1, shape=None, replace: bool = True, mode: str | None = None) -> Array:
    """``arrayx.random.categorical`` (``rnd``: the module arrayx.random, for its samplers and checks)."""
    key = rnd._check_key("categorical", key)
    if not isinstance(logits, Array):
        raise TypeError(f"categorical: logits must be an arrayx array, got {type(logits).__name__}")
    if _dtypes.kind_of(logits.dtype) != "f":
        raise TypeError(f"categorical: logits must have a real floating-point dtype, got {logits.dtype}")
    if logits.ndim == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    mode = rnd._gumbel_mode("categorical", mode)
    axis = normalize_axis("categorical", axis, logits.ndim)
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    if shape is None:
        shape = batch_shape
    else:
        shape = shape_arg("categorical", shape)
        check_size("categorical", shape, _defaults_of(key).integral, key._ex)
        rnd._check_shape("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    if not replace and math.prod(prefix) > logits.shape[axis]:
        raise ValueError(
            f"categorical: the number of samples without replacement ({math.prod(prefix)}) cannot exceed the "
            f"number of categories ({logits.shape[axis]})"
        )
    return rnd._programs.draw(_categorical, key, logits, axis, shape, bool(replace), mode, rnd)


def _categorical(key: Array, logits: Array, axis: int, shape: tuple, replace: bool, mode: str, rnd) -> Array:
    """``categorical``'s draw, its arguments checked (``axis`` normalized, ``shape`` the output's)."""
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        axis_from_end = axis - logits.ndim
        draw_shape = list(shape[len(prefix):])
        draw_shape.insert(logits.ndim + axis_from_end, logits.shape[axis])
        g = rnd._gumbel(key, (*prefix, *draw_shape), logits.dtype, mode)
        expanded = xp.reshape(logits, (1,) * len(prefix) + logits.shape)
        return xp.argmax(g + expanded, axis=axis_from_end)
    k = math.prod(prefix)
    perturbed = logits + rnd._gumbel(key, logits.shape, logits.dtype, mode)
    top = _top_k_indices(xp.moveaxis(perturbed, axis, -1), k)  # batch_shape + (k,)
    top = xp.permute_dims(top, (top.ndim - 1, *range(top.ndim - 1)))
    return xp.reshape(top, shape)
