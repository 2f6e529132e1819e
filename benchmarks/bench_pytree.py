"""Benchmark arrayx.pytree against jax.tree_util (C++), side by side in one process.

Run from the repository root::

    python benchmarks/bench_pytree.py            # full run (under a minute)
    python benchmarks/bench_pytree.py --quick    # fewer repeats

For every operation on a 1,000-leaf nested dict/list tree (100 "layers", each a
dict holding a list of 8 arrays, an array and a nested dict) it times arrayx,
jax.tree_util and raw optree (the engine under arrayx, for reference) with
``timeit``, keeps the best of many short (~2 ms) repeats, alternating the
libraries between repeats so that machine noise hits them alike (short
repeats make the minimum robust on a busy machine), and prints
time-per-call and the arrayx/jax ratio.  Results are written to
``benchmarks/results/pytree.json``.  The target is ratio <= 1.5 for
flatten + unflatten and for map.

arrayx specialises structures that keep coming back (see arrayx/pytree/_specialise.py), which
is what these loops measure.  The rows marked "(optree path)" turn that off, measuring what a
structure seen for the first time costs.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import timeit
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import optree  # noqa: E402


def _import_pytree():
    """``arrayx.pytree``; if the rest of arrayx fails to import, load the pytree package alone."""
    try:
        import arrayx.pytree as module
    except Exception as exc:  # arrayx.pytree itself needs nothing else from arrayx
        import importlib
        import types

        print(f"note: 'import arrayx' failed ({type(exc).__name__}: {exc}); "
              "loading arrayx.pytree on its own", file=sys.stderr)
        for name in [m for m in sys.modules if m == "arrayx" or m.startswith("arrayx.")]:
            del sys.modules[name]
        stub = types.ModuleType("arrayx")
        stub.__path__ = [os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "arrayx")]
        sys.modules["arrayx"] = stub
        module = importlib.import_module("arrayx.pytree")
    return module


pt = _import_pytree()

try:
    import jax
    import jax.tree_util as jtu
except ImportError:  # pragma: no cover
    jax = None
    jtu = None

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "pytree.json")
NS = "arrayx"


def make_tree(layers: int = 100) -> dict[str, Any]:
    """A parameter-like tree: ``layers`` x (8 + 1 + 1) array leaves = 1,000 leaves."""
    leaf = np.zeros(2, dtype=np.float32)
    return {
        f"layer{i:03d}": {"w": [leaf] * 8, "b": leaf, "norm": {"scale": leaf}}
        for i in range(layers)
    }


def identity(x: Any) -> Any:
    return x


def first(x: Any, y: Any) -> Any:
    return x


def cases(tree: Any) -> dict[str, dict[str, Callable[[], Any]]]:
    """Operation name -> {library: zero-argument callable}."""
    from arrayx.pytree import _specialise

    for _ in range(_specialise.SPECIALISE_AFTER + 2):  # a structure that keeps coming back
        a_leaves, a_def = pt.flatten(tree)
    o_leaves, o_spec = optree.tree_flatten(tree, none_is_leaf=False, namespace=NS)
    table: dict[str, dict[str, Callable[[], Any]]] = {
        "flatten": {
            "arrayx": lambda: pt.flatten(tree),
            "optree": lambda: optree.tree_flatten(tree, none_is_leaf=False, namespace=NS),
        },
        "unflatten": {
            "arrayx": lambda: pt.unflatten(a_def, a_leaves),
            "optree": lambda: optree.tree_unflatten(o_spec, o_leaves),
        },
        "flatten+unflatten": {
            "arrayx": lambda: pt.unflatten(*reversed(pt.flatten(tree))),
            "optree": lambda: optree.tree_unflatten(
                *reversed(optree.tree_flatten(tree, none_is_leaf=False, namespace=NS))),
        },
        "map": {
            "arrayx": lambda: pt.map(identity, tree),
            "optree": lambda: optree.tree_map(identity, tree, none_is_leaf=False, namespace=NS),
        },
        "map (2 trees)": {
            "arrayx": lambda: pt.map(first, tree, tree),
            "optree": lambda: optree.tree_map(first, tree, tree, none_is_leaf=False, namespace=NS),
        },
        "structure": {
            "arrayx": lambda: pt.structure(tree),
            "optree": lambda: optree.tree_structure(tree, none_is_leaf=False, namespace=NS),
        },
        "leaves_with_path": {
            "arrayx": lambda: pt.leaves_with_path(tree),
        },
    }
    if jtu is not None:
        j_leaves, j_def = jtu.tree_flatten(tree)
        table["flatten"]["jax"] = lambda: jtu.tree_flatten(tree)
        table["unflatten"]["jax"] = lambda: jtu.tree_unflatten(j_def, j_leaves)
        table["flatten+unflatten"]["jax"] = lambda: jtu.tree_unflatten(*reversed(jtu.tree_flatten(tree)))
        table["map"]["jax"] = lambda: jtu.tree_map(identity, tree)
        table["map (2 trees)"]["jax"] = lambda: jtu.tree_map(first, tree, tree)
        table["structure"]["jax"] = lambda: jtu.tree_structure(tree)
        table["leaves_with_path"]["jax"] = lambda: jtu.tree_leaves_with_path(tree)
    return table


def calls_per_repeat(fn: Callable[[], Any], budget_s: float = 0.002) -> int:
    """Enough calls that one repeat takes about ``budget_s``."""
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    return max(1, int(number * budget_s / max(elapsed, 1e-9)))


def measure(libs: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Best seconds per call for each library, repeats interleaved across libraries."""
    numbers = {name: calls_per_repeat(fn) for name, fn in libs.items()}
    best = {name: float("inf") for name in libs}
    for _ in range(repeats):
        for name, fn in libs.items():
            t = timeit.timeit(fn, number=numbers[name]) / numbers[name]
            best[name] = min(best[name], t)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200, help="timing repeats per library")
    parser.add_argument("--quick", action="store_true", help="40 repeats")
    parser.add_argument("--out", default=RESULTS, help="JSON output path")
    args = parser.parse_args(argv)
    repeats = 40 if args.quick else args.repeats

    tree = make_tree()
    assert len(pt.leaves(tree)) == 1000
    if jtu is not None:
        assert pt.leaves(tree) == jtu.tree_leaves(tree)

    from arrayx.pytree import _specialise, _treedef

    rows = []
    header = f"{'operation':<32}{'arrayx us':>11}{'jax us':>10}{'optree us':>11}{'arrayx/jax':>12}{'optree/jax':>12}"
    print(header)
    print("-" * len(header))
    table = cases(tree)
    for op in ("flatten", "flatten+unflatten", "map"):  # the same with specialisation off
        table[f"{op} (optree path)"] = dict(table[op])
    for op, libs in table.items():
        off = op.endswith("(optree path)")
        _treedef.clear_caches()
        saved, _specialise.MAX_LEAVES = _specialise.MAX_LEAVES, (0 if off else _specialise.MAX_LEAVES)
        try:
            best = measure(libs, repeats)
        finally:
            _specialise.MAX_LEAVES = saved
        us = {name: t * 1e6 for name, t in best.items()}
        ratio = us["arrayx"] / us["jax"] if "jax" in us else None
        opt_ratio = us["optree"] / us["jax"] if "jax" in us and "optree" in us else None
        rows.append({"operation": op, "us_per_call": us, "arrayx_over_jax": ratio,
                     "optree_over_jax": opt_ratio})

        def fmt(v: float | None, spec: str) -> str:
            return format(v, spec) if v is not None else "-"

        print(f"{op:<32}{fmt(us.get('arrayx'), '11.1f'):>11}{fmt(us.get('jax'), '10.1f'):>10}"
              f"{fmt(us.get('optree'), '11.1f'):>11}{fmt(ratio, '12.2f'):>12}{fmt(opt_ratio, '12.2f'):>12}")

    result = {
        "benchmark": "arrayx.pytree vs jax.tree_util",
        "tree": "dict of 100 layers x {w: list of 8 arrays, b: array, norm: {scale: array}}; 1000 leaves",
        "timing": f"timeit, best of {repeats} interleaved repeats of ~2 ms each",
        "target": "arrayx/jax <= 1.5 for flatten+unflatten and map",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "versions": {"optree": optree.__version__, "jax": getattr(jax, "__version__", None),
                     "numpy": np.__version__},
        "results": rows,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"\nwrote {args.out}")
    return 0


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = "pytree operations on a 1,000-leaf parameter tree: arrayx.pytree vs optree and jax.tree_util"


def workloads(quick: bool = False) -> dict:
    table = cases(make_tree())
    names = ("flatten", "unflatten", "map") if quick else tuple(table)
    return {k: {**{lib: fn for lib, fn in table[k].items() if lib != "arrayx"}, "arrayx": table[k]["arrayx"]}
            for k in names if "arrayx" in table[k]}


if __name__ == "__main__":
    raise SystemExit(main())
