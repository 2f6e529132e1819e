"""Throughput of eager arrayx.random (NumPy and Numba executors) against jax.random (eager and jitted) and numpy.random.Generator.

Run:  python benchmarks/bench_random.py                 (1e7 values; writes benchmarks/results/random.json)
      python benchmarks/bench_random.py --n 1000000 --repeat 3
      python -m benchmarks --only random                (1e6 values, every row, interleaved rounds)

Each case draws ``n`` values of one distribution (uniform, normal, exponential, Gumbel, Gumbel
mode="high", Bernoulli, truncated normal: float64 and float32; bits uint32; randint int32) once
per repeat; the best time counts.  The sampling rows (``_sampling``): categorical (n // 1000 rows
of 1000 logits), choice with probabilities (n of 1000; n // 10 of n without replacement), choice
of ints (n of 1000; n // 10 of n without replacement) and permutation of n.  jax.random gives the
same bits; numpy.random.Generator is a different generator (PCG64, ziggurat normals) and has no
truncated normal, Gumbel "high" or categorical.

Routes of an eager arrayx draw (arrayx/random.py): with Numba installed, one Numba kernel per
draw (threefry2x32 and the transform in one loop, arrayx/executors/numba/random_kernels.py), on
the NumPy executor (``arrayx[numpy]``) and the Numba executor (``arrayx[numba]``);
``arrayx[numpy, no Numba]`` is what the NumPy executor runs without Numba: whole-array arrayx
operations in cache-sized slices (about 110 passes over the counters, XLA's fmas emulated with
error-free transformations) and float64 log by ``math.log``.  The standalone command's
``--executor`` picks the executor of the ``arrayx`` column.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # a checkout runs without installing
from benchmarks._harness import write_json  # noqa: E402
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


def _arrayx_routes(executor: str) -> dict:
    """label -> (executor, whether the eager Numba kernels are on): the routes an eager draw takes."""
    routes = {"arrayx": (executor, True)}
    if executor == "numpy" and hasattr(xr, "KERNELS"):  # (an arrayx from before the kernels has one route)
        routes["arrayx (no Numba)"] = ("numpy", False)  # what the NumPy executor runs without Numba
    return routes


def _on(route, draw):
    """``draw`` (a zero-argument callable) run on the route's executor, kernels on or off.

    Kernels off stands for a NumPy executor without Numba: the arrayx operations, and float64
    log by ``math.log`` (``executors/libm.py``'s route without Numba), as such a process runs them.
    """
    from arrayx.executors import libm

    executor, kernels = route

    def run():
        saved, saved_log = getattr(xr, "KERNELS", True), libm.route()
        xr.KERNELS = kernels
        if not kernels:
            libm._route = "python"
        try:
            with xp.use_executor(executor):
                return np.asarray(draw())
        finally:
            xr.KERNELS, libm._route = saved, saved_log
    return run


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
    peers = {  # numpy.random.Generator's counterpart (its gumbel is float64 only; it has no truncated normal)
        "uniform": lambda t: generator.random(n, dtype=t),
        "normal": lambda t: generator.standard_normal(n, dtype=t),
        "exponential": lambda t: generator.standard_exponential(n, dtype=t),
        "gumbel": lambda t: generator.gumbel(size=n).astype(t, copy=False),
        "bernoulli": lambda t: generator.random(n, dtype=t) < 0.3,
    }
    # (arrayx draw, jax.random draw) of n values of dtype t, for the distributions beyond the four
    extra = {
        "bernoulli": (lambda k, t: xr.bernoulli(k, t.type(0.3), (n,)), lambda k, t: jr.bernoulli(k, t.type(0.3), (n,))),
        "truncated_normal": (lambda k, t: xr.truncated_normal(k, -1.5, 2.0, (n,), t),
                             lambda k, t: jr.truncated_normal(k, -1.5, 2.0, (n,), t)),
        "gumbel high": (lambda k, t: xr.gumbel(k, (n,), t, mode="high"), lambda k, t: jr.gumbel(k, (n,), t, mode="high")),
    }
    routes = _arrayx_routes(executor)

    def add(case, arrayx_draw, jax_draw, peer):
        row = {label: _on(route, arrayx_draw) for label, route in routes.items()}
        if peer is not None:
            row["numpy.Generator"] = peer
        if jax is not None:
            row["jax.random"] = lambda: jax_draw(jkey).block_until_ready()
            jitted = jax.jit(jax_draw)
            row["jax.random (jit)"] = lambda f=jitted: f(jkey).block_until_ready()
        out[case] = row

    for dist in ("uniform", "normal", "exponential", "gumbel", *extra):
        for dtype in (xp.float64, xp.float32):
            t = np.dtype(dtype)
            if dist in extra:
                draw, jdraw = extra[dist]
                arrayx_draw = (lambda d=draw, t=t: d(key, t))
                jax_draw = (lambda k, d=jdraw, t=t: d(k, t)) if jax is not None else None
            else:
                arrayx_draw = (lambda d=dist, t=dtype: getattr(xr, d)(key, (n,), t))
                jax_draw = (lambda k, d=dist, t=dtype: getattr(jr, d)(k, (n,), t)) if jax is not None else None
            peer = (lambda d=dist, t=dtype: peers[d](t)) if dist in peers else None
            add(f"{dist} {t.name}", arrayx_draw, jax_draw, peer)
    add("bits uint32", lambda: xr.bits(key, (n,), xp.uint32),
        (lambda k: jr.bits(k, (n,), np.uint32)) if jax is not None else None,
        lambda: generator.integers(0, 2**32, n, dtype=np.uint32))
    add("randint int32", lambda: xr.randint(key, (n,), 0, 1000, xp.int32),
        (lambda k: jr.randint(k, (n,), 0, 1000, np.int32)) if jax is not None else None,
        lambda: generator.integers(0, 1000, n, dtype=np.int32))
    for case, (draw, jdraw, peer) in _sampling(n, generator, jr if jax is not None else None, executor).items():
        add(case, lambda d=draw: d(key), jdraw, peer)
    return out


def _sampling(n: int, generator, jr, executor: str) -> dict:
    """case -> (arrayx draw of key, jax.random draw of key or None, numpy.random.Generator's counterpart
    or None): categorical over n // 1000 rows of 1000 logits; choice of n values from 1000 with
    probabilities p; choice of n // 10 of n without replacement, with and without p; choice of n of
    arange(1000); permutation of n (float dtypes: those of the logits and of p)."""
    jnp = __import__("jax.numpy").numpy if jr is not None else None
    out = {}
    rng = np.random.default_rng(1)
    for t in (np.dtype(np.float64), np.dtype(np.float32)):
        logits = rng.standard_normal((n // 1000, 1000)).astype(t)
        p, p_all = rng.random(1000), rng.random(n)
        p, p_all = p / p.sum(), p_all / p_all.sum()  # numpy.random.Generator: its own float64 p
        lx, px, pax = (xp.asarray(a.astype(t), device=executor) for a in (logits, p, p_all))
        lj, pj, paj = (jnp.asarray(a.astype(t)) for a in (logits, p, p_all)) if jr else (None,) * 3
        out[f"categorical {t.name}"] = (
            lambda k, lx=lx: xr.categorical(k, lx), (lambda k, lj=lj: jr.categorical(k, lj)) if jr else None, None)
        out[f"choice p {t.name}"] = (
            lambda k, px=px: xr.choice(k, 1000, (n,), p=px),
            (lambda k, pj=pj: jr.choice(k, 1000, (n,), p=pj)) if jr else None,
            lambda p=p: generator.choice(1000, n, p=p))
        out[f"choice p no-replace {t.name}"] = (
            lambda k, pax=pax: xr.choice(k, n, (n // 10,), replace=False, p=pax),
            (lambda k, paj=paj: jr.choice(k, n, (n // 10,), replace=False, p=paj)) if jr else None,
            lambda p=p_all: generator.choice(n, n // 10, replace=False, p=p))
    out["choice int64"] = (lambda k: xr.choice(k, 1000, (n,)), (lambda k: jr.choice(k, 1000, (n,))) if jr else None,
                           lambda: generator.choice(1000, n))
    out["choice no-replace int64"] = (
        lambda k: xr.choice(k, n, (n // 10,), replace=False),
        (lambda k: jr.choice(k, n, (n // 10,), replace=False)) if jr else None,
        lambda: generator.choice(n, n // 10, replace=False))
    out["permutation int64"] = (lambda k: xr.permutation(k, n), (lambda k: jr.permutation(k, n)) if jr else None,
                                lambda: generator.permutation(n))
    return out


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="values per draw (default 1e7)")
    parser.add_argument("--repeat", type=int, default=2, help="timed repeats per case; the best counts")
    parser.add_argument("--executor", default="numpy", help="arrayx executor (default numpy)")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results" / "random.json"))
    args = parser.parse_args()

    results = {}
    libs = ["arrayx", "arrayx (no Numba)", "numpy.Generator", "jax.random", "jax.random (jit)"]
    print(f"n = {args.n:.0e} values per draw, best of {args.repeat}; times in ms (M values/s)")
    print(f"{'case':<28}" + "".join(f"{lib:>24}" for lib in libs) + f"{'vs numpy':>10}{'vs jax':>9}{'vs jit':>9}")
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
        print(f"{case:<28}{cells}{ratios}")
    report = {
        "benchmark": "random", "n": args.n, "repeat": args.repeat, "executor": args.executor,
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "processor": platform.machine(),
                    "cpus": os.cpu_count(), "load_average_1min": os.getloadavg()[0]},
        "cases": results,
    }
    write_json(args.out, report, indent=2)
    return report


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = "random draws (threefry, bit-exact with jax.random) vs numpy.random.Generator and jax.random"


def workloads(quick: bool = False) -> dict:
    table = cases(10**5 if quick else 10**6)
    numba = cases(10**5 if quick else 10**6, "numba") if _numba_installed() else {}
    rows = {k: v for k, v in table.items() if not quick or not k.endswith("float64")}
    labels = {"arrayx": "arrayx[numpy]", "arrayx (no Numba)": "arrayx[numpy, no Numba]"}
    out = {}
    for k, v in rows.items():
        out[k] = {labels.get(lib, lib): fn for lib, fn in v.items()}
        if k in numba:
            out[k]["arrayx[numba]"] = numba[k]["arrayx"]
    return out


def _numba_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("numba") is not None


if __name__ == "__main__":
    main()
