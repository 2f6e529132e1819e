"""The Numba executor against the NumPy executor (eager), as ratios measured in one run.

Run:  python benchmarks/bench_executors_numba.py            (writes benchmarks/results/numba.json)
      python benchmarks/bench_executors_numba.py --quick    (fewer repeats and sizes)
      python benchmarks/bench_executors_numba.py --no-layers --no-thresholds

Every case is the same arrayx call on arrays of the NumPy executor and of the Numba executor;
``ratio`` is NumPy time / Numba time (above 1: Numba is faster), the best of several interleaved
repeats.  Kernels are compiled (or loaded from the disk cache) before timing.

Sections:
- ``targets``: exp/tanh/sin on 1e7 float32/float64 (goal: ratio >= 1), var/std over 1e7
  (goal: >= 2), and small arrays below the size threshold (goal: no slowdown, ratio ~1);
- ``cases``: more elementwise functions and reductions (axes, dtypes);
- ``thresholds``: per kind of operation, the ratio of the native kernel (threshold forced to 0)
  at growing sizes, and the smallest size from which the kernel wins (what
  ``arrayx.executors.numba.DEFAULT_THRESHOLDS`` is set from);
- ``threading_layers``: the same few calls with each Numba threading layer available here, in
  a fresh process each (the layer is fixed at the first parallel launch).

On a machine whose cores are shared, multi-threaded timings vary from run to run; the JSON keeps
the machine description and the load average next to the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # a checkout runs without installing
import arrayx as xp  # noqa: E402
from arrayx.core import executor as base  # noqa: E402

EX = base.get("numba")


def timed(fn, repeat: int, min_time: float = 0.02) -> float:
    """Best seconds per call of ``fn`` over ``repeat`` samples of enough calls to last ``min_time``."""
    fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    loops = max(1, int(min_time / max(once, 1e-7)))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def compare(fn, host_args, repeat: int, min_time: float = 0.02) -> dict:
    """Time ``fn`` on both executors (interleaved repeats); the ratio NumPy / Numba."""
    on = {name: [xp.asarray(a, device=name) if isinstance(a, np.ndarray) else a for a in host_args]
          for name in ("numpy", "numba")}
    for name in on:  # compile / warm up
        fn(*on[name])
    best = {"numpy": float("inf"), "numba": float("inf")}
    for _ in range(repeat):
        for name in ("numpy", "numba"):
            best[name] = min(best[name], timed(lambda: fn(*on[name]), 1, min_time))
    return {"numpy_ms": best["numpy"] * 1e3, "numba_ms": best["numba"] * 1e3,
            "ratio": best["numpy"] / best["numba"]}


def data(n, dtype="float64", seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def target_cases(n: int):
    for name in ("exp", "tanh", "sin"):
        for dt in ("float32", "float64"):
            yield f"{name} {dt} n={n:.0e}", getattr(xp, name), (data(n, dt),), 1.0
    for name in ("var", "std"):
        for dt in ("float64", "float32"):
            yield f"{name} {dt} n={n:.0e}", getattr(xp, name), (data(n, dt),), 2.0
    # below the thresholds the Numba executor calls NumPy: no slowdown (ratio 1 within noise)
    t = EX.thresholds
    for size in (1000, t["elementwise"] // 2):
        yield f"add float64 n={size} (below threshold)", xp.add, (data(size), data(size, seed=1)), 0.9
    for size in (1000, t["transcendental"] // 2):
        yield f"exp float32 n={size} (below threshold)", xp.exp, (data(size, "float32"),), 0.9
    yield "sum float64 n=1000 (below threshold)", xp.sum, (data(1000),), 0.9
    yield f"var float64 n={t['moment'] // 2} (below threshold)", xp.var, (data(t["moment"] // 2),), 0.9
    size = min(t["extremum"] // 2, 1 << 22)
    yield f"max float64 n={size} (below threshold)", xp.max, (data(size),), 0.9


def more_cases(n: int):
    m = data(n).reshape(1000, -1)
    for name in ("expm1", "cos", "sqrt", "abs", "round", "isnan"):
        yield f"{name} float64 n={n:.0e}", getattr(xp, name), (np.abs(data(n)) if name == "sqrt" else data(n),)
    yield f"add float64 n={n:.0e}", xp.add, (data(n), data(n, seed=1))
    yield f"multiply float32 by scalar n={n:.0e}", lambda a: a * 1.5, (data(n, "float32"),)
    yield f"less float64 n={n:.0e}", xp.less, (data(n), data(n, seed=1))
    yield f"maximum float64 n={n:.0e}", xp.maximum, (data(n), data(n, seed=1))
    yield f"where float64 n={n:.0e}", lambda c, a, b: xp.where(c, a, b), (data(n) > 0, data(n), data(n, seed=1))
    yield f"clip float64 n={n:.0e}", lambda a: xp.clip(a, -0.5, 0.5), (data(n),)
    for name in ("sum", "mean", "max", "min", "prod"):
        yield f"{name} float64 n={n:.0e}", getattr(xp, name), ((1 + data(n) * 1e-9) if name == "prod" else data(n),)
    yield f"sum float32 n={n:.0e}", xp.sum, (data(n, "float32"),)
    yield f"sum int32 n={n:.0e}", xp.sum, ((data(n) * 100).astype(np.int32),)
    yield f"var float64 (1000, {n // 1000}) axis=0", lambda a: xp.var(a, axis=0), (m,)
    yield f"var float64 (1000, {n // 1000}) axis=1", lambda a: xp.var(a, axis=1), (m,)
    yield f"sum float64 (1000, {n // 1000}) axis=0", lambda a: xp.sum(a, axis=0), (m,)
    yield f"max float64 (1000, {n // 1000}) axis=1", lambda a: xp.max(a, axis=1), (m,)


def run_cases(cases, repeat: int) -> list:
    out = []
    for case in cases:
        name, fn, args = case[:3]
        # below the threshold: many short interleaved samples (the overhead is ~0.2 us a call,
        # far below the load noise of a shared machine, which a few long samples do not filter)
        small = "below threshold" in name
        row = {"case": name, **(compare(fn, args, 100, 0.002) if small else compare(fn, args, repeat))}
        if len(case) > 3:
            row["goal"] = case[3]
            row["met"] = row["ratio"] >= case[3]
        out.append(row)
        print(f"  {name:42s} numpy {row['numpy_ms']:9.3f} ms  numba {row['numba_ms']:9.3f} ms  "
              f"ratio {row['ratio']:5.2f}" + (f"  (goal {case[3]})" if len(case) > 3 else ""), flush=True)
    return out


def measure_thresholds(sizes, repeat: int) -> dict:
    """Per kind: ratio of the forced-native kernel against NumPy by size, and the crossover."""
    kinds = {
        "elementwise": ("add float64", xp.add, lambda n: (data(n), data(n, seed=1))),
        "transcendental": ("exp float32", xp.exp, lambda n: (data(n, "float32"),)),
        "moment": ("var float64", xp.var, lambda n: (data(n),)),
        "reduction": ("sum float64", xp.sum, lambda n: (data(n),)),
        "extremum": ("max float64", xp.max, lambda n: (data(n),)),
    }
    saved = dict(EX.thresholds)
    EX.thresholds.update(dict.fromkeys(EX.thresholds, 0))
    out = {}
    try:
        for kind, (label, fn, make) in kinds.items():
            rows = []
            for n in sizes:
                r = compare(fn, make(n), repeat)
                rows.append({"n": n, "ratio": r["ratio"]})
                print(f"  {kind:15s} {label:12s} n={n:<9d} ratio {r['ratio']:5.2f}", flush=True)
            # the smallest size from which the kernel wins at every larger size measured
            wins = [row["ratio"] > 1.0 for row in rows]
            crossover = next((rows[i]["n"] for i in range(len(rows)) if all(wins[i:])), None)
            out[kind] = {"case": label, "by_size": rows, "crossover": crossover, "default": saved[kind]}
    finally:
        EX.thresholds.update(saved)
    return out


_LAYER_PROBE = """
import json, sys, time, numpy as np
sys.path.insert(0, {root!r})
import arrayx as xp
ex = xp.executors.get("numba")
ex.thresholds.update(dict.fromkeys(ex.thresholds, 0))
rng = np.random.default_rng(0)
out = {{}}
def best(fn, *a):
    fn(*a)
    t = []
    for _ in range({repeat}):
        s = time.perf_counter(); fn(*a); t.append(time.perf_counter() - s)
    return min(t) * 1e3
with xp.use_executor("numba"):
    small = xp.asarray(rng.standard_normal(1000))
    mid = xp.asarray(rng.standard_normal(10**6))
    big = xp.asarray(rng.standard_normal(10**7).astype(np.float32))
    out["launch add n=1000 (ms)"] = best(xp.add, small, small)
    out["exp n=1e6 (ms)"] = best(xp.exp, mid)
    out["var n=1e6 (ms)"] = best(xp.var, mid)
    out["exp float32 n=1e7 (ms)"] = best(xp.exp, big)
import numba
out["layer"] = numba.threading_layer()
print(json.dumps(out))
"""


def measure_layers(repeat: int) -> dict:
    out = {}
    for layer in ("workqueue", "omp", "tbb"):
        env = dict(os.environ, ARRAYX_NUMBA_THREADING_LAYER=layer)
        env.pop("NUMBA_THREADING_LAYER", None)
        proc = subprocess.run([sys.executable, "-c", _LAYER_PROBE.format(root=str(ROOT), repeat=repeat)],
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            out[layer] = {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
        else:
            out[layer] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"  {layer:10s} {out[layer]}", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10**7, help="elements of the large cases")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="3 repeats, fewer threshold sizes")
    p.add_argument("--no-thresholds", action="store_true")
    p.add_argument("--no-layers", action="store_true")
    p.add_argument("--no-more", action="store_true", help="only the target cases")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "numba.json"))
    args = p.parse_args(argv)
    repeat = 3 if args.quick else args.repeat
    if not EX.available():
        print(f"numba executor unavailable: {EX.unavailable_reason}")
        return 1
    numba = EX._numba()
    result = {
        "benchmark": "numba executor vs numpy executor (eager), ratio = numpy time / numba time",
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count(),
                    "loadavg_before": os.getloadavg()},
        "versions": {"numba": numba.__version__, "numpy": np.__version__, "python": platform.python_version()},
        "executor": {k: v for k, v in EX.executor_info().items() if k in (
            "native size thresholds", "parallel", "threads", "threading layer")},
    }
    print("targets:")
    result["targets"] = run_cases(target_cases(args.n), repeat)
    if not args.no_more:
        print("more cases:")
        result["cases"] = run_cases(more_cases(args.n), repeat)
    if not args.no_thresholds:
        print("thresholds (native kernel forced):")
        sizes = [2**k for k in range(10, 25, 4 if args.quick else 2)]
        result["thresholds"] = measure_thresholds(sizes, repeat)
    if not args.no_layers:
        print("threading layers:")
        result["threading_layers"] = measure_layers(repeat)
    result["machine"]["loadavg_after"] = os.getloadavg()
    result["all_targets_met"] = all(r["met"] for r in result["targets"])
    path = pathlib.Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"targets met: {result['all_targets_met']}; wrote {path}")
    return 0


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = "reductions and transcendentals: the numba executor's kernels vs the numpy executor and NumPy"


def workloads(quick: bool = False) -> dict:
    n = 1 << 21 if quick else 1 << 24  # above the default thresholds of var/std (1 << 20) and exp/tanh
    out = {}
    for label, fn, host in (
        (f"var float64 n=2^{n.bit_length() - 1}", xp.var, data(n)), (f"std float32 n=2^{n.bit_length() - 1}", xp.std, data(n, "float32")),
        (f"sum float64 n=2^{n.bit_length() - 1}", xp.sum, data(n)), (f"max float64 n=2^{n.bit_length() - 1}", xp.max, data(n)),
        (f"exp float32 n=2^{n.bit_length() - 1}", xp.exp, data(n, "float32")), (f"tanh float64 n=2^{n.bit_length() - 1}", xp.tanh, data(n)),
    ):
        row = {"numpy": lambda f=getattr(np, fn.__name__), h=host: f(h)}
        with xp.use_executor("numpy"):
            on_numpy = xp.asarray(host)
        row["numpy executor"] = lambda f=fn, a=on_numpy: f(a)
        if EX.available():
            with xp.use_executor("numba"):
                on_numba = xp.asarray(host)
            row["arrayx[numba]"] = lambda f=fn, a=on_numba: f(a)
        out[label] = row
    return out


if __name__ == "__main__":
    sys.exit(main())
