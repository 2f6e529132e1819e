"""vmap: per-example gradients, vmapped Jacobians and batched linear algebra, against their peers.

Run:  nice python benchmarks/bench_vmap.py [--quick] [--runs N]
      (writes benchmarks/results/vmap.json; --runs N: N whole runs in turn, each figure the median
      over the runs, every run kept under "runs"; the JSON records OPENBLAS_NUM_THREADS)
      or, the per-example gradients row only, with the other benches:  python -m benchmarks --only vmap

OpenBLAS's threads, measured (3 runs each, through /work/wt/bench_quiet.sh, load 1.4-2.6): the loop
swung alike with 2 threads (275 / 646 / 601 ms, vmap.json) and with OPENBLAS_NUM_THREADS=1 (294 /
803 / 600 ms, vmap_openblas1.json), the first run of a process fastest in both, and vmap(grad)
stayed at 79-87 ms in both: the threads are not what swings it, so the executor leaves them alone.

Every comparison runs its sides in one process, interleaved, best of several repeats, every JAX
result waited for.  float32 throughout except the Jacobians (float64).  Rows:

- per-example gradients of the 784-512-512-10 tanh MLP (squared error), batch 128 (issue 12):
  arrayx eager ``vmap(grad)`` on the numpy executor with its buffer pool (the default), and with the
  pool's limit at 0 (each result a fresh allocation, as before the pool); a Python loop of 128 arrayx ``grad`` calls
  (its stacked results checked against vmap's);
  hand-written batched NumPy backprop; ``jax.jit(jax.vmap(jax.grad))``; arrayx
  ``jit(vmap(grad))`` on the numpy and jax executors;
- ``jacrev`` of a 200 -> 200 function and ``hessian`` of a 200-input scalar function (now vmapped)
  against the per-basis-vector loops they replace (one pullback per output element; a jvp of
  that loop per input element), numpy executor;
- a batched matmul (128 x 64x64 @ 64x64 per member) and solve (128 x 64x64 systems):
  ``vmap`` against NumPy's stacked call and ``jax.jit(jax.vmap)``.
"""
from __future__ import annotations

import json
import os
import pathlib
import platform
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # this checkout's arrayx

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402
from benchmarks import _models  # noqa: E402
from benchmarks._models import MLP_SIZES as SIZES, mlp_params, mlp_squared_loss as mlp_loss  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 5


def interleaved(fns: dict, number: int = 1) -> dict:
    return _models.interleaved(fns, number=number, repeat=REPEAT)


# -- per-example gradients --------------------------------------------------------------------------

BATCH = 128


def numpy_per_example(params, x, y):
    """Hand-written backprop, batched over examples: one gradient per row of x, as [(gw, gb), ...]."""
    hs = [x]
    for w, b in params[:-1]:
        hs.append(np.tanh(hs[-1] @ w + b))
    w, b = params[-1]
    delta = 2 * (hs[-1] @ w + b - y)  # (B, out)
    grads = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        grads[i] = (hs[i][:, :, None] * delta[:, None, :], delta)
        if i:
            delta = (delta @ params[i][0].T) * (1 - hs[i] ** 2)
    return grads


def per_example_rows():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    p = mlp_params(rng)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.standard_normal((BATCH, SIZES[-1])).astype(np.float32)
    pa, xa, ya = ax.pytree.map(ax.asarray, p), ax.asarray(x), ax.asarray(y)
    grad_ax = ax.grad(lambda q, a, b: mlp_loss(ax, q, a, b))
    vg = ax.vmap(grad_ax, in_axes=(None, 0, 0))
    jit_vg = ax.jit(vg)
    with ax.use_executor("jax"):
        pj_ax, xj_ax, yj_ax = (ax.pytree.map(lambda v: ax.asarray(v, device="jax"), p), ax.asarray(x, device="jax"),
                               ax.asarray(y, device="jax"))
    jit_vg_jax = ax.jit(vg)
    pj, xj, yj = jax.tree_util.tree_map(jnp.asarray, p), jnp.asarray(x), jnp.asarray(y)
    jax_vg = jax.jit(jax.vmap(jax.grad(lambda q, a, b: mlp_loss(jnp, q, a, b)), in_axes=(None, 0, 0)))
    pool = ax.executors.get("numpy").buffer_pool  # on by default (ARRAYX_BUFFER_POOL=0 turns it off)

    def vg_fresh():  # the pool's limit at 0: every large result a fresh np.empty, as before the pool
        limit, pool.limit_bytes = pool.limit_bytes, 0
        try:
            return vg(pa, xa, ya)
        finally:
            pool.limit_bytes = limit

    def loop():  # one eager grad per example: BATCH separate results, each computed when called
        return [grad_ax(pa, xa[i], ya[i]) for i in range(BATCH)]

    # the same values, checked once: vmap against the hand-written backprop and against the loop
    got, want, looped = vg(pa, xa, ya), numpy_per_example(p, x, y), loop()
    for j, (g, w) in enumerate(zip(ax.pytree.leaves(got), ax.pytree.leaves(want))):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-3, atol=2e-4)
        per_example = np.stack([np.asarray(ax.pytree.leaves(looped[i])[j]) for i in range(BATCH)])
        np.testing.assert_allclose(per_example, np.asarray(g), rtol=1e-4, atol=1e-5)  # float32, other sum orders
    # every side in one interleaved run, best of REPEAT rounds, the loop included (it once ran
    # alone, after the others, and swung 196-655 ms between runs on the shared machine)
    t = interleaved({
        "arrayx vmap(grad), numpy executor": lambda: vg(pa, xa, ya),
        "arrayx vmap(grad), numpy executor, buffer pool off": vg_fresh,
        "Python loop of arrayx grad (per batch)": loop,
        "hand-written NumPy batched backprop": lambda: numpy_per_example(p, x, y),
        "jax.jit(jax.vmap(jax.grad))": lambda: jax_vg(pj, xj, yj),
        "arrayx jit(vmap(grad)), numpy executor": lambda: jit_vg(pa, xa, ya),
        "arrayx jit(vmap(grad)), jax executor": lambda: jit_vg_jax(pj_ax, xj_ax, yj_ax),
    })
    base = t["arrayx vmap(grad), numpy executor"]
    return {"case": f"per-example gradients, MLP {SIZES}, batch {BATCH}, float32",
            "ms": {k: v * 1e3 for k, v in t.items()},
            "speedup of arrayx eager vmap(grad) over": {k: v / base for k, v in t.items() if v is not base},
            "buffer pool": pool.stats()}


# -- Jacobians ------------------------------------------------------------------------------------------


def _loop_jacrev(f, x):
    out, pullback = ax.vjp(f, x)
    eye = ax.eye(out.shape[0], dtype=out.dtype)
    return ax.stack([pullback(eye[i])[0] for i in range(out.shape[0])])


def jacobian_rows():
    rng = np.random.default_rng(1)
    w = ax.asarray(rng.standard_normal((200, 200)) / 14)
    x = ax.asarray(rng.standard_normal(200))
    f = lambda v: ax.tanh(w @ v) * ax.sum(v)  # noqa: E731
    s = lambda v: ax.sum(ax.tanh(w @ v) ** 2)  # noqa: E731
    np.testing.assert_allclose(np.asarray(ax.jacrev(f)(x)), np.asarray(_loop_jacrev(f, x)), rtol=1e-10, atol=1e-12)
    t = interleaved({
        "jacrev (vmapped pullback)": lambda: ax.jacrev(f)(x),
        "jacrev by a loop of pullbacks (before)": lambda: _loop_jacrev(f, x),
        "hessian (jacfwd(jacrev), both vmapped)": lambda: ax.hessian(s)(x),
        "hessian by loops (before: one jvp of the jacrev loop per input)": lambda: _old_hessian(s, x),
    })
    return {"case": "jacrev of 200 -> 200, hessian of a 200-input scalar function, float64, numpy executor",
            "ms": {k: v * 1e3 for k, v in t.items()},
            "jacrev speedup": t["jacrev by a loop of pullbacks (before)"] / t["jacrev (vmapped pullback)"],
            "hessian speedup": t["hessian by loops (before: one jvp of the jacrev loop per input)"]
            / t["hessian (jacfwd(jacrev), both vmapped)"]}


def _old_hessian(f, x):
    """What hessian did before: a jvp per input element of the jacrev loop (one pullback per output)."""
    def jac_loop(v):
        _, pullback = ax.vjp(f, v)
        return pullback(ax.ones((), dtype=v.dtype))[0]

    eye = ax.eye(x.shape[0], dtype=x.dtype)
    return ax.stack([ax.jvp(jac_loop, (x,), (eye[i],))[1] for i in range(x.shape[0])], axis=-1)


# -- batched linear algebra ----------------------------------------------------------------------------


def linalg_rows():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(2)
    a = (rng.standard_normal((BATCH, 64, 64)) + 8 * np.eye(64)).astype(np.float32)
    b = rng.standard_normal((BATCH, 64, 64)).astype(np.float32)
    v = rng.standard_normal((BATCH, 64)).astype(np.float32)
    aa, ba, va = ax.asarray(a), ax.asarray(b), ax.asarray(v)
    aj, bj, vj = jnp.asarray(a), jnp.asarray(b), jnp.asarray(v)
    mm, sv = ax.vmap(lambda p, q: p @ q), ax.vmap(ax.linalg.solve)
    jmm, jsv = jax.jit(jax.vmap(lambda p, q: p @ q)), jax.jit(jax.vmap(jnp.linalg.solve))
    t = interleaved({
        "matmul: arrayx vmap": lambda: mm(aa, ba),
        "matmul: numpy stacked": lambda: np.matmul(a, b),
        "matmul: jax.jit(jax.vmap)": lambda: jmm(aj, bj),
        "solve: arrayx vmap": lambda: sv(aa, va),
        "solve: numpy stacked": lambda: np.linalg.solve(a, v[..., None])[..., 0],
        "solve: jax.jit(jax.vmap)": lambda: jsv(aj, vj),
    }, number=5)
    return {"case": f"batched matmul and solve, {BATCH} x 64x64, float32, numpy executor",
            "ms": {k: v * 1e3 for k, v in t.items()},
            "arrayx / numpy": {"matmul": t["matmul: arrayx vmap"] / t["matmul: numpy stacked"],
                               "solve": t["solve: arrayx vmap"] / t["solve: numpy stacked"]}}


def _median(runs: list):
    """The median over the runs of every number in one row (nested dicts alike); the rest from the first run."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: _median([r[k] for r in runs]) for k in first}
    if isinstance(first, float):
        return statistics.median(runs)
    return first


def main():
    load_before = os.getloadavg()
    n_runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    each = []
    for i in range(n_runs):  # whole runs in turn: one run's loop ratio swings with the machine's load
        each.append([per_example_rows(), jacobian_rows(), linalg_rows()])
        loop = each[-1][0]["speedup of arrayx eager vmap(grad) over"]["Python loop of arrayx grad (per batch)"]
        print(f"run {i + 1}/{n_runs}: vmap(grad) over the loop {loop:.2f}x, load {os.getloadavg()[0]:.1f}", flush=True)
    rows = [_median([run[j] for run in each]) for j in range(len(each[0]))] if n_runs > 1 else each[0]
    for r in rows:
        print(json.dumps(r, indent=1))
    out = pathlib.Path(__file__).parent / "results" / "vmap.json"
    out.write_text(json.dumps({"machine": platform.processor() or platform.machine(), "python": sys.version.split()[0],
                               "command": "nice python benchmarks/bench_vmap.py" + (" --quick" if QUICK else "")
                               + (f" --runs {n_runs}" if n_runs > 1 else ""),
                               "load_average_1min": {"before": load_before[0], "after": os.getloadavg()[0]},
                               "environment": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "ARRAYX_BUFFER_POOL")},
                               "quick": QUICK, "rows": rows, **({"of_runs": n_runs, "runs": each} if n_runs > 1 else {})},
                              indent=1) + "\n")
    print(f"wrote {out}")


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = "per-example MLP gradients: vmap(grad) and jit(vmap(grad)) on the numpy executor vs hand-batched NumPy, jax.jit"


def workloads(quick: bool = False) -> dict:
    """Issue #44 point 2: the per-example gradients row, peers first (hand-written batched NumPy backprop,
    ``jax.jit(jax.vmap(jax.grad))``), then arrayx's eager ``vmap(grad)`` and ``jit(vmap(grad))`` on the
    numpy executor; the values are checked against the hand-written backprop once (--quick: a batch of 16)."""
    from benchmarks._harness import installed

    rng = np.random.default_rng(0)
    batch = 16 if quick else BATCH
    p = mlp_params(rng)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.standard_normal((batch, SIZES[-1])).astype(np.float32)
    pa, xa, ya = ax.pytree.map(ax.asarray, p), ax.asarray(x), ax.asarray(y)
    vg = ax.vmap(ax.grad(lambda q, a, b: mlp_loss(ax, q, a, b)), in_axes=(None, 0, 0))
    jit_vg = ax.jit(vg)
    for got, want in zip(ax.pytree.leaves(jit_vg(pa, xa, ya)), ax.pytree.leaves(numpy_per_example(p, x, y))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-4)
    row = {"hand-written NumPy": lambda: numpy_per_example(p, x, y)}
    if installed("jax"):
        import jax
        import jax.numpy as jnp

        pj, xj, yj = jax.tree_util.tree_map(jnp.asarray, p), jnp.asarray(x), jnp.asarray(y)
        jax_vg = jax.jit(jax.vmap(jax.grad(lambda q, a, b: mlp_loss(jnp, q, a, b)), in_axes=(None, 0, 0)))
        row["jax.jit(jax.vmap(jax.grad))"] = lambda: jax.block_until_ready(jax_vg(pj, xj, yj))
    row["arrayx[numpy] vmap(grad)"] = lambda: vg(pa, xa, ya)
    row["arrayx[numpy] jit(vmap(grad))"] = lambda: jit_vg(pa, xa, ya)
    return {f"per-example grads MLP {'-'.join(map(str, SIZES))} batch {batch} f32": row}


if __name__ == "__main__":
    main()
