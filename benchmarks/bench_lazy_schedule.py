"""A training loop under ``arrayx.lazy()`` whose learning rate changes every step (a schedule).

    PYTHONPATH=. python benchmarks/bench_lazy_schedule.py --executor jax --steps 300 --label after

Each step runs ``with arrayx.lazy(): w -= lr * tanh(x @ w) ...`` (a small least-squares gradient
step on a 256 x 64 float32 weight) with ``lr = 0.1 * 0.99**step``, a new Python float each step.
Reported: the programs ``lazy()`` compiled over the loop (``laziness.stats["compiles"]``), the
loop's seconds, the same loop run eagerly (no scope) and under ``jit`` with ``lr`` an argument,
and the process's peak RSS growth over the lazy loop (MB).  Each run adds its label's figures to
``benchmarks/results/lazy_schedule.json`` (other labels kept).  The machine is shared: the
figures are one run each, the timings are indicative.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "lazy_schedule.json")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _step(ax, w, x, y, lr):
    pred = ax.tanh(x @ w)
    err = pred - y
    g = x.T @ (err * (1.0 - pred * pred)) / x.shape[0]
    w -= lr * g
    return w


def run(executor: str, steps: int) -> dict:
    import arrayx as ax
    from arrayx.transforms import laziness

    rng = np.random.default_rng(0)
    host = [rng.normal(size=s).astype(np.float32) for s in ((256, 64), (512, 256), (512, 64))]
    with ax.use_executor(executor):
        def fresh():
            return [ax.asarray(h.copy()) for h in host]

        def lazy_loop():
            w, x, y = fresh()
            for i in range(steps):
                with ax.lazy():
                    _step(ax, w, x, y, 0.1 * 0.99 ** i)
            return float(ax.sum(w))

        def eager_loop():
            w, x, y = fresh()
            for i in range(steps):
                _step(ax, w, x, y, 0.1 * 0.99 ** i)
            return float(ax.sum(w))

        def jit_loop():
            w, x, y = fresh()
            f = ax.jit(lambda w, x, y, lr: _step(ax, w * 1.0, x, y, lr))
            for i in range(steps):
                w = f(w, x, y, 0.1 * 0.99 ** i)
            return float(ax.sum(w))

        out = {}
        eager_loop()  # warm-up: imports, eager kernels
        compiles, rss = laziness.stats["compiles"], _rss_mb()
        t = time.perf_counter()
        lazy_value = lazy_loop()
        out["lazy_s"] = time.perf_counter() - t
        out["lazy_compiles"] = laziness.stats["compiles"] - compiles
        out["lazy_rss_growth_mb"] = _rss_mb() - rss
        t = time.perf_counter()
        eager_value = eager_loop()
        out["eager_s"] = time.perf_counter() - t
        t = time.perf_counter()
        jit_value = jit_loop()
        out["jit_s"] = time.perf_counter() - t
        out["values_agree"] = bool(np.isclose(lazy_value, eager_value, rtol=1e-4)
                                   and np.isclose(jit_value, eager_value, rtol=1e-4))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default="numpy")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    figures = run(args.executor, args.steps)
    figures.update(steps=args.steps, machine=platform.machine(), cpus=os.cpu_count())
    print(json.dumps({args.label: {args.executor: figures}}, indent=1))
    results = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            results = json.load(f)
    results.setdefault(args.label, {})[args.executor] = figures
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
