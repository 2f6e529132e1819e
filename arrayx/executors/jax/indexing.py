"""Eager indexing on the JAX executor: basic keys (``x[3:7]``, ``x[:, 2]``, ``x[i]``, ``v[None, :]``)
as one compiled window, boolean masks selected on the host views (``boolean_mask``).

``jax.Array.__getitem__`` dispatches jax.numpy's indexing steps one by one (measured on CPU, jax
0.10: ``x[3:7]`` 26 us, ``x[5]`` 37 us, ``x[:, 2]`` of 20,000 x 64 116 us, ``x[None]`` of 10 MB
2 ms), which scikit-learn's estimators pay dozens of times per call.  Here a key of integers and
unit-step slices (None and Ellipsis among them) becomes one compiled program: ``dynamic_slice``
with the window's start indices as arguments and its sizes and result shape static, then a reshape
(4-7 us; ``x[:, 2]`` 36 us; ``x[None]`` 0.6 ms, a copy XLA makes for every new array).

The starts are arguments, not constants, so ``x[i]`` in a loop over ``i`` compiles one program, not
one per ``i``; a new window size compiles once per size (as jax.numpy's eager slicing does).  The
key is resolved against the shape here, with NumPy's rules (negative integers, clipped slice
bounds), so ``dynamic_slice`` never clamps: ``api/indexing.py`` has checked the integers are in
range.  Keys this does not take (other steps, arrays, booleans) return None: the caller indexes
the buffer itself.
"""
from __future__ import annotations

import numpy as np

_WINDOW = None  # the compiled program, made on first use (JAX is imported with the executor)
_UPDATE = None  # the eager write's program (see slice_update)


def _program():
    global _WINDOW
    if _WINDOW is None:
        import jax

        def window(x, starts, sizes, shape):
            return jax.lax.dynamic_slice(x, starts, sizes).reshape(shape)

        _WINDOW = jax.jit(window, static_argnames=("sizes", "shape"))
    return _WINDOW


def window_of(shape: tuple, key) -> tuple | None:
    """(starts, sizes, result shape) of the basic ``key`` on an array of ``shape``, or None where
    the key has another entry than an int, a slice of step 1 (or None), None or one Ellipsis."""
    entries = key if key.__class__ is tuple else (key,)
    ndim = len(shape)
    taken = 0
    ellipsis = False
    for e in entries:
        c = e.__class__
        if c is int or c is slice:
            taken += 1
        elif e is Ellipsis:
            if ellipsis:
                return None
            ellipsis = True
        elif e is not None:
            return None
    if taken > ndim:
        return None
    starts, sizes, out = [], [], []
    axis = 0
    for e in entries:
        c = e.__class__
        if e is None:
            out.append(1)
        elif e is Ellipsis:
            for _ in range(ndim - taken):
                starts.append(0)
                sizes.append(shape[axis])
                out.append(shape[axis])
                axis += 1
        elif c is int:
            n = shape[axis]
            starts.append(e + n if e < 0 else e)
            sizes.append(1)
            axis += 1
        else:
            if e.step is not None and e.step != 1:
                return None
            start, stop, _ = e.indices(shape[axis])
            size = max(0, stop - start)
            starts.append(start if size else 0)
            sizes.append(size)
            out.append(size)
            axis += 1
    while axis < ndim:  # axes the key does not name: whole
        starts.append(0)
        sizes.append(shape[axis])
        out.append(shape[axis])
        axis += 1
    return tuple(starts), tuple(sizes), tuple(out)


def basic_index(buf, key):
    """``buf[key]`` for a basic ``key`` as one compiled program, or None (see the module docstring)."""
    w = window_of(buf.shape, key)
    if w is None:
        return None
    starts, sizes, shape = w
    if not starts:  # a 0-d array: x[None], x[...]
        return None
    return _program()(buf, starts, sizes=sizes, shape=shape)


def _update_program():
    global _UPDATE
    if _UPDATE is None:
        import jax
        import jax.numpy as jnp

        def update(x, v, starts, sizes, shape):
            v = jnp.broadcast_to(jnp.asarray(v, dtype=x.dtype), shape).reshape(sizes)
            return jax.lax.dynamic_update_slice(x, v, starts)

        _UPDATE = jax.jit(update, static_argnames=("sizes", "shape"))
    return _UPDATE


def in_host_memory(buf) -> bool:
    """Whether every device holding jax array ``buf`` is a CPU (``np.asarray`` of it is then a view)."""
    return all(d.platform == "cpu" for d in buf.devices())


def boolean_mask(x, mask, *, axis):
    """``x[..., mask]`` (``axis`` full slices first).  In host memory (CPU) NumPy selects on the host
    views of both and the result is placed back, a copy of what is selected: jax.numpy's eager mask
    indexing dispatches a dozen steps and waited for the count anyway (20,000 x 64 float64 by a mask
    of 20,000: 8-10 ms, NumPy 1 ms; scikit-learn's LDA selects each class this way)."""
    import jax

    key = (slice(None),) * axis
    if isinstance(x, jax.core.Tracer) or isinstance(mask, jax.core.Tracer) \
            or not (in_host_memory(x) and in_host_memory(mask)):
        return x[key + (mask,)]
    out = np.asarray(x)[key + (np.asarray(mask),)]
    return jax.device_put(out, next(iter(x.devices())))


def _placed(x, v, starts, sizes):
    """``x`` with the window at ``starts`` of ``sizes`` replaced by ``v`` (of shape ``sizes``): the
    pieces of ``x`` around it concatenated, one axis at a time."""
    import jax

    for a, (s, k, n) in enumerate(zip(starts, sizes, x.shape)):
        if k == n:
            continue
        parts = [jax.lax.slice_in_dim(x, 0, s, axis=a)] if s else []
        parts.append(_placed(jax.lax.slice_in_dim(x, s, s + k, axis=a), v, starts, sizes))
        if s + k < n:
            parts.append(jax.lax.slice_in_dim(x, s + k, n, axis=a))
        return jax.lax.concatenate(parts, a)
    return v


def slice_update(x, v, key):
    """``x`` with ``x[key]`` set to ``v`` (broadcast), ``key`` a native basic key.  A window (ints,
    unit-step slices, None, Ellipsis: ``window_of``) is placed by concatenation, not XLA's scatter
    that ``x.at[key].set`` lowers to: the gradient of ``w[i]`` is such a write into zeros, and XLA:TPU
    compiled the attention block of benchmarks/bench_tpu.py (three of them) in 12.1 s of CPU with the
    scatters (or dynamic-update-slices), 9.1-9.8 s this way (JAX's own program, pads: 7.8-8.3 s), its
    cost model 4.47 -> 4.40 ms (JAX's 4.37; benchmarks/results/tpu_aot.json).  Other keys:
    ``x.at[key].set``.

    Eagerly (neither operand traced: the executor runs this primitive op by op, ``OWN_PROGRAMS`` in
    eager.py) a window is written by one compiled ``dynamic_update_slice`` with the starts as
    arguments, as reads are (``basic_index``): ``x[i] = v`` in a loop over ``i`` compiles once per
    window size, not once per ``i`` (it compiled a program per index, ~70 ms each on CPU)."""
    import jax
    import jax.numpy as jnp

    w = window_of(x.shape, key)
    if w is None or not w[0]:
        return x.at[key].set(v)
    starts, sizes, shape = w
    if not isinstance(x, jax.core.Tracer) and not isinstance(v, jax.core.Tracer):
        return _update_program()(x, v, starts, sizes=sizes, shape=shape)
    v = jnp.broadcast_to(jnp.asarray(v, dtype=x.dtype), shape).reshape(sizes)
    return _placed(x, v, starts, sizes)
