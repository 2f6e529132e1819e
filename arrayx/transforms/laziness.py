"""``lazy()``: record eager operations into a graph and run them fused when a value is read.

Inside ``with arrayx.lazy():`` (or a function decorated with ``@arrayx.lazy()``) every
operation on arrayx arrays is recorded instead of computed: its result is a
:class:`LazyTracer` that knows its shape, dtype and device (reading them computes
nothing).  The recorded operations run as one graph on their executor
(``Executor.compile``: fused kernels on numba, one XLA program on jax, one task
graph on dask, NumPy calls in order on numpy) when a value is needed:

- a conversion: ``bool``/``int``/``float``/``complex``/``operator.index``,
  ``numpy.asarray`` (``__array__``), DLPack export, ``tolist``/``item``, ``repr``,
  pickling, moving to another device;
- an operation whose result shape depends on values (boolean masks, ``nonzero``,
  ``unique_*``), an array used as an index into a Python-level choice, a call of a
  jitted function (it runs compiled on the values);
- leaving the outermost scope.

Each such run computes every recorded value that is still referenced, and those
arrays become ordinary concrete arrays: the pending graph is emptied.  Graphs
with the same structure (operations, params, shapes, dtypes) reuse one compiled
program (a cache of :data:`CACHE_SIZE` entries), so a client that repeats a call
compiles once per shape.

Semantics are eager's: the values are those of the executor's compiled graph
(as ``jit`` computes them).  In-place writes are recorded functionally, as under
``jit``; an array created before the scope and written in place inside it holds
the written value when the graph runs (on numpy and numba the write lands in its
own memory, so NumPy views of it see it then).  ``lazy()`` entered while another
transform is tracing (inside ``jit``, ``grad``, ``vmap``) does nothing: the
values are already staged.  A nested ``lazy()`` joins the enclosing one.

Limits: an operand is read when the graph runs, so memory written behind arrayx's back in
between (through a NumPy view of a numpy/numba array) is seen then, not at the operation; a
recorded value belongs to the thread (context) whose scope recorded it; a scope that never
reads runs its operations in pieces of :data:`MAX_PENDING`.  Creation functions (no array
operand) and operations whose result size depends on values run at once.

>>> import arrayx as ax
>>> x = ax.linspace(0, 1, 5)
>>> with ax.lazy():
...     y = ax.exp(x) * 2 - 1
...     y.shape            # known without computing
...     round(float(ax.sum(y)), 6)   # computes the recorded graph once
(5,)
12.536057
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from collections import OrderedDict

import numpy as np

from arrayx.api._array import Array
from arrayx.core.graph import Equation, Graph, Literal, Var, dce
from arrayx.core.keys import exact_key
from arrayx.core.primitives import _TRACE, Trace
from arrayx.core.tracers import Tracer, abstract_eval, aval_of, bind_with
from arrayx.transforms.staging import StagingState

__all__ = ["lazy", "LazyTracer", "LazyTrace", "stats"]

#: compiled programs kept per process (structure of the graph -> compiled function)
CACHE_SIZE = 256
#: pending operations on one executor that run without waiting for a read: a loop that never reads
#: a value runs in pieces of this many operations (identical pieces reuse one compiled program)
MAX_PENDING = 512

_CACHE: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()

#: counters (tests and benchmarks read them): graphs run, programs compiled, operations recorded
stats = {"runs": 0, "compiles": 0, "recorded": 0}


class LazyState(StagingState):
    __slots__ = ("ex", "device")

    def __init__(self, trace, var: Var, ex, device):
        super().__init__(trace, var)
        self.ex = ex
        self.device = device


class LazyTracer(Tracer):
    """A value recorded by :func:`lazy`: shape, dtype and device known, the data computed on demand.

    When its graph runs the object itself becomes a concrete :class:`~arrayx.Array`
    (its class and buffer are rebound), so references to it held anywhere see the value.
    """

    __slots__ = ()

    def _force(self, what: str) -> Array:
        state = self._buf
        trace = state.trace
        if not trace.alive:
            raise RuntimeError(f"{what}: a value recorded by arrayx.lazy() was not computed when its scope "
                               f"ended (the scope failed); recompute it")
        trace.flush()
        if self.__class__ is LazyTracer:  # pragma: no cover - flush materialises every live value
            raise RuntimeError(f"{what}: arrayx.lazy() could not compute this value")
        return self

    def _concrete(self, what: str) -> Array:
        return self._force(what)

    # the executor and device of the recorded value, known without computing
    @property
    def device(self):
        return self._buf.device

    @property
    def executor(self) -> str:
        return self._buf.device.executor

    def to_device(self, device, /, *, stream=None) -> Array:
        return self._force("to_device").to_device(device, stream=stream)

    # -- reads that compute -------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        return self._force("numpy.asarray()").__array__(dtype=dtype, copy=copy)

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._force("__dlpack__").__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                                     copy=copy)

    def __dlpack_device__(self):
        return self._force("__dlpack_device__").__dlpack_device__()

    def __format__(self, spec: str) -> str:
        return self._force("format()").__format__(spec)

    def __reduce__(self):
        return self._force("pickle").__reduce__()

    def __copy__(self):
        return self._force("copy").__copy__()

    def __deepcopy__(self, memo):
        return self._force("copy").__deepcopy__(memo)

    def block_until_ready(self):
        return self._force("block_until_ready").block_until_ready()

    def __repr__(self) -> str:
        return self._force("repr()").__repr__()

    __str__ = __repr__

    def tolist(self):
        return self._force("tolist").tolist()

    def item(self, *args):
        return self._force("item").item(*args)


class _Pending:
    """The operations recorded on one executor since its last run."""

    __slots__ = ("ex", "device", "equations", "const_vars", "const_values", "tracked", "written")

    def __init__(self, ex, device):
        self.ex = ex
        self.device = device
        self.equations: list = []
        self.const_vars: dict = {}  # id(array) -> Var
        self.const_values: list = []  # (Var, array, its buffer): keeps each array alive (its id stays unique)
        self.tracked: list = []  # weak references to the arrays that may hold a recorded value
        self.written: list = []  # (array, its buffer and executor before an in-place write in the scope)


class LazyTrace(Trace):
    """Records every primitive on arrays; ``flush`` runs what was recorded."""

    __slots__ = ("pending", "depth", "running")

    def __init__(self):
        super().__init__(None, "arrayx.lazy()")
        self.pending: dict = {}  # executor -> _Pending
        self.depth = 0
        self.running = False

    # -- recording ------------------------------------------------------------------------------
    def _pending_of(self, args, params):
        for a in args:
            if a.__class__ is LazyTracer:
                state = a._buf
                if state.trace is not self:
                    raise RuntimeError("arrayx.lazy(): a value recorded by a finished lazy() scope reached "
                                       "another one; it was not computed")
                return self.pending[state.ex]
        for a in args:
            if isinstance(a, Array):  # concrete (other tracers never reach this trace)
                ex = a._ex
                p = self.pending.get(ex)
                if p is None:
                    p = self.pending[ex] = _Pending(ex, a.device)
                return p
        return None

    def process_primitive(self, prim, args, params):
        p = self._pending_of(args, params) if args else None
        if p is None or prim.data_dependent is not None or getattr(prim, "effectful", False) \
                or self.running:
            # creation functions (no array operand), result sizes that depend on values, effects:
            # computed now, on computed operands
            return bind_with(None, prim, self._computed(args), params)
        if prim.name == "astype" and not p.ex.mutable:
            same = _same_dtype_astype(self, p, args, params)
            if same is not None:
                return same
        out_aval = abstract_eval(prim, args, params)  # may compute operands (a data-dependent rule)
        if any((a._buf.ex if a.__class__ is LazyTracer else a._ex) is not p.ex for a in args if isinstance(a, Array)):
            # mixed executors: eager raises the message naming both
            return bind_with(None, prim, self._computed(args), params)
        inputs = []
        for a in args:
            if a.__class__ is LazyTracer:
                inputs.append(a._buf.var)
            elif isinstance(a, Array):
                var = p.const_vars.get(id(a))
                if var is None:
                    var = p.const_vars[id(a)] = Var(aval_of(a))
                    # its buffer now: an in-place write later in the scope rebinds ``a`` itself
                    p.const_values.append((var, a, a._buf))
                inputs.append(var)
            else:
                inputs.append(Literal(a))
        stats["recorded"] += 1
        if prim.multiple_results:
            outvars = tuple(Var(a) for a in out_aval)
            p.equations.append(Equation(prim, tuple(inputs), params, outvars))
            outs = tuple(self._new(p, v) for v in outvars)
            if len(p.equations) >= MAX_PENDING:
                self.flush()
            return outs
        outvar = Var(out_aval)
        p.equations.append(Equation(prim, tuple(inputs), params, (outvar,)))
        out = self._new(p, outvar)
        if len(p.equations) >= MAX_PENDING:
            self.flush()
        return out

    def _new(self, p: _Pending, var: Var) -> LazyTracer:
        t = LazyTracer._make(LazyState(self, var, p.ex, p.device))
        p.tracked.append(weakref.ref(t))
        return t

    def process_call(self, prim, args, params):
        # jit calls, control flow, custom rules: run now (compiled where they are) on computed operands
        return bind_with(None, prim, self._computed(args), params)

    def _computed(self, args):
        if any(a.__class__ is LazyTracer for a in args):
            self.flush()
        return args

    def remember(self, x) -> None:
        """``x`` is about to hold a recorded value (an in-place write): keep it computed at the next run."""
        if x.__class__ is LazyTracer:
            p = self.pending.get(x._buf.ex)
        else:
            p = self.pending.get(x._ex)
            if p is not None and x.__class__ is Array:
                p.written.append((x, x._buf, x._ex))
        if p is not None:
            p.tracked.append(weakref.ref(x))

    # -- running --------------------------------------------------------------------------------
    def flush(self) -> None:
        """Run every pending graph; each live recorded array becomes a concrete one."""
        if self.running:
            return
        self.running = True
        token = _TRACE.set(None)  # the executors' compiled graphs run eagerly
        try:
            pending, self.pending = self.pending, {}
            for p in pending.values():
                if p.equations:
                    _run(self, p)
        finally:
            _TRACE.reset(token)
            self.running = False

    def finish(self, outs=None):
        try:
            self.flush()
        finally:
            self.alive = False
        return outs


def _same_dtype_astype(trace: LazyTrace, p: _Pending, args, params):
    """``astype`` to the dtype an array already has, on an executor whose buffers are never written
    (jax, dask): the array's own value, as eagerly there (a copy could not be told apart).  Recorded,
    it would make the program copy its operand into a new output (50 MB for scikit-learn's
    ``check_array`` of a 20,000 x 320 operand)."""
    if len(args) != 1:
        return None
    (a,) = args
    if a.__class__ is LazyTracer:
        aval = a._buf.var.aval
        if aval.dtype == params.get("dtype") and not aval.weak_type:
            return trace._new(p, a._buf.var)
        return None
    if a.__class__ is Array and a.dtype == params.get("dtype"):
        new = Array.__new__(Array)
        new._buf = a._buf
        new._ex = a._ex
        return new
    return None


def _run(trace: LazyTrace, p: _Pending) -> None:
    seen = set()
    live = []
    for ref in p.tracked:
        x = ref()
        if x is not None and x.__class__ is LazyTracer and x._buf.trace is trace and id(x) not in seen:
            seen.add(id(x))
            live.append(x)
    if not live:
        return
    outvars = []
    index = {}
    for x in live:
        v = x._buf.var
        if v not in index:
            index[v] = len(outvars)
            outvars.append(v)
    graph, consts, key = _closed_graph(p, outvars)
    fn = None
    if key is not None:
        with _CACHE_LOCK:
            fn = _CACHE.get(key)
            if fn is not None:
                _CACHE.move_to_end(key)
    if fn is None:
        fn = p.ex.compile(graph)
        stats["compiles"] += 1
        if key is not None:
            with _CACHE_LOCK:
                _CACHE[key] = fn
                while len(_CACHE) > CACHE_SIZE:
                    _CACHE.popitem(last=False)
    bufs = fn(*consts)
    stats["runs"] += 1
    ex = p.ex
    atype = ex.array_type
    bufs = [b if b.__class__ is atype else ex.coerce(b) for b in bufs]
    # arrays written in place that existed before: on executors written in place, into their memory
    keep = {}
    for x, buf, old_ex in p.written:
        keep.setdefault(id(x), (buf, old_ex))
    for x in live:
        new = bufs[index[x._buf.var]]
        old = keep.get(id(x))
        if old is not None and old[1] is ex and ex.mutable and isinstance(old[0], np.ndarray) \
                and old[0].flags.writeable and old[0].shape == new.shape and old[0].dtype == new.dtype:
            np.copyto(old[0], np.array(new, copy=True) if np.may_share_memory(old[0], new) else new)
            new = old[0]
        x.__class__ = Array
        x._buf = new
        x._ex = ex


def _closed_graph(p: _Pending, outvars: list):
    """(Graph whose inputs are the constants, the constant arrays, structural cache key or None)."""
    graph = dce(Graph((), [v for v, _, _ in p.const_values], [b for _, _, b in p.const_values], p.equations,
                      outvars, device=p.device))
    consts = list(graph.consts)
    graph = Graph(graph.constvars, (), (), graph.equations, graph.outputs, device=p.device)
    number: dict = {}
    for v in graph.inputs:
        number[v] = len(number)
    parts = [p.ex.name, p.device.label, tuple((v.aval.shape, v.aval.dtype.str, v.aval.weak_type) for v in graph.inputs)]
    try:
        for eqn in graph.equations:
            ins = []
            for a in eqn.inputs:
                if a.__class__ is Var:
                    ins.append(number[a])
                elif a is None:
                    ins.append(None)
                else:
                    ins.append(("lit", exact_key(a.value)))
            for v in eqn.outputs:
                number[v] = len(number)
            parts.append((eqn.prim.name, tuple(ins), tuple((k, exact_key(v)) for k, v in eqn.params.items()),
                          tuple((v.aval.shape, v.aval.dtype.str, v.aval.weak_type) for v in eqn.outputs)))
        parts.append(tuple(number[v] for v in graph.outputs))
        key = tuple(parts)
        hash(key)
    except (TypeError, KeyError):
        key = None  # unhashable params: compiled for this run only
    return graph, consts, key


_LOCAL = threading.local()


class lazy(contextlib.ContextDecorator):
    """Opt-in lazy scope: eager operations are recorded and run fused when a value is read.

    Use as ``with arrayx.lazy(): ...`` or as a decorator ``@arrayx.lazy()``.  Shape, dtype and
    device reads compute nothing; reading a value (``float``, ``bool``, ``numpy.asarray``, ...)
    or leaving the scope runs everything recorded as one compiled graph on its executor.  The
    module docstring (``arrayx.transforms.laziness``) lists what computes and what stays
    recorded.

    >>> import arrayx as ax
    >>> @ax.lazy()
    ... def standardise(a):
    ...     return (a - ax.mean(a)) / ax.std(a)
    >>> standardise(ax.asarray([1.0, 2.0, 3.0]))   # computed when the scope ends
    Array([-1.22474487,  0.        ,  1.22474487], dtype=float64, device=numpy:cpu)
    """

    def __init__(self):
        self._tokens: list = []

    def __enter__(self):
        current = _TRACE.get()
        if current is None:
            trace = LazyTrace()
            self._tokens.append((_TRACE.set(trace), trace))
        elif isinstance(current, LazyTrace):
            current.depth += 1
            self._tokens.append((None, current))
        else:  # inside jit/grad/vmap: values are staged already
            self._tokens.append((None, None))
        return self

    def __exit__(self, exc_type, exc, tb):
        token, trace = self._tokens.pop()
        if trace is None:
            return False
        if token is None:  # nested: the outer scope runs the graph
            trace.depth -= 1
            return False
        _TRACE.reset(token)
        if exc_type is None:
            trace.finish()
        else:
            try:
                trace.finish()
            except Exception:  # noqa: BLE001 - the block's own exception is the one to see
                pass
        return False
