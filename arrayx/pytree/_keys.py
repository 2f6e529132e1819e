"""Key entries: the steps of a key path from the root of a pytree to one of its leaves.

A *key path* is a tuple of key entries.  Each entry records how one child is
reached from its parent node:

* :class:`SequenceKey` -- position in a list or tuple (``[0]``),
* :class:`DictKey` -- key of a dict, OrderedDict or defaultdict (``['a']``),
* :class:`GetAttrKey` -- attribute of a namedtuple or dataclass (``.name``),
* :class:`FlattenedIndexKey` -- position among the children of a custom node
  registered without keys (``[<flat index 0>]``).

The string forms match JAX's, so :func:`keystr` output is interchangeable.

>>> keystr((DictKey("params"), SequenceKey(0), GetAttrKey("w")))
"['params'][0].w"
"""
from __future__ import annotations

from typing import Any, Hashable

__all__ = [
    "KeyEntry",
    "KeyPath",
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "keystr",
]


class KeyEntry:
    """Base class of the key entries; one immutable field named by ``_field``."""

    __slots__ = ()
    _field: str = ""

    def _value(self) -> Any:
        return getattr(self, self._field)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._value() == other._value()  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._value()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._field}={self._value()!r})"

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return (type(self), (self._value(),))


class SequenceKey(KeyEntry):
    """Index of a child inside a list or tuple.

    >>> k = SequenceKey(2)
    >>> k.idx, str(k), k
    (2, '[2]', SequenceKey(idx=2))
    """

    __slots__ = ("idx",)
    __match_args__ = ("idx",)
    _field = "idx"
    idx: int

    def __init__(self, idx: int) -> None:
        object.__setattr__(self, "idx", idx)

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


class DictKey(KeyEntry):
    """Key of a child inside a dict, OrderedDict or defaultdict.

    >>> k = DictKey("w")
    >>> k.key, str(k), k
    ('w', "['w']", DictKey(key='w'))
    """

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"
    key: Hashable

    def __init__(self, key: Hashable) -> None:
        object.__setattr__(self, "key", key)

    def __str__(self) -> str:
        return f"[{self.key!r}]"


class GetAttrKey(KeyEntry):
    """Attribute name of a child of a namedtuple, dataclass or keyed custom node.

    >>> k = GetAttrKey("bias")
    >>> k.name, str(k), k
    ('bias', '.bias', GetAttrKey(name='bias'))
    """

    __slots__ = ("name",)
    __match_args__ = ("name",)
    _field = "name"
    name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __str__(self) -> str:
        return f".{self.name}"


class FlattenedIndexKey(KeyEntry):
    """Position of a child of a custom node that was registered without keys.

    >>> k = FlattenedIndexKey(1)
    >>> k.key, str(k), k
    (1, '[<flat index 1>]', FlattenedIndexKey(key=1))
    """

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"
    key: int

    def __init__(self, key: int) -> None:
        object.__setattr__(self, "key", key)

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyPath = tuple  # a tuple of key entries (or any objects with a useful ``str``)


def _simple_str(entry: Any) -> str:
    if isinstance(entry, KeyEntry):
        return str(entry._value())
    return str(entry)


def keystr(path: tuple[Any, ...], *, simple: bool = False, separator: str = "") -> str:
    """Render a key path as text.

    With ``simple=True`` each entry is shown by its bare value (index, key or
    name), which is shorter but can be ambiguous; ``separator`` joins entries.

    >>> path = (DictKey("layers"), SequenceKey(0), GetAttrKey("w"))
    >>> keystr(path)
    "['layers'][0].w"
    >>> keystr(path, simple=True, separator="/")
    'layers/0/w'
    >>> keystr(())
    ''
    """
    render = _simple_str if simple else str
    return separator.join([render(entry) for entry in path])
