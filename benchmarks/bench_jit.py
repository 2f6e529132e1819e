"""arrayx.jit against jax.jit, and jit on the NumPy executor against eager and the forward pass.

Run:  nice python benchmarks/bench_jit.py [--quick] [--rows jax [--runs N]]
      (writes benchmarks/results/jit.json; --rows jax: only the jax executor's rows, written to
      benchmarks/results/jit_rows.json beside the full run's file; --runs N: N whole runs in turn,
      the rows the median of each figure, every run kept under "runs")

Every comparison runs both sides in one process, interleaved (A, B, A, B, ...), best of
several repeats, every JAX result waited for (``block_until_ready``).  Rows:

- jax executor: ``arrayx.jit(f)`` / ``jax.jit`` of the same jax.numpy function (ratio = jax time /
  arrayx time, so >= 1 means arrayx is as fast) for SELU and a 6-op chain at 1e6 and 1e7 float32
  elements, and ``jit(grad(loss))`` for logistic regression (10000x100) and a 784-512-512-10 MLP
  (batch 256) against ``jax.jit(jax.grad)``; each jax row also times a second, separately compiled
  ``jax.jit`` of the same function in the same rounds (``ratio_jax_over_jax_again``: how far two copies
  of one program part in this run, the noise floor the arrayx ratio is read against);
- numpy executor: ``jit(grad(loss))`` time / ``jit(loss)`` time (the gradient/forward ratio) for the
  same two models;
- call overhead: a cache hit of ``jit(f)`` minus calling its compiled function directly (size-8
  arrays, numpy executor), and the jitted 5-op function against the same 5 ops eagerly;
- tracing + compiling the MLP training step, per executor (first call minus a warm call).
"""
from __future__ import annotations

import json
import os
import pathlib
import platform
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # this checkout's arrayx

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402
from benchmarks import _models  # noqa: E402
from benchmarks._harness import block as _block  # noqa: E402
from benchmarks._models import logreg_loss, mlp_xent_loss as mlp_loss  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 7


#: calls per label per round of the jax elementwise rows, so the best of SELU 1e6 is the best of 700
#: 0.5 ms calls (with 140, two copies of one program parted by up to 25% between runs at load 5)
CALLS = {("selu", 10**6): 100, ("chain6", 10**6): 20, ("selu", 10**7): 5, ("chain6", 10**7): 5}


def interleaved(fns: dict, number: int) -> dict:
    return _models.interleaved(fns, number=number, repeat=REPEAT)


# -- the functions, written once against a namespace m (arrayx or jax.numpy) ------------------------


def selu(m, x):
    return 1.0507009873554805 * m.where(x > 0, x, 1.6732632423543772 * (m.exp(x) - 1.0))


def chain6(m, x):
    return m.sqrt(m.abs(m.sin(x) * 2.0 + m.cos(x)) + 1.0) - x


def _bench_data(rng, dtype):
    lw, lx, ly = _models.logreg_data(rng, dtype=dtype)
    params = _models.mlp_params(rng, dtype=dtype)
    mx = rng.standard_normal((256, 784)).astype(dtype)
    my = np.eye(10, dtype=dtype)[rng.integers(0, 10, 256)]
    return (lw, lx, ly), (params, mx, my)


def _to(tree, conv):
    return ax.pytree.map(conv, tree)


def bench_jax(rows):
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    with ax.use_executor("jax"):
        for n in (10**6, 10**7):
            xn = rng.standard_normal(n).astype(np.float32)
            xa, xj = ax.asarray(xn), jnp.asarray(xn)
            for name, f in (("selu", selu), ("chain6", chain6)):
                fa = ax.jit(lambda x, f=f: f(ax, x))
                fj, fj2 = (jax.jit(lambda x, f=f: f(jnp, x)) for _ in range(2))
                t = interleaved({"arrayx": lambda: fa(xa), "jax": lambda: fj(xj), "jax again": lambda: fj2(xj)},
                                number=CALLS[name, n])
                rows.append(_jax_row(f"jax {name} {n:.0e} float32", t, ">= 0.95"))
        (lw, lx, ly), (params, mx, my) = _bench_data(rng, np.float32)
        for name, loss, args in (("logreg 10000x100", logreg_loss, (lw, lx, ly)),
                                 ("mlp 784-512-512-10 batch 256", mlp_loss, (params, mx, my))):
            a_args = _to(args, ax.asarray)
            j_args = _to(args, jnp.asarray)
            ga = ax.jit(ax.grad(lambda *a, loss=loss: loss(ax, *a)))
            gj, gj2 = (jax.jit(jax.grad(lambda *a, loss=loss: loss(jnp, *a))) for _ in range(2))
            t = interleaved({"arrayx": lambda: ga(*a_args), "jax": lambda: gj(*j_args),
                             "jax again": lambda: gj2(*j_args)}, number=10)
            rows.append(_jax_row(f"jax jit(grad) {name}", t, ">= 0.9"))


def _jax_row(case, t, goal) -> dict:
    return {"case": case, "arrayx_s": t["arrayx"], "jax_s": t["jax"], "jax_again_s": t["jax again"],
            "ratio_jax_over_arrayx": t["jax"] / t["arrayx"], "ratio_jax_over_jax_again": t["jax"] / t["jax again"],
            "goal": goal}


def _numpy_logreg_grad(w, x, y):
    """Hand-written NumPy gradient of logreg_loss."""
    e = np.exp(-(x @ w) * y)
    return x.T @ (-y * e / (1.0 + e)) / len(y)


def _numpy_mlp_grad(params, x, y):
    """Hand-written NumPy backprop of mlp_xent_loss: [(gw, gb), ...]."""
    hs = [x]
    for w, b in params[:-1]:
        hs.append(np.tanh(hs[-1] @ w + b))
    w, b = params[-1]
    logits = hs[-1] @ w + b
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    delta = (p / p.sum(axis=1, keepdims=True) * y.sum(axis=1, keepdims=True) - y) / len(x)
    grads = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        grads[i] = (hs[i].T @ delta, delta.sum(axis=0))
        if i:
            delta = (delta @ params[i][0].T) * (1 - hs[i] ** 2)
    return grads


def bench_numpy(rows):
    rng = np.random.default_rng(1)
    (lw, lx, ly), (params, mx, my) = _bench_data(rng, np.float64)
    with ax.use_executor("numpy"):
        for name, loss, args, hand in (("logreg 10000x100", logreg_loss, (lw, lx, ly), _numpy_logreg_grad),
                                       ("mlp 784-512-512-10 batch 256", mlp_loss, (params, mx, my), _numpy_mlp_grad)):
            a_args = _to(args, ax.asarray)
            fwd = ax.jit(lambda *a, loss=loss: loss(ax, *a))
            grd = ax.jit(ax.grad(lambda *a, loss=loss: loss(ax, *a)))
            for got, want in zip(ax.pytree.leaves(grd(*a_args)), ax.pytree.leaves(hand(*args))):
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12)
            t = interleaved({"forward": lambda: fwd(*a_args), "grad": lambda: grd(*a_args),
                             "numpy forward": lambda: loss(np, *args), "numpy grad": lambda: hand(*args)}, number=5)
            rows.append({"case": f"numpy jit(grad)/jit(loss) {name}", "forward_s": t["forward"], "grad_s": t["grad"],
                         "ratio_grad_over_forward": t["grad"] / t["forward"], "goal": "<= 2.0",
                         "hand_numpy_forward_s": t["numpy forward"], "hand_numpy_grad_s": t["numpy grad"],
                         "hand_numpy_ratio": t["numpy grad"] / t["numpy forward"]})
        x = ax.asarray(np.linspace(0.0, 1.0, 8))
        y = ax.asarray(np.ones(8))

        def five(x, y):
            return ax.sin(x) * y + ax.exp(x) - y / 2.0

        jf = ax.jit(five)
        jf(x, y)
        (entry,) = jf._fast.values()
        fn, xb, yb = entry.fn, x._buf, y._buf
        t = interleaved({"eager": lambda: five(x, y), "jit": lambda: jf(x, y), "compiled": lambda: fn(xb, yb)},
                        number=2000)
        rows.append({"case": "numpy call overhead, 5 ops on size-8 arrays", "eager_s": t["eager"], "jit_s": t["jit"],
                     "compiled_s": t["compiled"], "cache_hit_overhead_us": (t["jit"] - t["compiled"]) * 1e6,
                     "ratio_eager_over_jit": t["eager"] / t["jit"], "goal": "overhead <= 5 us; jit faster than eager"})


def bench_compile_time(rows):
    rng = np.random.default_rng(2)
    _, (params, mx, my) = _bench_data(rng, np.float32)

    def step(params, x, y):
        g = ax.grad(lambda p: mlp_loss(ax, p, x, y))(params)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]

    for name in ax.executors():
        if name == "cupy":
            continue
        with ax.use_executor(name):
            args = (_to(params, ax.asarray), ax.asarray(mx), ax.asarray(my))
            jstep = ax.jit(step)
            t0 = time.perf_counter()
            _block(jstep(*args))
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            _block(jstep(*args))
            warm = time.perf_counter() - t0
            rows.append({"case": f"trace+compile MLP step on {name}", "first_call_s": first, "warm_call_s": warm,
                         "trace_and_compile_s": first - warm})


def _median_rows(runs: list) -> list:
    """Per case, the median over the runs of every ratio (and time): the figure a run's noise does not decide."""
    out = []
    for i, first in enumerate(runs[0]):
        row = dict(first)
        for key, value in first.items():
            if isinstance(value, float):
                row[key] = statistics.median(run[i][key] for run in runs)
        row["of_runs"] = len(runs)
        out.append(row)
    return out


def main():
    rows: list = []
    load_before = os.getloadavg()
    only_jax = "--rows" in sys.argv and sys.argv[sys.argv.index("--rows") + 1] == "jax"
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    each: list = []
    if "jax" in ax.executors():
        for _ in range(runs):  # whole runs in turn: one run's ratios swing as far as jax against itself
            each.append([])
            bench_jax(each[-1])
        rows.extend(_median_rows(each) if runs > 1 else each[0])
    if not only_jax:
        bench_numpy(rows)
        bench_compile_time(rows)
    for r in rows:
        print({k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()})
    out = pathlib.Path(__file__).parent / "results" / ("jit_rows.json" if only_jax else "jit.json")
    out.write_text(json.dumps({"machine": platform.processor() or platform.machine(), "python": sys.version.split()[0],
                               "command": "nice python benchmarks/bench_jit.py" + (" --quick" if QUICK else "")
                               + (" --rows jax" if only_jax else "") + (f" --runs {runs}" if runs > 1 else ""),
                               "load_average_1min": {"before": load_before[0], "after": os.getloadavg()[0]},
                               "rows": rows, **({"runs": each} if runs > 1 else {})}, indent=1))
    print("wrote", out)


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = "elementwise chains under jit (arrayx.jit per executor vs NumPy, numexpr, jax.jit) and compile latency"


def workloads(quick: bool = False) -> dict:
    from benchmarks._harness import block, installed

    rng = np.random.default_rng(0)
    out = {}
    executors = [e for e in ("numpy", "numba", "jax") if ax.executors.get(e).available()]
    for n in (10**5,) if quick else (10**6, 10**7):
        xn = rng.standard_normal(n).astype(np.float32)
        for name, f in (("selu", selu), ("chain6", chain6)):
            row = {"numpy": lambda f=f, x=xn: f(np, x)}
            if installed("numexpr") and name == "selu":
                import numexpr

                row["numexpr"] = lambda x=xn: numexpr.evaluate(
                    "1.0507009873554805 * where(x > 0, x, 1.6732632423543772 * (exp(x) - 1.0))", local_dict={"x": x})
            if installed("jax"):
                import jax
                import jax.numpy as jnp

                xj, fj = jnp.asarray(xn), jax.jit(lambda x, f=f: f(jnp, x))
                row["jax.jit"] = lambda fj=fj, xj=xj: fj(xj).block_until_ready()
            for e in executors:
                with ax.use_executor(e):
                    xa = ax.asarray(xn)
                fa = ax.jit(lambda x, f=f: f(ax, x))
                row[f"arrayx[{e}] jit"] = lambda fa=fa, xa=xa: block(fa(xa))
            out[f"{name} {n:.0e} float32"] = row
    (lw, lx, ly), _ = _bench_data(rng, np.float32)
    row = {}
    if installed("jax"):  # tracing + compiling a fresh function each call: what a new shape or function costs
        import jax
        import jax.numpy as jnp

        jargs = _to((lw, lx, ly), jnp.asarray)
        row["jax.jit(grad)"] = lambda: jax.jit(jax.grad(lambda *a: logreg_loss(jnp, *a)))(*jargs).block_until_ready()
    for e in executors:
        with ax.use_executor(e):
            aargs = _to((lw, lx, ly), ax.asarray)
        row[f"arrayx[{e}] jit(grad)"] = lambda aargs=aargs: block(ax.jit(ax.grad(lambda *a: logreg_loss(ax, *a)))(*aargs))
    out["compile latency: logreg jit(grad)"] = row
    return out


if __name__ == "__main__":
    main()
