"""Eager cost of tiny ops on the JAX executor, to see what arrayx's 64-bit scope costs per call.

Run:  python benchmarks/bench_jax_x64_scope.py [--tree PATH] [--rounds N]
      python benchmarks/bench_jax_x64_scope.py --compare BEFORE AFTER... [--passes 3]
      (runs one process per tree, the trees alternating, ``--passes`` times; keeps each tree's best
      per op and writes benchmarks/results/jax_x64_scope.json)

``--tree`` runs the arrayx package found under PATH instead of this checkout's (e.g. an export of
an earlier commit: ``git archive <commit> arrayx | tar -x -C /tmp/base``), so two trees can be
compared by running this script for each, alternately.  Each op (8-element float64 operands, a
4x4 matmul) is timed as call + ``block_until_ready`` with ``time.perf_counter``, ``number`` calls
per round; the figure is the best round over ``--rounds`` rounds, the ops interleaved round by
round so load on a shared machine hits them alike.  Raw ``jax.numpy`` under ``jax.enable_x64``
is shown beside as a reference.  Prints one JSON line (microseconds per call).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time


def main() -> dict:
    p = argparse.ArgumentParser()
    p.add_argument("--tree", default=str(pathlib.Path(__file__).resolve().parent.parent))
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--number", type=int, default=300)
    p.add_argument("--compare", nargs="+", metavar="TREE")
    p.add_argument("--passes", type=int, default=3)
    args = p.parse_args()
    if args.compare:
        return compare(args)
    sys.path.insert(0, args.tree)
    import numpy as np

    import arrayx as ax
    import jax
    import jax.numpy as jnp

    assert pathlib.Path(ax.__file__).resolve().is_relative_to(pathlib.Path(args.tree).resolve())
    with ax.use_executor("jax"):
        x, y = ax.asarray(np.arange(1.0, 9.0)), ax.asarray(np.arange(9.0, 17.0))
        a = ax.asarray(np.arange(16.0).reshape(4, 4) / 16)
    assert x.dtype == ax.float64
    with jax.enable_x64(True):
        jx, jy, ja = jnp.asarray(np.arange(1.0, 9.0)), jnp.asarray(np.arange(9.0, 17.0)), jnp.asarray(np.arange(16.0).reshape(4, 4) / 16)
    ops = {
        "x + y": (lambda: x + y, lambda: jx + jy),
        "exp(x)": (lambda: ax.exp(x), lambda: jnp.exp(jx)),
        "matmul 4x4": (lambda: ax.matmul(a, a), lambda: jnp.matmul(ja, ja)),
        "x[1:3]": (lambda: x[1:3], lambda: jx[1:3]),
        "sum(x)": (lambda: ax.sum(x), lambda: jnp.sum(jx)),
    }

    def block(r):
        (r._buf if hasattr(r, "_buf") else r).block_until_ready()

    def timed(fn, n):
        t0 = time.perf_counter()
        for _ in range(n):
            block(fn())
        return (time.perf_counter() - t0) / n

    best = {name: [float("inf"), float("inf")] for name in ops}
    for name, (f, g) in ops.items():  # warm up (compiles)
        timed(f, 5)
        with jax.enable_x64(True):
            timed(g, 5)
    for _ in range(args.rounds):
        for name, (f, g) in ops.items():
            best[name][0] = min(best[name][0], timed(f, args.number))
            with jax.enable_x64(True):
                best[name][1] = min(best[name][1], timed(g, args.number))
    out = {"tree": args.tree, "global_x64_after": bool(jax.config.jax_enable_x64),
           "arrayx_us": {k: round(v[0] * 1e6, 2) for k, v in best.items()},
           "jax_numpy_us": {k: round(v[1] * 1e6, 2) for k, v in best.items()}}
    print(json.dumps(out))
    return out


def compare(args) -> dict:
    import subprocess

    best: dict = {}
    for _ in range(args.passes):
        for tree in args.compare:
            out = subprocess.run([sys.executable, __file__, "--tree", tree, "--rounds", str(args.rounds),
                                  "--number", str(args.number)], capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            # a tree by its folder's name: the results name no folder of this machine
            mine = best.setdefault(pathlib.Path(tree).name, {"arrayx_us": {}, "jax_numpy_us": {}})
            mine["global_x64_after"] = row["global_x64_after"]
            for part in ("arrayx_us", "jax_numpy_us"):
                for op, us in row[part].items():
                    mine[part][op] = min(us, mine[part].get(op, float("inf")))
    result = {"command": "python benchmarks/bench_jax_x64_scope.py --compare "
              + " ".join(pathlib.Path(t).name for t in args.compare)
              + f" --passes {args.passes} --rounds {args.rounds}", "trees": best}
    print(json.dumps(result, indent=1))
    out = pathlib.Path(__file__).parent / "results" / "jax_x64_scope.json"
    out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
