"""The treedef wrapper and the optree-backed flatten at the heart of arrayx.pytree.

``optree.tree_flatten`` does the work in C++.  Its output is then checked once
per distinct structure (results are memoised by treedef) for the few places
where optree's rules differ from JAX's:

* optree treats ``collections.deque`` and C struct sequences (``time.struct_time``,
  ``os.stat_result``) as nodes; JAX treats them as leaves, and so do we
  (such trees are re-flattened with those types marked as leaves);
* optree silently falls back to an arbitrary total order when dict keys cannot
  be compared; we raise a ``TypeError`` naming the keys.

Like optree (and unlike JAX), unflatten rebuilds a dict with the key order of
the dict that was flattened; leaf order is the sorted-key order either way.

>>> leaves, treedef = flatten_checked({"b": [1, 2], "a": None}, None)
>>> leaves, treedef
([1, 2], PyTreeDef({'a': None, 'b': [*, *]}))
>>> treedef.unflatten([3, 4])  # key order of the flattened dict
{'b': [3, 4], 'a': None}
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Iterable

import optree

from arrayx.pytree._keys import DictKey, FlattenedIndexKey, GetAttrKey, KeyEntry, SequenceKey
from arrayx.pytree import _specialise
from arrayx.pytree._registry import _CUSTOM, FLATTEN_NAMESPACE
from arrayx.pytree._specialise import _BY_ROOT as _SPECIALISED, lookup as _lookup

__all__ = ["PyTreeDef", "clear_caches", "flatten_checked", "key_paths", "unflatten_fn"]

_optree_flatten = optree.tree_flatten
_deque = collections.deque
_is_structseq = optree.is_structseq_instance
_SEQUENCES = (list, tuple)
_MAPPINGS = (dict, collections.OrderedDict, collections.defaultdict)

# Memo: optree spec -> a _Good when it is fine as is, or a _Verdict saying what to do instead.
_SEEN: dict[Any, Any] = {}
# Memo: optree spec -> key paths of its leaves.
_PATHS: dict[Any, tuple[tuple[Any, ...], ...]] = {}
# Each memo is emptied when it holds more than this many specs or tree nodes in total.
_MEMO_MAX_SPECS = 4096
_MEMO_MAX_NODES = 2_000_000
_memo_nodes: dict[int, int] = {}
# The last spec that passed the checks (compared first, before hashing) and its _Good.
_last_good: list[Any] = [None, None]
_REPR_LIMIT = 400


class PyTreeDef:
    """The structure of a pytree: everything except its leaves.

    Treedefs are immutable, hashable and picklable, compare equal when the
    structures (including dict keys and custom-node metadata) are equal, and
    print like JAX's.  Get one from :func:`arrayx.pytree.structure` or
    :func:`arrayx.pytree.flatten`.

    >>> import arrayx.pytree as pt
    >>> td = pt.structure({"a": 1, "b": [2, 3]})
    >>> td, td.num_leaves, td.num_nodes
    (PyTreeDef({'a': *, 'b': [*, *]}), 3, 5)
    >>> td.children()
    [PyTreeDef(*), PyTreeDef([*, *])]
    >>> td.unflatten(["x", "y", "z"])
    {'a': 'x', 'b': ['y', 'z']}
    >>> td == pt.structure({"b": [0, 0], "a": 0})
    True
    """

    __slots__ = ("_spec", "_build")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("PyTreeDef objects come from arrayx.pytree.structure() or flatten()")

    @property
    def num_leaves(self) -> int:
        """Number of leaves in trees of this structure."""
        return self._spec.num_leaves

    @property
    def num_nodes(self) -> int:
        """Number of nodes, counting leaves and ``None`` (like JAX)."""
        return self._spec.num_nodes

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the root's immediate children (``[]`` for a leaf or ``None``)."""
        return [_wrap(child) for child in self._spec.children()]

    def is_leaf(self) -> bool:
        """True for the structure of a single leaf, ``PyTreeDef(*)``."""
        return self._spec.is_leaf()

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Build a tree of this structure from ``leaves`` (in flatten order).

        >>> import arrayx.pytree as pt
        >>> pt.structure((0, [0])).unflatten([1, 2])
        (1, [2])
        """
        if type(leaves) is not list:
            leaves = list(leaves)
        expected = self._spec.num_leaves
        if len(leaves) != expected:
            raise ValueError(
                f"pytree.unflatten: the treedef expects {expected} leaves but got "
                f"{len(leaves)}; treedef: {_short(repr(self))}")
        return unflatten_fn(self)(leaves)

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Cut ``tree`` at this structure's leaves: its subtrees there, in leaf order.

        ``tree`` must have this structure as a prefix.

        >>> import arrayx.pytree as pt
        >>> pt.structure([0, 0]).flatten_up_to([(1, 2), {"a": 3}])
        [(1, 2), {'a': 3}]
        """
        try:
            return self._spec.flatten_up_to(tree)
        except (ValueError, TypeError) as exc:
            from arrayx.pytree._diagnose import prefix_error_from_treedef

            raise prefix_error_from_treedef("PyTreeDef.flatten_up_to", self, tree, exc) from None

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure obtained by putting ``inner`` at every leaf of this one.

        >>> import arrayx.pytree as pt
        >>> pt.structure([0, 0]).compose(pt.structure((0, 0)))
        PyTreeDef([(*, *), (*, *)])
        """
        return _wrap(self._spec.compose(inner._spec))

    def __eq__(self, other: object) -> bool:
        if type(other) is not PyTreeDef:
            return NotImplemented
        return self._spec == other._spec  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        if type(other) is not PyTreeDef:
            return NotImplemented
        return self._spec != other._spec  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._spec)

    def __repr__(self) -> str:
        return f"PyTreeDef({_render(self._spec)})"

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return (_restore, (self._spec,))

    def __copy__(self) -> PyTreeDef:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PyTreeDef:
        return self


def clear_caches() -> None:
    """Forget every memoised structure and specialisation (for tests and registrations)."""
    _SEEN.clear()
    _PATHS.clear()
    _memo_nodes.clear()
    _last_good[:] = [None, None]
    _specialise.clear()


def _wrap(spec: Any) -> PyTreeDef:
    treedef = object.__new__(PyTreeDef)
    treedef._spec = spec
    treedef._build = None
    return treedef


def unflatten_fn(treedef: PyTreeDef) -> Callable[[list[Any]], Any]:
    """The fastest way to rebuild ``treedef`` from a list of exactly ``num_leaves`` leaves: the
    unflatten generated for a structure that keeps coming back, else optree's."""
    build = treedef._build
    return treedef._spec.unflatten if build is None else build


def _restore(spec: Any) -> PyTreeDef:
    """Unpickling hook (a module-level function so pickles stay importable)."""
    return _wrap(spec)


def _short(text: str) -> str:
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


# ---------------------------------------------------------------------------------------
# repr in JAX's format


def _render_node(typ: type, data: Any, children: tuple[str, ...]) -> str:
    if typ is list:
        return "[" + ", ".join(children) + "]"
    if typ is tuple:
        return "(" + children[0] + ",)" if len(children) == 1 else "(" + ", ".join(children) + ")"
    if typ is dict:
        return "{" + ", ".join(f"{key!r}: {child}" for key, child in zip(data, children)) + "}"
    if typ is type(None):
        return "None"
    if typ is collections.OrderedDict:
        label = f"OrderedDict[{tuple(data)}]"
    elif typ is collections.defaultdict:
        label = f"defaultdict[{(data[0], tuple(data[1]))}]"
    elif typ in _CUSTOM:
        label = f"{typ.__name__}[{data}]"
    else:  # namedtuple
        label = f"namedtuple[{typ.__name__}]"
    return f"CustomNode({label}, [{', '.join(children)}])"


def _render(spec: Any) -> str:
    return spec.walk([None] * spec.num_leaves, _render_node, _star)


def _star(_: Any) -> str:
    return "*"


# ---------------------------------------------------------------------------------------
# flatten with JAX's rules on top of optree


class _Good:
    """A structure that passed the checks, and how close it is to being specialised.

    ``countdown`` flattens through optree remain before :mod:`_specialise` generates code for
    it; ``tries`` specialisations remain (a structure whose specialisation keeps missing, say
    because its dict keys come in a different order each time, is left to optree).
    """

    __slots__ = ("countdown", "tries")

    def __init__(self, spec: Any) -> None:
        eligible = _specialise.MIN_LEAVES <= spec.num_leaves <= _specialise.MAX_LEAVES
        self.countdown = _specialise.SPECIALISE_AFTER
        self.tries = _specialise.MAX_TRIES if eligible else 0

    def seen(self, spec: Any, leaves: list[Any]) -> None:
        self.countdown -= 1
        if self.countdown <= 0:
            self.countdown = _specialise.SPECIALISE_AFTER
            self.tries = self.tries - 1 if _specialise.add(spec, leaves) else 0


class _Verdict:
    """Why a spec cannot be used as is: it needs re-flattening, or has unsortable dict keys."""

    __slots__ = ("reflatten", "bad_keys")

    def __init__(self) -> None:
        self.reflatten = False
        self.bad_keys: list[Any] | None = None


def _inspect(spec: Any) -> _Verdict:
    verdict = _Verdict()

    def visit(typ: type, data: Any, children: Any) -> None:
        if typ is _deque or (typ not in _CUSTOM and optree.is_structseq_class(typ)):
            verdict.reflatten = True
        elif typ is dict or typ is collections.defaultdict:
            keys = data if typ is dict else data[1]
            if verdict.bad_keys is None:
                try:
                    sorted(keys)
                except TypeError:
                    verdict.bad_keys = list(keys)

    spec.walk([None] * spec.num_leaves, visit, None)
    return verdict


def _jax_leaf(x: Any) -> bool:
    return type(x) is _deque or (_is_structseq(x) and type(x) not in _CUSTOM)


def _with_jax_leaves(is_leaf: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    if is_leaf is None:
        return _jax_leaf
    return lambda x: is_leaf(x) or _jax_leaf(x)


def _unsortable(keys: list[Any]) -> TypeError:
    return TypeError(
        f"pytree: cannot sort the dict keys {keys!r}; dict keys are sorted to fix the leaf "
        "order, so they must be mutually comparable (use an OrderedDict to keep insertion order)")


def _remember(memo: dict[Any, Any], spec: Any, value: Any) -> None:
    nodes = _memo_nodes.get(id(memo), 0) + spec.num_nodes
    if len(memo) >= _MEMO_MAX_SPECS or nodes > _MEMO_MAX_NODES:
        memo.clear()
        nodes = spec.num_nodes
    try:
        memo[spec] = value
    except Exception:  # un-hashable or un-comparable metadata: just don't memoise
        return
    _memo_nodes[id(memo)] = nodes


def _settle(tree: Any, is_leaf: Any, leaves: list[Any], spec: Any, verdict: _Verdict
            ) -> tuple[list[Any], PyTreeDef]:
    if verdict.reflatten:
        leaves, spec = _optree_flatten(tree, _with_jax_leaves(is_leaf), none_is_leaf=False,
                                       namespace=FLATTEN_NAMESPACE[0])
        return _checked(tree, is_leaf, leaves, spec)
    if verdict.bad_keys is not None:
        raise _unsortable(verdict.bad_keys)
    raise AssertionError("unreachable")


def _checked(tree: Any, is_leaf: Any, leaves: list[Any], spec: Any) -> tuple[list[Any], PyTreeDef]:
    try:
        known = _SEEN.get(spec)
    except Exception:
        known = None
    if known is None:
        verdict = _inspect(spec)
        known = _Good(spec) if not verdict.reflatten and verdict.bad_keys is None else verdict
        _remember(_SEEN, spec, known)
    if type(known) is _Good:
        return leaves, _wrap(spec)
    return _settle(tree, is_leaf, leaves, spec, known)


def flatten_checked(tree: Any, is_leaf: Callable[[Any], Any] | None) -> tuple[list[Any], PyTreeDef]:
    """optree flatten plus the JAX-compatibility checks (memoised per structure)."""
    if is_leaf is None and _SPECIALISED:
        hit = _lookup(tree)  # a structure that keeps coming back: generated code
        if hit is not None:
            leaves, entry = hit
            treedef = object.__new__(PyTreeDef)
            treedef._spec = entry.spec
            treedef._build = entry.build
            return leaves, treedef
    leaves, spec = _optree_flatten(tree, is_leaf, none_is_leaf=False, namespace=FLATTEN_NAMESPACE[0])
    last = _last_good
    try:
        # Same structure as last time (the common case in loops): one comparison, no hashing.
        known = last[1] if spec == last[0] else _SEEN[spec]
    except Exception:
        return _checked(tree, is_leaf, leaves, spec)
    if type(known) is _Good:
        last[0], last[1] = spec, known
        if is_leaf is None and known.tries:
            known.seen(spec, leaves)
        treedef = object.__new__(PyTreeDef)
        treedef._spec = spec
        treedef._build = None
        return leaves, treedef
    return _settle(tree, is_leaf, leaves, spec, known)


# ---------------------------------------------------------------------------------------
# key paths


def _types_along(typ: type, data: Any, children: tuple[list[tuple[type, ...]], ...]
                 ) -> list[tuple[type, ...]]:
    return [(typ,) + rest for child in children for rest in child]


def _leaf_types(_: Any) -> list[tuple[type, ...]]:
    return [()]


def _key(typ: type, entry: Any) -> Any:
    if typ in _SEQUENCES:
        return SequenceKey(entry)
    if typ in _MAPPINGS:
        return DictKey(entry)
    custom = _CUSTOM.get(typ)
    if custom is not None:
        if custom.kind == "node" or custom.kind == "static":
            return FlattenedIndexKey(entry)
        return entry
    if isinstance(entry, KeyEntry):
        return entry
    return GetAttrKey(typ._fields[entry])  # namedtuple


def key_paths(treedef: PyTreeDef) -> tuple[tuple[Any, ...], ...]:
    """Key path of every leaf of ``treedef`` in flatten order (memoised per structure).

    >>> import arrayx.pytree as pt
    >>> key_paths(pt.structure({"a": [0, 0]}))
    ((DictKey(key='a'), SequenceKey(idx=0)), (DictKey(key='a'), SequenceKey(idx=1)))
    """
    spec = treedef._spec
    try:
        return _PATHS[spec]
    except Exception:
        pass
    types = spec.walk([None] * spec.num_leaves, _types_along, _leaf_types)
    paths = tuple(
        tuple([_key(typ, entry) for typ, entry in zip(typ_path, raw)])
        for typ_path, raw in zip(types, spec.paths())
    )
    _remember(_PATHS, spec, paths)
    return paths
