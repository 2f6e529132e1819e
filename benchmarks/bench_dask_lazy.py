"""Lazy values on the Dask executor: random draws, repr, and loops that read a value each step.

    PYTHONPATH=. python benchmarks/bench_dask_lazy.py --label after
    PYTHONPATH=/path/to/older/tree python benchmarks/bench_dask_lazy.py --label before \\
        --repr-log2 22 --loop-steps 100,200

Each run adds its label's figures to ``benchmarks/results/dask_lazy.json`` (other labels kept):

- ``normal_100x20``: ``random.normal(k, (100, 20))``: building it, the first read of a value made
  from it (``float(sum(x))``) and a second one (``float(sum(x * 2))``), seconds;
- ``repr_normal``: ``repr`` of a lazy ``random.normal`` of ``2**repr_log2`` values (seconds, and the
  peak RSS growth of the process in MB);
- ``repr_sin``: ``repr(sin(arange(2**26)))`` (float64), seconds, and the same edges computed in
  plain ``dask.array`` for reference;
- ``loop``: ``x = cos(x) * 0.5 + 0.25; bool(max(x) > 10)`` for 100/200/400 steps on 1,000
  values, seconds in all and per step.

Before anything is timed, one small Dask computation and one small draw run (the first compute
of a process imports Dask's scheduler; the first draw loads the samplers).  The machine the
figures came from is shared: the fast figures are the best of three.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "dask_lazy.json")


def _best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_normal(xp) -> dict:
    def once(seed):
        k = xp.random.key(seed)
        t0 = time.perf_counter()
        x = xp.random.normal(k, (100, 20))
        t1 = time.perf_counter()
        float(xp.sum(x))
        t2 = time.perf_counter()
        float(xp.sum(x * 2.0))
        t3 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t2

    runs = [once(seed) for seed in (10, 11, 12)]
    build, first, reuse = (min(r[i] for r in runs) for i in range(3))
    return {"build_s": build, "first_read_s": first, "second_read_s": reuse}


def bench_repr_normal(xp, log2: int) -> dict:
    rss0 = _rss_mb()
    x = xp.random.normal(xp.random.key(7), (2**log2,))
    t = time.perf_counter()
    text = repr(x)
    elapsed = time.perf_counter() - t
    return {"n": f"2**{log2}", "repr_s": elapsed, "peak_rss_growth_mb": _rss_mb() - rss0, "text": text}


def bench_repr_sin(xp) -> dict:
    import dask.array as da

    x = xp.sin(xp.arange(2**26, dtype=xp.float64))
    arrayx_s = _best(lambda: repr(x))
    d = da.sin(da.arange(2**26, dtype=np.float64))
    n = 2**26
    dask_s = _best(lambda: da.concatenate([d[:3], d[n // 2:n // 2 + 1], d[-3:]]).compute())
    return {"repr_s": arrayx_s, "plain_dask_edges_s": dask_s, "chunks": len(x._buf.chunks[0])}


def bench_loop(xp, steps: list[int]) -> dict:
    out = {}
    for n in steps:
        x = xp.asarray(np.linspace(0.0, 1.0, 1000))
        t = time.perf_counter()
        for _ in range(n):
            x = xp.cos(x) * 0.5 + 0.25
            if bool(xp.max(x) > 10.0):
                break
        elapsed = time.perf_counter() - t
        out[str(n)] = {"total_s": elapsed, "per_step_ms": 1e3 * elapsed / n}
    return out


def _commit(folder: str) -> str:
    """The git commit of the arrayx tree measured (never its folder: results name no machine path)."""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", folder, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--label", default="after")
    p.add_argument("--repr-log2", type=int, default=24)
    p.add_argument("--loop-steps", default="100,200,400")
    p.add_argument("--out", default=RESULTS)
    args = p.parse_args(argv)

    import arrayx as xp

    xp.set_executor("dask")
    float(xp.sum(xp.asarray(np.arange(10.0)) * 2.0))  # warm-up: Dask's scheduler
    float(xp.sum(xp.random.normal(xp.random.key(1), (64,))))  # warm-up: the samplers
    repr(xp.random.uniform(xp.random.key(2), (5000,)))

    result = {
        "arrayx": _commit(os.path.dirname(os.path.dirname(os.path.abspath(xp.__file__)))),
        "python": sys.version.split()[0], "machine": platform.machine(), "cpus": os.cpu_count(),
        "normal_100x20": bench_normal(xp),
        "repr_normal": bench_repr_normal(xp, args.repr_log2),
        "repr_sin": bench_repr_sin(xp),
        "loop": bench_loop(xp, [int(s) for s in args.loop_steps.split(",") if s]),
    }
    try:
        with open(args.out) as f:
            stored = json.load(f)
    except (OSError, ValueError):
        stored = {}
    stored[args.label] = result
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(stored, f, indent=1)
    print(json.dumps({args.label: {k: v for k, v in result.items() if k != "repr_normal"}
                      | {"repr_normal": {k: v for k, v in result["repr_normal"].items() if k != "text"}}}, indent=1))
    return result


if __name__ == "__main__":
    main()
