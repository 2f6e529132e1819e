"""The import graph of arrayx, counting EVERY import statement (module level, function-local, typing-only).

Each package (a folder with ``__init__.py``) is a node, and so is each top-level module
(``arrayx/random.py``, ``arrayx/nn.py`` ...); ``arrayx/__init__.py``, the assembled namespace, is the
top and nothing inside arrayx imports it (``arrayx/__main__.py``, the program, stands above it).
Asserted here:

- the graph of packages has no cycle (a package contains its subpackages: its modules importing
  them is not an edge; a subpackage importing its parent's modules is, so parent and child cannot
  both lean on each other except through a module cycle, which the last rule catches);
- ``arrayx.core`` imports only the standard library, third-party packages and ``arrayx.core.*``;
- a cycle between modules stays inside one package, and that package's ``__init__`` docstring names
  each of its modules under "Import cycles" and says why.
"""
from __future__ import annotations

import ast
import doctest
import functools
import inspect
import pathlib
import subprocess
import sys

import arrayx

PKG = pathlib.Path(arrayx.__file__).parent
TOP = "arrayx"
PROGRAM = "arrayx.__main__"


def _modules() -> dict:
    """module name -> (path, is_package)"""
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = [TOP, *p.relative_to(PKG).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (p, is_pkg)
    return mods


MODULES = _modules()


def _targets(mod: str, is_pkg: bool, node) -> list:
    """The arrayx modules one import statement loads (the deepest existing module of each name)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = mod.split(".") if is_pkg else mod.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and (name == TOP or name.startswith(TOP + ".")):
            out.append(name)
    return out


def _edges() -> dict:
    """module -> {imported module: first line that imports it}, every import statement counted."""
    edges = {}
    for mod, (path, is_pkg) in MODULES.items():
        found = edges.setdefault(mod, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(mod, is_pkg, node):
                    if target != mod:
                        found.setdefault(target, f"{path.relative_to(PKG.parent)}:{node.lineno}")
    return edges


_edges_once = functools.cache(_edges)  # read when a test asks (not at collection: every xdist worker collects)


def package_of(mod: str) -> str:
    """The node a module belongs to: its package; a top-level module (arrayx/random.py) is its own."""
    if MODULES[mod][1] or mod.count(".") == 1:
        return mod
    return mod.rpartition(".")[0]


def _sccs(graph: dict) -> list:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def package_graph() -> dict:
    graph = {}
    for mod, targets in _edges_once().items():
        a = package_of(mod)
        for target, where in targets.items():
            b = package_of(target)
            if a == b or b.startswith(a + "."):
                continue  # inside one package, or a package using its own subpackage (it contains it)
            graph.setdefault(a, {}).setdefault(b, where)
    return graph


def test_nothing_inside_imports_the_top():
    bad = [f"{where}: {mod} imports {TOP}" for mod, targets in _edges_once().items() if mod != PROGRAM
           for target, where in targets.items() if target == TOP]
    assert bad == [], "\n".join(bad)


def test_no_cycle_between_packages():
    graph = package_graph()
    cycles = _sccs({a: set(bs) for a, bs in graph.items()})
    detail = []
    for comp in cycles:
        for a in comp:
            detail += [f"  {a} -> {b} ({where})" for b, where in graph.get(a, {}).items() if b in comp]
    assert cycles == [], "package cycles:\n" + "\n".join(detail)


def test_the_core_imports_only_itself():
    bad = [f"{where}: {mod} imports {target}" for mod, targets in _edges_once().items()
           if mod == "arrayx.core" or mod.startswith("arrayx.core.")
           for target, where in targets.items() if not (target == "arrayx.core" or target.startswith("arrayx.core."))]
    assert bad == [], "\n".join(bad)


def test_the_executors_build_on_the_core_not_on_the_namespace_or_the_interpreters():
    """Executors import core, each other (NumPy's table is numba's and cupy's start) and the sharding
    records; never the namespace (``arrayx.api``), the interpreters (``arrayx.transforms``) or lax:
    what the namespace registers for them goes through core (``GENERIC``, ``ELEMENTWISE``)."""
    above = ("arrayx.api", "arrayx.transforms", "arrayx.lax", "arrayx.nn", "arrayx.random")
    bad = [f"{where}: {mod} imports {target}" for mod, targets in _edges_once().items()
           if mod.startswith("arrayx.executors")
           for target, where in targets.items() if any(target == a or target.startswith(a + ".") for a in above)]
    assert bad == [], "\n".join(bad)


def test_module_cycles_stay_inside_a_package_that_documents_them():
    problems = []
    for comp in _sccs({m: set(t) for m, t in _edges_once().items()}):
        packages = {package_of(m) for m in comp}
        if len(packages) != 1:
            problems.append(f"cycle across packages {sorted(packages)}: {comp}")
            continue
        (package,) = packages
        doc = ast.get_docstring(ast.parse(MODULES[package][0].read_text())) or ""
        section = doc.partition("Import cycles")[2]
        missing = [m for m in comp if m.rpartition(".")[2] not in section]
        if not section or missing:
            problems.append(f"{package}: the cycle {comp} is not documented under 'Import cycles' in its "
                            f"__init__ docstring (missing: {missing})")
    assert problems == [], "\n".join(problems)


def test_the_graph_is_read_from_every_kind_of_import():
    # function-local and relative imports count: the test must see them
    assert "arrayx.core.tracers" in _edges_once()["arrayx.core.graph"]  # a function-local import in graph.py
    assert "arrayx.executors.numba.kernels" in _edges_once()["arrayx.executors.numba.cache"]  # function-local
    assert package_of("arrayx.random") == "arrayx.random" and package_of("arrayx.core.graph") == "arrayx.core"
    assert _sccs({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_importing_the_core_loads_nothing_above_it():
    # a bare ``arrayx`` package object, so that arrayx/__init__.py (the namespace) does not run
    code = (
        "import sys, types\n"
        "pkg = types.ModuleType('arrayx'); pkg.__path__ = [%r]; sys.modules['arrayx'] = pkg\n"
        "import arrayx.core, arrayx.core.axis_env\n"
        "print(sorted(m for m in sys.modules if m.startswith('arrayx.')))\n"
    ) % str(PKG)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)
    assert "arrayx.core.lowering" in loaded and "arrayx.core.executor" in loaded
    assert [m for m in loaded if not m.startswith("arrayx.core")] == []


def test_array_is_documented_where_help_lands():
    from arrayx.core.array import Array
    from arrayx.core.tracers import Tracer

    assert arrayx.Array is Array and issubclass(Tracer, Array)
    assert pathlib.Path(inspect.getsourcefile(arrayx.Array)) == PKG / "core" / "array.py"
    assert "__add__" in vars(Array) and "__slots__" in vars(Array)
    assert ">>>" in Array.__doc__
    for name in ("__getitem__", "to_device", "__array_namespace__", "at", "sharding"):
        assert inspect.getdoc(getattr(Array, name)), name
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(Array, "Array", globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


BUILTIN_EXECUTORS = ("numpy", "numba", "jax", "dask", "cupy")


def _owner_and_file(name: str, prim: str, fn):
    """(the executor whose code ``fn`` is, its source file), or None for a library's own function
    (``np.matmul``, a SciPy ufunc) that arrayx does not write.  The numba table starts as the numpy
    executor's: an entry it shares with it is NumPy's."""
    from arrayx.core import executor as base

    owner = "numpy" if name == "numba" and fn is base.get("numpy").table.get(prim) else name
    fn = inspect.unwrap(getattr(fn, "func", fn))  # functools.partial, decorators
    if not inspect.isfunction(fn):
        return None
    path = pathlib.Path(inspect.getsourcefile(fn)).resolve()
    return (owner, path) if path.is_relative_to(PKG.resolve()) else None


def test_every_executor_entry_is_written_in_that_executors_package():
    # "lax.conv on dask" is in arrayx/executors/dask/: every Python function in an executor's table
    # lies under arrayx/executors/<that executor>/, or in executors/common/ (pieces several share)
    from arrayx.core import executor as base

    problems, checked = [], 0
    for name in BUILTIN_EXECUTORS:
        for prim, fn in base.get(name).table.items():
            found = None if fn is None else _owner_and_file(name, prim, fn)
            if found is None:
                continue
            owner, path = found
            homes = (PKG / "executors" / owner, PKG / "executors" / "common")
            checked += 1
            if not any(path.is_relative_to(home.resolve()) for home in homes):
                problems.append(f"{name}: {prim} is {fn!r} from {path.relative_to(PKG.parent)}")
    assert problems == [], "\n".join(problems)
    assert checked > 200
    for name in ("numpy", "jax", "dask", "cupy"):  # the categories that moved into the executors
        table = base.get(name).table
        for prim in ("conv", "reduce_window", "window_select", "window_scatter", "erf", "erfinv", "libm_log"):
            owner, path = _owner_and_file(name, prim, table[prim]) or (name, None)
            assert path is None or path.parent == PKG / "executors" / name, (name, prim, path)
    jax_table = base.get("jax").table
    for prim in ("psum", "all_gather", "xla_fma", "sharding_constraint"):
        assert pathlib.Path(inspect.getsourcefile(jax_table[prim])).parent == PKG / "executors" / "jax"


def test_the_numba_table_starts_as_numpys_and_generic_implementations_live_in_one_table():
    from arrayx.core import executor as base
    from arrayx.core.primitives import Primitive

    numpy_table, numba_table = base.get("numpy").table, base.get("numba").table
    # the same entries, but for Numba's own fft functions (executors/common/fft.py: threads) and
    # svd (numba/linalg.py) ...
    own = {k for k, fn in numpy_table.items() if numba_table[k] is not fn}
    assert own == {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn", "svd"}, own
    assert set(numba_table) == set(numpy_table)
    assert numba_table["conv"] is numpy_table["conv"] and numba_table["libm_log"] is numpy_table["libm_log"]
    assert "impls" not in Primitive.__slots__  # ... and no implementations kept on primitives
    for name in ("astype", "concat", "psum", "stop_gradient", "sharding_constraint", "full"):
        assert name in base.GENERIC, name
    # every GENERIC entry is written beside its primitive, above the executors
    for name, fn in base.GENERIC.items():
        path = pathlib.Path(inspect.getsourcefile(fn)).resolve()
        assert not path.is_relative_to((PKG / "executors").resolve()), (name, path)
