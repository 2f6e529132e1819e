"""Eager draws of ``arrayx.random`` on the jax executor, each one compiled program.

Eagerly, an arrayx operation on the jax executor is one small ``jax.jit`` program of its own, so a
draw written in arrayx operations (threefry2x32's 20 rounds, then the sampler's transform) used to
run as 30-80 dispatches and compile as many programs the first time it met a shape and dtype (a
``normal`` of 1,000 float64 values: 9.3 ms, 42 times ``jax.random.normal``'s 222 us).  Here a
draw is the same arrayx code staged once by ``arrayx.jit``: one XLA program per sampler and static
arguments, called through jit's cache-hit path afterwards.

:func:`draw` ``(fn, key, *args)`` runs ``fn(key, *args)`` (a sampler's arrayx code, its arguments
already checked) that way when :func:`route` says so -- no arrayx transform active, and the key on an
executor of :data:`EXECUTORS` (the jax executor; CuPy, NumPy, Numba and Dask keep their own
routes) -- and directly otherwise.  Its arguments:

- arrayx arrays (keys, array bounds, ``p``, logits, ``x``) and NumPy scalars (bounds already
  converted to the draw's dtype) are the program's inputs.  A NumPy scalar enters as a 0-d array of
  its own dtype (strongly typed: the value the sampler computes with, the same bits as the Python
  number it came from, weakly typed, gave): a sweep over ``minval`` runs one program.  Those 0-d
  arrays are kept per (dtype, bits, device), the last :data:`_MAX_CONSTANTS` of them, so a draw with
  the same bounds again transfers nothing;
- everything else (shape, dtype, mode, sizes, axes) is static: part of the program's key, with the
  threefry layout (``threefry_partitionable``) and the key's device.  The last
  :data:`_MAX_PROGRAMS` keys keep their programs (each a ``jit`` of its own, holding its compiled
  XLA programs, one per operand signature).

The values are the bits of the arrayx operations run one by one (``PROGRAMS = False`` selects them,
to compare or measure): on the jax executor the operations XLA would contract or evaluate its own way
are XLA's own (``_random_math``'s ``xla_*`` primitives), and a bound entering as an array takes the
general formula of ``_affine``, which gives the scalar shortcuts' values (tests/test_random_programs.py).
One exception, in the program's favour: a small float32 Gumbel draw, where XLA's float32 log in a
program of its own was 1 ulp off jax.random's in a few values; compiled with the rest of the draw, as
jax.random compiles it, it gives JAX's bits.

While a draw is staged nothing of it runs eagerly: an operation of concrete values only would (a
constant operand broadcast to the draw's shape is one: an eager program per shape, and a constant of
the draw's size in the program), so the samplers keep their parameters traced (randint's and choice's
bounds are inputs) or Python numbers (literals: ``_random_math.affine_bfloat16``).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from arrayx.api._array import Array
from arrayx.core.primitives import current_trace

__all__ = ["PROGRAMS", "EXECUTORS", "route", "draw", "clear"]

#: False: eager draws on the jax executor run their arrayx operations one by one (the route before)
PROGRAMS = True
#: executors whose eager draws run as one compiled program (eager operations there are programs each)
EXECUTORS = frozenset({"jax"})
_MAX_PROGRAMS = 256
_MAX_CONSTANTS = 64

_programs: OrderedDict = OrderedDict()  # (fn, device, layout, statics) -> jit of fn over its array inputs
_constants: OrderedDict = OrderedDict()  # (dtype, bytes, device) -> a 0-d arrayx array of that value
_lock = threading.Lock()


def route(key: Array) -> bool:
    """Whether an eager draw with ``key`` runs as one compiled program (see the module's text)."""
    return PROGRAMS and current_trace() is None and key._ex.name in EXECUTORS


def draw(fn, key: Array, *args):
    """``fn(key, *args)``: one compiled program where :func:`route` applies, else called directly."""
    if not route(key):
        return fn(key, *args)
    ex = key._ex
    dynamic, statics = [key], []
    for i, a in enumerate(args):
        if isinstance(a, Array):
            if a._ex is not ex:  # the operations' own message, one by one
                return fn(key, *args)
            dynamic.append(a)
        elif isinstance(a, np.generic) and a.dtype.kind in "biufcV":  # a number (V: bfloat16), not a str_
            dynamic.append(_constant(a, key))
        else:
            statics.append((i, type(a), a))
    from arrayx._threefry import _PARTITIONABLE

    cache_key = (fn, key.device, _PARTITIONABLE.get(), tuple(statics))
    try:
        program = _programs.get(cache_key)
    except TypeError:  # an unhashable static: no program
        return fn(key, *args)
    if program is None:
        program = _program(fn, len(args), statics, cache_key)
    else:
        try:
            _programs.move_to_end(cache_key)
        except KeyError:  # dropped meanwhile by another thread
            pass
    return program(*dynamic)


def _program(fn, n_args: int, statics: list, cache_key):
    from arrayx.transforms.jitting import jit

    static_at = {i: v for i, _, v in statics}

    def body(key, *inputs):
        it = iter(inputs)
        return fn(key, *(static_at[i] if i in static_at else next(it) for i in range(n_args)))

    body.__name__ = body.__qualname__ = f"random_{fn.__name__.lstrip('_')}"
    program = jit(body)
    with _lock:
        _programs[cache_key] = program
        while len(_programs) > _MAX_PROGRAMS:
            _programs.popitem(last=False)
    return program


def _constant(value: np.generic, key: Array) -> Array:
    """``value`` as a 0-d array on ``key``'s device, its dtype kept (see the module's text)."""
    from arrayx import api as xp

    host = np.asarray(value)
    cache_key = (host.dtype, host.tobytes(), key.device)
    out = _constants.get(cache_key)
    if out is None:
        out = xp.asarray(host, device=key.device)
        with _lock:
            _constants[cache_key] = out
            while len(_constants) > _MAX_CONSTANTS:
                _constants.popitem(last=False)
    return out


def clear() -> None:
    """Drop every kept program and constant."""
    with _lock:
        _programs.clear()
        _constants.clear()

