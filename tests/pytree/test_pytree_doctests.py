"""The docstring examples of arrayx.pytree run, and the package imports on its own."""
from __future__ import annotations

import doctest
import importlib
import os
import subprocess
import sys

import pytest

MODULES = [
    "arrayx.pytree",
    "arrayx.pytree._api",
    "arrayx.pytree._compat",
    "arrayx.pytree._diagnose",
    "arrayx.pytree._keys",
    "arrayx.pytree._registry",
    "arrayx.pytree._treedef",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}"


def test_public_names():
    import arrayx.pytree as pt

    for name in pt.__all__:
        assert hasattr(pt, name), name
    for name in ["flatten", "unflatten", "leaves", "structure", "map", "reduce", "all", "transpose",
                 "broadcast", "flatten_with_path", "leaves_with_path", "map_with_path", "keystr",
                 "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "register_node",
                 "register_node_with_keys", "register_node_class", "register_dataclass",
                 "register_static", "nested_map", "nested_zip", "nested_stack", "PyTreeDef"]:
        assert name in pt.__all__, name


def test_imports_without_the_rest_of_arrayx():
    """With an empty stand-in for the parent package, only arrayx.pytree.* gets imported."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (
        "import sys, types\n"
        f"pkg = types.ModuleType('arrayx'); pkg.__path__ = [{os.path.join(root, 'arrayx')!r}]\n"
        "sys.modules['arrayx'] = pkg\n"
        "import arrayx.pytree as pt\n"
        "assert pt.leaves({'a': [1, 2]}) == [1, 2]\n"
        "others = sorted(m for m in sys.modules if m.startswith('arrayx.') and not m.startswith('arrayx.pytree'))\n"
        "assert not others, others\n"
        "assert 'jax' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
