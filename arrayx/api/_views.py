"""Views on executors whose buffers cannot be written in place: ``x[basic key]`` and ``x.T`` of a
JAX, Dask or traced array remember their base, and a functional write (setitem, the in-place
operators) reaches the base and every live view of it.  Split from ``arrayx/api/indexing.py``,
whose ``getitem`` makes these views; ``arrayx/api/_index_updates.py`` computes the writes.
"""
from __future__ import annotations

import operator
import threading
import weakref

from arrayx.api._array import Array
from arrayx.api.indexing import _int_entry, getitem
from arrayx.core.primitives import _TRACE, _object_new
from arrayx.core.tracers import Tracer

# On NumPy (and Numba, CuPy) ``x[basic key]`` shares x's memory, so a write through either is seen
# by both.  JAX and Dask buffers cannot be written, and under a transform every write is
# functionalised: ``x[k] = v`` computes a new value and rebinds x's wrapper (``Array._become``).  To
# keep NumPy's semantics there, ``x[key]`` with a basic key (ints, slices, Ellipsis, None: what makes
# a NumPy view) of such an array links its result to x: the view's ``_view_of`` is ``(x, key)`` (a
# strong reference: as in NumPy a view keeps its base alive) and x's ``_views`` holds a weak
# reference to it.  A write through an array with either link (``functional_write``: setitem and the
# in-place operators) carries the new value up to the root (``base[key] = view``, functionally), then
# re-slices every live view of the root from its new base, so later reads of the base and of every
# view see the write.  Under a transform the rebound arrays are put back when it ends, as for any
# in-place code there (``Trace.remember``).  Cost: one list append and a weak reference per basic
# getitem on such arrays, a slice per live view on each write; arrays written in place pay nothing
# but one attribute read on getitem.
#
# The read-modify-write of a functional update holds a lock, as does the making of a view, so writes
# from several threads all land and a view is never sliced from a value that a concurrent write is
# replacing.  One reentrant lock for all arrays: a write runs arrayx code that may make views of other
# arrays (temporaries of matmul, ...), so per-array (or striped) locks could be taken in opposite
# orders by two threads and deadlock.  It serialises only these functional updates, whose work is
# Python dispatch under the GIL anyway (JAX computes asynchronously, Dask lazily).
#
# One case stays apart: a view made eagerly on NumPy, Numba or CuPy (a memory view, not linked) and
# written inside a transform: the write is functionalised there, so the base does not see it inside
# the transform (after it, both are as they were, as for any in-place code under a transform).
#
# Views of all of the base through a function and its inverse link the same way (``whole_view``):
# ``x.T``, ``x.mT`` and ``permute_dims`` (SciPy's ``swapaxes``), always views in NumPy.  The other
# manipulation functions (reshape, expand_dims, squeeze, ...) return new arrays on these executors:
# the standard leaves view-or-copy unspecified, and NumPy's own choice for reshape depends on memory
# layout, which JAX and Dask arrays do not have.

_LOCK = threading.RLock()


def _is_view_key(key, ndim: int) -> bool:
    """Whether NumPy's ``x[key]`` (x with ``ndim`` dimensions) is a view: ints (not 0-d arrays),
    slices, Ellipsis and None only, and not an int for every axis (NumPy's scalar, a copy)."""
    entries = key if key.__class__ is tuple else (key,)
    ints = 0
    for e in entries:
        c = e.__class__
        if c is slice or e is None or e is Ellipsis:
            continue
        if c is int or _int_entry(e):
            ints += 1
        else:
            return False
    return ints != ndim or ints != len(entries)


def _view(x: Array, key) -> Array:
    """``x[key]`` for a basic key, linked to x as its view."""
    with _LOCK:
        y = getitem(x, key, view=False)
        if y is x:  # x[:] and x[...] may give x itself: a view is another array
            y = _object_new(x.__class__)
            y._buf = x._buf
            y._ex = x._ex
        _link(x, y, key)
    return y


def _link(x: Array, y: Array, key) -> None:
    """Record ``y`` as the view ``x[key]`` (key: a basic key or a :class:`_Whole`)."""
    y._view_of = (x, key)
    views = getattr(x, "_views", None)
    if views is None:
        x._views = [weakref.ref(y)]
    else:
        views.append(weakref.ref(y))
        n = len(views)
        if n >= 16 and not n & (n - 1):  # at each power of two: drop the dead (amortised O(1))
            x._views = [r for r in views if r() is not None]


class _Whole:
    """The link of a view of all of its base through a function (``.T``: a transpose): ``forward``
    makes the view's value from the base's, ``backward`` the base's from the view's."""

    __slots__ = ("forward", "backward")

    def __init__(self, forward, backward):
        self.forward = forward
        self.backward = backward


def whole_view(x: Array, forward, backward) -> Array:
    """``forward(x)``, linked to x as a view when x is not written in place (as getitem's views
    are): a function that NumPy answers with a view of all of x (a transpose) calls this."""
    if x.__class__ is Array and x._ex.mutable and _TRACE.get() is None:
        return forward(x)  # the executor's own view
    with _LOCK:
        y = forward(x)
        if y is x:
            y = _object_new(x.__class__)
            y._buf = x._buf
            y._ex = x._ex
        _link(x, y, _Whole(forward, backward))
    return y


def functional_write(x: Array, compute, key=None) -> None:
    """Rebind ``x`` to ``compute()`` (a new value computed from x, differing from it at most in
    ``x[key]``; None: anywhere), atomically for x's root; x's bases and live views then see the new
    value (see the comment above)."""
    with _LOCK:
        x._become(compute())
        if getattr(x, "_view_of", None) is not None or getattr(x, "_views", None):
            _propagate(x, key)


def _propagate(x: Array, key) -> None:
    written = {id(x): key}  # the arrays that hold their new value -> the key of the region written in each
    node = x
    link = getattr(node, "_view_of", None)
    while link is not None:
        base, key = link
        base._become(key.backward(node) if key.__class__ is _Whole else
                     _at_update("__setitem__", base, key, node, "set"))
        written[id(base)] = key
        node = base
        link = getattr(node, "_view_of", None)
    _refresh(node, written, written[id(node)])


def _refresh(node: Array, written: dict, region) -> None:
    """Re-slice the live views below ``node`` from their bases: those that may overlap ``region``
    (the key written in node; None: all of it).  Those in ``written`` hold their new value."""
    views = getattr(node, "_views", None)
    if not views:
        return
    live = []
    for ref in list(views):
        w = ref()
        if w is None or (isinstance(w, Tracer) and not w._buf.trace.alive):  # gone, or escaped its transform
            continue
        live.append(ref)
        if id(w) in written:
            _refresh(w, written, written[id(w)])
        elif region is None or not _disjoint(region, w._view_of[1], node.shape):
            key = w._view_of[1]
            w._become(key.forward(node) if key.__class__ is _Whole else getitem(node, key, view=False))
            _refresh(w, written, None)
    node._views = live


def _disjoint(k1, k2, shape) -> bool:
    """Whether two keys certainly address different elements: both start with a different integer
    (rows of a matrix, iterating over an array); False when unsure."""
    if k1.__class__ is _Whole or k2.__class__ is _Whole:
        return False
    e1 = k1[0] if k1.__class__ is tuple and k1 else k1
    e2 = k2[0] if k2.__class__ is tuple and k2 else k2
    if not (_int_entry(e1) and _int_entry(e2)) or not shape or shape[0] is None:
        return False
    n = shape[0]
    i, j = operator.index(e1), operator.index(e2)
    return (i + n if i < 0 else i) != (j + n if j < 0 else j)


# at the end: ``_index_updates`` imports ``functional_write`` from here (see arrayx/api/__init__, "Import cycles")
from arrayx.api._index_updates import _at_update  # noqa: E402
