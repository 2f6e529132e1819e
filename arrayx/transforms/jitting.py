"""``jit``: stage a function once per input signature and run the executor's compiled graph.

``jit(f)(*args)`` flattens the arguments, looks up the cache key (see
:meth:`JitFunction.cache_key`) and, on a miss, stages ``f`` into a Graph.  The
graph is run by binding the ``call`` primitive (``call_primitive.py``), so every trace handles it through
``process_call``:

- eagerly, ``call`` compiles the graph for the operands' executor once
  (``Executor.compile``) and calls it; a cache hit with concrete operands calls
  the compiled function directly;
- under a JVP trace, its jvp rule binds ``call`` on the graph's JVP (staged once
  per set of tangents), so ``grad(jit(f))`` keeps the primal compiled;
- under a staging trace with some operands known (``linearize``), its staging
  rule splits the graph: the known part runs now (compiled), the rest is recorded
  as one ``call``; its transpose binds ``call`` on the transposed graph;
- ``jit(grad(f))``: grad runs inside the staging, so the graph is already
  differentiated when the executor sees it (JAX never differentiates).

Python side effects in ``f`` run when it is staged (on a cache miss), not on
every call.  Values ``f`` captures from enclosing transforms become explicit
operands; such a graph depends on them and is not cached.  Python scalars
passed as arguments are weakly typed 0-d inputs, as in JAX: ``x_float32 * lr``
stays float32 and every value of ``lr`` runs the same compiled graph (mark an
argument static to have its value in the graph).  NumPy arrays and objects with
``__array__``/``__dlpack__`` are converted to arrays of the arguments' executor.

The cache belongs to the function object: every ``jit(f)`` with the same options
shares it (a jit made inside a loop stages once), keeps at most
``ARRAYX_JIT_CACHE_SIZE`` signatures (default :data:`CACHE_SIZE`, least recently
used dropped first), and warns once when ``f`` is staged for more than
:data:`RETRACE_WARNING` signatures, naming the argument that keeps changing.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import warnings
import weakref
from collections import OrderedDict
from contextvars import ContextVar
from typing import Callable

from arrayx import pytree
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._modes import is_strict
from arrayx.core import executor as _base
from arrayx.core.executor import get_executor
from arrayx.core.keys import exact_key
from arrayx.core.primitives import _TRACE
from arrayx.core.tracers import ShapeDtypeStruct, Tracer, aval_of
from arrayx.core.graph import Graph, cse, dce
from arrayx.transforms.staging import StagingTrace
from arrayx.transforms.call_primitive import _object_new, _wrap_all, call_p, compiled_for  # noqa: F401
from arrayx.transforms._jit_fast import MISS, call_from_tables, fast_flatten, fast_key, hit_for, prepare, reader_for
from arrayx.transforms._jit_messages import describe_change as _describe_change, what_changed as _what_changed

__all__ = ["jit", "disable_jit", "JitFunction", "Traced", "Lowered", "Compiled", "call_p", "compiled_for", "cache_size"]

#: a function retraced for more than this many distinct keys warns once (a retrace storm)
RETRACE_WARNING = 8

_DISABLED: ContextVar = ContextVar("arrayx_disable_jit", default=False)
_DISABLE_SEEN = False  # whether disable_jit was ever entered (else _DISABLED is False everywhere)


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Within the block (this thread/task only), jitted functions run their Python eagerly.

    >>> import arrayx as ax
    >>> f = ax.jit(lambda x: x + 1)
    >>> with ax.disable_jit():
    ...     int(f(ax.asarray(1)))
    2
    """
    global _DISABLE_SEEN
    _DISABLE_SEEN = True  # (the cache-hit path reads _DISABLED only once some block has set it)
    token = _DISABLED.set(bool(disable))
    try:
        yield
    finally:
        _DISABLED.reset(token)


# -- jit -----------------------------------------------------------------------------------------

#: the default of ``ARRAYX_JIT_CACHE_SIZE``: entries (distinct input signatures) kept per function
CACHE_SIZE = 1024


def cache_size() -> int:
    """How many compiled signatures jit keeps per function (and set of jit options), least recently
    used dropped first: ``ARRAYX_JIT_CACHE_SIZE`` when set (a whole number >= 1), else CACHE_SIZE."""
    from arrayx.core import config as _config

    n = _config.get("ARRAYX_JIT_CACHE_SIZE")
    return CACHE_SIZE if n is None else n


class _Entry:
    """One cache entry: the staged graph and, once run eagerly, its compiled function."""

    __slots__ = ("graph", "out_tree", "consts", "name", "donate", "fn", "key", "fast_keys", "finish",
                 "inner", "swap", "restore", "hit")

    def __init__(self, graph, out_tree, consts, name, donate, key=None):
        self.graph = graph
        self.out_tree = out_tree
        self.consts = consts  # values the graph captured from enclosing transforms (its leading inputs)
        self.name = name
        self.donate = donate  # indices of donated inputs of the graph
        self.fn = None
        self.key = key
        self.fast_keys: list = []  # keys of the store's fast table that lead here (dropped with it)
        # set by _jit_fast.prepare when the entry enters the fast table: the outputs' wrapping and
        # structure in one function; the jax.jit inside the program's 64-bit scope, and that scope's switch
        self.finish = self.inner = self.swap = self.restore = None
        self.hit = None  # the generated call of the arguments' structure first entered (_jit_fast.hit_for)


class _Store:
    """The cache of one function under one set of jit options, shared by every ``jit(f)`` of the same
    function object (so a jit made inside a loop stages once): entries by key, least recently used
    first, dropped beyond :func:`cache_size`; ``fast``: flat keys of plain array calls -> entry."""

    __slots__ = ("cache", "fast", "read", "reader", "hit", "traces", "last", "warned", "lock")

    def __init__(self):
        self.cache: OrderedDict = OrderedDict()
        self.fast: dict = {}
        self.read: dict = {}  # (new arrays' executor, strict, reader, signature) -> entry
        self.reader = None  # the generated reader of the arguments' structure last entered (_jit_fast)
        self.hit = None  # the generated call of the entry found last (_jit_fast.hit_for): tried first
        self.traces = 0  # distinct keys staged (for the retrace warning)
        self.last = None  # the key staged last
        self.warned = False
        self.lock = threading.Lock()

    def get(self, key):
        entry = self.cache.get(key)
        if entry is not None:
            self.touch(key)
        return entry

    def touch(self, key) -> None:
        try:
            self.cache.move_to_end(key)
        except KeyError:  # dropped meanwhile by another thread
            pass

    def add(self, key, entry) -> None:
        limit = cache_size()
        with self.lock:
            self.cache[key] = entry
            while len(self.cache) > limit:
                _, old = self.cache.popitem(last=False)
                if old.hit is not None and self.hit is old.hit:
                    self.hit = None
                for k in old.fast_keys:
                    for table in (self.fast, self.read):
                        if table.get(k) is old:
                            del table[k]

    def add_fast(self, key, entry, table=None) -> None:
        table = self.fast if table is None else table
        with self.lock:
            if entry.key in self.cache and table.get(key) is not entry:
                table[key] = entry
                entry.fast_keys.append(key)

    def clear(self) -> None:
        with self.lock:
            self.cache.clear()
            self.fast.clear()
            self.read.clear()
            self.reader = self.hit = None
            self.traces = 0
            self.last = None
            self.warned = False


_STORES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> {jit options: _Store}
_STORES_LOCK = threading.Lock()


def _store_of(fun, options: tuple) -> _Store:
    """The shared cache of ``fun`` under ``options``; a private one for a callable that cannot be
    weakly referenced or hashed (it lives as long as the jit wrapper)."""
    with _STORES_LOCK:
        try:
            per = _STORES.get(fun)
            if per is None:
                per = _STORES[fun] = {}
        except TypeError:
            return _Store()
        store = per.get(options)
        if store is None:
            store = per[options] = _Store()
        return store


class Traced:
    """What ``JitFunction.trace`` returns: the staged graph and the output structure;
    ``.lower()`` gives the :class:`Lowered` form, ``as_text()`` the graph's text."""

    def __init__(self, graph: Graph, out_tree, jitted=None, args=(), kwargs=None):
        self.graph = graph
        self.out_tree = out_tree
        self._jitted = jitted
        self._args = args
        self._kwargs = kwargs or {}

    def __iter__(self):  # (graph, out_tree), as the tuple it used to be
        return iter((self.graph, self.out_tree))

    def as_text(self) -> str:
        return str(self.graph)

    def __str__(self) -> str:
        return self.as_text()

    def lower(self) -> "Lowered":
        if self._jitted is None:
            raise TypeError("Traced.lower: this trace has no jitted function to lower")
        return self._jitted.lower(*self._args, **self._kwargs)


class Lowered(Traced):
    """``jit(f).lower(*args)``: the staged graph for these arguments (``as_text()``, ``graph``);
    ``compile()`` compiles it for the arguments' executor and returns a :class:`Compiled`."""

    def lower(self) -> "Lowered":
        return self

    def compile(self) -> "Compiled":
        return self._jitted._compiled(self._args, self._kwargs)


class Compiled:
    """``jit(f).lower(*args).compile()``: call it with arguments of the signature it was lowered
    for (other shapes, dtypes, structures or static values raise TypeError, as in JAX)."""

    def __init__(self, jitted, key, entry, ex):
        self._jitted = jitted
        self._key = key
        self._entry = entry
        self.executor = ex

    def as_text(self) -> str:
        source = getattr(self._entry.fn, "source", None)
        return source if source is not None else str(self._entry.graph)

    def __call__(self, *args, **kwargs):
        key = self._jitted.cache_key(*args, **kwargs)
        if key != self._key:
            raise TypeError(f"jit({self._entry.name}).lower(...).compile(): called with arguments of another "
                            f"signature than it was lowered for ({_describe_change(self._key, key)}); lower it "
                            f"again for these arguments, or call the jitted function itself")
        return self._jitted._run(self._entry, self._jitted._split(args, kwargs)[2], self.executor)

    def __repr__(self) -> str:
        return f"<Compiled jit({self._entry.name}) on {self.executor.name!r}>"


def _int_tuple(fname, what, v) -> tuple:
    v = (v,) if isinstance(v, int) else tuple(v)
    for i in v:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"{fname}: {what} must be an int or a tuple of ints, got {v!r}")
    return v


def _str_tuple(fname, what, v) -> tuple:
    v = (v,) if isinstance(v, str) else tuple(v)
    for s in v:
        if not isinstance(s, str):
            raise TypeError(f"{fname}: {what} must be a str or a tuple of strs, got {v!r}")
    return v


_PY_SCALARS = (bool, int, float, complex)
_NO_KWARGS: dict = {}
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _scalar_aval(x) -> ShapeDtypeStruct:
    return ShapeDtypeStruct((), _dtypes.scalar_dtype(x), weak_type=True)


def _scalar_buf(ex, x):
    """A 0-d buffer of ``ex`` holding the Python scalar ``x`` in its default dtype (on jax weakly typed,
    as jax.jit makes a Python scalar, so the compiled program's signature matches)."""
    buf = ex.asarray(x)
    want = _dtypes.scalar_dtype(x)
    if buf.dtype != want:
        buf = ex.asarray(x, dtype=want)
    return buf


def _scalar_array(ex, x) -> Array:
    new = _object_new(Array)
    new._buf = _scalar_buf(ex, x)
    new._ex = ex
    return new


class JitFunction:
    """A jitted function (made by :func:`jit`); call it like the function it wraps."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(), donate_argnames=()):
        if not callable(fun):
            raise TypeError(f"jit: expected a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = _int_tuple("jit", "static_argnums", static_argnums)
        self.static_argnames = _str_tuple("jit", "static_argnames", static_argnames)
        self.donate_argnums = _int_tuple("jit", "donate_argnums", donate_argnums)
        self.donate_argnames = _str_tuple("jit", "donate_argnames", donate_argnames)
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        # the cache belongs to the function (every jit(fun) with these options shares it)
        self._store = _store_of(fun, (self.static_argnums, self.static_argnames, self.donate_argnums,
                                      self.donate_argnames))
        self.trace_count = 0  # how many times this wrapper staged ``fun`` (cache misses)
        self._simple = not (self.static_argnums or self.static_argnames or self.donate_argnums
                            or self.donate_argnames)

    @property
    def _cache(self) -> OrderedDict:
        return self._store.cache

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    # -- the key ----------------------------------------------------------------------------
    def _split(self, args, kwargs):
        """(static part, static keywords, dynamic leaves, dynamic tree, donated leaf flags); NumPy
        arrays and other array-likes among the leaves are converted (see ``_inputs``)."""
        name = getattr(self.fun, "__name__", "f")
        n = len(args)
        static_pos = self._static_positions(n)
        donate_pos = {i % n for i in self.donate_argnums if -n <= i < n}
        statics = []
        for i in sorted(static_pos):
            statics.append((i, _hashable(name, f"static argument {i}", args[i])))
        static_kw = []
        dyn_kw = {}
        for k in sorted(kwargs):
            if k in self.static_argnames:
                static_kw.append((k, _hashable(name, f"static argument {k!r}", kwargs[k])))
            else:
                dyn_kw[k] = kwargs[k]
        dyn = tuple(a for i, a in enumerate(args) if i not in static_pos)
        leaves, tree = pytree.flatten((dyn, dyn_kw))
        leaves = self._inputs(leaves)
        donated = ()
        if donate_pos or self.donate_argnames:
            flags = []
            for i, a in enumerate(args):
                if i not in static_pos:
                    flags.extend([i in donate_pos] * len(pytree.leaves(a)))
            for k in sorted(dyn_kw):
                flags.extend([k in self.donate_argnames] * len(pytree.leaves(dyn_kw[k])))
            donated = tuple(flags)
        return tuple(statics), tuple(static_kw), leaves, tree, donated

    def _static_positions(self, n: int) -> set:
        static_pos = set()
        for i in self.static_argnums:
            if -n <= i < n:
                static_pos.add(i % n)
        if self.static_argnames and self._sig is not None:
            params = list(self._sig.parameters)
            for s in self.static_argnames:
                if s in params and params.index(s) < n:
                    static_pos.add(params.index(s))
        return static_pos

    def _inputs(self, leaves: list) -> list:
        """``leaves`` with NumPy arrays, NumPy scalars and other objects with ``__array__`` or
        ``__dlpack__`` converted to arrays of the executor of the arrayx arrays among them (else
        the current one); anything else but arrays and Python scalars raises TypeError."""
        ex = None
        for i, x in enumerate(leaves):
            if isinstance(x, Array) or x.__class__ in _PY_SCALARS:
                if x.__class__ is int and not _INT64[0] <= x <= _INT64[1]:
                    raise OverflowError(
                        f"jit({getattr(self.fun, '__name__', 'f')}): the Python int {x} does not fit int64; "
                        f"pass it as a float, as an array of another dtype, or mark it static")
                continue
            if isinstance(x, _PY_SCALARS):  # a subclass (an IntEnum, a NumPy float64): its plain value
                leaves[i] = complex(x) if isinstance(x, complex) else float(x) if isinstance(x, float) else \
                    bool(x) if isinstance(x, bool) else int(x)
                continue
            if hasattr(x, "__array__") or hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__"):
                from arrayx.api.creation import asarray

                if ex is None:
                    ex = next((a._ex for a in leaves if a.__class__ is Array), None) or get_executor()
                leaves[i] = asarray(x, device=ex.name)
                continue
            raise TypeError(
                f"jit({getattr(self.fun, '__name__', 'f')}): arguments must be arrayx arrays, NumPy arrays (or "
                f"anything with __array__/__dlpack__), Python scalars or pytrees of them, got "
                f"{type(x).__name__}; convert it with arrayx.asarray(...) or mark it static with "
                f"static_argnums/static_argnames")
        return leaves

    def cache_key(self, *args, **kwargs) -> tuple:
        """The cache key of a call: static values, input tree, each leaf's shape/dtype (Python scalars
        by type: weakly typed 0-d inputs), the executor, the executor new arrays are created on, and
        donation."""
        statics, static_kw, leaves, tree, donated = self._split(args, kwargs)
        return self._key(statics, static_kw, leaves, tree, donated)[0]

    def _key(self, statics, static_kw, leaves, tree, donated):
        ex = None
        sig = []
        for x in leaves:
            if x.__class__ in _PY_SCALARS:
                sig.append((x.__class__,))  # weakly typed 0-d input: any value, one trace
            else:
                sig.append((x.shape, x.dtype))
                if ex is None and x.__class__ is Array:
                    ex = x._ex
        exact_statics = tuple((i, v, exact_key(v)) for i, v in statics)  # static -0.0 and 0.0 stage apart
        exact_kw = tuple((k, v, exact_key(v)) for k, v in static_kw)
        # the mode decides what tracing accepts: a trace made in the default mode is not strict's
        return (exact_statics, exact_kw, tree, tuple(sig), ex, get_executor(), donated, is_strict()), ex

    # -- calling --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _DISABLE_SEEN and _DISABLED.get():
            return self.fun(*args, **kwargs)
        store = self._store
        # the cache-hit path for concrete arrays (_jit_fast.py): the generated call of the entry found
        # last (only a store of no static or donated arguments has one); else the store's tables (the
        # generated reader of the arguments' structure entered last, or a flat key of buffer attributes)
        hit = store.hit
        if hit is not None and not kwargs and sharding_hook is None and _TRACE.get() is None:
            out = hit(args)
            if out is not MISS:
                return out
        if self._simple and not kwargs and _TRACE.get() is None:
            out = call_from_tables(store, args, sharding_hook)
            if out is not MISS:
                return out
        if self._simple and not kwargs:  # no static or donated arguments: the short path
            leaves, tree = pytree.flatten((args, _NO_KWARGS))
            leaves = self._inputs(leaves)
            statics = static_kw = donated = ()
        else:
            statics, static_kw, leaves, tree, donated = self._split(args, kwargs)
        key, ex = self._key(statics, static_kw, leaves, tree, donated)
        entry = store.get(key)
        if entry is None:
            entry = self._stage(args, kwargs, statics, static_kw, leaves, tree, key, donated)
        if _TRACE.get() is None and not entry.consts:
            where = ex or key[5]
            if entry.fn is None:
                entry.fn = compiled_for(entry.graph, where, entry.donate)
            if self._simple and not kwargs and ex is not None and all(x.__class__ is Array for x in leaves):
                self._add_fast(store, entry, args, leaves, ex)
            return self._run(entry, leaves, where)
        arrays = [x if isinstance(x, Array) else _scalar_array(ex or key[5], x) for x in leaves]
        outs = call_p.bind(*entry.consts, *arrays, graph=entry.graph, name=entry.name)
        return pytree.unflatten(entry.out_tree, list(outs))

    @staticmethod
    def _add_fast(store, entry, args, leaves, ex) -> None:
        """Enter ``entry`` in the fast table under the key the cache-hit path builds for ``args``
        (arrays only, as plain arguments or in containers that ``fast_flatten`` splits into
        ``leaves``, in their order)."""
        ctx = _base._scoped.get() or _base._process_default
        head = [None if ctx is None else ctx.name, is_strict()]
        if len(leaves) != len(args) or any(a.__class__ is not Array for a in args):
            try:
                raw, spec = fast_flatten(args)
            except Exception:  # noqa: BLE001 - the slow path only
                return
            if len(raw) != len(leaves) or any(a is not b for a, b in zip(raw, leaves)):
                return  # a structure that arrayx's pytree checks flatten otherwise: the slow path only
            head.append(spec)
        prepare(entry)
        store.add_fast(fast_key(head, leaves, ex), entry)
        reader = store.reader
        got = None if reader is None else reader(args)
        if got is None:  # a structure the reader does not read (or none yet): the reader of this one
            reader = reader_for(args, leaves)
            got = None if reader is None else reader(args)
            if got is None:
                return
            store.reader = reader
        store.add_fast((head[0], head[1], reader, got[2]), entry, store.read)
        if entry.hit is None and entry.key in store.cache:  # (the generated call: tried first from now on)
            entry.hit = hit_for(entry, store, args, leaves, ctx, head[1])
        store.hit = entry.hit

    def _run(self, entry: _Entry, leaves, ex):
        """The compiled function of ``entry`` on concrete ``leaves`` (arrays of ``ex``, Python scalars)."""
        bufs = []
        for x in leaves:
            if x.__class__ is Array:
                if x._ex is not ex:
                    raise TypeError(f"jit({entry.name}): arrays live on different executors ({ex.name!r} "
                                    f"and {x._ex.name!r}); move one with x.to_device(...) first")
                bufs.append(x._buf)
            else:
                bufs.append(_scalar_buf(ex, x))
        if entry.fn is None:
            entry.fn = compiled_for(entry.graph, ex, entry.donate)
        outs = _wrap_all(entry.fn(*bufs), ex)
        if sharding_hook is not None:  # numpy/numba/dask results take their inputs' shardings
            outs = sharding_hook(entry.graph, [x for x in leaves if isinstance(x, Array)], outs)
        return pytree.unflatten(entry.out_tree, outs)

    def _stage(self, args, kwargs, statics, static_kw, leaves, tree, key, donated) -> _Entry:
        name = getattr(self.fun, "__name__", "f")
        avals = [_scalar_aval(x) if x.__class__ in _PY_SCALARS else aval_of(x) for x in leaves]
        parent = _TRACE.get()
        device = next((x.device for x in leaves if isinstance(x, Array)), None) or get_executor().default_device()
        trace = StagingTrace(parent, device, f"jit({name})")
        in_leaves = [trace.new_input(a) for a in avals]
        dyn, dyn_kw = pytree.unflatten(tree, in_leaves)
        it = iter(dyn)
        static_map = dict(statics)
        full = [static_map[i] if i in static_map else next(it) for i in range(len(static_map) + len(dyn))]
        full_kw = {**dyn_kw, **dict(static_kw)}
        out_leaves = None
        token = _TRACE.set(trace)
        try:
            out = self.fun(*full, **full_kw)
            out_leaves, out_tree = pytree.flatten(out)
            out_leaves = [_as_array_output(name, o) for o in out_leaves]
        finally:
            _TRACE.reset(token)
            out_leaves = trace.finish(out_leaves)
        graph = dce(cse(trace.to_graph(list(trace.inputs), out_leaves)))  # effects (debug callbacks) are kept
        # closure conversion: captured tracers (of enclosing transforms) become leading inputs
        captured = [i for i, c in enumerate(graph.consts) if isinstance(c, Tracer)]
        consts: tuple = ()
        if captured:
            cvars = [graph.constvars[i] for i in captured]
            consts = tuple(graph.consts[i] for i in captured)
            keep = [i for i in range(len(graph.consts)) if i not in captured]
            graph = Graph((*cvars, *graph.inputs), [graph.constvars[i] for i in keep],
                          [graph.consts[i] for i in keep], graph.equations, graph.outputs)
        donate = tuple(len(consts) + i for i, d in enumerate(donated or [False] * len(leaves)) if d)
        entry = _Entry(graph, out_tree, consts, name, donate, key)
        self.trace_count += 1
        if not consts:  # a graph that captured tracers depends on them: staged again next time
            self._store.add(key, entry)
            self._note_retrace(key, args, kwargs, statics)
        return entry

    def _note_retrace(self, key, args, kwargs, statics) -> None:
        store = self._store
        prev, store.last = store.last, key
        store.traces += 1
        if store.traces <= RETRACE_WARNING or store.warned or prev is None:
            return
        store.warned = True
        name = getattr(self.fun, "__name__", "f")
        what, fix = _what_changed(prev, key, self._arg_names(args, kwargs, statics), self._param_name)
        warnings.warn(
            f"jit({name}) was traced {store.traces} times for different arguments (a retrace storm): {what}. "
            f"{fix}", RuntimeWarning, stacklevel=4)

    def _param_name(self, pos) -> str:
        """How to name positional argument ``pos`` (or keyword ``pos``) in a message."""
        if isinstance(pos, str):
            return f"argument {pos!r}"
        if self._sig is not None:
            params = list(self._sig.parameters.values())
            if pos < len(params) and params[pos].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                         inspect.Parameter.POSITIONAL_OR_KEYWORD):
                return f"argument {params[pos].name!r} (position {pos})"
        return f"positional argument {pos}"

    def _arg_names(self, args, kwargs, statics) -> list:
        """A name per dynamic leaf of this call (``argument 'params'['w']``), for the retrace warning."""
        static_pos = {i for i, _ in statics}
        positions = [i for i in range(len(args)) if i not in static_pos]
        dyn = tuple(args[i] for i in positions)
        dyn_kw = {k: kwargs[k] for k in sorted(kwargs) if k not in self.static_argnames}
        names = []
        for path, _ in pytree.leaves_with_path((dyn, dyn_kw)):
            if len(path) < 2:
                names.append("an argument")
                continue
            head = getattr(path[1], "idx", None)
            base = self._param_name(positions[head]) if path[0].idx == 0 and head is not None else \
                self._param_name(str(getattr(path[1], "key", path[1])))
            rest = pytree.keystr(path[2:]) if len(path) > 2 else ""
            names.append(f"{base}{' at ' + rest if rest else ''}")
        return names

    # -- inspection -------------------------------------------------------------------------------
    def _entry_for(self, args, kwargs):
        statics, static_kw, leaves, tree, donated = self._split(args, kwargs)
        key, ex = self._key(statics, static_kw, leaves, tree, donated)
        entry = self._store.get(key) or self._stage(args, kwargs, statics, static_kw, leaves, tree, key, donated)
        return entry, key, ex

    def trace(self, *args, **kwargs) -> Traced:
        """The staged graph for these arguments (staged, or taken from the cache)."""
        entry, _, _ = self._entry_for(args, kwargs)
        return Traced(entry.graph, entry.out_tree, self, args, kwargs)

    def lower(self, *args, **kwargs) -> Lowered:
        """The staged graph for these arguments, to print (``as_text()``) or ``compile()``."""
        entry, _, _ = self._entry_for(args, kwargs)
        return Lowered(entry.graph, entry.out_tree, self, args, kwargs)

    def _compiled(self, args, kwargs) -> Compiled:
        if _TRACE.get() is not None:
            raise TypeError(f"jit({getattr(self.fun, '__name__', 'f')}).lower(...).compile() needs concrete "
                            f"arguments; it was called inside a transform")
        entry, key, ex = self._entry_for(args, kwargs)
        if entry.consts:
            raise TypeError(f"jit({entry.name}).lower(...).compile(): the function captured values of an "
                            f"enclosing transform; call the jitted function instead")
        ex = ex or key[5]
        if entry.fn is None:
            entry.fn = compiled_for(entry.graph, ex, entry.donate)
        return Compiled(self, key, entry, ex)

    def clear_cache(self) -> None:
        """Empty the cache of this function (shared by every ``jit`` of it with the same options)."""
        self._store.clear()

    def __repr__(self) -> str:
        return f"<jit({getattr(self.fun, '__name__', 'f')})>"


def _hashable(fname, what, v):
    try:
        hash(v)
    except TypeError as e:
        raise TypeError(
            f"jit({fname}): {what} is static, so it is part of the cache key and must be hashable; got a "
            f"{type(v).__name__} ({e}). Pass a tuple instead of a list, or make the argument dynamic"
        ) from None
    return v


def _as_array_output(fname, o):
    if isinstance(o, Array):
        return o
    if isinstance(o, _PY_SCALARS):
        from arrayx.api.creation import asarray

        return asarray(o)
    raise TypeError(f"jit({fname}): the function must return arrays or Python scalars (in a pytree), got "
                    f"{type(o).__name__}")


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=(), in_shardings=None, out_shardings=None) -> JitFunction:
    """``fun`` staged once per input signature and run as the executor's compiled graph.

    Use as ``jit(f)``, ``jit(f, static_argnums=1)`` or as a decorator (``@jit`` or
    ``@jit(static_argnames="n")``).  Static arguments are passed to ``fun`` as Python
    values and must be hashable; a new static value stages again.  Python scalar
    arguments are weakly typed 0-d inputs (one compile for every value).
    ``jit(f).lower(*args)`` gives the staged graph (``as_text()``) and ``.compile()``.  Donated arguments
    (``donate_argnums``/``donate_argnames``) let an executor reuse their buffers
    (JAX does; the others ignore it): do not use a donated array afterwards.
    ``in_shardings``/``out_shardings`` (shardings or pytree prefixes of them, see
    ``arrayx.sharding``) place the arguments and constrain the results.

    >>> import arrayx as ax
    >>> @ax.jit
    ... def selu(x):
    ...     return 1.0507 * ax.where(x > 0, x, 1.67326 * ax.expm1(x))
    >>> float(selu(ax.asarray(1.0)))
    1.0507
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 in_shardings=in_shardings, out_shardings=out_shardings)
    if in_shardings is not None or out_shardings is not None:
        return with_shardings_hook(fun, in_shardings, out_shardings, static_argnums=static_argnums,
                                  static_argnames=static_argnames, donate_argnums=donate_argnums,
                                  donate_argnames=donate_argnames)
    return JitFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)


#: set by arrayx.sharding when it is imported (it builds on jit): ``(fun, in_shardings, out_shardings,
#: **jit_kwargs) -> jitted function`` for ``jit(..., in_shardings=/out_shardings=)``
with_shardings_hook = None

# set by arrayx.sharding once a NamedSharding exists: (graph, input arrays, output arrays) -> the
# outputs, given the shardings their inputs imply on executors without a partitioner (numpy, dask)
sharding_hook = None
