"""Runtime debugging inside transforms: ``arrayx.debug.print``, ``callback`` and ``breakpoint``.

Both bind ``debug_callback``, a primitive with no outputs: eagerly it calls the
function at once; staged (``jit``) it is an equation of the graph (nothing uses its
outputs, and staging drops nothing, so it stays), and every executor's lowering calls
the function with host (NumPy) copies of the values each time the compiled function
runs (the jax executor through ``jax.debug.callback``); they have all run when the call
returns (JAX dispatches asynchronously, and on a TPU runs a callback when the chip reaches it: the
jax executor's compiled call waits for them, :func:`waiting_for_callbacks`).  Under ``grad``/``jvp``
the function sees the primal values.  Values known while staging (constants) are printed
once, when the function is staged.  ``breakpoint()`` is a callback too: it hands the runtime values
of the caller's local variables to a debugger (``pdb`` by default; ``DEBUGGER`` replaces it).
"""
from __future__ import annotations

import builtins
import os
import sys
from typing import Callable

import numpy as np

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.core.primitives import Primitive
from arrayx.core.executor import GENERIC

__all__ = ["print", "callback", "breakpoint", "visualize_array_sharding"]


class EffectfulPrimitive(Primitive):
    """A primitive with an effect (a host callback): dead-code elimination keeps it."""

    __slots__ = ()
    effectful = True


debug_callback_p = EffectfulPrimitive("debug_callback", multiple_results=True)
debug_callback_p.abstract_eval = lambda *args, fn: ()
debug_callback_p.jvp = lambda primals, tangents, *, fn: (debug_callback_p.bind(*primals, fn=fn), None)


def _impl(*bufs, fn):
    fn(*(np.asarray(b) for b in bufs))
    return ()


GENERIC[debug_callback_p.name] = _impl


def _lowering(ex, params):
    fn = params["fn"]
    if ex.name == "jax":
        jax = ex._jax
        # the user's function at the user's own JAX 64-bit setting, not arrayx's (executors/jax/x64.py)
        return lambda *bufs: jax.debug.callback(lambda *hs: ex.table["debug_callback"](*hs, fn=fn), *bufs) or ()
    return lambda *bufs: _impl(*bufs, fn=fn)


debug_callback_p.lowerings["*"] = _lowering


class _WaitsForCallbacks:
    """A compiled program that returns only when the debug callbacks its call ran have finished."""

    __slots__ = ("program", "wait")

    def __init__(self, program, wait):
        self.program = program
        self.wait = wait

    def __call__(self, *bufs):
        out = self.program(*bufs)
        self.wait()
        return out

    def __getattr__(self, name):  # the program's own attributes (jax.jit's lower, _cache_size, fn ...)
        if name in ("program", "wait"):  # not yet set (a copy being made)
            raise AttributeError(name)
        return getattr(self.program, name)


def waiting_for_callbacks(graph, program, wait: Callable[[], None]):
    """``program``, the compiled ``graph``, made to call ``wait()`` after each call where ``graph``
    (or a sub-graph) has a debug callback, so that ``print``/``callback``/``breakpoint`` have run
    when the call returns, on every executor (the NumPy one runs them in line).  An executor whose
    calls return before the device has finished (JAX's asynchronous dispatch: on a TPU a callback
    runs when the chip reaches it) passes its barrier (``jax.effects_barrier``).  Graphs without
    one keep their program as it is (and its asynchronous dispatch)."""
    from arrayx.core.graph import has_effects

    if not any(has_effects(e) for e in graph.equations):
        return program
    return _WaitsForCallbacks(program, wait)


def _batch(vals, dims, *, fn):
    # one callback with the batched values, calling ``fn`` once per member, in order (as jax.vmap does)
    from arrayx.transforms.batching import front
    from arrayx.transforms.rules._batch import size_of

    size = size_of(vals, dims)
    batched = tuple(d is not None for d in dims)

    def per_member(*values):
        for i in range(size):
            fn(*(v[i] if b else v for v, b in zip(values, batched)))

    per_member.__name__ = getattr(fn, "__name__", "callback")
    return debug_callback_p.bind(*front(vals, dims), fn=per_member), []


debug_callback_p.batch = _batch


def callback(fn: Callable, *args) -> None:
    """Call ``fn(*args)`` with the runtime values of ``args`` (arrays as NumPy arrays), also under jit.

    >>> import arrayx as ax
    >>> seen = []
    >>> f = ax.jit(lambda x: (ax.debug.callback(seen.append, x), x + 1)[1])
    >>> _ = f(ax.asarray(1.0))
    >>> seen
    [array(1.)]
    """
    leaves, tree = pytree.flatten(args)
    is_array = [isinstance(x, Array) for x in leaves]
    arrays = [x for x, a in zip(leaves, is_array) if a]
    if not arrays:
        fn(*args)
        return
    others = [None if a else x for x, a in zip(leaves, is_array)]  # Python values pass through

    def call(*values):
        it = iter(values)
        fn(*pytree.unflatten(tree, [next(it) if a else o for a, o in zip(is_array, others)]))

    call.__name__ = getattr(fn, "__name__", "callback")
    debug_callback_p.bind(*arrays, fn=call)


def print(fmt: str, *args, **kwargs) -> None:  # noqa: A001 - JAX's name
    """``print(fmt.format(*args, **kwargs))`` with runtime values, also under jit.

    >>> import arrayx as ax
    >>> ax.jit(lambda x: ax.debug.print("x = {}", x) or x)(ax.asarray(2.0)).shape
    x = 2.0
    ()
    """
    keys = sorted(kwargs)

    def show(*vals):
        pos, kw = vals[:len(args)], dict(zip(keys, vals[len(args):]))
        builtins.print(fmt.format(*pos, **kw))

    callback(show, *args, *(kwargs[k] for k in keys))


def visualize_array_sharding(x) -> None:
    """Print which devices hold which block of a 1-D or 2-D array (see ``arrayx.sharding``)."""
    from arrayx.sharding._api import visualize_array_sharding as show

    show(x)


def _pdb(namespace: dict, where: str) -> None:
    """The default debugger: ``pdb`` over the breakpoint's values (``p x``, ``pp locals()``; ``c`` goes on).
    ``PYTHONBREAKPOINT=0`` turns breakpoints off, as it does Python's own."""
    if os.environ.get("PYTHONBREAKPOINT", "").strip() == "0":
        return
    import pdb

    builtins.print(f"arrayx.debug.breakpoint at {where}; locals: {', '.join(sorted(namespace)) or '(none)'}")
    pdb.Pdb().run("pass", dict(namespace), dict(namespace))


#: ``DEBUGGER(namespace, where)`` is called at each breakpoint with the caller's local variables (arrays
#: as NumPy arrays holding their runtime values) and ``"file:line in function"``; replace it to use
#: another debugger (or, in tests, to record what a breakpoint saw)
DEBUGGER: Callable[[dict, str], None] = _pdb


def breakpoint(*, num_frames: int | None = None, **options) -> None:  # noqa: A001 - JAX's name
    """Stop in a debugger with the runtime values of the caller's local variables, also under jit.

    Eagerly it stops at once; staged (``jit``, ``vmap``: once per member, ``grad``: primal values)
    it stops each time the compiled function runs, with that run's values.  ``num_frames`` frames
    of callers are collected (default 1: the function that calls ``breakpoint``; an inner frame's
    name wins).  Arrays reach the debugger as NumPy arrays, other values as they were when the
    function was staged.  ``DEBUGGER`` is the debugger called (``pdb`` by default).
    ``jax.debug.breakpoint``'s other options (``backend``, ``filter_frames``, ``ordered``, ``token``)
    are accepted; callbacks already run in program order here.

    >>> import arrayx as ax
    >>> seen = []
    >>> ax.debug.DEBUGGER, saved = (lambda ns, where: seen.append(float(ns["y"]))), ax.debug.DEBUGGER
    >>> def f(x):
    ...     y = x * 2.0
    ...     ax.debug.breakpoint()
    ...     return y
    >>> _ = ax.jit(f)(ax.asarray(3.0))
    >>> ax.debug.DEBUGGER = saved
    >>> seen
    [6.0]
    """
    unknown = set(options) - {"backend", "filter_frames", "ordered", "token"}
    if unknown:
        raise TypeError(f"breakpoint: unexpected keyword arguments {sorted(unknown)}")
    n = 1 if num_frames is None else int(num_frames)
    if n < 1:
        raise ValueError(f"breakpoint: num_frames must be at least 1, got {num_frames}")
    frame = sys._getframe(1)
    where = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
    values: dict = {}
    for _ in range(n):
        if frame is None:
            break
        for name, v in frame.f_locals.items():
            values.setdefault(name, v)
        frame = frame.f_back
    names = sorted(values)

    def stop(*vals):
        DEBUGGER(dict(zip(names, vals)), where)

    stop.__name__ = "breakpoint"
    callback(stop, *(values[k] for k in names))
    return options.get("token")
