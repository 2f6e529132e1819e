"""What ``numpy.asarray(x)`` costs now that it is writeable on the JAX executor (a host copy).

Run:  python benchmarks/bench_array_export.py [--quick]
      (writes benchmarks/results/array_export.json)

Side by side in one process, best of several repeats, float64 arrays of each size:
``np.asarray`` of an arrayx array on the jax executor (a writeable copy), of the raw
``jax.Array`` (JAX's read-only view of its buffer: what arrayx handed out before), of an arrayx
array on the numpy executor (the buffer itself), and a plain NumPy copy of the same size (the
floor for any copy).  The ratio copy/view is the price of writeable exports; SciPy's
``sosfilt`` and scikit-learn's ``scale`` need it (they write into, or take writeable memoryviews
of, what ``np.asarray`` returns).
"""
from __future__ import annotations

import json
import pathlib
import platform
import sys
import timeit

import numpy as np

import arrayx as ax


def best(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main(quick: bool = False) -> dict:
    sizes = [100, 100_000, 10_000_000] if not quick else [100, 100_000]
    rows = []
    for n in sizes:
        host = np.random.default_rng(0).standard_normal(n)
        with ax.use_executor("jax"):
            xj = ax.asarray(host)
        with ax.use_executor("numpy"):
            xn = ax.asarray(host)
        raw = xj._buf
        raw.block_until_ready()
        number = max(1, 2_000_000 // max(n, 1000)) if not quick else 5
        repeat = 5 if not quick else 2
        row = {
            "n": n,
            "arrayx jax np.asarray (writeable copy) us": best(lambda: np.asarray(xj), number, repeat) * 1e6,
            "jax.Array np.asarray (read-only view) us": best(lambda: np.asarray(raw), number, repeat) * 1e6,
            "arrayx numpy np.asarray (the buffer) us": best(lambda: np.asarray(xn), number, repeat) * 1e6,
            "numpy copy of the same size us": best(lambda: host.copy(), number, repeat) * 1e6,
        }
        row["copy / view"] = row["arrayx jax np.asarray (writeable copy) us"] / row["jax.Array np.asarray (read-only view) us"]
        row["copy / numpy copy"] = row["arrayx jax np.asarray (writeable copy) us"] / row["numpy copy of the same size us"]
        rows.append(row)
        print(json.dumps(row))
    return {"machine": platform.processor() or platform.machine(), "python": sys.version.split()[0], "rows": rows}


if __name__ == "__main__":
    result = main(quick="--quick" in sys.argv)
    out = pathlib.Path(__file__).parent / "results" / "array_export.json"
    if "--quick" not in sys.argv:
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {out}")
