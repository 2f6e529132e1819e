"""Flatten and unflatten specialised to a structure that keeps coming back.

A training loop flattens the same parameter tree thousands of times.  optree walks it node by
node each time, asking its registry about every node.  Once a structure of plain containers
(dict with str keys, list, tuple, None) has been flattened through optree ``SPECIALISE_AFTER``
times (counted by _treedef, at most ``MAX_TRIES`` times per structure), this module generates
two Python functions for it:

* ``extract(tree)`` checks that ``tree`` has exactly that structure -- the exact container
  types, list/tuple lengths, dict keys *in the same insertion order*, ``None`` where ``None``
  was, and leaves whose types were leaves before -- and returns its leaves, or ``None`` so that
  the caller falls back to optree.  The checks are done before a container is read, so a
  mismatch never iterates a user's object.
* ``build(leaves)`` rebuilds the structure with container displays (optree's container order,
  which the exact key-order check makes equal to the flattened tree's).

Both run on CPython's fast paths (unpacking, ``dict.values()``, ``set.issuperset(map(type,
...))``): on a 1,000-leaf tree, flatten about 1.6x and unflatten 1.3x faster than optree's
(benchmarks/bench_pytree.py), which puts them level with jax.tree_util's C++.  The results are the
ones optree gives for that tree; tests compare both paths on generated trees.

Stale results are impossible by construction except through registrations: registering a type
with arrayx, or in optree's registry (measured by its size), drops every specialisation, since a
type that was a leaf may have become a node.  optree's ``dict_insertion_ordered`` mode is not
supported by arrayx.pytree (dict leaves come in sorted-key order, as in JAX).
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

import optree

__all__ = ["SPECIALISE_AFTER", "MIN_LEAVES", "MAX_LEAVES", "lookup", "add", "clear"]

# Flattens of one structure (through optree) before it is specialised.  Generating the code
# costs about as much as 200 optree flattens of the same tree (~30 ms per 1,000 leaves, mostly
# Python's compiler), so a structure must have proved it keeps coming back; a generated flatten
# then saves ~40% per call and pays for itself after a few hundred more.
SPECIALISE_AFTER = 100
MAX_TRIES = 3  # specialisations of one structure that keep missing (say, changing key order)
MIN_LEAVES = 32  # below this optree is already fast
MAX_LEAVES = 20_000  # generation costs ~30 ms per 1,000 leaves
MAX_PER_ROOT = 4  # specialisations kept per root container type (most recent first)
MAX_BUILD_DEPTH = 64  # nested displays deeper than this are left to optree's unflatten

_OPTREE_REGISTRY = getattr(getattr(optree, "registry", None), "_NODETYPE_REGISTRY", None)
_PLAIN_TYPES = frozenset((dict, list, tuple, type(None)))


class Specialised:
    """A structure's optree spec, its generated ``extract`` and ``build``, and its leaf types."""

    __slots__ = ("spec", "root", "extract", "build", "leaf_types")

    def __init__(self, spec: Any, root: type, extract: Callable, build: Callable | None,
                 leaf_types: frozenset) -> None:
        self.spec, self.root, self.extract, self.build = spec, root, extract, build
        self.leaf_types = leaf_types


# root container type -> specialisations, most recently made first (replaced, never mutated)
_BY_ROOT: dict[type, tuple[Specialised, ...]] = {}
_registry_size = [len(_OPTREE_REGISTRY) if _OPTREE_REGISTRY is not None else -1]


def clear() -> None:
    """Forget every specialisation (a registration may have turned a leaf type into a node)."""
    _BY_ROOT.clear()
    if _OPTREE_REGISTRY is not None:
        _registry_size[0] = len(_OPTREE_REGISTRY)


def lookup(tree: Any) -> tuple[list[Any], Specialised] | None:
    """The leaves of ``tree`` and its specialisation, if one matches exactly; else None."""
    candidates = _BY_ROOT.get(type(tree))
    if candidates is None:
        return None
    if len(_OPTREE_REGISTRY) != _registry_size[0]:
        clear()
        return None
    for entry in candidates:
        leaves = entry.extract(tree)
        if leaves is not None:
            return leaves, entry
    return None


def add(spec: Any, leaves: list[Any]) -> bool:
    """Specialise ``spec`` (whose leaves in one tree are ``leaves``); False if it cannot be."""
    if _OPTREE_REGISTRY is None or not MIN_LEAVES <= spec.num_leaves <= MAX_LEAVES:
        return False
    # the same structure specialised before for other leaf types: accept those too
    before = [e for entries in _BY_ROOT.values() for e in entries if e.spec == spec]
    try:
        made = _specialise(spec, leaves, before[0].leaf_types if before else frozenset())
    except RecursionError:  # deeper than Python can walk: optree handles it
        return False
    if made is None:
        return False
    older = tuple(e for e in _BY_ROOT.get(made.root, ()) if e.spec != spec)
    _BY_ROOT[made.root] = (made,) + older[: MAX_PER_ROOT - 1]
    return True


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _specialise(spec: Any, leaves: list[Any], also: frozenset = frozenset()) -> Specialised | None:
    leaf_types = frozenset(map(type, leaves)) | also
    if leaf_types & _PLAIN_TYPES:
        return None  # a leaf of a node type can only come from is_leaf; not specialised
    # optree's unflatten fixes the containers and their order: rebuild with numbered slots
    # as leaves and transcribe that template.
    n = spec.num_leaves
    template = spec.unflatten([_Slot(i) for i in range(n)])
    plan = _Plan()
    if not plan.walk(template, "t0", 0):
        return None
    leaf_vars = ", ".join(f"v{i}" for i in range(n))
    lines = ["def extract(t0):", *plan.lines]
    if plan.dict_vars:  # keys equal to str keys may still be str subclasses (StrEnum members)
        lines.append(f"    if not {{str}}.issuperset(map(type, chain({', '.join(plan.dict_vars)}))): return None")
    lines += [f"    leaves = [{leaf_vars}]",
              "    if not LEAF_TYPES.issuperset(map(type, leaves)): return None",
              "    return leaves",
              ""]
    namespace: dict[str, Any] = {"LEAF_TYPES": leaf_types, "chain": itertools.chain, **plan.constants}
    exec(compile("\n".join(lines), "<arrayx.pytree specialised flatten>", "exec"), namespace)  # noqa: S102
    build = None
    if plan.depth <= MAX_BUILD_DEPTH:
        keys: dict[str, Any] = {}
        source = f"def build(leaves):\n    return {_display(template, keys)}\n"
        namespace.update(keys)
        exec(compile(source, "<arrayx.pytree specialised unflatten>", "exec"), namespace)  # noqa: S102
        build = namespace["build"]
    return Specialised(spec, type(template), namespace["extract"], build, leaf_types)


class _Plan:
    """The checks and unpackings of one ``extract`` function, in tree order."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.dict_vars: list[str] = []
        self.depth = 0
        self._count = 0

    def _name(self, child: Any) -> str:
        if type(child) is _Slot:
            return f"v{child.index}"
        self._count += 1
        return f"t{self._count}"

    def walk(self, node: Any, var: str, depth: int) -> bool:
        """Emit the checks for ``node`` held in variable ``var``; False if not specialisable."""
        self.depth = max(self.depth, depth)
        if node is None:
            self.lines.append(f"    if {var} is not None: return None")
            return True
        typ = type(node)
        if typ is dict:
            keys = tuple(node)
            if not all(type(k) is str for k in keys):
                return False
            name = f"K{len(self.constants)}"
            self.constants[name] = keys
            self.dict_vars.append(var)
            self.lines.append(f"    if type({var}) is not dict or tuple({var}) != {name}: return None")
            children, source = list(node.values()), f"{var}.values()"
        elif typ is list or typ is tuple:
            self.lines.append(f"    if type({var}) is not {typ.__name__} or len({var}) != {len(node)}: return None")
            children, source = list(node), var
        else:
            return False  # namedtuple, OrderedDict, custom node, ...: left to optree
        if children:
            names = [self._name(child) for child in children]
            self.lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = {source}")
            for child, name in zip(children, names):
                if type(child) is not _Slot and not self.walk(child, name, depth + 1):
                    return False
        return True


def _display(node: Any, keys: dict[str, Any], slot: str = "leaves[{}]") -> str:
    """Python source that builds ``node`` (a template of ``_Slot`` leaves in lists, tuples, dicts and
    None) from the leaves named by ``slot`` (``slot.format(index)``).  A dict's keys (the user's
    strings) never enter the source: each is a name ``S<n>`` bound to it in ``keys``."""
    typ = type(node)
    if typ is _Slot:
        return slot.format(node.index)
    if node is None:
        return "None"
    if typ is dict:
        parts = []
        for key, child in node.items():
            name = f"S{len(keys)}"
            keys[name] = key
            parts.append(f"{name}: {_display(child, keys, slot)}")
        return "{" + ", ".join(parts) + "}"
    inner = ", ".join(_display(child, keys, slot) for child in node)
    if typ is list:
        return "[" + inner + "]"
    return "(" + inner + ("," if len(node) == 1 else "") + ")"
