"""Public pytree functions (JAX ``jax.tree`` semantics, optree underneath).

>>> import arrayx.pytree as pt
>>> tree = {"w": [1, 2], "b": None, "c": (3,)}
>>> pt.leaves(tree)  # sorted keys: b (no leaves), c, w
[3, 1, 2]
>>> pt.map(lambda x: x * 10, tree)
{'w': [10, 20], 'b': None, 'c': (30,)}
"""
from __future__ import annotations

import builtins
import functools
from typing import Any, Callable, Iterable

from arrayx.pytree._diagnose import first_mismatch, structure_text, where_text
from arrayx.pytree._treedef import PyTreeDef, flatten_checked, key_paths, unflatten_fn

__all__ = [
    "flatten",
    "unflatten",
    "leaves",
    "structure",
    "map",
    "reduce",
    "all",
    "transpose",
    "broadcast",
    "broadcast_prefix",
    "flatten_with_path",
    "leaves_with_path",
    "map_with_path",
]

IsLeaf = Callable[[Any], Any]
_zip = builtins.zip
_map = builtins.map


class _Missing:
    def __repr__(self) -> str:
        return "<no initializer>"


_MISSING: Any = _Missing()


def flatten(tree: Any, is_leaf: IsLeaf | None = None) -> tuple[list[Any], PyTreeDef]:
    """Split ``tree`` into its leaves (a list) and its structure.

    Dict leaves come in sorted-key order; OrderedDict leaves in insertion
    order; ``None`` is a node with no children.  ``is_leaf(x)`` returning true
    stops the descent at ``x``.

    >>> flatten({"b": 1, "a": (2, None)})
    ([2, 1], PyTreeDef({'a': (*, None), 'b': *}))
    >>> flatten([1, [2, 3]], is_leaf=lambda x: isinstance(x, list) and len(x) == 2)
    ([[1, [2, 3]]], PyTreeDef(*))
    """
    return flatten_checked(tree, is_leaf)


def unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree from a treedef and its leaves (the inverse of :func:`flatten`).

    >>> leaves, td = flatten([1, (2, 3)])
    >>> unflatten(td, ["a", "b", "c"])
    ['a', ('b', 'c')]
    """
    if type(treedef) is not PyTreeDef:
        raise TypeError(f"pytree.unflatten: expected a PyTreeDef, got {type(treedef).__name__}")
    return treedef.unflatten(leaves)


def leaves(tree: Any, is_leaf: IsLeaf | None = None) -> list[Any]:
    """The leaves of ``tree`` in flatten order.

    >>> leaves([1, {"x": 2, "a": 3}, None])
    [1, 3, 2]
    """
    return flatten_checked(tree, is_leaf)[0]


def structure(tree: Any, is_leaf: IsLeaf | None = None) -> PyTreeDef:
    """The treedef of ``tree``.

    >>> structure((1, [2, None]))
    PyTreeDef((*, [*, None]))
    """
    return flatten_checked(tree, is_leaf)[1]


def _rest_leaves(who: str, treedef: PyTreeDef, tree: Any, rest: tuple[Any, ...],
                 is_leaf: IsLeaf | None) -> list[list[Any]]:
    spec = treedef._spec
    out = []
    for i, other in enumerate(rest, start=1):
        try:
            out.append(spec.flatten_up_to(other))
        except (ValueError, TypeError) as exc:
            raise _map_error(who, tree, other, i, is_leaf, exc) from None
    return out


def _map_error(who: str, tree: Any, other: Any, index: int, is_leaf: IsLeaf | None,
               original: Exception) -> Exception:
    found = first_mismatch(tree, other, is_leaf)
    if found is None:
        return ValueError(f"{who}: tree {index} does not match tree 0: {original}")
    path_text, mine, theirs = found
    return ValueError(
        f"{who}: tree {index} has {theirs} {where_text(path_text)} but tree 0 has {mine}\n"
        f"  tree 0: {structure_text(tree, is_leaf)}\n  tree {index}: {structure_text(other)}")


def map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf | None = None) -> Any:
    """Apply ``f`` leaf-wise; with several trees, ``f`` gets one argument per tree.

    Each tree in ``rest`` must have ``tree``'s structure or have it as a prefix
    (then ``f`` receives the whole matching subtree).  On a mismatch the error
    names the key path and what each tree has there.

    >>> map(lambda x, y: x + y, {"a": 1, "b": [2]}, {"a": 10, "b": [20]})
    {'a': 11, 'b': [22]}
    >>> map(lambda x, y: (x, y), [1, 2], [(0, 0), {"k": 0}])
    [(1, (0, 0)), (2, {'k': 0})]
    >>> map(lambda x, y: x, [1, {"w": 2}], [1, ["w"]])
    Traceback (most recent call last):
    ...
    ValueError: pytree.map: tree 1 has a list at [1] but tree 0 has a dict
      tree 0: PyTreeDef([*, {'w': *}])
      tree 1: PyTreeDef([*, [*]])
    """
    leaves_, treedef = flatten_checked(tree, is_leaf)
    if not rest:
        return unflatten_fn(treedef)(list(_map(f, leaves_)))
    others = _rest_leaves("pytree.map", treedef, tree, rest, is_leaf)
    return unflatten_fn(treedef)(list(_map(f, leaves_, *others)))


def reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _MISSING,
           is_leaf: IsLeaf | None = None) -> Any:
    """``functools.reduce`` over the leaves, with an optional initializer.

    >>> import operator
    >>> reduce(operator.add, [1, (2, 3)])
    6
    >>> reduce(operator.add, [], 0)
    0
    """
    items = flatten_checked(tree, is_leaf)[0]
    if initializer is _MISSING:
        return functools.reduce(function, items)
    return functools.reduce(function, items, initializer)


def all(tree: Any, *, is_leaf: IsLeaf | None = None) -> bool:
    """True when every leaf is truthy (and for trees without leaves).

    >>> all([True, {"a": 1}]), all([True, (0,)]), all([None])
    (True, False, True)
    """
    return builtins.all(flatten_checked(tree, is_leaf)[0])


def transpose(outer: PyTreeDef, inner: PyTreeDef | None, tree: Any) -> Any:
    """Turn a tree of structure ``outer`` of trees of structure ``inner`` inside out.

    ``inner=None`` takes the inner structure from the first outer leaf.

    >>> transpose(structure([0, 0]), structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    >>> transpose(structure([0, 0]), None, [{"a": 1}, {"a": 2}])
    {'a': [1, 2]}
    """
    flat, treedef = flatten_checked(tree, None)
    if inner is None:
        inner = flatten_checked(outer.flatten_up_to(tree)[0], None)[1]
    inner_n, outer_n = inner.num_leaves, outer.num_leaves
    expected = outer.compose(inner)
    if treedef != expected:
        raise TypeError(
            f"pytree.transpose: the tree's structure {structure_text(tree)} is not outer composed "
            f"with inner: {expected!r}")
    rows = [flat[i * inner_n:(i + 1) * inner_n] for i in range(outer_n)]
    columns = [outer._spec.unflatten([row[j] for row in rows]) for j in range(inner_n)]
    return inner._spec.unflatten(columns)


def broadcast_prefix(prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf | None = None, *,
                     prefix_name: str = "prefix_tree", full_name: str = "full_tree",
                     who: str = "pytree.broadcast_prefix") -> list[Any]:
    """Leaves of ``full_tree``'s shape, each being the matching leaf of ``prefix_tree``.

    ``prefix_name``/``full_name``/``who`` only change the wording of errors, so a
    caller such as vmap can say "in_axes has a dict at [1] but the argument has a list".

    >>> broadcast_prefix([0, None], [(1, 2), 3], is_leaf=lambda x: x is None)
    [0, 0, None]
    >>> broadcast_prefix({"a": 0}, [1], prefix_name="in_axes", full_name="the argument", who="vmap")
    Traceback (most recent call last):
    ...
    ValueError: vmap: in_axes has a dict at the root but the argument has a list
      in_axes: PyTreeDef({'a': *})
      the argument: PyTreeDef([*])
    """
    p_leaves, p_def = flatten_checked(prefix_tree, is_leaf)
    try:
        subtrees = p_def._spec.flatten_up_to(full_tree)
    except (ValueError, TypeError) as exc:
        found = first_mismatch(prefix_tree, full_tree, is_leaf)
        if found is None:
            raise ValueError(f"{who}: {full_name} does not have {prefix_name}'s structure: {exc}") from None
        path_text, mine, theirs = found
        raise ValueError(
            f"{who}: {prefix_name} has {mine} {where_text(path_text)} but {full_name} has {theirs}\n"
            f"  {prefix_name}: {structure_text(prefix_tree, is_leaf)}\n"
            f"  {full_name}: {structure_text(full_tree)}") from None
    out: list[Any] = []
    for leaf, sub in _zip(p_leaves, subtrees):
        out.extend([leaf] * flatten_checked(sub, None)[1].num_leaves)
    return out


def broadcast(prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf | None = None, *,
              prefix_name: str = "prefix_tree", full_name: str = "full_tree") -> Any:
    """Replicate each leaf of ``prefix_tree`` over the matching subtree of ``full_tree``.

    The result has ``full_tree``'s structure.  ``is_leaf`` applies to
    ``prefix_tree`` (e.g. ``lambda x: x is None`` for vmap-style in_axes).

    >>> broadcast([0, 1], [{"a": "x", "b": "y"}, ("z",)])
    [{'a': 0, 'b': 0}, (1,)]
    >>> broadcast({"a": 0}, {"a": 1, "b": 2})
    Traceback (most recent call last):
    ...
    ValueError: pytree.broadcast: prefix_tree has a dict with keys ['a'] at the root but full_tree has a dict with keys ['a', 'b']
      prefix_tree: PyTreeDef({'a': *})
      full_tree: PyTreeDef({'a': *, 'b': *})
    """
    spread = broadcast_prefix(prefix_tree, full_tree, is_leaf, prefix_name=prefix_name,
                              full_name=full_name, who="pytree.broadcast")
    return flatten_checked(full_tree, None)[1]._spec.unflatten(spread)


def flatten_with_path(tree: Any, is_leaf: IsLeaf | None = None
                      ) -> tuple[list[tuple[tuple[Any, ...], Any]], PyTreeDef]:
    """Like :func:`flatten`, pairing each leaf with its key path.

    >>> pairs, td = flatten_with_path({"a": [5]})
    >>> pairs
    [((DictKey(key='a'), SequenceKey(idx=0)), 5)]
    """
    leaves_, treedef = flatten_checked(tree, is_leaf)
    return list(_zip(key_paths(treedef), leaves_)), treedef


def leaves_with_path(tree: Any, is_leaf: IsLeaf | None = None) -> list[tuple[tuple[Any, ...], Any]]:
    """``(key path, leaf)`` pairs in flatten order.

    >>> from arrayx.pytree import keystr
    >>> [(keystr(p), x) for p, x in leaves_with_path({"w": (1, 2)})]
    [("['w'][0]", 1), ("['w'][1]", 2)]
    """
    return flatten_with_path(tree, is_leaf)[0]


def map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf | None = None) -> Any:
    """Like :func:`map`, but ``f`` receives the key path first: ``f(path, x, *ys)``.

    >>> from arrayx.pytree import keystr
    >>> map_with_path(lambda p, x: f"{keystr(p)}={x}", {"a": 1, "b": [2]})
    {'a': "['a']=1", 'b': ["['b'][0]=2"]}
    """
    leaves_, treedef = flatten_checked(tree, is_leaf)
    paths = key_paths(treedef)
    others = _rest_leaves("pytree.map_with_path", treedef, tree, rest, is_leaf) if rest else []
    return treedef._spec.unflatten(_map(f, paths, leaves_, *others))
