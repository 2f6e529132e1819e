"""What ``jit``'s cache-hit path (``JitFunction.__call__`` in ``jitting.py``) needs ready per entry.

A call whose arguments are arrays of one executor (plain, or in lists, tuples and dicts), with no
keyword, outside any trace, is answered by the first of these that applies, all made on the slow path:

- ``store.hit`` (:func:`hit_for`): one generated function for the entry found last and the structure
  of its arguments, the whole call in straight-line code: it checks the arguments (structure,
  classes, executor, each buffer's aval by identity), new arrays' executor and strict mode against
  the ones it was made for, touches the entry, calls the program (its 64-bit scope inline) with the
  buffers as positional arguments, and wraps the outputs in their structure; :data:`MISS` where any
  check fails;
- :func:`call_from_tables`, the store's two tables: ``store.read``: :func:`reader_for` generates, for
  the structure of arguments last entered, one function that checks that structure (container
  types, lengths, dict keys), the arrays' class and executor and the buffers' classes, and returns
  the buffers and their signature (the executor's name, each buffer's ``aval``, or shape and dtype)
  with no loop and no flatten: the key is (executor name of new arrays, strict mode, the reader,
  that signature); ``store.fast``: any other such call, by a flat key built inline
  (:func:`fast_key` builds the same on the slow path): the executor name of new arrays, strict
  mode, the arguments' structure (when not all plain arrays), each buffer's aval or shape and
  dtype, and the arrays' executor name (executors are equal by name).  An entry found there with a
  generated call becomes ``store.hit``.

:func:`prepare` readies an entry for that path, once:

- ``entry.inner``, ``entry.swap``, ``entry.restore``: where the compiled program is the jax
  executor's :class:`~arrayx.executors.jax.x64.Scoped` (jax.jit called with arrayx's 64-bit
  types on), the jax.jit it wraps and the per-thread switch, so that the call enters the scope
  inline (one Python layer less; the program's own path is taken while an arrayx matmul precision
  is named);
- ``entry.finish(outs, ex)``: the outputs wrapped as Arrays of ``ex`` and put in the output
  structure in one generated function (straight-line code for a structure of lists, tuples,
  dicts and None of at most :data:`MAX_GENERATED` leaves; else the wrapping loop and the
  structure's unflatten).

Generated code holds no string of the user's: dict keys are names bound in its namespace.

Measured (benchmarks/bench_jit_call.py, CPU, thread time): per-example gradients (8 arrays in, 6
out) 8.5 -> 4.0 us over jax.jit's own call, an MLP step 8.8 -> 4.3, SELU of one array 2.7 -> 2.2
(session 23, the tables).  The generated whole call (session 24), arrayx's host work alone (the
program stubbed, median of paired rounds, load ~5): per-example 2.5 -> 2.0 us, MLP step 2.55 -> 2.1,
SELU 1.1 -> 0.8, the CNN step of bench_tpu (3-array dict + 2 in, loss + dict out) 2.2-3.6 -> 1.7.
"""
from __future__ import annotations

import sys

from optree._C import flatten as _flatten_raw

from arrayx import pytree
from arrayx.api import _modes
from arrayx.api._array import Array
from arrayx.core import executor as _base
from arrayx.core import precision as _precision
from arrayx.core.keys import AVAL_KEYED
from arrayx.pytree._registry import FLATTEN_NAMESPACE
from arrayx.pytree._specialise import _Slot, _display
from arrayx.pytree._treedef import unflatten_fn
from arrayx.transforms.call_primitive import _object_new, _wrap_all

__all__ = ["MISS", "call_from_tables", "fast_flatten", "fast_key", "hit_for", "prepare", "output_builder",
           "reader_for", "MAX_GENERATED"]


class _Miss:
    """What the cache-hit path's functions return where they do not apply (the next path is tried)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = _Miss()

#: output structures with more leaves keep the loop and unflatten (generating costs ~30 us per leaf)
MAX_GENERATED = 256


def fast_key(head: list, leaves, ex) -> tuple:
    """The cache-hit path's key for ``leaves`` (arrays of ``ex``): ``head`` (the executor name of new
    arrays, strict mode[, the arguments' structure]), each buffer's aval or shape and dtype, ``ex``'s name."""
    key = list(head)
    for x in leaves:
        b = x._buf
        if b.__class__ in AVAL_KEYED:
            key.append(b.aval)
        else:
            key.append(b.shape)
            key.append(b.dtype)
    key.append(ex.name)
    return tuple(key)


def hit_for(entry, store, args: tuple, leaves: list, ctx, strict: bool):
    """The generated ``hit(args)``: the whole cache-hit call of ``entry`` for arguments of the structure,
    classes, executor and avals of ``args`` (read into ``leaves`` by the slow path), made while new
    arrays' executor was ``ctx`` and strict mode ``strict``; :data:`MISS` where any of that differs
    now (or the entry left the cache), else the outputs, wrapped and in their structure.  It checks
    what the key of the tables does (the same generated reading as :func:`reader_for`; each aval by
    identity, jax's avals being interned), touches the entry for the cache's order, enters the jax
    program's 64-bit scope inline unless arrayx names a matmul precision, and calls the program with
    the buffers as positional arguments.  None where the arguments or outputs are of another kind
    (see :func:`reader_for`, :func:`output_builder`); ``entry`` has been through :func:`prepare`."""
    out = _output_code(entry.out_tree)
    code = None if out is None else _read_code(args, leaves, "MISS", "EX")
    if code is None:
        return None
    lines, namespace, bufs = code
    wrap, display, keys = out
    checks = []
    for i, b in enumerate(bufs):
        if b.__class__ in AVAL_KEYED:
            namespace[f"A{i}"] = b.aval
            checks.append(f"b{i}.aval is not A{i}")
        else:
            namespace[f"H{i}"], namespace[f"D{i}"] = b.shape, b.dtype
            checks += [f"b{i}.shape != H{i}", f"b{i}.dtype != D{i}"]
    operands = f"({', '.join(f'b{i}' for i in range(len(bufs)))})"
    lines += [f"    if {' or '.join(checks)}: return MISS",
              "    if (SCOPED.get() or executors._process_default) is not CTX: return MISS",
              "    s = STRICT.get()",
              "    if (modes._default if s is None else s) is not STRICT_ON: return MISS",
              "    try:",
              "        touch(KEY)",
              "    except KeyError:",  # dropped from the cache meanwhile (another thread)
              "        return MISS"]
    if entry.inner is not None:  # the 64-bit scope inline, as JitFunction.__call__'s table path does
        lines += ["    if PRECISION.get() is UNSET and precision._PROCESS is None:",
                  "        prev = swap(True)", "        try:", f"            outs = inner{operands}",
                  "        finally:", "            restore(prev)", "    else:", f"        outs = fn{operands}"]
    else:
        lines.append(f"    outs = fn{operands}")
    n = entry.out_tree.num_leaves
    lines.append(f"    {', '.join(f'o{i}' for i in range(n))}{',' if n == 1 else ''} = outs")
    lines += [line.format(ex="ex") for line in wrap]
    lines.append(f"    return {display}")
    namespace.update(keys)  # (S<n>; the reader's own are s<n>)
    namespace.update(MISS=MISS, EX=leaves[0]._ex, CTX=ctx, STRICT_ON=strict, SCOPED=_base._scoped,
                     executors=_base, STRICT=_modes._scoped, modes=_modes, touch=store.cache.move_to_end,
                     KEY=entry.key, PRECISION=_precision._scoped, UNSET=_precision._UNSET, precision=_precision,
                     swap=entry.swap, restore=entry.restore, inner=entry.inner, fn=entry.fn, new=_object_new)
    return _made("hit", lines, namespace, "<arrayx jit call>")


def call_from_tables(store, args: tuple, hook):
    """The cache-hit path's tables (see the module's text) for a call with positional ``args`` only,
    outside any trace: the outputs of the entry found, or :data:`MISS`.  ``hook``: jitting's
    ``sharding_hook`` (None unless arrayx.sharding placed arrays with a NamedSharding).  An entry with a
    generated call (:func:`hit_for`) becomes the store's ``hit`` (tried first on the next call)."""
    ctx = _base._scoped.get() or _base._process_default
    ctx = None if ctx is None else ctx.name
    strict = _modes._scoped.get()  # is_strict(), inline
    if strict is None:
        strict = _modes._default
    entry = None
    reader = store.reader
    if reader is not None and hook is None:
        got = reader(args)
        if got is not None:
            ex, bufs, sig = got
            entry = store.read.get((ctx, strict, reader, sig))
    if entry is None:
        key = [ctx, strict]
        flat = args
        for a in args:
            if a.__class__ is not Array:
                try:
                    flat, spec = fast_flatten(args)
                except Exception:  # noqa: BLE001 - a node that fails to flatten: the slow path says why
                    return MISS
                key.append(spec)
                break
        try:
            ex = flat[0]._ex
        except (IndexError, AttributeError):  # no arguments, or not an array: the slow path
            return MISS
        bufs = []
        for a in flat:
            if a.__class__ is not Array or a._ex is not ex:
                return MISS  # (the slow path names both executors)
            b = a._buf
            if b.__class__ in AVAL_KEYED:
                key.append(b.aval)  # a jax.Array's shape, dtype and weak type in one read
            else:
                key.append(b.shape)
                key.append(b.dtype)
            bufs.append(b)
        key.append(ex.name)
        entry = store.fast.get(tuple(key))
        if entry is None:
            return MISS
    try:
        store.cache.move_to_end(entry.key)
    except KeyError:  # dropped meanwhile by another thread
        pass
    inner = entry.inner
    if inner is not None and _precision._scoped.get() is _precision._UNSET and _precision._PROCESS is None:
        prev = entry.swap(True)  # the program's 64-bit scope, entered here
        try:
            out = inner(*bufs)
        finally:
            entry.restore(prev)
    else:
        out = entry.fn(*bufs)
    if hook is not None:  # numpy/numba/dask results take their inputs' shardings
        return pytree.unflatten(entry.out_tree, hook(entry.graph, flat, _wrap_all(out, ex)))
    if entry.hit is not None:
        store.hit = entry.hit
    return entry.finish(out, ex)


_modules = sys.modules


def fast_flatten(tree):
    """(leaves, structure) of ``tree`` for the cache-hit path's key: JAX's own flatten once JAX is
    loaded (its C++ registry walks a parameter tree in about half optree's time) where it finds only
    arrayx arrays, else optree's with arrayx's registry (nodes registered with arrayx alone).  Only a
    key: an entry reaches the fast table after the slow path's checked flatten gave these same
    leaves in this order (the two flattens' structures are of different types: never equal keys)."""
    tree_util = _modules.get("jax.tree_util")
    if tree_util is not None:
        leaves, spec = tree_util.tree_flatten(tree)
        for x in leaves:
            if x.__class__ is not Array:
                break
        else:
            return leaves, spec
    return _flatten_raw(tree, None, False, FLATTEN_NAMESPACE[0])


def prepare(entry) -> None:
    """Ready ``entry`` (compiled: ``entry.fn`` set) for the cache-hit path (see the module's text)."""
    if entry.finish is None:
        entry.finish = output_builder(entry.out_tree)
    parts = getattr(type(entry.fn), "scope_parts", None)  # the class's own: not a wrapped program's
    if parts is not None:
        entry.inner, entry.swap, entry.restore = parts(entry.fn)


_PLAIN = (list, tuple, dict, type(None))


def _plain(spec) -> bool:
    """Whether optree's ``spec`` has only leaves, lists, tuples, dicts and None."""
    if spec.is_leaf():
        return True
    return spec.type in _PLAIN and all(_plain(c) for c in spec.children())


def output_builder(out_tree):
    """``finish(outs, ex)``: the buffers ``outs`` (one per leaf of ``out_tree``) as Arrays of ``ex``,
    in ``out_tree``'s structure."""
    finish = None
    if 0 < out_tree.num_leaves <= MAX_GENERATED:
        try:
            finish = _generated(out_tree)
        except (RecursionError, SyntaxError, MemoryError):  # nested deeper than Python's parser takes
            finish = None
    if finish is None:
        build = unflatten_fn(out_tree)

        def finish(outs, ex):
            return build(_wrap_all(outs, ex))

    return finish


def _generated(out_tree):
    code = _output_code(out_tree)
    if code is None:
        return None
    wrap, display, keys = code
    n = out_tree.num_leaves
    lines = ["def finish(outs, ex):", f"    {', '.join(f'o{i}' for i in range(n))}{',' if n == 1 else ''} = outs",
             *(line.format(ex="ex") for line in wrap), f"    return {display}"]
    namespace = {"new": _object_new, "Array": Array, **keys}
    exec(compile("\n".join(lines) + "\n", "<arrayx jit outputs>", "exec"), namespace)  # noqa: S102
    return namespace["finish"]


def _output_code(out_tree):
    """(lines that wrap the buffers ``o<i>`` as Arrays ``a<i>`` of the executor named ``{ex}``, the
    expression of ``out_tree``'s structure around them, the dict keys it names) for a structure of
    lists, tuples, dicts and None of 1 to MAX_GENERATED leaves, else None."""
    n = out_tree.num_leaves
    if not 0 < n <= MAX_GENERATED or not _plain(out_tree._spec):  # (a custom node's unflatten, the
        return None                                                   # user's code, never sees slots)
    keys: dict = {}  # the dicts' keys, bound as names (pytree._specialise's display of a template)
    display = _display(pytree.unflatten(out_tree, [_Slot(i) for i in range(n)]), keys, "a{}")
    wrap = [f"    a{i} = new(Array); a{i}._buf = o{i}; a{i}._ex = {{ex}}" for i in range(n)]
    return wrap, display, keys


#: structures of arguments with more leaves (or deeper) get no generated reader
MAX_READ_LEAVES = 256
MAX_READ_DEPTH = 32


def reader_for(args: tuple, leaves: list):
    """A generated ``read(args)`` for the structure of ``args`` (lists, tuples, dicts with str keys and
    None around arrays of one executor): None where ``args`` has another structure, another leaf
    class or buffer class than now, or arrays of several executors; else ``(executor, buffers,
    signature)``, the signature being the executor's name and each buffer's aval (or shape and
    dtype).  It checks exactly what the cache-hit path's key holds (container types, lengths, dict
    keys, the arrays' classes and executor, the buffers' classes), so arguments it reads flatten as
    ``args`` did; it is made only where it reads ``args`` into ``leaves`` (the slow path's), in order.
    None where the structure is not of that kind."""
    code = _read_code(args, leaves, "None")
    if code is None:
        return None
    lines, namespace, bufs = code
    sig = ["ex.name"]
    for i, b in enumerate(bufs):
        sig += [f"b{i}.aval"] if b.__class__ in AVAL_KEYED else [f"b{i}.shape", f"b{i}.dtype"]
    lines.append(f"    return ex, ({', '.join(f'b{i}' for i in range(len(bufs)))},), ({', '.join(sig)},)")
    read = _made("read", lines, namespace, "<arrayx jit argument reader>")
    got = None if read is None else read(args)
    if got is None or any(a is not b for a, b in zip(got[1], bufs)):
        return None
    return read


def _read_code(args: tuple, leaves: list, miss: str, executor: str = ""):
    """(the body of a generated function of ``args`` that returns ``miss`` where the arguments do not
    have the structure, leaf classes, one executor (``ex``: the one named ``executor`` in the
    namespace where that is given) and buffer classes of ``args``, else goes on with their buffers
    named ``b0``...; its namespace; the buffers of ``args``), or None (see :func:`reader_for`)."""
    gen = _Reader(miss)
    try:
        if not gen.walk(args, "args", 0, top=True) or not gen.leaves or len(gen.leaves) != len(leaves):
            return None
    except RecursionError:
        return None
    if any(a is not b for a, b in zip(gen.leaves, leaves)):
        return None
    n = len(leaves)
    bufs = [x._buf for x in leaves]
    ex = leaves[0]._ex
    if any(x._ex is not ex for x in leaves):
        return None
    lines = ["    try:", *gen.lines, "    except (ValueError, KeyError):", f"        return {miss}"]
    vs = [f"v{i}" for i in range(n)]
    lines.append(f"    if {' or '.join(f'{v}.__class__ is not Array' for v in vs)}: return {miss}")
    if executor:
        lines.append(f"    if {' or '.join(f'{v}._ex is not {executor}' for v in vs)}: return {miss}")
        lines.append(f"    ex = {executor}")
    else:
        lines.append("    ex = v0._ex")
        if n > 1:
            lines.append(f"    if {' or '.join(f'{v}._ex is not ex' for v in vs[1:])}: return {miss}")
    lines.append(f"    {', '.join(f'b{i}' for i in range(n))} = {', '.join(f'{v}._buf' for v in vs)}")
    namespace = {"Array": Array, **gen.constants}
    for i, b in enumerate(bufs):
        namespace[f"K{i}"] = b.__class__
    lines.append(f"    if {' or '.join(f'b{i}.__class__ is not K{i}' for i in range(n))}: return {miss}")
    return lines, namespace, bufs


def _made(name: str, body: list, namespace: dict, filename: str):
    """The function ``name(args)`` of ``body`` (its lines) compiled in ``namespace``; None where Python's
    parser refuses it (nested too deep)."""
    try:
        exec(compile("\n".join([f"def {name}(args):", *body]) + "\n", filename, "exec"), namespace)  # noqa: S102
    except (RecursionError, SyntaxError, MemoryError):
        return None
    return namespace[name]


class _Reader:
    """The checks and unpackings of one generated reader, in arrayx's flatten order (dict values by
    sorted key); the leaves are named ``v0``... in that order.  An unpacking checks its length itself
    (ValueError), a dict lookup its key (KeyError): the reader's caller turns both into None."""

    def __init__(self, miss: str = "None") -> None:
        self.miss = miss  # what the generated function returns where the arguments do not fit
        self.lines: list[str] = []
        self.leaves: list = []
        self.constants: dict = {}  # s<n> -> a dict key of the arguments
        self._count = 0

    def walk(self, node, var: str, depth: int, top: bool = False) -> bool:
        if depth > MAX_READ_DEPTH or len(self.leaves) > MAX_READ_LEAVES:
            return False
        if node is None:
            self.lines.append(f"        if {var} is not None: return {self.miss}")
            return True
        typ = type(node)
        if typ is Array:
            self.leaves.append(node)  # (named v<index> where its container is unpacked)
            return True
        if typ is dict:
            keys = list(node)
            if not all(type(k) is str for k in keys):
                return False
            self.lines.append(f"        if {var}.__class__ is not dict or len({var}) != {len(keys)}: "
                              f"return {self.miss}")
            children = [node[k] for k in sorted(keys)]
            names = self._names(children)
            for name, k in zip(names, sorted(keys)):
                self.constants[f"s{len(self.constants)}"] = k  # the user's key: a name, never source
                self.lines.append(f"        {name} = {var}[s{len(self.constants) - 1}]")
        elif typ is list or typ is tuple:
            if not top:
                self.lines.append(f"        if {var}.__class__ is not {typ.__name__}: return {self.miss}")
            children = list(node)
            names = self._names(children)
            if names:
                self.lines.append(f"        {', '.join(names)}{',' if len(names) == 1 else ''} = {var}")
            else:
                self.lines.append(f"        if len({var}): return {self.miss}")
        else:
            return False  # a namedtuple, a custom node, a scalar, a NumPy array...: the other paths
        return all(self.walk(child, name, depth + 1) for name, child in zip(names, children))

    def _names(self, children) -> list[str]:
        """Names for ``children``: ``v<leaf index>`` for an array, ``t<n>`` for anything else."""
        names, index = [], len(self.leaves)
        for child in children:
            if type(child) is Array:
                names.append(f"v{index}")
                index += 1
            else:
                self._count += 1
                names.append(f"t{self._count}")
                index += _count_arrays(child)
        return names


def _count_arrays(node) -> int:
    if type(node) is Array:
        return 1
    if type(node) is dict:
        return sum(_count_arrays(v) for v in node.values())
    if type(node) in (list, tuple):
        return sum(_count_arrays(v) for v in node)
    return 0


