"""Where a reader finds a standard function (issue 28): its API, its rules and each executor's code
in files named after the spec category and the executor.

For every function of the standard namespace (``conformance.spec``: the main namespace, linalg
and fft) the checks find, with ``inspect``:

- the file defining the public function: ``arrayx/api/<category>.py``, a category of the spec
  (its chapters, the extensions ``linalg`` and ``fft``, and ``info``);
- its primitive (the one named after it, where it has one): defined in that same module;
- every file registering one of the primitive's transform rules (``jvp``, ``transpose``, ``batch``,
  ``abstract_eval``; recorded as they are assigned, in a fresh interpreter):
  ``arrayx/transforms/rules/<category>.py``;
- its generic implementations (its ``arrayx.core.executor.GENERIC`` entry, ``lowerings["*"]``,
  ``composition``), which any executor runs: the category's API or rules file;
- each executor's implementation (its table entry; a library's own function counts as the
  executor class that lists it in ``overrides``) and jit lowering:
  ``arrayx/executors/<executor>.py`` or ``arrayx/executors/<executor>/``, the file of an executor it
  extends (the numba executor is the NumPy executor plus kernels), or
  ``arrayx/executors/common/<category>.py``, the implementation NumPy-like buffers share.
"""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import os
import pathlib
import subprocess
import sys

import pytest

import arrayx
from arrayx.core import executor as _executors
from arrayx.core.primitives import Primitive, primitives
from conformance import spec

ROOT = pathlib.Path(arrayx.__file__).resolve().parent  # the arrayx package
REPO = ROOT.parent

#: the spec's chapters (``conformance.spec.MAIN_MODULES``) -> the module of arrayx/api named after each
CHAPTERS = {
    "creation_functions": "creation", "data_type_functions": "data_types",
    "elementwise_functions": "elementwise", "indexing_functions": "indexing",
    "linear_algebra_functions": "linalg", "manipulation_functions": "manipulation",
    "searching_functions": "searching", "set_functions": "sets", "sorting_functions": "sorting",
    "statistical_functions": "statistical", "utility_functions": "utility",
}
CATEGORIES = set(CHAPTERS.values()) | set(spec.EXTENSIONS) | {"info"}


def test_every_chapter_of_the_spec_has_its_module():
    assert set(spec.MAIN_MODULES) - {"constants"} == set(CHAPTERS)
    for category in CATEGORIES:
        assert (ROOT / "api" / f"{category}.py").is_file(), category
    for category in CATEGORIES - {"info"}:
        assert (ROOT / "transforms" / "rules" / f"{category}.py").is_file(), category


def _rel(path) -> str | None:
    """``path`` relative to the arrayx package ("api/creation.py"; "../tests/x.py" elsewhere in the
    repository), None outside the repository or in an installed package (a library's file, also
    when the virtual environment sits inside the checkout)."""
    path = pathlib.Path(path).resolve()
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return None
    if path.is_relative_to(ROOT):
        return path.relative_to(ROOT).as_posix()
    if path.is_relative_to(REPO):
        return "../" + path.relative_to(REPO).as_posix()
    return None


def _standard_functions() -> list[tuple[str, object]]:
    out = []
    for qualified in spec.all_functions():
        *ext, name = qualified.split(".")
        ns = getattr(arrayx, ext[0]) if ext else arrayx
        out.append((qualified, getattr(ns, name)))
    return out


FUNCTIONS = _standard_functions()


def _source(fn) -> str:
    """Where ``fn`` is written: the def a reader finds (a function wrapped by api/_fast_paths.py's
    decorators is written in its category's module; the wrapper's own code is generic)."""
    return _rel(inspect.getsourcefile(inspect.unwrap(fn)))


def _category(fn) -> str:
    return _source(fn).removeprefix("api/").removesuffix(".py")


def _own_primitive(qualified: str) -> Primitive | None:
    return primitives.get(qualified.rpartition(".")[2])


def _primitive_modules() -> dict:
    """Primitive name -> the api category module that defines it."""
    out = {}
    for category in CATEGORIES:
        for value in vars(importlib.import_module(f"arrayx.api.{category}")).values():
            if isinstance(value, Primitive):
                out.setdefault(value.name, category)
    return out


def test_each_function_is_defined_in_the_module_of_its_category():
    prim_module = _primitive_modules()
    misplaced = []
    for qualified, fn in FUNCTIONS:
        where = _source(fn)
        category = _category(fn)
        if not where.startswith("api/") or category not in CATEGORIES:
            misplaced.append(f"{qualified}: defined in {where}")
            continue
        prim = _own_primitive(qualified)
        if prim is not None and prim_module.get(prim.name) != category:
            misplaced.append(f"{qualified}: its primitive {prim.name} is defined in api/{prim_module.get(prim.name)}.py")
    assert misplaced == [], "\n".join(misplaced)


# -- rules: recorded where they are assigned ---------------------------------------------------------

#: run in a fresh interpreter: ``Primitive.__setattr__`` records the file that assigns each rule
#: (past the rule-defining helpers of rules/_define.py and rules/_batch.py), then arrayx and every
#: layer that registers rules are imported
_RECORD_RULE_SITES = r'''
import importlib, importlib.abc, importlib.machinery, json, sys

SLOTS = {"jvp", "transpose", "batch", "abstract_eval"}
HELPERS = ("/arrayx/transforms/rules/_define.py", "/arrayx/transforms/rules/_batch.py")
sites = {}


def recording_setattr(self, attr, value):
    object.__setattr__(self, attr, value)
    if attr in SLOTS and value is not None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.replace("\\", "/").endswith(HELPERS):
            frame = frame.f_back
        sites.setdefault(self.name, {}).setdefault(attr, []).append(frame.f_code.co_filename)


class PatchPrimitive(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "arrayx.core.primitives":
            return None
        sys.meta_path.remove(self)
        found = importlib.machinery.PathFinder.find_spec(name, path)
        run = found.loader.exec_module

        def exec_module(module):
            run(module)
            module.Primitive.__setattr__ = recording_setattr

        found.loader.exec_module = exec_module
        return found


sys.meta_path.insert(0, PatchPrimitive())
for module in ("arrayx", "arrayx.transforms.rules", "arrayx.lax", "arrayx.nn", "arrayx.random",
               "arrayx.sharding", "arrayx.linalg", "arrayx.fft"):
    importlib.import_module(module)
print(json.dumps(sites))
'''


@pytest.fixture(scope="module")
def rule_sites() -> dict:
    """Primitive name -> {rule slot: [files that assigned it]}."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _RECORD_RULE_SITES], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_recorder_sees_where_rules_are_registered(rule_sites):
    # the checks below can fail: the recorder names the registering files, helpers skipped
    assert _rel(rule_sites["sin"]["jvp"][0]) == "transforms/rules/elementwise.py"
    assert _rel(rule_sites["sin"]["batch"][0]) == "transforms/rules/elementwise.py"
    assert _rel(rule_sites["matmul"]["jvp"][0]) == "transforms/rules/linalg.py"
    assert _rel(rule_sites["sum"]["abstract_eval"][0]) == "transforms/rules/statistical.py"


def test_each_primitive_has_its_rules_in_the_rules_module_of_its_category(rule_sites):
    misplaced = []
    for qualified, fn in FUNCTIONS:
        prim = _own_primitive(qualified)
        if prim is None:
            continue
        want = f"transforms/rules/{_category(fn)}.py"
        for slot, files in rule_sites.get(prim.name, {}).items():
            misplaced += [f"{qualified}: its {slot} rule is registered in {_rel(f)}, not {want}"
                          for f in files if _rel(f) != want]
    assert misplaced == [], "\n".join(misplaced)


def _primitives_created_in(path: pathlib.Path) -> list[str]:
    """The names of the primitives ``path`` creates (``Primitive("name", ...)`` calls)."""
    return [node.args[0].value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Primitive"
            and node.args and isinstance(node.args[0], ast.Constant)]


def test_every_primitive_of_the_namespace_has_its_rules_in_the_rules_module_of_its_file(rule_sites):
    # the internal primitives too (gather, scatter, slice of api/indexing.py; api/_internal.py's in
    # rules/internal.py): a module of arrayx/api and the rules module of the same name
    misplaced, seen = [], 0
    for path in sorted((ROOT / "api").glob("*.py")):
        want = f"transforms/rules/{path.stem.lstrip('_')}.py"
        for name in _primitives_created_in(path):
            seen += 1
            for slot, files in rule_sites.get(name, {}).items():
                misplaced += [f"{name} (api/{path.name}): its {slot} rule is registered in {_rel(f)}, not {want}"
                              for f in files if _rel(f) != want]
    assert seen > 150 and misplaced == [], "\n".join(misplaced)


def test_generic_implementations_sit_with_the_function():
    misplaced = []
    for qualified, fn in FUNCTIONS:
        prim = _own_primitive(qualified)
        if prim is None:
            continue
        category = _category(fn)
        allowed = {f"api/{category}.py", f"transforms/rules/{category}.py"}
        generic = {"GENERIC": _executors.GENERIC.get(prim.name), "lowerings['*']": prim.lowerings.get("*"),
                   "composition": prim.composition}
        for what, impl in generic.items():
            if impl is not None and (where := _source_of(impl)) not in allowed:
                misplaced.append(f"{qualified}: {what} in {where}")
    assert misplaced == [], "\n".join(misplaced)


# -- executors ------------------------------------------------------------------------------------


def _source_of(fn) -> str | None:
    """The arrayx file defining ``fn`` (partials and wrappers unwrapped); None for a library's function."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = inspect.unwrap(fn)
    try:
        where = inspect.getsourcefile(fn)
    except TypeError:  # a builtin or a ufunc
        return None
    return _rel(where) if where else None


def _executor_code_file(ex, prim_name: str, fn) -> str:
    """Where a reader finds ``ex``'s code for ``prim_name``: the file defining its table entry, or
    for a library's function the executor class listing it in ``overrides``."""
    where = _source_of(fn)
    if where is not None:
        return where
    for cls in type(ex).__mro__:
        if prim_name in vars(cls).get("overrides", {}):
            return _rel(inspect.getsourcefile(cls))
    return "(added to the table outside any executor class)"


def _executor_files(ex, category: str) -> tuple[set, tuple]:
    """The files that may hold ``ex``'s code: its own, those of the executors it extends, and the
    shared implementation of the category (exact files, folder prefixes)."""
    files = {f"executors/common/{category}.py"}
    prefixes = []
    for cls in type(ex).__mro__:
        if issubclass(cls, _executors.Executor) and cls is not _executors.Executor:
            own = _rel(inspect.getsourcefile(cls))
            name = getattr(cls, "name", "")
            files.add(f"executors/{name}.py")
            prefixes.append(f"executors/{name}/")
            files.add(own)
    return files, tuple(prefixes)


def _misplaced_executor_code(ex, qualified: str, category: str, prim: Primitive) -> list[str]:
    files, prefixes = _executor_files(ex, category)
    out = []
    entries = {"table": ex.table.get(prim.name), "lowering": prim.lowerings.get(ex.name)}
    for what, fn in entries.items():
        if fn is None:
            continue
        where = _executor_code_file(ex, prim.name, fn)
        if where not in files and not where.startswith(prefixes):
            out.append(f"{qualified}: the {ex.name} executor's {what} entry is in {where}")
    return out


def test_the_executor_check_can_fail():
    ex = _executors.get("numpy")

    def stray(x):
        return x

    fake = Primitive("layout_test_stray")
    try:
        fake.lowerings["numpy"] = stray
        found = _misplaced_executor_code(ex, "stray", "elementwise", fake)
    finally:
        del primitives["layout_test_stray"]
    assert found == ["stray: the numpy executor's lowering entry is in ../tests/test_layout.py"], found


@pytest.mark.parametrize("executor_name", _executors.registered())
def test_each_executors_code_is_in_its_own_files(executor_name):
    ex = _executors.get(executor_name)  # the table is static: no need for the library to be installed
    misplaced = []
    for qualified, fn in FUNCTIONS:
        prim = _own_primitive(qualified)
        if prim is not None:
            misplaced += _misplaced_executor_code(ex, qualified, _category(fn), prim)
    assert misplaced == [], "\n".join(misplaced)
