"""The core layer (Primitive, bind, traces, avals, Graph IR) sits below the namespace.

``arrayx/api`` builds on ``arrayx.transforms.core``, ``_tracer`` and ``graph``, never the
reverse: importing the core must not import any ``arrayx.api`` module, not even lazily
from a function body.
"""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import arrayx

PKG = pathlib.Path(arrayx.__file__).parent
CORE_MODULES = ("arrayx.transforms.core", "arrayx.transforms._tracer", "arrayx.transforms.graph")


def test_importing_the_core_imports_no_api_module():
    # a bare ``arrayx`` package object, so that arrayx/__init__.py (which assembles the
    # namespace from arrayx.api) does not run
    code = (
        "import sys, types\n"
        "pkg = types.ModuleType('arrayx'); pkg.__path__ = [%r]; sys.modules['arrayx'] = pkg\n"
        "import %s\n"
        "print(sorted(m for m in sys.modules if m.startswith('arrayx.')))\n"
    ) % (str(PKG), ", ".join(CORE_MODULES))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)
    assert set(CORE_MODULES) <= set(loaded)
    assert [m for m in loaded if m.startswith("arrayx.api")] == []


def test_core_source_names_no_api_module():
    for mod in CORE_MODULES:
        path = PKG.joinpath(*mod.split(".")[1:]).with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith("arrayx.api") for n in names), (mod, ast.unparse(node))


def test_array_and_tracer_share_the_core_layout():
    from arrayx.transforms.core import Array, Tracer

    assert arrayx.Array is Array and issubclass(Tracer, Array)
    assert "__add__" in vars(Array) and "__slots__" in vars(Array)
    x = arrayx.asarray([1.0, 2.0])
    assert float((x + x)[1]) == 4.0
