"""The examples in the public API's docstrings run and print what they show.

The objects are found through the public namespace, as a user meets them (``arrayx.<name>`` and
the public submodules' ``__all__``), not through file paths, so moving a module does not change
what is checked.  Each docstring with examples is one test, named after its public name.
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import types

import pytest

import arrayx

# the public submodules whose names the docs document (arrayx.<sub>.<name>)
SUBMODULES = ("linalg", "fft", "lax", "nn", "random", "sharding", "pytree", "debug")
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return sorted(set(names))


def _owned(obj) -> bool:
    """Objects defined by arrayx (not re-exported builtins, NumPy objects or typing helpers)."""
    mod = getattr(obj, "__module__", None) or ""
    return mod == "arrayx" or mod.startswith("arrayx.")


MODULES: dict[str, str] = {}  # public name -> the module whose globals its examples run in


def collect() -> dict[str, doctest.DocTest]:
    """Every docstring with examples among the public objects, keyed by its public name; an object
    reachable under two names is checked once, under the first (``arrayx.<name>`` before submodules)."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests: dict[str, doctest.DocTest] = {}
    seen: set[int] = set()
    modules = [("arrayx", arrayx)] + [(f"arrayx.{s}", importlib.import_module(f"arrayx.{s}")) for s in SUBMODULES]
    for prefix, module in modules:
        if id(module) not in seen:  # the module's own docstring (not its members: they follow by name)
            seen.add(id(module))
            for t in doctest.DocTestFinder(recurse=False, exclude_empty=True).find(module, prefix, globs={}):
                tests[t.name] = t
                MODULES[t.name] = module.__name__
        for name in _public_names(module):
            obj = getattr(module, name, None)
            if obj is None or isinstance(obj, types.ModuleType) or id(obj) in seen:
                continue
            if not (inspect.isroutine(obj) or inspect.isclass(obj)) or not _owned(obj):
                continue
            seen.add(id(obj))
            # module=False: a class's methods are searched whatever module they were attached from
            for t in finder.find(obj, f"{prefix}.{name}", module=False, globs={}):
                tests[t.name] = t
                MODULES[t.name] = obj.__module__
    return {k: v for k, v in sorted(tests.items()) if v.examples}


TESTS = collect()


def test_the_public_api_has_docstring_examples():
    assert sum(len(t.examples) for t in TESTS.values()) >= 70, sorted(TESTS)


@pytest.mark.parametrize("name", sorted(TESTS))
def test_docstring_examples_run(name):
    test = TESTS[name]
    # run as doctest runs a module's examples: in a copy of the globals of the module that defines
    # the object (arrayx.pytree's examples use its names unqualified)
    test.globs = dict(vars(importlib.import_module(MODULES[name])))
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    out: list[str] = []
    with arrayx.use_executor("numpy"):  # the outputs shown are the numpy executor's, whatever ARRAYX_EXECUTOR says
        result = runner.run(test, out=out.append, clear_globs=True)
    assert result.failed == 0, "".join(out)
