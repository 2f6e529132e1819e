"""Chains of eager ``add``/``subtract``/``maximum``/``minimum``/``sqrt``/``abs``/``negative`` (and a
``multiply`` last) on large arrays run as one compiled pass on CPU, when their value is first needed.

Why: each eager operation of the jax executor is one XLA program that reads and writes the whole
array; a client's chain of them (scikit-learn's ``euclidean_distances``: ``d += XX; d += YY;
maximum(d, 0); sqrt(d)`` on 2,000 x 4,000 float64) is four passes over 64 MB where one would do
(NumPy runs them in place, four passes too: the jax executor was behind it on that call).

How: on a process whose JAX default backend is one CPU device, one of those operations whose
result takes :data:`MIN_BYTES` or more, or that has a :class:`Pending` operand, gives a
:class:`Pending`: the operation and its operands recorded, not run.  A later operation of the set
on it extends the record (up to :data:`MAX_OPS` operations and operands); anything else that needs
the value (another operation, ``numpy.asarray``, ``block_until_ready``, DLPack, a compiled graph,
a transfer, pickling) computes it once, by one ``jax.jit`` program per recorded pattern
(``recycle.Recycling``: its result reuses a dropped one), and keeps it; the operands are let go.

Why only those operations, and only floating-point operands of the result's dtype: the values
must be those of the operations run one by one.  XLA:CPU contracts a multiply feeding an add into
a fused multiply-add when both are in one program (``a * b + c``: 23% of 100,000 float64 results
differed in the last bit), exp's and log's range reductions add to their operand, and XLA's
algebraic simplifier rewrites some pairs (``a / sqrt(b)`` into ``a * rsqrt(b)``, ``log(exp(a))``).
None of the recorded operations but ``multiply`` multiplies, and a Pending whose last operation is
a multiply is never extended (``LAST_ONLY``: the next recorded operation takes its computed value),
so no product feeds an addition inside a program; each of the others is correctly rounded alone
and in a fused loop alike.  tests/executors/test_jax_eager_clients.py compares every pair and
random chains of up to 11 operations (float64, float32; NaN, infinities, signed zeros,
subnormals, broadcast rows and columns, 0-d arrays, Python and NumPy scalars) with the operations
run one by one, bit for bit -- but for a NaN's sign bit: XLA turns ``-x + y`` into ``y - x``,
the same numbers and zeros, whose NaN may carry the other sign (NaN's sign is not a value:
NumPy and the standard leave it open).

Memory: a Pending keeps its operands until its value is computed (then only the value): a chain
whose inputs the user drops before reading the result holds them meanwhile.
"""
from __future__ import annotations

import numpy as np

from arrayx.executors.jax import stand_in as _stand_in, x64 as _x64
from arrayx.executors.jax.stand_in import StandIn

__all__ = ["Pending", "FUSED", "MIN_BYTES", "MAX_OPS", "load", "fuser"]

#: the operations a Pending records (none multiplies: see the module docstring) ...
FUSED = frozenset({"add", "subtract", "maximum", "minimum", "sqrt", "abs", "negative", "multiply"})
#: ... but a multiply only last: a Pending whose last operation is one is not extended (its value is
#: computed first), so no recorded operation ever takes a product as an operand
LAST_ONLY = frozenset({"multiply"})
#: a result of this many bytes or more is recorded, not computed
MIN_BYTES = 1 << 20
#: the most operations (and operands) one Pending records; beyond, its operands are computed first
MAX_OPS = 8

_jax = None
_ARRAY = None
ENABLED = False
_PROGRAMS: dict = {}  # recorded pattern -> its compiled program (recycle.Recycling)
_FNS: dict = {}  # operation name -> its implementation (what the eager per-op program runs)
_SCALARS = (float, int, np.float64, np.float32, np.float16)


def load(jax, array_type, enabled: bool) -> None:
    global _jax, _ARRAY, ENABLED
    _jax, _ARRAY = jax, array_type
    ENABLED = bool(enabled)
    _stand_in.load(jax)
    jax.tree_util.register_pytree_node(Pending, _flatten, _unflatten)


def _flatten(p):
    return (p.materialize(),), None  # a compiled program (or device_put) takes the computed value


def _unflatten(_, children):
    return children[0]


def _evaluate(expr, leaves):
    if expr.__class__ is int:
        return leaves[expr]
    name, args = expr
    return _FNS[name](*(_evaluate(a, leaves) for a in args))


def _program(expr):
    from arrayx.executors.jax.recycle import Recycling

    return Recycling(lambda *leaves: _evaluate(expr, leaves))


class Pending(StandIn):
    """The value of recorded elementwise operations (``expr`` over ``leaves``), computed when first
    needed (:meth:`materialize`), then kept."""

    __slots__ = ("expr", "leaves", "ops", "shape", "dtype", "_full", "closed", "__weakref__")

    def __init__(self, expr, leaves: tuple, ops: int, shape: tuple, dtype, closed: bool = False):
        self.expr = expr
        self.closed = closed  # its last operation is in LAST_ONLY: another recorded one takes its value
        self.leaves = leaves
        self.ops = ops
        self.shape = shape
        self.dtype = dtype
        self._full = None

    def materialize(self):
        """The value as a ``jax.Array`` (computed on the first call, then kept)."""
        full = self._full
        if full is None:
            program = _PROGRAMS.get(self.expr)
            if program is None:
                if len(_PROGRAMS) > 512:
                    _PROGRAMS.clear()
                program = _PROGRAMS[self.expr] = _program(self.expr)
            prev = _x64.swap(True)  # arrayx's 64-bit types (x64.py): this may run from outside arrayx's calls
            try:
                full = self._full = program(*self.leaves)
            finally:
                _x64.restore(prev)
            self.leaves = ()
        return full

    # -- what arrayx reads without computing ----------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def weak_type(self):
        return False

    def _array_leaf(self):
        full = self._full
        if full is not None:
            return full
        return next(b for b in self.leaves if b.__class__ is _ARRAY)

    def devices(self):
        return self._array_leaf().devices()

    @property
    def device(self):
        return self._array_leaf().device

    def is_deleted(self) -> bool:
        full = self._full
        return full.is_deleted() if full is not None else False

    @property
    def _committed(self):
        return self._array_leaf()._committed

    def block_until_ready(self):
        self.materialize().block_until_ready()
        return self

    def is_ready(self) -> bool:
        return self.materialize().is_ready()

    def __jax_array__(self):
        return self.materialize()

    def __array__(self, dtype=None, copy=None):
        host = np.asarray(self.materialize())
        if dtype is not None and np.dtype(dtype) != host.dtype:
            return host.astype(dtype)
        if copy:
            return host.copy()
        return host

    def __dlpack_device__(self):
        return self._array_leaf().__dlpack_device__()

    def __repr__(self) -> str:
        return f"Pending({self.materialize()!r})"


    __hash__ = None



def _binary(op):
    return lambda self, other: op(self.materialize(), plain(other))


def _rbinary(op):
    return lambda self, other: op(plain(other), self.materialize())


def _define_operators() -> None:
    import operator

    for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
              "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):
        name = n.rstrip("_")
        setattr(Pending, f"__{name}__", _binary(getattr(operator, n)))
    for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
              "lshift", "rshift"):
        name = n.rstrip("_")
        setattr(Pending, f"__r{name}__", _rbinary(getattr(operator, n)))
    for n in ("neg", "pos", "abs", "invert"):
        setattr(Pending, f"__{n}__", (lambda op: lambda self: op(self.materialize()))(getattr(operator, n)))
    for n in ("bool", "int", "float", "complex", "index"):
        setattr(Pending, f"__{n}__", (lambda k: lambda self: getattr(self.materialize(), f"__{k}__")())(n))


_define_operators()


def plain(b):
    return b.materialize() if b.__class__ is Pending else b


def fuser(name: str, fn):
    """What records ``name`` (``fn``: its implementation) on eager operands, or None outside :data:`FUSED`."""
    if name not in FUSED:
        return None
    _FNS[name] = fn
    closed = name in LAST_ONLY

    def record(bufs):
        """A :class:`Pending` of ``name`` on ``bufs``, or None where it runs now."""
        dtype = None
        shapes = []
        pending = False
        for b in bufs:
            cls = b.__class__
            if cls is _ARRAY or cls is Pending:
                d = b.dtype
                if dtype is None:
                    dtype = d
                elif d != dtype:
                    return None
                if cls is Pending:
                    pending = True
                elif b.weak_type:
                    return None
                shapes.append(b.shape)
            elif cls not in _SCALARS or (cls is not float and cls is not int and b.dtype != dtype
                                          and dtype is not None):
                return None
        if dtype is None or dtype.kind != "f":
            return None
        for b in bufs:  # a NumPy scalar before the first array: checked against the dtype now known
            if b.__class__ in _SCALARS and b.__class__ not in (float, int) and b.dtype != dtype:
                return None
        shape = shapes[0] if len(shapes) == 1 or all(s == shapes[0] for s in shapes) else _broadcast(shapes)
        if shape is None:
            return None
        if not pending:
            n = dtype.itemsize
            for d in shape:
                n *= d
            if n < MIN_BYTES:
                return None
        leaves: list = []
        args = []
        ops = 1
        for b in bufs:
            if b.__class__ is Pending and b._full is None and not b.closed and ops + b.ops <= MAX_OPS \
                    and len(leaves) + len(b.leaves) <= MAX_OPS:
                args.append(_shifted(b.expr, b.leaves, leaves))
                ops += b.ops
            else:
                args.append(_leaf(plain(b), leaves))
        return Pending((name, tuple(args)), tuple(leaves), ops, shape, dtype, closed)

    return record


def _leaf(b, leaves: list) -> int:
    for i, have in enumerate(leaves):
        if have is b:
            return i
    leaves.append(b)
    return len(leaves) - 1


def _shifted(expr, own: tuple, leaves: list):
    """``expr`` over ``own`` leaves, its leaf numbers those of ``leaves`` (own ones appended there)."""
    if expr.__class__ is int:
        return _leaf(own[expr], leaves)
    name, args = expr
    return name, tuple(_shifted(a, own, leaves) for a in args)


def _broadcast(shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None  # the operation itself raises its error
