"""Host time of one cache-hit jitted call, arrayx against jax.jit (issue 41, point 7), side by side in
one process: JAX's own ``jax.jit`` call; arrayx's compiled program called directly on arrayx's buffers
(``entry.fn``: jax.jit inside arrayx's 64-bit scope) and, where it has one, without the scope; arrayx's
whole call (``ax.jit(f)(...)``).  The cases are small, so the call is the host's work:

- per-example gradients, ``jit(vmap(grad(loss)))``: a parameter list of 3 (w, b) pairs + 2 arrays in,
  6 arrays out (bench_tpu.py's row at a small size);
- an MLP SGD step ``jit(value_and_grad)``: (loss, new parameter list) out;
- SELU of one array;
- the CNN train step of bench_tpu.py's CNN row (benchmarks/bench_cnn.py's model and data at batch 64,
  float32): (params dict of 3 arrays, images, labels) in, (loss, params dict) out.  Its device work
  (~0.2 ms on CPU) is part of each call here: its difference to JAX is the host's plus that noise; the
  program-stubbed sides (see ``_stubbed``) give the host work alone.

Each row also times ``arrayx.block_until_ready`` of arrayx's output against ``jax.block_until_ready``
of JAX's (computed already: the host's walk and wait call only).

Each figure is the best of ``--rounds`` interleaved rounds of ``--calls`` calls timed as one loop
(``time.perf_counter``, the last output waited for after the loop; and the same loop's
``time.thread_time``), in us per call; the differences also as the median over rounds of each
round's difference (its two loops run one after the other: steadier on a loaded machine than the
difference of two bests).  ``--profile`` adds cProfile's top entries for arrayx's calls.

Run:  JAX_PLATFORMS=cpu python benchmarks/bench_jit_call.py [--rounds 30] [--calls 500] [--output PATH]
      (writes benchmarks/results/jit_call.json by default; the CNN row runs ``--calls // 10`` calls a loop)
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pathlib
import subprocess
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


def _no_wait(out):
    return out


def _stubbed(fa, args_a, outs):
    """(a stub program: returns ``outs``, the buffers of one real call; a jit of ``fa``'s function of
    its own whose compiled program is that stub): arrayx's host work per call with no device work
    and no launch in it (on a CPU, XLA may run part of a program on the calling thread, so the real
    calls' differences hold some of the device's work).  The generated call, where this tree has one
    (_jit_fast.hit_for), is made again around the stub."""
    import arrayx as ax
    from arrayx.core import executor as base
    from arrayx.transforms import _jit_fast

    def stub(*bufs):
        return outs

    g = ax.jit(lambda *a: fa.fun(*a))  # its own cache
    for _ in range(2):
        g(*args_a)
    entry = next(iter(g._store.cache.values()))
    entry.fn = stub
    if entry.inner is not None:
        entry.inner = stub
    if getattr(entry, "hit", None) is not None:
        entry.hit = g._store.hit = _jit_fast.hit_for(entry, g._store, args_a, ax.pytree.leaves(args_a),
                                                     base._scoped.get() or base._process_default, ax.is_strict())
    return stub, g


def _paired(a: list, b: list) -> float:
    """The median over rounds of one round's ``a`` minus the same round's ``b`` (adjacent loops: a
    machine's load moves both alike)."""
    return round(float(np.median(np.subtract(a, b))), 3)


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
    from benchmarks.bench_cnn import _data, _step
    from benchmarks.bench_tpu import cnn_losses

    aloss, jloss = cnn_losses()  # bench_tpu.py's CNN row: its model, data and call, at batch 64
    images, labels, cparams = _data(64)
    cja = (jax.tree.map(jnp.asarray, cparams), jnp.asarray(images), jnp.asarray(labels.astype(np.int32)))
    caa = (ax.pytree.map(ax.asarray, cparams), ax.asarray(images), ax.asarray(labels.astype(np.int32)))
    out[CNN] = (ax.jit(_step(ax.value_and_grad(aloss), ax.pytree.map)), caa,
                jax.jit(_step(jax.value_and_grad(jloss), jax.tree.map)), cja)
    return out, _block_ax, jax.block_until_ready


CNN = "cnn train step b64 (3-array dict + 2 in, loss + 3-array dict out)"


def main(rounds: int, calls: int, profile: bool) -> dict:
    import jax

    import arrayx as ax

    table, block_ax, block_j = cases()
    tree = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=pathlib.Path(__file__).parent).stdout.strip()
    res = {"what": __doc__.splitlines()[0], "tree": tree, "command": "JAX_PLATFORMS=cpu python "
           + " ".join(["benchmarks/bench_jit_call.py", *sys.argv[1:]]), "jax": jax.__version__,
           "device": str(jax.devices()[0]),
           "rounds": rounds, "calls": calls, "load before": os.getloadavg()[0], "rows": []}
    for name, (fa, args_a, fj, args_j) in table.items():
        ra = fa(*args_a)
        rj = fj(*args_j)
        for a, b in zip(ax.pytree.leaves(ra), jax.tree.leaves(rj)):  # the same results
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4 if name == CNN else 2e-5, atol=2e-6)
        n = calls // 10 if name == CNN else calls
        entry = next(iter(fa._store.cache.values()))
        program = entry.fn
        bufs = [leaf._buf for leaf in ax.pytree.leaves(args_a)]
        sides = {"jax": (lambda: fj(*args_j), block_j),
                 "arrayx program": (lambda: program(*bufs), block_j)}
        inner = getattr(program, "fn", None)
        if inner is not None:
            sides["arrayx program, no scope"] = (lambda: inner(*bufs), block_j)
        sides["arrayx"] = (lambda: fa(*args_a), block_ax)
        stub, call_stubbed = _stubbed(fa, args_a, program(*bufs))
        sides["program stub"] = (lambda: stub(*bufs), _no_wait)
        sides["arrayx, program stubbed"] = (lambda: call_stubbed(*args_a), _no_wait)
        block_ax(ra), block_j(rj)
        sides["jax.block_until_ready"] = (lambda: block_j(rj), block_j)
        sides["arrayx.block_until_ready"] = (lambda: block_ax(ra), block_j)
        best, per_round = {}, {}
        for _ in range(rounds):
            for side, (fn, wait) in sides.items():
                real = side in ("jax", "arrayx") or side.startswith("arrayx program")  # device work in
                w, c = _loop(fn, n if real else calls, wait)
                best[side] = min(w, best.get(side, w))
                best[side + " (thread cpu)"] = min(c, best.get(side + " (thread cpu)", c))
                per_round.setdefault(side, []).append(w)
                per_round.setdefault(side + " (thread cpu)", []).append(c)
        row = {"case": name, **{k: round(v, 3) for k, v in best.items()},
               "arrayx - jax us": round(best["arrayx"] - best["jax"], 3),
               "arrayx - jax us (thread cpu)": round(best["arrayx (thread cpu)"] - best["jax (thread cpu)"], 3),
               "block_until_ready arrayx - jax us": round(best["arrayx.block_until_ready"]
                                                          - best["jax.block_until_ready"], 3),
               "arrayx - program us": round(best["arrayx"] - best["arrayx program"], 3),
               **{f"median of rounds' {a} - {b} us{kind}": _paired(per_round[a + kind], per_round[b + kind])
                  for a, b in (("arrayx", "jax"), ("arrayx", "arrayx program, no scope"),
                               ("arrayx, program stubbed", "program stub"),
                               ("arrayx.block_until_ready", "jax.block_until_ready"))
                  for kind in ("", " (thread cpu)") if a + kind in per_round and b + kind in per_round},
               **({"arrayx - program, no scope us (thread cpu)": round(
                   best["arrayx (thread cpu)"] - best["arrayx program, no scope (thread cpu)"], 3)}
                  if inner is not None else {}),
               "arrayx / jax": round(best["arrayx"] / best["jax"], 4)}
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(n):
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
