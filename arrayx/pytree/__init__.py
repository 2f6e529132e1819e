"""Pytrees: nested containers whose non-container values (leaves) transforms work on.

Semantics follow JAX's ``jax.tree``: lists, tuples, dicts (leaves in sorted-key
order), OrderedDicts and defaultdicts, namedtuples and ``None`` (a node without
leaves) are nodes; everything else is a leaf unless registered with one of the
``register_*`` functions.  The hot path (flatten, unflatten, map) runs in
optree's C++ code, in the ``'arrayx'`` registry namespace; structures of plain
containers that keep coming back (a training loop's parameters) get a flatten
and unflatten generated for them (``_specialise.py``), with the same results.

This package imports nothing else from arrayx at import time.

Import cycles: ``_treedef`` and ``_diagnose``: a failed structure match in ``_treedef`` asks
``_diagnose`` to explain it, and the explanation flattens with ``_treedef``'s checked flatten; both
imports are inside the functions that need them.
>>> import arrayx.pytree as pt
>>> params = {"dense": {"w": 1.0, "b": 0.0}, "scale": (2.0,)}
>>> leaves, treedef = pt.flatten(params)
>>> leaves
[0.0, 1.0, 2.0]
>>> treedef
PyTreeDef({'dense': {'b': *, 'w': *}, 'scale': (*,)})
>>> pt.unflatten(treedef, [x + 1 for x in leaves]) == {"dense": {"w": 2.0, "b": 1.0}, "scale": (3.0,)}
True
>>> [pt.keystr(path) for path, _ in pt.leaves_with_path(params)]
["['dense']['b']", "['dense']['w']", "['scale'][0]"]
"""
from __future__ import annotations

from arrayx.pytree._api import (
    all,
    broadcast,
    broadcast_prefix,
    flatten,
    flatten_with_path,
    leaves,
    leaves_with_path,
    map,
    map_with_path,
    reduce,
    structure,
    transpose,
    unflatten,
)
from arrayx.pytree._compat import nested_map, nested_stack, nested_zip
from arrayx.pytree._keys import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    keystr,
)
from arrayx.pytree._registry import (
    register_dataclass,
    register_node,
    register_node_class,
    register_node_with_keys,
    register_static,
)
from arrayx.pytree._treedef import PyTreeDef

__all__ = [
    # flatten / rebuild
    "flatten",
    "unflatten",
    "leaves",
    "structure",
    "PyTreeDef",
    # transformations of trees
    "map",
    "reduce",
    "all",
    "transpose",
    "broadcast",
    "broadcast_prefix",
    # key paths
    "flatten_with_path",
    "leaves_with_path",
    "map_with_path",
    "keystr",
    "KeyEntry",
    "KeyPath",
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    # registration
    "register_node",
    "register_node_with_keys",
    "register_node_class",
    "register_dataclass",
    "register_static",
    # trax.fastmath-style helpers
    "nested_map",
    "nested_zip",
    "nested_stack",
]
