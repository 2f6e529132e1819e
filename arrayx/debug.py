"""Runtime debugging inside transforms: ``arrayx.debug.print`` and ``arrayx.debug.callback``.

Both bind ``debug_callback``, a primitive with no outputs: eagerly it calls the
function at once; staged (``jit``) it is an equation of the graph (nothing uses its
outputs, and staging drops nothing, so it stays), and every executor's lowering calls
the function with host (NumPy) copies of the values each time the compiled function
runs (the jax executor through ``jax.debug.callback``).  Under ``grad``/``jvp`` the
function sees the primal values.  Values known while staging (constants) are printed
once, when the function is staged.
"""
from __future__ import annotations

import builtins
from typing import Callable

import numpy as np

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.transforms.core import Primitive

__all__ = ["print", "callback", "visualize_array_sharding"]

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


debug_callback_p.impls["*"] = _impl


def _lowering(ex, params):
    fn = params["fn"]
    if ex.name == "jax":
        jax = ex._jax
        return lambda *bufs: jax.debug.callback(lambda *hs: _impl(*hs, fn=fn), *bufs) or ()
    return lambda *bufs: _impl(*bufs, fn=fn)


debug_callback_p.lowerings["*"] = _lowering


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
    >>> f = ax.jit(lambda x: (ax.debug.callback(lambda v: print("saw", v), x), x + 1)[1])
    >>> _ = f(ax.asarray(1.0))
    saw 1.0
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
