"""Eager float64 ``matmul`` on the jax executor (CPU): XLA's product against NumPy's BLAS
(``arrayx/executors/jax/blas.py``), per shape, as the route's ``worth`` rule sees them.

Run:  python benchmarks/bench_jax_blas.py [--rounds 9] [--output benchmarks/results/jax_blas_matmul.json]

Each shape is timed both ways in one process, interleaved round by round: best wall time and best
CPU time of the process (``process_time``: XLA's worker threads included) per call.  BLAS is
pinned to one thread, as benchmarks/bench_clients.py pins it, unless OPENBLAS_NUM_THREADS is set.
Every shape is timed both ways (``blas.FORCE``); ``routed`` says whether the executor's rule
(``blas.worth``) sends that shape to BLAS.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

#: (name, operand a's shape, operand b's shape, how the product reads them)
SHAPES = (
    ("xpx.cov large: m_c.T @ m_c", (120_000, 64), None, "aT_a"),
    ("cov 20,000 rows: m_c.T @ m_c", (20_000, 64), None, "aT_a"),
    ("cov 6,000 rows: m_c.T @ m_c", (6_000, 64), None, "aT_a"),
    ("cov 2,000 rows: m_c.T @ m_c", (2_000, 64), None, "aT_a"),
    ("X.T @ Y, 120,000 rows", (120_000, 64), (120_000, 64), "aT_b"),
    ("X.T @ X, 50,000 x 256", (50_000, 256), None, "aT_a"),
    ("X.T @ Y, 10,000 x 500 and x 500", (10_000, 500), (10_000, 500), "aT_b"),
    ("A @ B, 256 x 16,384 by 16,384 x 256", (256, 16_384), (16_384, 256), "a_b"),
    ("euclidean large: X @ Y.T", (2_000, 64), (4_000, 64), "a_bT"),
    ("euclidean small: X @ Y.T", (500, 64), (1_000, 64), "a_bT"),
    ("X @ W, 20,000 x 64 by 64 x 64", (20_000, 64), (64, 64), "a_b"),
    ("4,000 x 4,000 by 4,000 x 64", (4_000, 4_000), (4_000, 64), "a_b"),
    ("1,000 cubed", (1_000, 1_000), (1_000, 1_000), "a_b"),
    ("200 cubed", (200, 200), (200, 200), "a_b"),
)


def _product(kind):
    return {"aT_a": lambda a, b: a.T @ a, "aT_b": lambda a, b: a.T @ b,
            "a_bT": lambda a, b: a @ b.T, "a_b": lambda a, b: a @ b}[kind]


def measure(rounds: int) -> dict:
    import arrayx
    from arrayx.executors.jax import blas

    rng = np.random.default_rng(0)
    out = {}
    with arrayx.use_executor("jax"):
        for name, sa, sb, kind in SHAPES:
            a = arrayx.asarray(rng.normal(size=sa))
            b = arrayx.asarray(rng.normal(size=sb)) if sb else None
            f = _product(kind)

            def run(route: bool, a=a, b=b, f=f):
                blas.ENABLED = route
                try:
                    np.asarray(f(a, b))  # waits for the value
                finally:
                    blas.ENABLED = True

            blas.FORCE = True  # every shape both ways; ``routed``: what the rule decides
            run(True)
            run(False)
            wall = {"xla": [], "blas": []}
            cpu = {"xla": [], "blas": []}
            for r in range(rounds):
                for label in (("xla", "blas") if r % 2 else ("blas", "xla")):
                    t, c = time.perf_counter(), time.process_time()
                    run(label == "blas")
                    wall[label].append(time.perf_counter() - t)
                    cpu[label].append(time.process_time() - c)
            m, k = (sa[1], sa[0]) if kind.startswith("aT") else sa
            n = (sa[1] if kind == "aT_a" else sb[1] if kind == "aT_b" else sb[0] if kind == "a_bT" else sb[1])
            blas.FORCE = False
            routed = blas.worth(m, k, n)
            best = {k_: min(v) * 1e3 for k_, v in wall.items()}
            best_cpu = {k_: min(v) * 1e3 for k_, v in cpu.items()}
            out[name] = {"m, k, n": [m, k, n], "routed": routed,
                         "wall_ms": best, "cpu_ms": best_cpu,
                         "cpu xla/blas": best_cpu["xla"] / best_cpu["blas"]}
            print(f"{name:34s} m,k,n={m},{k},{n} routed={routed!s:5} wall xla {best['xla']:7.2f} blas "
                  f"{best['blas']:7.2f} | cpu xla {best_cpu['xla']:7.2f} blas {best_cpu['blas']:7.2f} "
                  f"(xla/blas {best_cpu['xla'] / best_cpu['blas']:.2f})", flush=True)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--output", default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    load = os.getloadavg()
    t0 = time.time()
    shapes = measure(args.rounds)
    doc = {"command": "python benchmarks/bench_jax_blas.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.platform(),
           "cpus": os.cpu_count(), "numpy": np.__version__, "rounds": args.rounds,
           "blas threads": os.environ.get("OPENBLAS_NUM_THREADS"),
           "load average before (1, 5, 15 min)": list(load), "load average after": list(os.getloadavg()),
           "duration_s": round(time.time() - t0, 1), "shapes": shapes}
    try:
        import jax

        doc["jax"] = jax.__version__
    except ImportError:
        pass
    if args.output:
        pathlib.Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
