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

Failures: when the recorded operations fail to compile or run (an error, a MemoryError,
Ctrl-C), every array written in place whose write was part of that run gets back the value it
had before the run (the writes of earlier runs stay), values made by the run say so when read,
and the failure is raised; when the block itself raised, its exception is raised with the run's
failure in a note (a Ctrl-C during the run is raised instead, chained to the block's exception).

Threads, generators, scalars: a scope records the operations of the thread that entered it, and
only while the code that entered it runs: a generator (or coroutine) suspended inside a scope
leaves its caller computing eagerly (values it yielded compute when the caller reads them).
Another thread that reads an array this scope wrote in place sees the value from before the
scope; a value made inside the scope and read from another thread is computed then.  A Python
scalar whose value changes between runs of the same recorded operations (a learning-rate
schedule) becomes an input of the compiled program, as a scalar argument of ``jit`` does: one
more compile, not one per value; scalars that keep their value stay written in the program.

Limits: an operand is read when the graph runs, so memory written behind arrayx's back in
between (through a NumPy view of a numpy/numba array) is seen then, not at the operation; a
scope that never reads runs its operations in pieces of :data:`MAX_PENDING`.  Creation
functions (no array operand) and operations whose result size depends on values run at once.

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
import sys
import threading
import traceback
import weakref
from collections import OrderedDict

import numpy as np

from arrayx.api._array import Array
from arrayx.core.graph import Equation, Graph, Literal, Var, dce
from arrayx.core.keys import exact_key
from arrayx.core.primitives import _TRACE, Trace
from arrayx.core.tracers import ShapeDtypeStruct, Tracer, abstract_eval, aval_of, bind_with
from arrayx.transforms.staging import StagingState

__all__ = ["lazy", "LazyTracer", "LazyTrace", "stats"]

#: compiled programs kept per process (structure of the graph -> compiled function)
CACHE_SIZE = 256
#: pending operations on one executor that run without waiting for a read: a loop that never reads
#: a value runs in pieces of this many operations (identical pieces reuse one compiled program)
MAX_PENDING = 512

_CACHE: OrderedDict = OrderedDict()
#: structure of a graph -> (the scalar literals of its first run, the positions seen to change since)
_SCALARS: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()

#: counters (tests and benchmarks read them): graphs run, programs compiled, operations recorded
stats = {"runs": 0, "compiles": 0, "recorded": 0}

# code flags of the frames that can be suspended with a scope open in them
_SUSPENDABLE = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


class LazyState(StagingState):
    __slots__ = ("ex", "device", "failure")

    def __init__(self, trace, var: Var, ex, device):
        super().__init__(trace, var)
        self.ex = ex
        self.device = device
        self.failure = None  # why the run that was to compute this value failed


class LazyTracer(Tracer):
    """A value recorded by :func:`lazy`: shape, dtype and device known, the data computed on demand.

    When its graph runs the object itself becomes a concrete :class:`~arrayx.Array`
    (its class and buffer are rebound), so references to it held anywhere see the value.
    """

    __slots__ = ()

    def _force(self, what: str) -> Array:
        while True:
            state = self._buf
            if not isinstance(state, LazyState):  # computed (or written again) by another thread meanwhile
                return _wrapper(state, self._ex)
            trace = state.trace
            with trace.lock:
                if self._buf is not state:
                    continue
                if trace.thread != threading.get_ident():
                    # another thread: an array from before the scope reads as it was then
                    before = trace.before_of(self)
                    if before is not None:
                        return _wrapper(*before)
                if state.failure is None and trace.alive:
                    trace.flush()
                if self.__class__ is LazyTracer:
                    raise RuntimeError(
                        f"{what}: a value recorded by arrayx.lazy() was not computed: "
                        f"{state.failure or 'its scope ended without running it'}; recompute it")
            return self

    def _concrete(self, what: str) -> Array:
        return LazyTracer._force(self, what)

    #: how eager code of another thread (or of a generator's caller) reads it (core.primitives.eval_eager)
    _read_outside = _force

    # the executor and device of the recorded value, known without computing
    @property
    def device(self):
        return self._buf.device

    @property
    def executor(self) -> str:
        return self._buf.device.executor

    def to_device(self, device, /, *, stream=None) -> Array:
        return LazyTracer._force(self, "to_device").to_device(device, stream=stream)

    # -- reads that compute -------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        return LazyTracer._force(self, "numpy.asarray()").__array__(dtype=dtype, copy=copy)

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        return LazyTracer._force(self, "__dlpack__").__dlpack__(stream=stream, max_version=max_version,
                                                                dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return LazyTracer._force(self, "__dlpack_device__").__dlpack_device__()

    def __format__(self, spec: str) -> str:
        return LazyTracer._force(self, "format()").__format__(spec)

    def __reduce__(self):
        return LazyTracer._force(self, "pickle").__reduce__()

    def __copy__(self):
        return LazyTracer._force(self, "copy").__copy__()

    def __deepcopy__(self, memo):
        return LazyTracer._force(self, "copy").__deepcopy__(memo)

    def block_until_ready(self):
        return LazyTracer._force(self, "block_until_ready").block_until_ready()

    def __repr__(self) -> str:
        return LazyTracer._force(self, "repr()").__repr__()

    __str__ = __repr__

    def tolist(self):
        return LazyTracer._force(self, "tolist").tolist()

    def item(self, *args):
        return LazyTracer._force(self, "item").item(*args)


def _wrapper(buf, ex) -> Array:
    new = Array.__new__(Array)
    new._buf = buf
    new._ex = ex
    return new


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
        # id(array) -> (array, its buffer and executor before its first in-place write since the last run)
        self.written: dict = {}


class LazyTrace(Trace):
    """Records every primitive on arrays; ``flush`` runs what was recorded.

    It records for one thread, and (when its scope was entered in a generator or coroutine) only
    while that frame runs; other code that finds it current hands its operations to ``outer``.
    """

    __slots__ = ("pending", "depth", "running", "lock", "thread", "frame", "outer")

    def __init__(self, outer=None, frame=None):
        super().__init__(None, "arrayx.lazy()")
        self.pending: dict = {}  # executor -> _Pending
        self.depth = 0
        self.running = False
        self.lock = threading.RLock()  # another thread may compute a value recorded here
        self.thread = threading.get_ident()
        self.frame = frame  # the generator/coroutine frame the scope is open in, or None
        self.outer = outer  # the trace current before this scope (None, or a suspended scope)

    def active(self) -> bool:
        """Whether the running code is the code this scope records."""
        if not self.alive or self.thread != threading.get_ident():
            return False
        frame = self.frame
        return frame is None or frame.f_back is not None  # a suspended frame has no caller

    # -- recording ------------------------------------------------------------------------------
    def _pending_of(self, args, params):
        for a in args:
            if a.__class__ is LazyTracer:
                return self.pending[a._buf.ex]
        for a in args:
            if isinstance(a, Array):  # concrete (other tracers never reach this trace)
                ex = a._ex
                p = self.pending.get(ex)
                if p is None:
                    p = self.pending[ex] = _Pending(ex, a.device)
                return p
        return None

    def _own(self, args, what: str):
        """``args`` with the values of other lazy() scopes (a suspended generator's) computed; a value
        of this scope whose run failed raises, naming the failure."""
        for a in args:
            if a.__class__ is LazyTracer and (a._buf.trace is not self or a._buf.failure is not None):
                return tuple(LazyTracer._force(a, what) if a.__class__ is LazyTracer else a for a in args)
        return args

    def process_primitive(self, prim, args, params):
        if not self.active():
            return bind_with(self.outer, prim, self._outside(args, prim.name), params)
        with self.lock:
            args = self._own(args, prim.name)
            return self._record(prim, args, params)

    def _record(self, prim, args, params):
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
        if self.pending.get(p.ex) is not p:  # it did: that run emptied the pending graph
            p = self._pending_of(args, params)
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
        if not self.active():
            return bind_with(self.outer, prim, self._outside(args, prim.name), params)
        # jit calls, control flow, custom rules: run now (compiled where they are) on computed operands
        with self.lock:
            return bind_with(None, prim, self._computed(self._own(args, prim.name)), params)

    def _computed(self, args):
        if any(a.__class__ is LazyTracer for a in args):
            self.flush()
        return args

    @staticmethod
    def _outside(args, what: str):
        """``args`` as code this scope does not record sees them (values of lazy() scopes computed)."""
        return tuple(LazyTracer._force(a, what) if a.__class__ is LazyTracer else a for a in args)

    def remember(self, x) -> None:
        """``x`` is about to hold a recorded value (an in-place write): keep it computed at the next run."""
        if not self.active():  # an eager write by code this scope does not record
            if self.outer is not None:
                self.outer.remember(x)
            return
        with self.lock:
            if x.__class__ is LazyTracer:
                p = self.pending.get(x._buf.ex)
            else:
                p = self.pending.get(x._ex)
                if p is not None and x.__class__ is Array:
                    p.written.setdefault(id(x), (x, x._buf, x._ex))
            if p is not None:
                p.tracked.append(weakref.ref(x))

    def before_of(self, x):
        """(buffer, executor) ``x`` had before this scope's pending write into it, or None."""
        for p in self.pending.values():
            entry = p.written.get(id(x))
            if entry is not None and entry[0] is x:
                return entry[1], entry[2]
        return None

    # -- running --------------------------------------------------------------------------------
    def flush(self) -> None:
        """Run every pending graph; each live recorded array becomes a concrete one.  When a run
        fails, its arrays written in place get their values back, the graphs of other executors
        stay pending, and the failure is raised."""
        with self.lock:
            if self.running:
                return
            self.running = True
            token = _TRACE.set(None)  # the executors' compiled graphs run eagerly
            try:
                pending, self.pending = self.pending, {}
                items = list(pending.items())
                for k, (ex, p) in enumerate(items):
                    if p.equations:
                        try:
                            _run(self, p)
                        except BaseException:
                            for ex2, p2 in items[k + 1:]:  # not run: recorded still
                                self.pending.setdefault(ex2, p2)
                            raise
            finally:
                _TRACE.reset(token)
                self.running = False

    def finish(self, outs=None):
        with self.lock:
            try:
                self.flush()
            except BaseException as e:
                for p in self.pending.values():  # what the failure left unrun is lost with the scope
                    _abandon(self, p, _live(self, p), e)
                self.pending = {}
                raise
            finally:
                self.alive = False
                self.frame = None
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
        return _wrapper(a._buf, a._ex)
    return None


def _live(trace: LazyTrace, p: _Pending) -> list:
    """The arrays of ``p`` that still hold one of its recorded values, each once."""
    seen = set()
    live = []
    for ref in p.tracked:
        x = ref()
        if x is not None and x.__class__ is LazyTracer and x._buf.trace is trace and id(x) not in seen:
            seen.add(id(x))
            live.append(x)
    return live


def _abandon(trace: LazyTrace, p: _Pending, live: list, error: BaseException) -> None:
    """The run of ``p`` failed with ``error``: arrays written in place get their values from before it
    back; every other value it was to compute says why it was not."""
    why = f"running the operations recorded by this arrayx.lazy() scope failed with " \
          f"{traceback.format_exception_only(type(error), error)[-1].strip()}"
    for x in live:
        if x.__class__ is not LazyTracer:
            continue
        entry = p.written.get(id(x))
        if entry is not None and entry[0] is x:
            x._ex = entry[2]
            x._buf = entry[1]
            x.__class__ = Array
        else:
            x._buf.failure = why


def _run(trace: LazyTrace, p: _Pending) -> None:
    live = _live(trace, p)
    if not live:
        return
    try:
        _compute(trace, p, live)
    except BaseException as e:
        _abandon(trace, p, live, e)
        raise


def _compute(trace: LazyTrace, p: _Pending, live: list) -> None:
    outvars = []
    index = {}
    for x in live:
        v = x._buf.var
        if v not in index:
            index[v] = len(outvars)
            outvars.append(v)
    graph, consts, key, scalars = _closed_graph(p, outvars)
    ex = p.ex
    fn, lifted = _program(ex, graph, key, scalars)
    bufs = fn(*consts, *(ex.asarray(scalars[k][2]) for k in lifted))
    stats["runs"] += 1
    atype = ex.array_type
    bufs = [b if b.__class__ is atype else ex.coerce(b) for b in bufs]
    # arrays written in place that existed before: on executors written in place, into their memory
    for x in live:
        new = bufs[index[x._buf.var]]
        old = p.written.get(id(x))
        if old is not None and old[0] is x and old[2] is ex and ex.mutable and isinstance(old[1], np.ndarray) \
                and old[1].flags.writeable and old[1].shape == new.shape and old[1].dtype == new.dtype:
            np.copyto(old[1], np.array(new, copy=True) if np.may_share_memory(old[1], new) else new)
            new = old[1]
        # buffer first, class last: another thread reading meanwhile sees one value or the other
        x._ex = ex
        x._buf = new
        x.__class__ = Array


def _program(ex, graph: Graph, key, scalars: list):
    """The compiled program for ``graph`` and the positions (in ``scalars``) of the scalar literals it
    takes as inputs: the ones seen to change between runs of graphs of the same structure ``key``."""
    if key is None:  # unhashable params: compiled for this run only
        stats["compiles"] += 1
        return ex.compile(graph), ()
    values = tuple(exact_key(v) for _, _, v in scalars)
    with _CACHE_LOCK:
        seen = _SCALARS.get(key)
        if seen is None:
            lifted = ()
            _SCALARS[key] = (values, lifted)
            while len(_SCALARS) > CACHE_SIZE:
                _SCALARS.popitem(last=False)
        else:
            _SCALARS.move_to_end(key)
            first, lifted = seen
            if first != values:
                changed = {k for k, (a, b) in enumerate(zip(first, values)) if a != b}
                if not changed.issubset(lifted):
                    lifted = tuple(sorted(changed.union(lifted)))
                    _SCALARS[key] = (first, lifted)
        full_key = (key, lifted, tuple(v for k, v in enumerate(values) if k not in lifted))
        fn = _CACHE.get(full_key)
        if fn is not None:
            _CACHE.move_to_end(full_key)
            return fn, lifted
    fn = ex.compile(_with_scalar_inputs(graph, scalars, lifted) if lifted else graph)
    stats["compiles"] += 1
    with _CACHE_LOCK:
        _CACHE[full_key] = fn
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return fn, lifted


def _with_scalar_inputs(graph: Graph, scalars: list, lifted) -> Graph:
    """``graph`` with the scalar literals at ``lifted`` turned into 0-d inputs after its own."""
    equations = list(graph.equations)
    extra = []
    for k in lifted:
        e, i, value = scalars[k]
        var = Var(ShapeDtypeStruct((), value.dtype))
        extra.append(var)
        eqn = equations[e]
        inputs = list(eqn.inputs)
        inputs[i] = var
        equations[e] = Equation(eqn.prim, tuple(inputs), eqn.params, eqn.outputs)
    return Graph((*graph.inputs, *extra), (), (), equations, graph.outputs, device=graph.device)


def _closed_graph(p: _Pending, outvars: list):
    """(Graph whose inputs are the constants, the constant arrays, structural cache key or None, the
    NumPy scalar literals as (equation index, operand index, value)).  The key holds each such
    scalar's dtype, not its value: the caller decides which values the program is compiled for."""
    graph = dce(Graph((), [v for v, _, _ in p.const_values], [b for _, _, b in p.const_values], p.equations,
                      outvars, device=p.device))
    consts = list(graph.consts)
    graph = Graph(graph.constvars, (), (), graph.equations, graph.outputs, device=p.device)
    number: dict = {}
    for v in graph.inputs:
        number[v] = len(number)
    parts = [p.ex.name, p.device.label, tuple((v.aval.shape, v.aval.dtype.str, v.aval.weak_type) for v in graph.inputs)]
    scalars = []
    try:
        for e, eqn in enumerate(graph.equations):
            ins = []
            for i, a in enumerate(eqn.inputs):
                if a.__class__ is Var:
                    ins.append(number[a])
                elif a is None:
                    ins.append(None)
                elif isinstance(a.value, np.generic) and a.value.dtype.kind in "biufc":
                    scalars.append((e, i, a.value))
                    ins.append(("scalar", a.value.dtype.str))
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
        key = None
    return graph, consts, key, scalars


class lazy(contextlib.ContextDecorator):
    """Opt-in lazy scope: eager operations are recorded and run fused when a value is read.

    Use as ``with arrayx.lazy(): ...`` or as a decorator ``@arrayx.lazy()``.  Shape, dtype and
    device reads compute nothing; reading a value (``float``, ``bool``, ``numpy.asarray``, ...)
    or leaving the scope runs everything recorded as one compiled graph on its executor.  The
    module docstring (``arrayx.transforms.laziness``) lists what computes and what stays
    recorded.  Each thread, and each call of a decorated function, has its own scope.

    >>> import arrayx as ax
    >>> @ax.lazy()
    ... def standardise(a):
    ...     return (a - ax.mean(a)) / ax.std(a)
    >>> standardise(ax.asarray([1.0, 2.0, 3.0]))   # computed when the scope ends
    Array([-1.22474487,  0.        ,  1.22474487], dtype=float64, device=numpy:cpu)
    """

    def __init__(self):
        self._local = threading.local()  # this thread's open scopes of this object: (token, trace)

    def _recreate_cm(self):
        return type(self)()  # each call of a decorated function: its own scope

    def __enter__(self):
        stack = self._local.__dict__.setdefault("stack", [])
        current = _TRACE.get()
        while isinstance(current, LazyTrace) and not current.alive:
            current = current.outer
        if current is None or isinstance(current, LazyTrace) and not current.active():
            trace = LazyTrace(current, _suspendable_frame(sys._getframe(1)))
            stack.append((_TRACE.set(trace), trace))
        elif isinstance(current, LazyTrace):  # nested: joins the scope that records
            current.depth += 1
            stack.append((None, current))
        else:  # inside jit/grad/vmap: values are staged already
            stack.append((None, None))
        return self

    def __exit__(self, exc_type, exc, tb):
        token, trace = self._local.stack.pop()
        if trace is None:
            return False
        if token is None:  # nested: the outer scope runs the graph
            trace.depth -= 1
            return False
        _leave(token, trace)
        try:
            trace.finish()
        except BaseException as failure:
            if exc is None or failure is exc:
                raise
            if not isinstance(failure, Exception) and isinstance(exc, Exception):
                raise  # Ctrl-C while the graph ran: raised, with the block's exception as its context
            _attach(exc, failure)
        return False


def _suspendable_frame(frame):
    """The innermost generator or coroutine frame running ``frame`` (it or a caller), or None."""
    while frame is not None:
        if frame.f_code.co_flags & _SUSPENDABLE:
            return frame
        frame = frame.f_back
    return None


def _leave(token, trace: LazyTrace) -> None:
    """Make the trace current before ``trace``'s scope current again (where it still is current:
    scopes of generators may close out of order)."""
    if _TRACE.get() is not trace:
        return
    try:
        _TRACE.reset(token)
    except ValueError:  # left in another context than the one it was entered in
        _TRACE.set(trace.outer)
    current = _TRACE.get()
    if isinstance(current, LazyTrace) and not current.alive:
        while isinstance(current, LazyTrace) and not current.alive:
            current = current.outer
        _TRACE.set(current)


def _attach(exc: BaseException, failure: BaseException) -> None:
    """The block raised ``exc`` and then running what it recorded failed: ``exc`` is raised, with
    the failure in a note."""
    note = ("arrayx.lazy(): running the operations recorded in this scope then failed too: "
            + "".join(traceback.format_exception(type(failure), failure, failure.__traceback__)).rstrip())
    add_note = getattr(exc, "add_note", None)
    if add_note is None:  # Python 3.10: no notes; raise the failure, caused by the block's exception
        raise failure from exc
    add_note(note)
