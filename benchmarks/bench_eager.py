"""Eager overhead of arrayx on tiny arrays, against raw NumPy and array-api-strict.

Run:  python benchmarks/bench_eager.py            (writes benchmarks/results/eager.json)

Every library runs the same operations on 8-element float64 arrays (4x4 for
matmul) in the same process, interleaved, best of several repeats; the figure that
matters is the overhead per op (arrayx time - numpy time) and the ratio, not
absolute times.  Times are the CPU time of the benchmarking thread
(``time.thread_time``), so other processes on a shared machine do not count.
``mean_overhead_us`` is the mean over the seven ops of issue 11
(``GOAL_OPS``: issue 41's budget <= 0.45 us, none above 0.6 us); the other ops are shown too.
The same overheads are measured in wall time too (``wall_*``, ``time.perf_counter``), interleaved
the same way: on a quiet machine they agree with the CPU times.  Each figure is the best of
``--rounds`` interleaved rounds (20 by default, issue 41's measure) of 5000 calls; the load average
before and after is recorded with the results (other processes make the figures noisier, not smaller).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # this checkout's arrayx
import arrayx as ax  # noqa: E402

OPS = {
    "add(x, y)": lambda m, x, y, a: m.add(x, y),
    "x + y": lambda m, x, y, a: x + y,
    "exp(x)": lambda m, x, y, a: m.exp(x),
    "sum(x)": lambda m, x, y, a: m.sum(x),
    "matmul 4x4": lambda m, x, y, a: m.matmul(a, a),
    "x[1:3]": lambda m, x, y, a: x[1:3],
    "reshape(x, (2, 4))": lambda m, x, y, a: m.reshape(x, (2, 4)),
    "sin(x)": lambda m, x, y, a: m.sin(x),
    "x * 2.0": lambda m, x, y, a: x * 2.0,
    "exp(x) * y - 1": lambda m, x, y, a: m.exp(x) * y - 1.0,
}
GOAL_OPS = ("add(x, y)", "x + y", "exp(x)", "sum(x)", "matmul 4x4", "x[1:3]", "reshape(x, (2, 4))")


def best(fn, number=20000, repeat=7, timer=time.thread_time) -> float:
    return min(timeit.Timer(fn, timer=timer).repeat(number=number, repeat=repeat)) / number


def main(rounds: int = 20, out: str | None = None) -> dict:
    x, y, a = np.arange(1.0, 9.0), np.arange(9.0, 17.0), np.arange(16.0).reshape(4, 4) / 16
    libs = {"numpy": (np, x, y, a)}
    libs["arrayx"] = (ax, ax.asarray(x), ax.asarray(y), ax.asarray(a))
    try:
        import array_api_strict as strict

        libs["array_api_strict"] = (strict, strict.asarray(x), strict.asarray(y), strict.asarray(a))
    except ImportError:
        pass
    rows = {}
    load_before = _load()
    print(f"{'op':<16}" + "".join(f"{k:>18}" for k in libs) + f"{'arrayx - numpy':>16}{'ratio':>8}")
    for name, op in OPS.items():
        # interleave the libraries repeat by repeat, so load on a shared machine hits all alike
        t = {lib: float("inf") for lib in libs}
        for _ in range(rounds):
            for lib, (m, x, y, a) in libs.items():
                try:
                    t[lib] = min(t[lib], best(lambda: op(m, x, y, a), number=5000, repeat=1))
                except Exception:
                    t[lib] = float("nan")
        # and wall time, interleaved the same way (the minimum: what a quiet machine gives)
        w = {lib: float("inf") for lib in ("numpy", "arrayx")}
        for _ in range(rounds):
            for lib in w:
                m, x, y, a = libs[lib]
                w[lib] = min(w[lib], best(lambda: op(m, x, y, a), number=5000, repeat=1, timer=time.perf_counter))
        rows[name] = {k: v * 1e6 for k, v in t.items()}
        over = (t["arrayx"] - t["numpy"]) * 1e6
        rows[name]["overhead_us"] = over
        rows[name]["wall_overhead_us"] = (w["arrayx"] - w["numpy"]) * 1e6
        rows[name]["ratio_vs_numpy"] = t["arrayx"] / t["numpy"]
        if "array_api_strict" in t:
            rows[name]["array_api_strict_overhead_us"] = (t["array_api_strict"] - t["numpy"]) * 1e6
        print(f"{name:<16}" + "".join(f"{t[k] * 1e6:>16.2f}us" for k in libs) + f"{over:>14.2f}us{t['arrayx'] / t['numpy']:>8.2f}")
    med = sorted(r["overhead_us"] for r in rows.values())[len(rows) // 2]
    goal = [rows[k]["overhead_us"] for k in GOAL_OPS]
    mean = sum(goal) / len(goal)
    wall = [rows[k]["wall_overhead_us"] for k in GOAL_OPS]
    wall_mean = sum(wall) / len(wall)
    strict_mean = (sum(rows[k].get("array_api_strict_overhead_us", float("nan")) for k in GOAL_OPS) / len(goal))
    print(f"median arrayx overhead per op: {med:.2f} us")
    print(f"mean arrayx overhead over the issue-11 ops: {mean:.2f} us (max {max(goal):.2f} us); "
          f"array-api-strict {strict_mean:.2f} us")
    print(f"the same in wall time: mean {wall_mean:.2f} us (max {max(wall):.2f} us)")
    load_after = _load()
    print(f"load average (1 min) before {load_before}, after {load_after}")
    path = pathlib.Path(out) if out else pathlib.Path(__file__).parent / "results" / "eager.json"
    path.parent.mkdir(exist_ok=True)
    command = "python benchmarks/bench_eager.py" + (f" --rounds {rounds}" if rounds != 20 else "")
    path.write_text(json.dumps({"command": command, "rounds": rounds, "calls_per_round": 5000,
                               "load_average_before": load_before, "load_average_after": load_after,
                               "python": platform.python_version(), "numpy": np.__version__, "ops": rows,
                               "median_overhead_us": med,
                               "goal_ops": list(GOAL_OPS), "mean_overhead_us": mean,
                               "max_overhead_us": max(goal), "array_api_strict_mean_overhead_us": strict_mean,
                               "wall_mean_overhead_us": wall_mean, "wall_max_overhead_us": max(wall)},
                              indent=2))
    return rows


def _load():
    """The 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = "eager dispatch: tiny ops (8 elements), arrayx on the numpy executor vs NumPy and array-api-strict"


def workloads(quick: bool = False) -> dict:
    from benchmarks._harness import installed

    x, y, a = np.arange(1.0, 9.0), np.arange(9.0, 17.0), np.arange(16.0).reshape(4, 4) / 16
    libs = {"numpy": (np, x, y, a), "arrayx[numpy]": (ax, ax.asarray(x), ax.asarray(y), ax.asarray(a))}
    if installed("array_api_strict"):
        import array_api_strict as strict

        libs["array_api_strict"] = (strict, strict.asarray(x), strict.asarray(y), strict.asarray(a))
    ops = {k: OPS[k] for k in GOAL_OPS} if quick else OPS
    return {name: {lib: (lambda op=op, m=m, x=x, y=y, a=a: op(m, x, y, a)) for lib, (m, x, y, a) in libs.items()}
            for name, op in ops.items()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds; each figure is their best")
    parser.add_argument("--out", help="where to write the JSON (default benchmarks/results/eager.json)")
    args = parser.parse_args()
    main(args.rounds, args.out)
