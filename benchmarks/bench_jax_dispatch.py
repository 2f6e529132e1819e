"""Eager cost per operation of arrayx's jax executor against ``jax.numpy`` on the same ``jax.Array``
inputs (8 float32 elements, a 4x4 matmul), on the default JAX device: what arrayx's dispatch, its
64-bit scope and its wrapping add to one small operation (issue 41, point 7: bench_tpu.py's
"eager a + b, 8 float32" row, >= 0.97x JAX).

Run:  python benchmarks/bench_jax_dispatch.py [--tree PATH] [--rounds N] [--number N]
      python benchmarks/bench_jax_dispatch.py --compare BEFORE AFTER... [--passes 3] [--host-devices N]
      (one process per tree, the trees alternating, ``--passes`` times; keeps each tree's best per op
      and writes benchmarks/results/jax_dispatch.json, or jax_dispatch_host_devices.json with
      ``--host-devices``: JAX's CPU backend split into N devices, so that, as on a process with an
      accelerator, no large-result pool, chain recording or BLAS route is on)

``--tree`` runs the arrayx package found under PATH (e.g. an export of an earlier commit:
``git archive <commit> arrayx | tar -x -C /tmp/base``).  Each op is timed as ``number`` calls per
round, the best round of ``--rounds``, arrayx and ``jax.numpy`` interleaved op by op and round by
round (load on a shared machine hits both alike), in CPU time of the thread (``time.thread_time``)
and in wall time (``time.perf_counter``).  ``jax.numpy`` runs at JAX's defaults (64-bit types off,
as the user's own code), arrayx in its scope.  The ops are dispatched, not waited for (JAX's
asynchronous dispatch), but the "blocked" row, which waits for each result as bench_tpu.py's row
does (``block_until_ready`` of the result's buffer on both sides).  Prints one JSON line
(microseconds per call; ``ratio``: jax.numpy's time / arrayx's, 1.0 the same, above 1 arrayx faster).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time
import timeit

HERE = pathlib.Path(__file__).resolve().parent


def measure(tree: str, rounds: int, number: int) -> dict:
    sys.path.insert(0, tree)
    import numpy as np

    import arrayx as ax
    import jax
    import jax.numpy as jnp

    assert pathlib.Path(ax.__file__).resolve().is_relative_to(pathlib.Path(tree).resolve())
    xj, yj = jnp.asarray(np.arange(8, dtype=np.float32)), jnp.asarray(np.ones(8, np.float32))
    mj = jnp.asarray(np.arange(16, dtype=np.float32).reshape(4, 4) / 16)
    with ax.use_executor("jax"):
        x, y, m = ax.asarray(xj), ax.asarray(yj), ax.asarray(mj)
    assert x.dtype == ax.float32 and x.device.executor == "jax"
    ops = {
        "x + y": (lambda: x + y, lambda: xj + yj),
        "add(x, y)": (lambda: ax.add(x, y), lambda: jnp.add(xj, yj)),
        "exp(x)": (lambda: ax.exp(x), lambda: jnp.exp(xj)),
        "sum(x)": (lambda: ax.sum(x), lambda: jnp.sum(xj)),
        "matmul 4x4": (lambda: ax.matmul(m, m), lambda: jnp.matmul(mj, mj)),
        "reshape(x, (2, 4))": (lambda: ax.reshape(x, (2, 4)), lambda: jnp.reshape(xj, (2, 4))),
        "x[1:3]": (lambda: x[1:3], lambda: xj[1:3]),
        "x + y, blocked": (lambda: (x + y)._buf.block_until_ready(), lambda: (xj + yj).block_until_ready()),
    }
    for f, g in ops.values():  # compile, agree
        np.testing.assert_array_equal(np.asarray(f()), np.asarray(g()))
        for _ in range(20):
            f(), g()
    timers = {"cpu": time.thread_time, "wall": time.perf_counter}
    best = {(t, name, side): float("inf") for t in timers for name in ops for side in (0, 1)}
    for _ in range(rounds):
        for name, fns in ops.items():
            for t, timer in timers.items():
                for side in (0, 1):
                    s = timeit.Timer(fns[side], timer=timer).timeit(number) / number
                    best[t, name, side] = min(best[t, name, side], s)
    out = {"tree": tree, "jax": jax.__version__, "device": str(jax.devices()[0]), "devices": len(jax.devices()),
           "global_x64_after": bool(jax.config.jax_enable_x64)}
    for t in timers:
        out[t] = {name: {"arrayx_us": round(best[t, name, 0] * 1e6, 3), "jax_numpy_us": round(best[t, name, 1] * 1e6, 3),
                         "ratio": round(best[t, name, 1] / best[t, name, 0], 3)} for name in ops}
    return out


def compare(args) -> dict:
    """Run each tree in its own process, alternating, ``passes`` times; keep each tree's best per op."""
    import os

    env = dict(os.environ)
    if args.host_devices:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={args.host_devices}"
    best: dict = {}
    for _ in range(args.passes):
        for tree in args.compare:
            line = subprocess.run([sys.executable, __file__, "--tree", tree, "--rounds", str(args.rounds),
                                   "--number", str(args.number)], check=True, capture_output=True,
                                  text=True, env=env).stdout.strip().splitlines()[-1]
            got = json.loads(line)
            have = best.setdefault(tree, got)
            for t in ("cpu", "wall"):
                for name, row in got[t].items():
                    old = have[t][name]
                    for side in ("arrayx_us", "jax_numpy_us"):
                        old[side] = min(old[side], row[side])
                    old["ratio"] = round(old["jax_numpy_us"] / old["arrayx_us"], 3)
    command = "python benchmarks/bench_jax_dispatch.py --compare " + " ".join(args.compare)
    if args.host_devices:
        command += f" --host-devices {args.host_devices}"
    result = {"command": command, "load_average": os.getloadavg(), "trees": best}
    path = HERE / "results" / ("jax_dispatch_host_devices.json" if args.host_devices else "jax_dispatch.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    for tree, got in best.items():
        print(tree)
        for name in got["cpu"]:
            c, w = got["cpu"][name], got["wall"][name]
            print(f"  {name:<20} cpu {c['arrayx_us']:7.2f} vs {c['jax_numpy_us']:7.2f} us ({c['ratio']:.2f}x)"
                  f"   wall {w['arrayx_us']:7.2f} vs {w['jax_numpy_us']:7.2f} us ({w['ratio']:.2f}x)")
    return result


def main() -> dict:
    p = argparse.ArgumentParser()
    p.add_argument("--tree", default=str(HERE.parent))
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--number", type=int, default=1000)
    p.add_argument("--compare", nargs="+", metavar="TREE")
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--host-devices", type=int, default=0)
    args = p.parse_args()
    if args.compare:
        return compare(args)
    out = measure(args.tree, args.rounds, args.number)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
