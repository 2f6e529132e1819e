"""Throughput of arrayx.random (NumPy executor) against jax.random (eager and jitted) and numpy.random.Generator.

Run:  python benchmarks/bench_random.py                 (1e7 values; writes benchmarks/results/random.json)
      python benchmarks/bench_random.py --n 1000000 --repeat 3

Each case draws ``n`` uniform, normal, exponential or Gumbel floats (float64 and float32)
once per repeat; the best time counts.  ``--executor`` runs arrayx on another executor.  arrayx computes threefry2x32 with whole-array
uint32 operations on the NumPy executor (about 110 passes over the counters),
so the interesting figures are the ratios: arrayx / numpy.random.Generator
(a different generator: PCG64 and ziggurat normals) and arrayx / jax.random
(the same bits; XLA fuses the whole computation into one loop).

Normal costs most: bit-equality with XLA needs its fused multiply-adds, emulated
with error-free transformations (about 18 float64 operations per Horner step).
Eager arrayx allocates an array per operation, and glibc's malloc may hand freed
blocks of a few hundred KB back to the system and page-fault them in again; on
some machines that costs more than the arithmetic, and the times then depend on
what the process allocated before (normal float64 runs 2-3x faster after a
process has freed one block of several MB, or with MALLOC_TOP_PAD_=100000000).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # a checkout runs without installing
import arrayx as xp  # noqa: E402
from arrayx import random as xr  # noqa: E402


def best_time(fn, repeat: int) -> float:
    fn()  # warm up (compilation, first-touch allocation)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cases(n: int, executor: str = "numpy") -> dict:
    """case name -> {library name -> zero-argument callable that draws n values and waits for them}."""
    out = {}
    key = xr.key(0, device=executor)
    generator = np.random.default_rng(0)
    try:
        import jax
        import jax.random as jr

        jax.config.update("jax_enable_x64", True)  # float64 draws, as arrayx's defaults
        jkey = jr.PRNGKey(0)
    except ImportError:  # the jax columns are left out
        jax = None
    peers = {  # numpy.random.Generator's counterpart (its gumbel is float64 only)
        "uniform": lambda t: generator.random(n, dtype=t),
        "normal": lambda t: generator.standard_normal(n, dtype=t),
        "exponential": lambda t: generator.standard_exponential(n, dtype=t),
        "gumbel": lambda t: generator.gumbel(size=n).astype(t, copy=False),
    }
    for dist in ("uniform", "normal", "exponential", "gumbel"):
        for dtype in (xp.float64, xp.float32):
            row = {"arrayx": (lambda d=dist, t=dtype: np.asarray(getattr(xr, d)(key, (n,), t)))}
            row["numpy.Generator"] = lambda d=dist, t=dtype: peers[d](t)
            if jax is not None:
                sampler = getattr(jr, dist)
                row["jax.random"] = lambda s=sampler, t=dtype: s(jkey, (n,), t).block_until_ready()
                jitted = jax.jit(lambda k, s=sampler, t=dtype: s(k, (n,), t))
                row["jax.random (jit)"] = lambda f=jitted: f(jkey).block_until_ready()
            out[f"{dist} {np.dtype(dtype).name}"] = row
    return out


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="values per draw (default 1e7)")
    parser.add_argument("--repeat", type=int, default=2, help="timed repeats per case; the best counts")
    parser.add_argument("--executor", default="numpy", help="arrayx executor (default numpy)")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results" / "random.json"))
    args = parser.parse_args()

    results = {}
    libs = ["arrayx", "numpy.Generator", "jax.random", "jax.random (jit)"]
    print(f"n = {args.n:.0e} values per draw, best of {args.repeat}; times in ms (M values/s)")
    print(f"{'case':<16}" + "".join(f"{lib:>24}" for lib in libs) + f"{'vs numpy':>10}{'vs jax':>9}{'vs jit':>9}")
    for case, row in cases(args.n, args.executor).items():
        times = {lib: best_time(fn, args.repeat) for lib, fn in row.items()}
        entry = {f"{lib}_s": t for lib, t in times.items()}
        for lib, label in (("numpy.Generator", "numpy"), ("jax.random", "jax"), ("jax.random (jit)", "jax_jit")):
            if lib in times:
                entry[f"arrayx_over_{label}"] = times["arrayx"] / times[lib]
        entry["arrayx_Mvalues_per_s"] = args.n / times["arrayx"] / 1e6
        results[case] = entry
        cells = "".join(
            f"{times[lib] * 1e3:>14.1f} ({args.n / times[lib] / 1e6:>6.1f})" if lib in times else f"{'-':>24}"
            for lib in libs
        )
        ratios = "".join(
            f"{entry[k]:>9.1f}x" if k in entry else f"{'-':>10}"
            for k in ("arrayx_over_numpy", "arrayx_over_jax", "arrayx_over_jax_jit")
        )
        print(f"{case:<16}{cells}{ratios}")
    report = {
        "benchmark": "random", "n": args.n, "repeat": args.repeat, "executor": args.executor,
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "processor": platform.machine(),
                    "cpus": os.cpu_count(), "load_average_1min": os.getloadavg()[0]},
        "cases": results,
    }
    path = pathlib.Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")
    return report


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = "random draws (threefry, bit-exact with jax.random) vs numpy.random.Generator and jax.random"


def workloads(quick: bool = False) -> dict:
    table = cases(10**5 if quick else 10**6)
    rows = {k: v for k, v in table.items() if not quick or k.endswith("float32")}
    return {k: {**{lib: fn for lib, fn in v.items() if lib != "arrayx"}, "arrayx[numpy]": v["arrayx"]}
            for k, v in rows.items()}


if __name__ == "__main__":
    main()
