"""Node registry: which Python types are pytree nodes and how to take them apart.

Built-in nodes (list, tuple, dict, OrderedDict, defaultdict, namedtuple, None)
are known to optree already.  Custom nodes are registered twice: in optree's
``'arrayx'`` namespace (the C++ fast path used by flatten/unflatten) and in
``_CUSTOM`` below (used by the pure-Python error diagnosis and for reprs).

>>> class Pair:
...     def __init__(self, a, b):
...         self.a, self.b = a, b
>>> register_node(Pair, lambda p: ((p.a, p.b), None), lambda _, ch: Pair(*ch))
<class 'arrayx.pytree._registry.Pair'>
>>> is_registered(Pair)
True
"""
from __future__ import annotations

import collections
import dataclasses
import operator
from typing import Any, Callable, Iterable, NamedTuple, Sequence, TypeVar

import optree

from arrayx.pytree._keys import GetAttrKey, KeyEntry

__all__ = [
    "NAMESPACE",
    "FLATTEN_NAMESPACE",
    "register_node",
    "register_node_with_keys",
    "register_node_class",
    "register_dataclass",
    "register_static",
    "is_registered",
]

NAMESPACE = "arrayx"
# The namespace flatten passes to optree: the global one ("") until a type is registered with
# arrayx.  optree also consults the global namespace when given "arrayx", so both give the same
# trees while the arrayx namespace is empty, and "" skips a second registry lookup per node (~7%).
FLATTEN_NAMESPACE = [""]

_OPTREE_MIN = (0, 14)  # PyTreeSpec.walk(leaves, f_node(type, data, children), f_leaf) appeared in 0.14
if tuple(int(part) for part in optree.__version__.split(".")[:2]) < _OPTREE_MIN:
    raise ImportError(
        f"arrayx.pytree needs optree>={'.'.join(map(str, _OPTREE_MIN))}, found {optree.__version__}")

T = TypeVar("T", bound=type)

_BUILTIN_NODES: frozenset[type] = frozenset(
    {list, tuple, dict, type(None), collections.OrderedDict, collections.defaultdict}
)


class _Custom(NamedTuple):
    """How one registered type is flattened (2- or 3-tuple output) and rebuilt."""

    cls: type
    flatten: Callable[[Any], tuple]
    unflatten: Callable[[Any, Iterable[Any]], Any]
    kind: str  # "node", "keys", "dataclass" or "static"


_CUSTOM: dict[type, _Custom] = {}


def is_registered(cls: type) -> bool:
    """True when ``cls`` is a built-in node type or was registered with arrayx.pytree.

    >>> is_registered(list), is_registered(int)
    (True, False)
    """
    return cls in _BUILTIN_NODES or cls in _CUSTOM


def _check_new(cls: Any, who: str) -> None:
    if not isinstance(cls, type):
        raise TypeError(f"pytree.{who}: expected a class, got {cls!r}")
    if cls in _BUILTIN_NODES:
        raise ValueError(f"pytree.{who}: {cls.__name__} is a built-in pytree node and cannot be re-registered")
    if cls in _CUSTOM:
        raise ValueError(f"pytree.{who}: {cls.__qualname__} is already registered as a pytree node")


def _add(cls: type, flatten: Callable[[Any], tuple], unflatten: Callable, kind: str) -> None:
    optree.register_pytree_node(
        cls, flatten, unflatten, path_entry_type=optree.FlattenedEntry, namespace=NAMESPACE
    )
    _CUSTOM[cls] = _Custom(cls, flatten, unflatten, kind)
    FLATTEN_NAMESPACE[0] = NAMESPACE


def register_node(
    cls: T,
    flatten: Callable[[Any], tuple[Iterable[Any], Any]],
    unflatten: Callable[[Any, Iterable[Any]], Any],
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]] | None = None,
) -> T:
    """Make instances of ``cls`` pytree nodes.

    ``flatten(obj)`` returns ``(children, aux_data)``; ``unflatten(aux_data,
    children)`` rebuilds the object.  ``aux_data`` is stored in the treedef, so
    it should be hashable and comparable.  Key paths of the children are
    :class:`FlattenedIndexKey` entries, unless ``flatten_with_keys`` is given
    (then this is :func:`register_node_with_keys`).  Returns ``cls``.

    >>> import arrayx.pytree as pt
    >>> class Box:
    ...     def __init__(self, items, label):
    ...         self.items, self.label = items, label
    >>> _ = pt.register_node(Box, lambda b: (b.items, b.label), lambda label, items: Box(list(items), label))
    >>> pt.leaves(Box([1, 2], "x"))
    [1, 2]
    >>> pt.structure(Box([1, 2], "x"))
    PyTreeDef(CustomNode(Box[x], [*, *]))
    """
    if flatten_with_keys is not None:
        return register_node_with_keys(cls, flatten_with_keys, unflatten, flatten)
    _check_new(cls, "register_node")
    _add(cls, flatten, unflatten, "node")
    return cls


def register_node_with_keys(
    cls: T,
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]],
    unflatten: Callable[[Any, Iterable[Any]], Any],
    flatten: Callable[[Any], tuple[Iterable[Any], Any]] | None = None,
) -> T:
    """Like :func:`register_node`, with a key entry for each child (shown in key paths).

    ``flatten_with_keys(obj)`` returns ``(((key, child), ...), aux_data)``.
    ``flatten`` is accepted for JAX compatibility; the keyed function is the one
    used (both must describe the same children).  Returns ``cls``.

    >>> import arrayx.pytree as pt
    >>> class Vec:
    ...     def __init__(self, x, y):
    ...         self.x, self.y = x, y
    >>> _ = pt.register_node_with_keys(
    ...     Vec,
    ...     lambda v: (((pt.GetAttrKey("x"), v.x), (pt.GetAttrKey("y"), v.y)), None),
    ...     lambda _, ch: Vec(*ch))
    >>> [pt.keystr(p) for p, _ in pt.leaves_with_path(Vec(1, 2))]
    ['.x', '.y']
    """
    _check_new(cls, "register_node_with_keys")

    def flatten_keyed(obj: Any) -> tuple[tuple[Any, ...], Any, tuple[Any, ...]]:
        pairs, aux = flatten_with_keys(obj)
        pairs = tuple(pairs)
        return tuple([child for _, child in pairs]), aux, tuple([key for key, _ in pairs])

    _add(cls, flatten_keyed, unflatten, "keys")
    return cls


def register_node_class(cls: T) -> T:
    """Class decorator: register ``cls`` via its ``tree_flatten``/``tree_unflatten`` methods.

    ``obj.tree_flatten()`` returns ``(children, aux_data)`` and the classmethod
    ``cls.tree_unflatten(aux_data, children)`` rebuilds it.

    >>> import arrayx.pytree as pt
    >>> @pt.register_node_class
    ... class Scaled:
    ...     def __init__(self, value, scale):
    ...         self.value, self.scale = value, scale
    ...     def tree_flatten(self):
    ...         return (self.value,), self.scale
    ...     @classmethod
    ...     def tree_unflatten(cls, scale, children):
    ...         return cls(children[0], scale)
    >>> pt.map(lambda v: v + 1, Scaled(1, 10)).value
    2
    """
    _check_new(cls, "register_node_class")
    _add(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten, "node")
    return cls


def _dataclass_fields(cls: type) -> tuple[list[str], list[str]]:
    data, meta = [], []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        (meta if field.metadata.get("static", False) else data).append(field.name)
    return data, meta


def _validate_fields(cls: type, data_fields: Sequence[str], meta_fields: Sequence[str],
                     drop_fields: Sequence[str]) -> None:
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError(f"pytree.register_dataclass: fields {sorted(overlap)} are listed as both data and meta")
    if dataclasses.is_dataclass(cls):
        init = {f.name for f in dataclasses.fields(cls) if f.init} - set(drop_fields)
        given = set(data_fields) | set(meta_fields)
        if given != init:
            parts = []
            if init - given:
                parts.append(f"missing {sorted(init - given)} (list them or pass drop_fields)")
            if given - init:
                parts.append(f"unexpected {sorted(given - init)}")
            raise ValueError(
                f"pytree.register_dataclass: data_fields + meta_fields of {cls.__name__} must be "
                f"exactly its init fields; " + "; ".join(parts))


def register_dataclass(
    cls: T | None = None,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> Any:
    """Register a dataclass-like type whose children are named attributes.

    ``data_fields`` become children (key paths ``.name``); ``meta_fields`` are
    stored in the treedef and must be hashable.  For a dataclass both may be
    omitted: fields whose ``metadata`` has ``static=True`` are meta, the others
    data.  Usable as ``@register_dataclass`` or
    ``@register_dataclass(data_fields=[...], meta_fields=[...])``.

    >>> import dataclasses, arrayx.pytree as pt
    >>> @pt.register_dataclass
    ... @dataclasses.dataclass
    ... class Layer:
    ...     w: object
    ...     b: object
    ...     act: str = dataclasses.field(default="relu", metadata={"static": True})
    >>> pt.structure(Layer(1, 2))
    PyTreeDef(CustomNode(Layer[('relu',)], [*, *]))
    >>> [pt.keystr(p) for p, _ in pt.leaves_with_path(Layer(1, 2))]
    ['.w', '.b']
    """
    if cls is None:
        return lambda c: register_dataclass(c, data_fields, meta_fields, drop_fields)
    _check_new(cls, "register_dataclass")
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(
                f"pytree.register_dataclass: {cls.__name__} is not a dataclass, so data_fields "
                "and meta_fields must be given")
        data_fields, meta_fields = _dataclass_fields(cls)
    elif data_fields is None or meta_fields is None:
        raise TypeError("pytree.register_dataclass: give both data_fields and meta_fields, or neither")
    data = tuple(data_fields)
    meta = tuple(meta_fields)
    _validate_fields(cls, data, meta, drop_fields)
    keys = tuple(GetAttrKey(name) for name in data)
    name = cls.__name__

    def flatten(obj: Any) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[KeyEntry, ...]]:
        aux = tuple([getattr(obj, f) for f in meta])
        try:
            hash(aux)
        except TypeError:
            bad = [f for f, v in zip(meta, aux) if not _hashable(v)]
            raise TypeError(
                f"pytree: meta field(s) {bad} of {name} must be hashable (they are part of the "
                f"treedef); got {[type(getattr(obj, f)).__name__ for f in bad]}") from None
        return tuple([getattr(obj, f) for f in data]), aux, keys

    def unflatten(aux: tuple[Any, ...], children: Iterable[Any]) -> Any:
        kwargs = dict(zip(meta, aux))
        kwargs.update(zip(data, children))
        return cls(**kwargs)

    _add(cls, flatten, unflatten, "dataclass")
    return cls


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _static_flatten(obj: Any) -> tuple[tuple[()], Any]:
    return (), obj


def _static_unflatten(obj: Any, children: Iterable[Any]) -> Any:
    return obj


def register_static(cls: T) -> T:
    """Register ``cls`` as a node with no children: its instances live in the treedef.

    Instances must be hashable (they take part in treedef equality and hashing,
    e.g. as jit cache keys).  Usable as a decorator.

    >>> import arrayx.pytree as pt
    >>> @pt.register_static
    ... class Mode(str):
    ...     pass
    >>> pt.leaves([1, Mode("train")])
    [1]
    >>> pt.structure([1, Mode("train")])
    PyTreeDef([*, CustomNode(Mode[train], [])])
    """
    _check_new(cls, "register_static")
    if getattr(cls, "__hash__", None) is None:
        raise TypeError(f"pytree.register_static: {cls.__name__} must be hashable")
    _add(cls, _static_flatten, _static_unflatten, "static")
    return cls
