"""Readable structure-mismatch errors (the slow path, run only after a failure).

A pure-Python walk over two trees finds the first place where ``full`` does not
have ``prefix``'s structure and says what each side has there:

>>> where, mine, theirs = first_mismatch([{"w": 1}, {"w": 2}], [{"w": 1}, {"w": [2], "b": 3}], None)
>>> where, mine, theirs
('[1]', "a dict with keys ['w']", "a dict with keys ['b', 'w']")
"""
from __future__ import annotations

import collections
from typing import Any, Callable, NamedTuple

import optree

from arrayx.pytree._keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, keystr
from arrayx.pytree._registry import _CUSTOM

__all__ = ["first_mismatch", "where_text", "prefix_error_from_treedef", "structure_text"]


class _Level(NamedTuple):
    """One node taken apart: its type, children, their keys, and comparable metadata."""

    typ: type
    children: list[Any]
    keys: tuple[Any, ...]
    meta: Any


def _sorted_keys(d: dict[Any, Any]) -> list[Any]:
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def one_level(x: Any) -> _Level | None:
    """Take one node apart with arrayx.pytree's rules; ``None`` means ``x`` is a leaf.

    >>> one_level((1, 2)).keys
    (SequenceKey(idx=0), SequenceKey(idx=1))
    >>> one_level(3) is None
    True
    """
    typ = type(x)
    custom = _CUSTOM.get(typ)
    if custom is not None:
        out = custom.flatten(x)
        children = list(out[0])
        if custom.kind == "keys" or custom.kind == "dataclass":
            keys = tuple(out[2])
        else:
            keys = tuple(FlattenedIndexKey(i) for i in range(len(children)))
        return _Level(typ, children, keys, out[1])
    if x is None:
        return _Level(typ, [], (), None)
    if typ is list or typ is tuple:
        return _Level(typ, list(x), tuple(SequenceKey(i) for i in range(len(x))), len(x))
    if typ is dict or typ is collections.defaultdict:
        keys = _sorted_keys(x)
        meta = tuple(keys) if typ is dict else (x.default_factory, tuple(keys))
        return _Level(typ, [x[k] for k in keys], tuple(DictKey(k) for k in keys), meta)
    if typ is collections.OrderedDict:
        keys = list(x)
        return _Level(typ, [x[k] for k in keys], tuple(DictKey(k) for k in keys), tuple(keys))
    if optree.is_namedtuple_instance(x):
        return _Level(typ, list(x), tuple(GetAttrKey(f) for f in typ._fields), len(x))
    return None


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _name(typ: type) -> str:
    if typ is type(None):
        return "None"
    if optree.is_namedtuple_class(typ) and typ not in _CUSTOM:
        return f"namedtuple {typ.__name__}"
    return typ.__name__


def describe(x: Any, level: _Level | None, detail: bool = False) -> str:
    """Short phrase for what a tree has at some position ('a list of length 2', 'None', ...)."""
    if level is None:
        return f"a leaf of type {type(x).__name__}"
    if level.typ is type(None):
        return "None"
    name = _name(level.typ)
    text = f"{_article(name)} {name}"
    if not detail:
        return text
    if level.typ in (dict, collections.OrderedDict, collections.defaultdict):
        text += f" with keys {[k.key for k in level.keys]!r}"
        if level.typ is collections.defaultdict:
            text += f" and default_factory {level.meta[0]!r}"
    elif level.typ in _CUSTOM:
        text += f" with metadata {level.meta!r} and {len(level.children)} children"
    else:
        text += f" of length {len(level.children)}"
    return text


def _same_node(a: _Level, b: _Level) -> bool:
    if len(a.children) != len(b.children) or a.keys != b.keys:
        return False
    try:
        return bool(a.meta == b.meta)
    except Exception:
        return a.meta is b.meta


def first_mismatch(prefix: Any, full: Any, is_leaf: Callable[[Any], Any] | None,
                   path: tuple[Any, ...] = ()) -> tuple[str, str, str] | None:
    """Find where ``full`` stops having ``prefix``'s structure.

    Returns ``(key path text, what prefix has, what full has)``, or ``None``
    when ``prefix`` is a prefix of ``full``.  ``is_leaf`` applies to ``prefix``.

    >>> first_mismatch([1, (2, 3)], [1, [2, 3]], None)
    ('[1]', 'a tuple', 'a list')
    >>> first_mismatch([1, 2], [[0], {"a": 0}], None) is None
    True
    """
    if is_leaf is not None and is_leaf(prefix):
        return None
    mine = one_level(prefix)
    if mine is None:
        return None
    theirs = one_level(full)
    if theirs is None or theirs.typ is not mine.typ:
        return keystr(path), describe(prefix, mine), describe(full, theirs)
    if not _same_node(mine, theirs):
        return keystr(path), describe(prefix, mine, True), describe(full, theirs, True)
    for key, p_child, f_child in zip(mine.keys, mine.children, theirs.children):
        found = first_mismatch(p_child, f_child, is_leaf, path + (key,))
        if found is not None:
            return found
    return None


def where_text(path_text: str) -> str:
    """'at [0]['w']', or 'at the root' for the empty path."""
    return f"at {path_text}" if path_text else "at the root"


def structure_text(tree: Any, is_leaf: Callable[[Any], Any] | None = None) -> str:
    """Repr of a tree's structure for error messages (shortened; never raises)."""
    from arrayx.pytree._treedef import _short, flatten_checked

    try:
        return _short(repr(flatten_checked(tree, is_leaf)[1]))
    except Exception as exc:  # pragma: no cover - only for exotic trees
        return f"<structure unavailable: {exc}>"


class _Hole:
    """Placeholder leaf used to rebuild a template tree from a treedef."""

    def __repr__(self) -> str:
        return "*"


def prefix_error_from_treedef(who: str, treedef: Any, tree: Any, original: Exception) -> Exception:
    """Error for ``treedef.flatten_up_to(tree)`` failing, naming the key path when possible."""
    try:
        template = treedef._spec.unflatten([_Hole() for _ in range(treedef.num_leaves)])
        found = first_mismatch(template, tree, None)
    except Exception:
        found = None
    if found is None:
        return ValueError(f"{who}: the tree does not match {treedef!r}: {original}")
    path_text, mine, theirs = found
    return ValueError(
        f"{who}: the tree has {theirs} {where_text(path_text)} but the treedef has {mine}\n"
        f"  treedef: {structure_text(template)}\n  tree:    {structure_text(tree)}")
