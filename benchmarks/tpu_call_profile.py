"""Where the host time of one jitted call goes on the chip, arrayx against JAX (issue 41, point 7):
for the default-dtype MLP step (bench_tpu_defaults.py, batches 256 and 4096) and the per-example
gradients of bench_tpu.py, each side's dispatch time (the call's return, nothing waited for), its
time with a wait, and cProfile's top entries for arrayx's calls.

Run:  python benchmarks/tpu_call_profile.py [--output PATH] [--calls N]   (on the chip; on a CPU, --calls 5)
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._harness import profile_lines  # noqa: E402


def _min_time(fn, wait, n=None):
    n = n or CALLS
    wait(fn())
    best_dispatch = best_call = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        wait(out)
        t2 = time.perf_counter()
        best_dispatch, best_call = min(best_dispatch, t1 - t0), min(best_call, t2 - t0)
    return best_dispatch * 1e3, best_call * 1e3


#: timed calls per case and side (--calls)
CALLS = 200


def main() -> dict:
    import jax
    import jax.numpy as jnp

    import arrayx as ax
    from benchmarks.bench_tpu import _block_ax, _mlp, _mlp_loss
    from benchmarks.bench_tpu_defaults import _data, mlp_xent_loss

    ax.set_executor("jax")
    res = {"device": str(jax.devices()[0]), "rows": []}
    cases = {}
    for batch in (256, 4096):
        params, x, y = _data(batch)
        pa = [(ax.asarray(w, dtype=ax.float32), ax.asarray(b, dtype=ax.float32)) for w, b in params]
        xa, ya = ax.asarray(x, dtype=ax.float32), ax.asarray(y, dtype=ax.float32)
        pj = [(jnp.asarray(w, dtype=jnp.float32), jnp.asarray(b, dtype=jnp.float32)) for w, b in params]
        xj, yj = jnp.asarray(x, dtype=jnp.float32), jnp.asarray(y, dtype=jnp.float32)

        def stepper(lib, vg):
            def step(p, x, y):
                loss, g = vg(lambda q: mlp_xent_loss(lib, q, x, y))(p)
                return loss, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(p, g)]
            return step

        sa, sj = ax.jit(stepper(ax, ax.value_and_grad)), jax.jit(stepper(jnp, jax.value_and_grad))
        cases[f"default-dtype MLP step b{batch}"] = (lambda sa=sa, pa=pa, xa=xa, ya=ya: sa(pa, xa, ya),
                                                      lambda sj=sj, pj=pj, xj=xj, yj=yj: sj(pj, xj, yj))
    pp = _mlp(None, (784, 512, 512, 10), np.float32)
    rng = np.random.default_rng(1)
    px, py = rng.standard_normal((128, 784)).astype(np.float32), rng.standard_normal((128, 10)).astype(np.float32)
    la, lj = _mlp_loss(ax, ax.nn.relu), _mlp_loss(jnp, jax.nn.relu)
    pea = ax.jit(ax.vmap(ax.grad(la), in_axes=(None, 0, 0)))
    pej = jax.jit(jax.vmap(jax.grad(lj), in_axes=(None, 0, 0)))
    ppa, ppj = ax.pytree.map(ax.asarray, pp), jax.tree.map(jnp.asarray, pp)
    pxa, pya, pxj, pyj = ax.asarray(px), ax.asarray(py), jnp.asarray(px), jnp.asarray(py)
    cases["per-example grads b128"] = (lambda: pea(ppa, pxa, pya), lambda: pej(ppj, pxj, pyj))
    # where the per-example call's host time goes: JAX's own call in arrayx's 64-bit scope, on arrayx's
    # buffers; arrayx's compiled program (the jax.jit it calls) in the scope and out of it
    from arrayx.executors.jax import x64

    pea(ppa, pxa, pya)
    program = next(iter(pea._store.cache.values())).fn
    bufs = [leaf._buf for leaf in ax.pytree.leaves((ppa, pxa, pya))]
    jleaves, jtree = jax.tree.flatten((ppj, pxj, pyj))
    abufs = jax.tree.unflatten(jtree, bufs)

    def in_scope(fn, *args, on=True):
        prev = x64.swap(on)
        try:
            return fn(*args)
        finally:
            x64.restore(prev)

    res["committed"] = {"arrayx": bool(getattr(bufs[0], "committed", None)), "jax": bool(ppj[0][0].committed)}
    parts = {"jax in arrayx's 64-bit scope": lambda: in_scope(pej, ppj, pxj, pyj),
             "jax in a 32-bit thread scope (the process's own value)": lambda: in_scope(pej, ppj, pxj, pyj, on=False),
             "jax on arrayx's buffers": lambda: pej(*abufs),
             "arrayx's program (in its scope)": lambda: program(*bufs),
             "arrayx's program, no scope (traced again in 32 bits)": lambda: program.fn(*bufs),
             "arrayx's program, the scope entered inline (jit's cache-hit path)":
                 lambda: in_scope(program.fn, *bufs),
             "jax": lambda: pej(ppj, pxj, pyj), "arrayx": lambda: pea(ppa, pxa, pya)}
    split = {}
    for _ in range(3):
        for name, fn in parts.items():
            d, c = _min_time(fn, jax.block_until_ready if name != "arrayx" else _block_ax)
            split[name] = min(d, split.get(name, float("inf")))
    res["per-example dispatch ms, parts"] = split
    print(json.dumps(split, indent=1), flush=True)
    for name, (fa, fj) in cases.items():
        row = {"case": name}
        for _ in range(3):  # sides alternating; the best of each
            for side, fn, wait in (("arrayx", fa, _block_ax), ("jax", fj, jax.block_until_ready)):
                d, c = _min_time(fn, wait)
                row[f"{side} dispatch ms"] = min(d, row.get(f"{side} dispatch ms", float("inf")))
                row[f"{side} call+wait ms"] = min(c, row.get(f"{side} call+wait ms", float("inf")))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(CALLS):
            _block_ax(fa())
        prof.disable()
        row[f"arrayx profile ({CALLS} calls, tottime)"] = profile_lines(prof, 14)
        print(json.dumps(row, indent=1), flush=True)
        res["rows"].append(row)
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default=None)
    ap.add_argument("--calls", type=int, default=CALLS, help="timed calls per case and side (%(default)s)")
    a = ap.parse_args()
    CALLS = a.calls
    out = main()
    if a.output:
        pathlib.Path(a.output).write_text(json.dumps(out, indent=1) + "\n")
