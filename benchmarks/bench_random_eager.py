"""Eager arrayx.random on the jax executor against eager jax.random: small draws, where dispatch and
compilation are the cost (issue 43; benchmarks/bench_random.py measures throughput on large draws).

Run:  JAX_PLATFORMS=cpu python benchmarks/bench_random_eager.py            (writes
          benchmarks/results/random_eager.json)
      JAX_PLATFORMS=cpu python benchmarks/bench_random_eager.py --first   (also each case's first call,
          one fresh process per case and route: the compile)

Routes (arrayx/_random_programs.py): ``arrayx`` is an eager draw as one compiled program (the default);
``arrayx (op by op)`` sets ``_random_programs.PROGRAMS = False``, the route before: each arrayx
operation of the draw (threefry's rounds, the transform) its own small jax.jit program.  jax.random's
samplers take the same arguments (64-bit types on, as arrayx's defaults); the values are the same bits
(tests/test_random*.py).  Each case: ``--calls`` calls per round (each waits for its result), the
routes interleaved round by round; the median over ``--rounds`` rounds of the per-call mean counts.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # a checkout runs without installing
from benchmarks._harness import write_json  # noqa: E402

N = 1000  # values per draw


def cases() -> dict:
    """name -> (arrayx draw of (xr, xp, key), jax.random draw of (jr, jnp, key)); the shapes, dtypes and
    parameters of both are the same."""
    import numpy as np

    def ax(name, *a, **k):
        return lambda xr, xp, key, ctx: getattr(xr, name)(key, *a, **k)

    def jx(name, *a, **k):
        return lambda jr, jnp, key, ctx: getattr(jr, name)(key, *a, **k)

    return {
        "normal float64": (ax("normal", (N,)), jx("normal", (N,))),
        "normal float32": (ax("normal", (N,), np.float32), jx("normal", (N,), np.float32)),
        "uniform float32": (ax("uniform", (N,), np.float32), jx("uniform", (N,), np.float32)),
        "uniform float64 [-1.5, 2.25)": (ax("uniform", (N,), minval=-1.5, maxval=2.25),
                                         jx("uniform", (N,), minval=-1.5, maxval=2.25)),
        "exponential float64": (ax("exponential", (N,)), jx("exponential", (N,))),
        "gumbel float64": (ax("gumbel", (N,)), jx("gumbel", (N,))),
        "truncated_normal float64": (ax("truncated_normal", -1.0, 2.0, (N,)), jx("truncated_normal", -1.0, 2.0, (N,))),
        "bernoulli 0.3": (ax("bernoulli", 0.3, (N,)), jx("bernoulli", 0.3, (N,))),
        "randint int64 [0, 10)": (ax("randint", (N,), 0, 10), jx("randint", (N,), 0, 10)),
        "bits uint32": (ax("bits", (N,), np.uint32), jx("bits", (N,), np.uint32)),
        "split": (ax("split"), jx("split")),
        "fold_in": (ax("fold_in", 7), jx("fold_in", 7)),
        "permutation 1000": (ax("permutation", N), jx("permutation", N)),
        "choice 1000 of 100, p": (lambda xr, xp, key, ctx: xr.choice(key, 100, (N,), p=ctx["p"]),
                                  lambda jr, jnp, key, ctx: jr.choice(key, 100, (N,), p=ctx["p"])),
        "categorical 10 x 100": (lambda xr, xp, key, ctx: xr.categorical(key, ctx["logits"]),
                                 lambda jr, jnp, key, ctx: jr.categorical(key, ctx["logits"])),
    }


def data() -> tuple:
    """(logits of categorical, p of choice) as NumPy arrays."""
    import numpy as np

    rng = np.random.default_rng(0)
    p = rng.random(100)
    return rng.standard_normal((10, 100)), p / p.sum()


ROUTES = ("arrayx", "arrayx (op by op)", "jax.random")


def runner(route: str):
    """(draw function of a case name, wait function) for ``route``; loads the libraries."""
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    jax.config.update("jax_enable_x64", True)
    table = cases()
    logits, p = data()
    if route == "jax.random":
        key = jr.PRNGKey(0)
        ctx = {"logits": jnp.asarray(logits), "p": jnp.asarray(p)}
        return (lambda name: table[name][1](jr, jnp, key, ctx)), (lambda out: out.block_until_ready())
    import arrayx as xp
    from arrayx import _random_programs
    from arrayx import random as xr

    xp.set_executor("jax")
    key = xr.key(0)
    ctx = {"logits": xp.asarray(logits), "p": xp.asarray(p)}
    programs = route == "arrayx"

    def draw(name):
        saved, _random_programs.PROGRAMS = _random_programs.PROGRAMS, programs
        try:
            return table[name][0](xr, xp, key, ctx)
        finally:
            _random_programs.PROGRAMS = saved

    return draw, (lambda out: out._buf.block_until_ready())


def first_call(route: str, name: str) -> float:
    """Seconds of the first call of ``name`` on ``route`` in a fresh process (libraries loaded first)."""
    code = (f"import sys, time; sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r}); "
            f"import bench_random_eager as b; draw, wait = b.runner({route!r}); "
            f"t = time.perf_counter(); wait(draw({name!r})); print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")})
    return float(out.stdout.strip().splitlines()[-1])


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20, help="calls per case, route and round")
    parser.add_argument("--first", action="store_true", help="also the first call (compiles), fresh processes")
    parser.add_argument("--only", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results" / "random_eager.json"))
    args = parser.parse_args()

    import jax

    names = [n for n in cases() if (not args.only or n in args.only.split(","))]
    runners = {r: runner(r) for r in ROUTES}
    load_before = os.getloadavg()[0]
    per_call = {(n, r): [] for n in names for r in ROUTES}
    for name in names:
        for route in ROUTES:  # warm: compiled
            draw, wait = runners[route]
            wait(draw(name))
    for _ in range(args.rounds):
        for name in names:
            for route in ROUTES:
                draw, wait = runners[route]
                start = time.perf_counter()
                for _ in range(args.calls):
                    wait(draw(name))
                per_call[name, route].append((time.perf_counter() - start) / args.calls)
    rows = []
    print(f"{'case':<32}" + "".join(f"{r + ' us':>24}" for r in ROUTES) + f"{'vs jax':>9}{'op/prog':>9}")
    for name in names:
        row = {"case": name}
        for route in ROUTES:
            row[f"{route} us"] = round(statistics.median(per_call[name, route]) * 1e6, 1)
        row["arrayx / jax.random"] = round(row["arrayx us"] / row["jax.random us"], 2)
        row["op by op / arrayx"] = round(row["arrayx (op by op) us"] / row["arrayx us"], 1)
        if args.first:
            for route in ROUTES:
                row[f"{route} first call ms"] = round(first_call(route, name) * 1e3, 1)
        rows.append(row)
        print(f"{name:<32}" + "".join(f"{row[r + ' us']:>24.1f}" for r in ROUTES)
              + f"{row['arrayx / jax.random']:>8.2f}x{row['op by op / arrayx']:>8.1f}x"
              + ("  first ms: " + ", ".join(f"{row[r + ' first call ms']:.0f}" for r in ROUTES) if args.first else ""))
    report = {
        "what": __doc__.splitlines()[0],
        "command": "JAX_PLATFORMS=cpu python " + " ".join(["benchmarks/bench_random_eager.py", *sys.argv[1:]]),
        "jax": jax.__version__, "n": N, "rounds": args.rounds, "calls": args.calls,
        "machine": {"python": platform.python_version(), "processor": platform.machine(), "cpus": os.cpu_count(),
                    "load_average_1min_before": load_before, "load_average_1min_after": os.getloadavg()[0]},
        "rows": rows,
    }
    write_json(args.out, report)
    return report


if __name__ == "__main__":
    main()
