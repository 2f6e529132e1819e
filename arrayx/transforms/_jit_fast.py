"""What ``jit``'s cache-hit path (``JitFunction.__call__`` in ``jitting.py``) needs ready per entry.

A call whose arguments are arrays of one executor (plain, or in lists, tuples and dicts) is found
in one of two tables of the function's store, both filled on the slow path:

- ``store.read``: :func:`reader_for` generates, for the structure of arguments last entered, one
  function that checks that structure (container types, lengths, dict keys), the arrays' class and
  executor and the buffers' classes, and returns the buffers and their signature (the executor's
  name, each buffer's ``aval``, or shape and dtype) with no loop and no flatten: the key is
  (executor name of new arrays, strict mode, the reader, that signature);
- ``store.fast``: any other such call, by a flat key built inline (:func:`fast_key` builds the same on
  the slow path): the executor name of new arrays, strict mode, the arguments' structure (when not
  all plain arrays), each buffer's aval or shape and dtype, and the arrays' executor name
  (executors are equal by name).

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

Measured (benchmarks/bench_jit_call.py, CPU, thread time): per-example gradients (8 arrays in, 6
out) 8.5 -> 4.0 us over jax.jit's own call, an MLP step 8.8 -> 4.3, SELU of one array 2.7 -> 2.2.
"""
from __future__ import annotations

from arrayx import pytree
from arrayx.api._array import Array
from arrayx.core.keys import AVAL_KEYED
from arrayx.pytree._specialise import _Slot, _display
from arrayx.pytree._treedef import unflatten_fn
from arrayx.transforms.call_primitive import _object_new, _wrap_all

__all__ = ["fast_key", "prepare", "output_builder", "reader_for", "MAX_GENERATED"]

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
    if not _plain(out_tree._spec):  # (a custom node's unflatten, the user's code, never sees slots)
        return None
    n = out_tree.num_leaves
    keys: dict = {}  # the dicts' keys, bound as names (pytree._specialise's display of a template)
    display = _display(pytree.unflatten(out_tree, [_Slot(i) for i in range(n)]), keys, "a{}")
    names = [f"o{i}" for i in range(n)]
    lines = ["def finish(outs, ex):", f"    {', '.join(names)}{',' if n == 1 else ''} = outs"]
    for i in range(n):
        lines.append(f"    a{i} = new(Array); a{i}._buf = o{i}; a{i}._ex = ex")
    lines.append(f"    return {display}")
    namespace = {"new": _object_new, "Array": Array, **keys}
    exec(compile("\n".join(lines) + "\n", "<arrayx jit outputs>", "exec"), namespace)  # noqa: S102
    return namespace["finish"]


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
    gen = _Reader()
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
    lines = ["def read(args):", "    try:", *gen.lines, "    except (ValueError, KeyError):", "        return None"]
    vs = [f"v{i}" for i in range(n)]
    lines.append(f"    if {' or '.join(f'{v}.__class__ is not Array' for v in vs)}: return None")
    lines.append("    ex = v0._ex")
    if n > 1:
        lines.append(f"    if {' or '.join(f'{v}._ex is not ex' for v in vs[1:])}: return None")
    lines.append(f"    {', '.join(f'b{i}' for i in range(n))} = {', '.join(f'{v}._buf' for v in vs)}")
    namespace = {"Array": Array, **gen.constants}
    sig = ["ex.name"]
    for i, b in enumerate(bufs):
        namespace[f"K{i}"] = b.__class__
        sig += [f"b{i}.aval"] if b.__class__ in AVAL_KEYED else [f"b{i}.shape", f"b{i}.dtype"]
    lines.append(f"    if {' or '.join(f'b{i}.__class__ is not K{i}' for i in range(n))}: return None")
    lines.append(f"    return ex, ({', '.join(f'b{i}' for i in range(n))},), ({', '.join(sig)},)")
    try:
        exec(compile("\n".join(lines) + "\n", "<arrayx jit argument reader>", "exec"), namespace)  # noqa: S102
    except (RecursionError, SyntaxError, MemoryError):
        return None
    read = namespace["read"]
    got = read(args)
    if got is None or any(a is not b for a, b in zip(got[1], bufs)):
        return None
    return read


class _Reader:
    """The checks and unpackings of one generated reader, in arrayx's flatten order (dict values by
    sorted key); the leaves are named ``v0``... in that order.  An unpacking checks its length itself
    (ValueError), a dict lookup its key (KeyError): the reader's caller turns both into None."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.leaves: list = []
        self.constants: dict = {}  # s<n> -> a dict key of the arguments
        self._count = 0

    def walk(self, node, var: str, depth: int, top: bool = False) -> bool:
        if depth > MAX_READ_DEPTH or len(self.leaves) > MAX_READ_LEAVES:
            return False
        if node is None:
            self.lines.append(f"        if {var} is not None: return None")
            return True
        typ = type(node)
        if typ is Array:
            self.leaves.append(node)  # (named v<index> where its container is unpacked)
            return True
        if typ is dict:
            keys = list(node)
            if not all(type(k) is str for k in keys):
                return False
            self.lines.append(f"        if {var}.__class__ is not dict or len({var}) != {len(keys)}: return None")
            children = [node[k] for k in sorted(keys)]
            names = self._names(children)
            for name, k in zip(names, sorted(keys)):
                self.constants[f"s{len(self.constants)}"] = k  # the user's key: a name, never source
                self.lines.append(f"        {name} = {var}[s{len(self.constants) - 1}]")
        elif typ is list or typ is tuple:
            if not top:
                self.lines.append(f"        if {var}.__class__ is not {typ.__name__}: return None")
            children = list(node)
            names = self._names(children)
            if names:
                self.lines.append(f"        {', '.join(names)}{',' if len(names) == 1 else ''} = {var}")
            else:
                self.lines.append(f"        if len({var}): return None")
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


