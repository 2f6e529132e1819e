"""Eager overhead of arrayx on tiny arrays, against raw NumPy and array-api-strict.

Run:  python benchmarks/bench_eager.py            (writes benchmarks/results/eager.json)

Every library runs the same operations on 3-element float64 arrays in the same
process, interleaved, best of several repeats; the figure that matters is the
overhead per op (arrayx time - numpy time) and the ratio, not absolute times.
"""
from __future__ import annotations

import json
import pathlib
import timeit

import numpy as np

import arrayx as ax

OPS = {
    "sin(x)": lambda m, x, y: m.sin(x),
    "x + y": lambda m, x, y: x + y,
    "x * 2.0": lambda m, x, y: x * 2.0,
    "add(x, y)": lambda m, x, y: m.add(x, y),
    "exp(x) * y - 1": lambda m, x, y: m.exp(x) * y - 1.0,
    "sum(x)": lambda m, x, y: m.sum(x),
    "x[1:]": lambda m, x, y: x[1:],
}


def best(fn, number=20000, repeat=7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> dict:
    libs = {"numpy": (np, np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))}
    libs["arrayx"] = (ax, ax.asarray([1.0, 2.0, 3.0]), ax.asarray([4.0, 5.0, 6.0]))
    try:
        import array_api_strict as strict

        libs["array_api_strict"] = (strict, strict.asarray([1.0, 2.0, 3.0]), strict.asarray([4.0, 5.0, 6.0]))
    except ImportError:
        pass
    rows = {}
    print(f"{'op':<16}" + "".join(f"{k:>18}" for k in libs) + f"{'arrayx - numpy':>16}{'ratio':>8}")
    for name, op in OPS.items():
        # interleave the libraries repeat by repeat, so load on a shared machine hits all alike
        t = {lib: float("inf") for lib in libs}
        for _ in range(7):
            for lib, (m, x, y) in libs.items():
                try:
                    t[lib] = min(t[lib], best(lambda: op(m, x, y), number=5000, repeat=1))
                except Exception:
                    t[lib] = float("nan")
        rows[name] = {k: v * 1e6 for k, v in t.items()}
        over = (t["arrayx"] - t["numpy"]) * 1e6
        rows[name]["overhead_us"] = over
        rows[name]["ratio_vs_numpy"] = t["arrayx"] / t["numpy"]
        if "array_api_strict" in t:
            rows[name]["array_api_strict_overhead_us"] = (t["array_api_strict"] - t["numpy"]) * 1e6
        print(f"{name:<16}" + "".join(f"{t[k] * 1e6:>16.2f}us" for k in libs) + f"{over:>14.2f}us{t['arrayx'] / t['numpy']:>8.2f}")
    med = sorted(r["overhead_us"] for r in rows.values())[len(rows) // 2]
    print(f"median arrayx overhead per op: {med:.2f} us")
    out = pathlib.Path(__file__).parent / "results" / "eager.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"command": "python benchmarks/bench_eager.py", "ops": rows,
                               "median_overhead_us": med}, indent=2))
    return rows


if __name__ == "__main__":
    main()
