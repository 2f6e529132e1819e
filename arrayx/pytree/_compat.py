"""trax.fastmath-style helpers built on the pytree functions.

>>> nested_map(lambda x: x + 1, {"a": [1, 2], "b": None})
{'a': [2, 3], 'b': None}
>>> nested_zip([(1, {"k": 2}), (3, {"k": 4})])
((1, 3), {'k': (2, 4)})
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from arrayx.pytree._api import map as tree_map

__all__ = ["nested_map", "nested_zip", "nested_stack"]


def _is_none(x: Any) -> bool:
    return x is None


def nested_map(f: Callable[[Any], Any], obj: Any, *, ignore_nones: bool = True) -> Any:
    """Apply ``f`` to every leaf inside the (nested) lists, tuples, dicts and nodes of ``obj``.

    ``None`` values are kept as they are unless ``ignore_nones=False``, in
    which case ``f`` is applied to them as well.

    >>> nested_map(str, [1, (2, None)])
    ['1', ('2', None)]
    >>> nested_map(str, [1, None], ignore_nones=False)
    ['1', 'None']
    """
    return tree_map(f, obj, is_leaf=None if ignore_nones else _is_none)


def _as_tuple(*xs: Any) -> tuple[Any, ...]:
    return xs


def nested_zip(objs: Sequence[Any]) -> Any:
    """Zip same-structured trees into one tree whose leaves are tuples.

    >>> nested_zip([{"a": 1, "b": [2]}, {"a": 3, "b": [4]}])
    {'a': (1, 3), 'b': [(2, 4)]}
    """
    objs = list(objs)
    if not objs:
        raise ValueError("pytree.nested_zip: expected at least one tree")
    return tree_map(_as_tuple, objs[0], *objs[1:])


def nested_stack(objs: Sequence[Any], axis: int = 0) -> Any:
    """Stack corresponding leaves of same-structured trees with ``arrayx.stack``.

    >>> import arrayx
    >>> out = nested_stack([{"w": arrayx.asarray([1, 2])}, {"w": arrayx.asarray([3, 4])}])  # doctest: +SKIP
    >>> out["w"].shape  # doctest: +SKIP
    (2, 2)
    """
    from arrayx.api.manipulation import stack as _stack  # deferred: arrayx.pytree imports without the arrays

    objs = list(objs)
    if not objs:
        raise ValueError("pytree.nested_stack: expected at least one tree")

    def stack(*xs: Any) -> Any:
        return _stack(list(xs), axis=axis)

    return tree_map(stack, objs[0], *objs[1:])
