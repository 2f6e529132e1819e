"""Sphinx configuration of the arrayx documentation.

Build (warnings are errors; the second command runs the pages' examples):

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python -m sphinx -W --keep-going -b doctest docs docs/_build/doctest

The API reference is generated at build time from the public namespace (``arrayx.*`` and the
public submodules), never from file paths, so moving an internal module changes nothing here.
"""
from __future__ import annotations

import importlib
import inspect
import pathlib
import sys
import types

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout's arrayx, also when it is not installed

import arrayx  # noqa: E402

project = "arrayx"
author = "the arrayx authors"
copyright = "the arrayx authors"
release = version = arrayx.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.doctest"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_theme_options = {"page_width": "1100px", "sidebar_width": "230px"}
html_static_path: list[str] = []
templates_path: list[str] = []

autodoc_typehints = "signature"
autodoc_inherit_docstrings = False
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# the pages' examples: `.. doctest::` blocks.  The docstrings' own examples (the API reference) are
# run by tests/test_docstrings.py, each in its module's globals, as doctest runs them.
doctest_test_doctest_blocks = ""
doctest_global_setup = "import arrayx as xp\nxp.set_executor(\"numpy\")  # the outputs shown are the numpy executor's"
doctest_global_cleanup = "xp.set_executor(None)"

# -- the API reference --------------------------------------------------------------------------

# public submodules, in the order of the reference's pages: name -> one line about it
SUBMODULES = {
    "linalg": "The standard's linear algebra extension.",
    "fft": "The standard's Fourier transform extension.",
    "random": "Explicit-key random numbers (threefry2x32), the same bits on every executor and as ``jax.random``.",
    "nn": "Activations and special functions with ``jax.nn`` / ``jax.scipy.special`` signatures.",
    "lax": "Convolutions, windows, dynamic slices and control flow with ``jax.lax`` signatures.",
    "sharding": "Meshes, shardings and ``shard_map``.",
    "pytree": "Pytrees: flatten, unflatten, map and registration with JAX's semantics.",
    "debug": "Printing, callbacks and breakpoints that work under ``jit`` and the other transforms.",
}

# sections of the top-level page: a part of the defining module's dotted name -> title; the
# parts are tried from the last to the first, so both arrayx.api.creation and a future
# arrayx.core.creation land in "Creation".  A name no part matches lands in "More" (so every
# public name is documented, wherever its module moves).
SECTIONS = [
    ("Arrays, executors and modes", ("_array", "array", "_modes", "modes", "base", "executor", "executors",
                                     "_registry", "registry", "devices", "selection")),
    ("Creation", ("creation",)),
    ("Data type functions", ("data_types",)),
    ("Elementwise", ("elementwise",)),
    ("Indexing", ("indexing",)),
    ("Linear algebra in the main namespace", ("linalg",)),
    ("Manipulation", ("manipulation",)),
    ("Searching", ("searching",)),
    ("Sets", ("sets",)),
    ("Sorting", ("sorting",)),
    ("Statistical", ("statistical",)),
    ("Utility", ("utility",)),
    ("Transforms", ("transpose", "forward", "jvp", "autodiff", "batching", "jitting", "jit", "staging", "custom",
                    "checkpointing", "remat", "debug", "_tracer", "tracers", "avals", "nan_checks", "float_checks",
                    "transforms")),
    ("Control flow", ("control_flow",)),
    ("Many devices", ("parallel", "pmap", "collectives", "sharding")),
]


def _section(obj) -> str:
    parts = (getattr(obj, "__module__", "") or "").split(".")[1:]
    for part in reversed(parts):
        for title, names in SECTIONS:
            if part in names:
                return title
    return "More"


def _kind(obj) -> str | None:
    if inspect.isclass(obj):
        return "autoclass"
    if inspect.isroutine(obj) or callable(obj) and not isinstance(obj, types.ModuleType):
        return "autofunction"
    return None


def _public(module) -> list[str]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    return sorted(set(names))


def _entry(qualname: str, obj) -> str:
    kind = _kind(obj)
    if kind == "autoclass":
        return f".. autoclass:: {qualname}\n   :members:\n   :undoc-members:\n"
    return f".. {kind}:: {qualname}\n"


def _title(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def _top_level_page() -> str:
    groups: dict[str, list[str]] = {title: [] for title, _ in SECTIONS}
    groups["More"] = []
    values = []
    for name in _public(arrayx):
        obj = getattr(arrayx, name)
        if isinstance(obj, types.ModuleType) or name == "annotations":
            continue
        if _kind(obj) is None:
            values.append(name)
            continue
        groups[_section(obj)].append(name)
    out = [".. This page is generated by docs/conf.py from dir(arrayx); edits here are lost.\n",
           _title("arrayx", "="),
           ".. automodule:: arrayx\n   :no-members:\n",
           "Submodules: " + ", ".join(f":doc:`arrayx.{s} <{s}>`" for s in SUBMODULES) + ".\n",
           _title("Data types and constants", "-"),
           "Data types: " + ", ".join(f"``{n}``" for n in values if n not in ("e", "inf", "nan", "pi", "newaxis",
                                                                         "checkpoint_policies")) + ".\n",
           "Constants: ``e``, ``inf``, ``nan``, ``pi``, ``newaxis``.  ``checkpoint_policies`` holds the "
           "policies of :func:`arrayx.checkpoint`.\n"]
    for title, names in groups.items():
        if names:
            out.append(_title(title, "-"))
            out += [_entry(f"arrayx.{n}", getattr(arrayx, n)) for n in names]
    return "\n".join(out)


def _submodule_page(sub: str, blurb: str) -> str:
    module = importlib.import_module(f"arrayx.{sub}")
    out = [".. This page is generated by docs/conf.py from the module's __all__; edits here are lost.\n",
           _title(f"arrayx.{sub}", "="), blurb + "\n",
           f".. automodule:: arrayx.{sub}\n   :no-members:\n"]
    for name in _public(module):
        obj = getattr(module, name)
        if _kind(obj) is not None and not isinstance(obj, types.ModuleType):
            out.append(_entry(f"arrayx.{sub}.{name}", obj))
    return "\n".join(out)


def write_api_pages(app) -> None:
    folder = HERE / "api"
    folder.mkdir(exist_ok=True)
    pages = {"arrayx": _top_level_page()}
    pages.update({sub: _submodule_page(sub, blurb) for sub, blurb in SUBMODULES.items()})
    index = [".. generated by docs/conf.py\n", _title("API reference", "="),
             "Generated from the docstrings of the public namespace.  Examples in them run as tests "
             "(``tests/test_docstrings.py``).\n",
             ".. toctree::\n   :maxdepth: 1\n\n" + "".join(f"   {p}\n" for p in pages)]
    pages["index"] = "\n".join(index)
    for name, text in pages.items():
        path = folder / f"{name}.rst"
        if not path.exists() or path.read_text() != text:  # unchanged pages keep their build
            path.write_text(text)


def plain_attribute_comments(app, what, name, obj, options, lines) -> None:
    """Attribute comments (``#: ...`` above a class attribute) are plain one-liners, not
    reStructuredText: a ``*`` in them (``callable(*args)``) is a literal star, outside literals."""
    if what != "attribute":
        return
    for i, line in enumerate(lines):
        parts = line.split("``")
        lines[i] = "``".join(p if k % 2 else p.replace("*", "\\*") for k, p in enumerate(parts))


def setup(app):
    app.connect("builder-inited", write_api_pages)
    app.connect("autodoc-process-docstring", plain_attribute_comments)
