"""Host time of one cache-hit jitted call, arrayx against jax.jit (issue 41, point 7), side by side in
one process: JAX's own ``jax.jit`` call; arrayx's compiled program called directly on arrayx's buffers
(``entry.fn``: jax.jit inside arrayx's 64-bit scope) and, where it has one, without the scope; arrayx's
whole call (``ax.jit(f)(...)``).  The cases are small, so the call is the host's work:

- per-example gradients, ``jit(vmap(grad(loss)))``: a parameter list of 3 (w, b) pairs + 2 arrays in,
  6 arrays out (bench_tpu.py's row at a small size);
- an MLP SGD step ``jit(value_and_grad)``: (loss, new parameter list) out;
- SELU of one array.

Each figure is the best of ``--rounds`` interleaved rounds of ``--calls`` calls timed as one loop
(``time.perf_counter``, the last output waited for after the loop; and the same loop's
``time.thread_time``), in us per call.  ``--profile`` adds cProfile's top entries for arrayx's calls.

Run:  JAX_PLATFORMS=cpu python benchmarks/bench_jit_call.py [--rounds 30] [--calls 500] [--output PATH]
      (writes benchmarks/results/jit_call.json by default)
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._harness import profile_lines  # noqa: E402


def _loop(fn, calls, wait):
    out = None
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        out = fn()
    t1, c1 = time.perf_counter(), time.thread_time()
    wait(out)
    return (t1 - t0) / calls * 1e6, (c1 - c0) / calls * 1e6


def cases():
    import jax
    import jax.numpy as jnp

    import arrayx as ax
    from benchmarks.bench_tpu import _block_ax, _mlp, _mlp_loss, selu, sgd

    ax.set_executor("jax")
    rng = np.random.default_rng(0)
    sizes = (16, 32, 32, 4)
    pp = _mlp(None, sizes, np.float32)
    x = rng.standard_normal((8, sizes[0])).astype(np.float32)
    y = rng.standard_normal((8, sizes[-1])).astype(np.float32)
    pa, pj = ax.pytree.map(ax.asarray, pp), jax.tree.map(jnp.asarray, pp)
    xa, ya, xj, yj = ax.asarray(x), ax.asarray(y), jnp.asarray(x), jnp.asarray(y)
    la, lj = _mlp_loss(ax, ax.nn.relu), _mlp_loss(jnp, jax.nn.relu)
    out = {}
    pea = ax.jit(ax.vmap(ax.grad(la), in_axes=(None, 0, 0)))
    pej = jax.jit(jax.vmap(jax.grad(lj), in_axes=(None, 0, 0)))
    out["per-example grads (6 arrays + 2 in, 6 out)"] = (pea, (pa, xa, ya), pej, (pj, xj, yj))
    sa = ax.jit(sgd(ax.value_and_grad, ax.pytree.map, la))
    sj = jax.jit(sgd(jax.value_and_grad, jax.tree.map, lj))
    out["mlp sgd step (6 arrays + 2 in, loss + 6 out)"] = (sa, (pa, xa, ya), sj, (pj, xj, yj))
    s = rng.standard_normal(1024).astype(np.float32)
    out["selu (1 in, 1 out)"] = (ax.jit(selu(ax)), (ax.asarray(s),), jax.jit(selu(jnp)), (jnp.asarray(s),))
    return out, _block_ax, jax.block_until_ready


def main(rounds: int, calls: int, profile: bool) -> dict:
    import jax

    import arrayx as ax

    table, block_ax, block_j = cases()
    res = {"what": __doc__.splitlines()[0], "jax": jax.__version__, "device": str(jax.devices()[0]),
           "rounds": rounds, "calls": calls, "load before": os.getloadavg()[0], "rows": []}
    for name, (fa, args_a, fj, args_j) in table.items():
        ra = fa(*args_a)
        rj = fj(*args_j)
        for a, b in zip(ax.pytree.leaves(ra), jax.tree.leaves(rj)):  # the same results
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)
        entry = next(iter(fa._store.cache.values()))
        program = entry.fn
        bufs = [leaf._buf for leaf in ax.pytree.leaves(args_a)]
        sides = {"jax": (lambda: fj(*args_j), block_j),
                 "arrayx program": (lambda: program(*bufs), block_j)}
        inner = getattr(program, "fn", None)
        if inner is not None:
            sides["arrayx program, no scope"] = (lambda: inner(*bufs), block_j)
        sides["arrayx"] = (lambda: fa(*args_a), block_ax)
        best = {}
        for _ in range(rounds):
            for side, (fn, wait) in sides.items():
                w, c = _loop(fn, calls, wait)
                best[side] = min(w, best.get(side, w))
                best[side + " (thread cpu)"] = min(c, best.get(side + " (thread cpu)", c))
        row = {"case": name, **{k: round(v, 3) for k, v in best.items()},
               "arrayx - jax us": round(best["arrayx"] - best["jax"], 3),
               "arrayx - program us": round(best["arrayx"] - best["arrayx program"], 3),
               "arrayx / jax": round(best["arrayx"] / best["jax"], 4)}
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(calls):
                fa(*args_a)
            prof.disable()
            row["arrayx profile (tottime)"] = profile_lines(prof, 12)
        print(json.dumps(row, indent=1), flush=True)
        res["rows"].append(row)
    res["load after"] = os.getloadavg()[0]
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--output", default=str(pathlib.Path(__file__).parent / "results" / "jit_call.json"))
    a = ap.parse_args()
    result = main(a.rounds, a.calls, a.profile)
    if a.output and a.output != "-":
        pathlib.Path(a.output).write_text(json.dumps(result, indent=1) + "\n")
