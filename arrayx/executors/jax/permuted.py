"""Deferred transposes on the JAX executor: a :class:`Permuted` buffer is ``transpose(base, axes)``
not yet computed.

XLA on CPU copies the whole array to transpose it (61 MB of float64: ~10-80 ms, more than the
client call it sits in: ``xpx.cov`` transposes its input, scikit-learn's estimators take ``X.T``),
where NumPy's transpose is a free view.  So ``permute_dims``/``matrix_transpose`` of an eager buffer
of :data:`MIN_BYTES` or more give a ``Permuted`` that records the base and the axes:

- elementwise operations on it run on the base and stay permuted (a transpose commutes with them;
  another array operand is brought into the base's order first: a transpose of it, broadcast
  dimensions included, which costs what it holds);
- reductions with ``axis``/``keepdims`` reduce the base along the matching axes;
- ``matmul`` of a matrix-transposed operand folds the transpose into the product (XLA's dot
  reads either order);
- a transpose of it composes the axes (``x.T.T`` is ``x``'s buffer again);
- ``numpy.asarray`` of it is the base's host view, transposed (F-ordered for a matrix, no copy);
- any other compiled operation (the per-op ``jax.jit`` of eager mode, ``jit``, ``arrayx.lazy()``)
  takes it as its base, a pytree leaf, and transposes inside the program, where XLA fuses the
  transpose into its consumer (one program per pattern of transposed arguments, cached);
- what runs op by op (values read on the host, data-dependent shapes) computes the transpose
  once (kept on the ``Permuted``) and runs on that.

Compiled programs whose outputs are large transposes give them as ``Permuted`` too.  The wrapper
lives below the arrayx ``Array``: values, dtypes and views (``x.T`` is a view of ``x``, written
through ``functional_write``) are those of an ordinary buffer.
"""
from __future__ import annotations

import operator

import numpy as np

from arrayx.executors.jax import stand_in as _stand_in, x64 as _x64
from arrayx.executors.jax.stand_in import StandIn
from arrayx.executors.jax.fused import Pending as _Pending

#: a transpose of this many bytes or more is deferred (smaller ones cost less than the bookkeeping)
MIN_BYTES = 1 << 20

_jax = None  # set by ``load`` (JAX is imported only when the executor is used)
_TRANSPOSE = None


def load(jax) -> None:
    global _jax, _TRANSPOSE
    _jax = jax
    _stand_in.load(jax)
    _TRANSPOSE = jax.jit(lambda x, axes: jax.numpy.transpose(x, axes), static_argnames=("axes",))
    # a pytree of one leaf, its base: ``jax.jit`` (compiled graphs), ``device_put`` and
    # ``block_until_ready`` take the base, and inside a trace the transpose is an operation of the
    # program (XLA fuses it into its consumer); a program is compiled per pattern of such arguments
    jax.tree_util.register_pytree_node(Permuted, _flatten, _unflatten)


def _flatten(p):
    return (p.base,), p.axes


def _unflatten(axes, children):
    (base,) = children
    if isinstance(base, _jax.core.Tracer):
        return _jax.numpy.transpose(base, axes)
    if isinstance(base, _jax.Array):
        return Permuted(base, axes)
    new = object.__new__(Permuted)  # stand-in leaves (jax's tree utilities): keep the structure
    new.base, new.axes, new.shape, new._full = base, axes, None, None
    return new


def compose(outer: tuple, inner: tuple) -> tuple:
    """The axes of ``transpose(transpose(b, inner), outer)`` as one transpose of ``b``."""
    return tuple(inner[a] for a in outer)


def inverse(axes: tuple) -> tuple:
    out = [0] * len(axes)
    for i, a in enumerate(axes):
        out[a] = i
    return tuple(out)


def is_identity(axes: tuple) -> bool:
    return all(i == a for i, a in enumerate(axes))


class Permuted(StandIn):
    """``transpose(base, axes)`` of a ``jax.Array`` ``base``, computed only where an operation
    needs it in order (then once, and kept)."""

    __slots__ = ("base", "axes", "shape", "_full", "__weakref__")

    def __init__(self, base, axes: tuple):
        self.base = base
        self.axes = axes
        shape = base.shape
        self.shape = tuple(shape[a] for a in axes)
        self._full = None

    # -- what arrayx reads without computing ----------------------------------------------------
    @property
    def dtype(self):
        return self.base.dtype

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def size(self) -> int:
        return self.base.size

    @property
    def nbytes(self) -> int:
        return self.base.nbytes

    @property
    def weak_type(self):
        return getattr(self.base, "weak_type", False)

    def devices(self):
        return self.base.devices()

    @property
    def device(self):
        return self.base.device

    def is_deleted(self) -> bool:
        return self.base.is_deleted()

    @property
    def _committed(self):
        return self.base._committed

    def copy_to_host_async(self):
        self.base.copy_to_host_async()

    @property
    def sharding(self):
        return self.base.sharding

    def block_until_ready(self):
        self.base.block_until_ready()
        return self

    def is_ready(self) -> bool:
        return self.base.is_ready()

    # -- the transposed value -------------------------------------------------------------------
    def materialize(self):
        """The transpose as a ``jax.Array`` (computed on the first call, then kept)."""
        full = self._full
        if full is None:
            prev = _x64.swap(True)  # with arrayx's 64-bit types (x64.py): this may run from outside arrayx's calls
            try:
                full = self._full = _TRANSPOSE(self.base, axes=self.axes)
            finally:
                _x64.restore(prev)
        return full

    def __array__(self, dtype=None, copy=None):
        full = self._full
        host = np.asarray(full) if full is not None else np.asarray(self.base).transpose(self.axes)
        if dtype is not None and np.dtype(dtype) != host.dtype:
            return host.astype(dtype)
        if copy:
            return host.copy(order="K")
        return host

    def __dlpack_device__(self):
        return self.base.__dlpack_device__()

    def __repr__(self) -> str:
        return f"Permuted(axes={self.axes}, {self.materialize()!r})"




def _operator(name):
    return getattr(operator, name + "_" if name in ("and", "or") else name)


def _binary(name):
    op = _operator(name)
    return lambda self, other: op(self.materialize(), plain(other))


def _rbinary(name):
    op = _operator(name)
    return lambda self, other: op(plain(other), self.materialize())


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
           "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Permuted, f"__{_n}__", _binary(_n))
for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
           "lshift", "rshift"):
    setattr(Permuted, f"__r{_n}__", _rbinary(_n))
Permuted.__hash__ = None
for _n in ("neg", "pos", "abs", "invert"):
    setattr(Permuted, f"__{_n}__", (lambda op: lambda self: op(self.materialize()))(getattr(operator, _n)))
for _n in ("bool", "int", "float", "complex", "index"):
    setattr(Permuted, f"__{_n}__", (lambda n: lambda self: getattr(self.materialize(), f"__{n}__")())(_n))


def plain(b):
    """``b`` as a ``jax.Array`` (a :class:`Permuted` or a ``fused.Pending`` computed); anything else as it is."""
    return b.materialize() if b.__class__ is Permuted or b.__class__ is _Pending else b


def transpose(b, axes: tuple):
    """``b`` (a ``jax.Array``) transposed now (one compiled call per shape and axes)."""
    return _TRANSPOSE(b, axes=axes)


def expand(b, ndim: int):
    """``b`` with leading dimensions of length 1 up to ``ndim`` (a broadcast operand's shape)."""
    return b.reshape((1,) * (ndim - b.ndim) + tuple(b.shape))


# -- how each eager primitive of the jax executor takes a Permuted operand

_REDUCTIONS = frozenset({"sum", "prod", "mean", "std", "var", "max", "min", "any", "all"})


def kind_of(name: str) -> str:
    from arrayx.core.primitives import ELEMENTWISE

    if name in ("permute_dims", "matrix_transpose"):
        return "transpose"
    if name == "matmul":
        return "matmul"
    if name in _REDUCTIONS:
        return "reduction"
    if (name in ELEMENTWISE and name != "clip") or name == "astype":
        return "elementwise"
    return "other"


def matrix_axes(ndim: int) -> tuple:
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


class Deferring:
    """The eager implementation of one primitive (``fn``: what runs on plain buffers, ``raw``: the
    jax.numpy function compiled programs use) that takes :class:`Permuted` operands: a large
    transpose is deferred, elementwise operations and reductions run on the base, ``matmul``
    folds a matrix transpose into the product; other primitives get the transpose computed."""

    __slots__ = ("name", "fn", "raw", "kind", "atype", "folded")

    def __init__(self, name, fn, raw, atype):
        self.name = name
        self.fn = fn
        self.raw = raw
        self.kind = kind_of(name)
        self.atype = atype
        self.folded = None

    def __call__(self, *bufs, **params):
        if self.kind == "transpose":
            return self._transpose(bufs[0], params)
        for b in bufs:
            if b.__class__ is Permuted:
                return self.take(bufs, params)
        return self.fn(*bufs, **params)

    def take(self, bufs, params):
        """The call with a :class:`Permuted` among ``bufs``."""
        kind = self.kind
        if kind == "elementwise":
            return self._elementwise(bufs, params)
        if kind == "matmul":
            return self._matmul(*bufs)
        if kind == "reduction" and len(bufs) == 1:
            return self._reduction(bufs[0], params)
        return self.fn(*(plain(b) for b in bufs), **params)

    def _transpose(self, x, params):
        ndim = x.ndim
        axes = tuple(params["axes"]) if self.name == "permute_dims" else matrix_axes(ndim)
        if x.__class__ is Permuted:
            axes = compose(axes, x.axes)
            if is_identity(axes):
                return x.base
            return Permuted(x.base, axes)
        if x.__class__ is self.atype and x.nbytes >= MIN_BYTES and not is_identity(axes):
            return Permuted(x, axes)
        return self.fn(x, **params)

    def _elementwise(self, bufs, params):
        nd = max(getattr(b, "ndim", 0) for b in bufs)
        lead = next((b for b in bufs if b.__class__ is Permuted and b.ndim == nd), None)
        if lead is None:  # the permuted operand is broadcast to more dimensions: compute it
            return self.fn(*(plain(b) for b in bufs), **params)
        axes = lead.axes
        inv = inverse(axes)
        args = []
        for b in bufs:
            if b.__class__ is Permuted and b.axes == axes:
                args.append(b.base)
            elif getattr(b, "ndim", 0):  # another array: into the base's order (broadcast dims too)
                b = plain(b)
                if b.ndim < nd:
                    b = expand(b, nd)
                args.append(transpose(b, inv))
            else:
                args.append(b)
        return Permuted(plain(self.fn(*args, **params)), axes)

    def _matmul(self, a, b):
        ta = a.__class__ is Permuted and a.ndim >= 2 and a.axes == matrix_axes(a.ndim)
        tb = b.__class__ is Permuted and b.ndim >= 2 and b.axes == matrix_axes(b.ndim)
        if not (ta or tb):
            return self.fn(plain(a), plain(b))
        if self.folded is None:
            raw = self.raw

            def product(a, b, ta, tb):
                return raw(_jax.numpy.swapaxes(a, -1, -2) if ta else a, _jax.numpy.swapaxes(b, -1, -2) if tb else b)

            from arrayx.executors.jax.recycle import Recycling

            self.folded = Recycling(product, static_argnames=("ta", "tb"))  # a large product: recycle.py
        return self.folded(a.base if ta else plain(a), b.base if tb else plain(b), ta=ta, tb=tb)

    def _reduction(self, x, params):
        axis = params.get("axis", _MISSING)
        if axis is _MISSING or "keepdims" not in params:
            return self.fn(plain(x), **params)
        if axis is None:
            return self.fn(x.base, **params)  # every element: the order does not matter
        if axis.__class__ is int:
            axis = (axis,)
        nd = x.ndim
        try:
            reduced = {operator.index(a) % nd for a in axis}
        except TypeError:
            return self.fn(plain(x), **params)
        axes = x.axes
        out = self.fn(x.base, **{**params, "axis": tuple(sorted(axes[a] for a in reduced))})
        if params["keepdims"]:
            new = axes
        else:
            kept = [axes[i] for i in range(nd) if i not in reduced]
            order = sorted(kept)
            new = tuple(order.index(k) for k in kept)
        if is_identity(new):
            return out
        return Permuted(out, new) if out.nbytes >= MIN_BYTES else transpose(out, new)


_MISSING = object()
