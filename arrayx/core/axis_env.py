"""The axis environment: the names that ``vmap(axis_name=)`` and ``pmap`` bind, innermost last.

A frame holds the name, the number of members, how to get this member's index, and which
transform bound it.  The collectives (``arrayx.transforms.parallel``) look their axis up here;
the batching interpreter binds a frame around the function it maps.  It lives in the core so that
both build on it without importing each other.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable, NamedTuple

__all__ = ["AxisFrame", "bind_axis", "axis_frames", "JAX_MAPPED"]


class AxisFrame(NamedTuple):
    name: object
    size: int
    index: Callable  # () -> this member's index (an int32 array, batched under vmap)
    kind: str  # "vmap" or "pmap"


_AXES: ContextVar = ContextVar("arrayx_axis_env", default=())

#: the axis names that a ``jax.pmap`` (or a jax ``shard_map``) being traced maps over: a collective
#: over one of them is JAX's own (``executors/jax/parallel.py``), over any other its unmapped value
JAX_MAPPED: ContextVar = ContextVar("arrayx_jax_pmap_axes", default=frozenset())


@contextlib.contextmanager
def bind_axis(name, size: int, index: Callable, kind: str):
    """Within the block, ``name`` is a mapped axis of ``size`` members (collectives may name it)."""
    token = _AXES.set(_AXES.get() + (AxisFrame(name, int(size), index, kind),))
    try:
        yield
    finally:
        _AXES.reset(token)


def _frame(fname: str, name) -> AxisFrame:
    for frame in reversed(_AXES.get()):
        if frame.name == name:
            return frame
    bound = [f.name for f in _AXES.get()]
    raise NameError(
        f"{fname}: unbound axis name {name!r}; a collective needs an enclosing arrayx.pmap(f, axis_name=...) "
        f"or arrayx.vmap(f, axis_name=...) that names it" + (f" (bound here: {bound})" if bound else "")
    )


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def axis_frames() -> tuple:
    """The bound frames, outermost first."""
    return _AXES.get()
