"""shard_map + psum on a dask LocalCluster: 2 workers vs 1 worker vs dask.array written by hand.

The workload: ``sum(sin(x) ** 2 + x * 0.5)`` over a float64 vector cut into 8 blocks (a mesh of 8
virtual dask devices, 4 per worker on 2 workers), as ``arrayx.shard_map(f, in_specs=P("x"),
out_specs=P())`` with a ``psum`` over ``"x"``; the same on a 1-worker cluster; and the same
reduction as ``dask.array`` by hand on the 2-worker cluster.  In-process workers
(``processes=False``, 1 thread each); the three clusters live side by side and their runs take
turns, best of ``--repeat`` rounds after one warm-up (so load from other processes falls on all).
``device_put`` scatters the host blocks to their workers; the arrayx graph is one task per member
plus one for the psum (34 tasks at 8 blocks, down from 127: no getitem task per single-output
member, psum as one task rather than a chain of adds, chunks passed to tasks by key with no graph
optimisation per member, the worker list asked of the scheduler once per call).

    python -m benchmarks.bench_sharding [--n 2000000] [--repeat 10]

Writes benchmarks/results/sharding.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import numpy as np


def _arrayx_setup(n_workers, x_np):
    """A cluster of ``n_workers`` and the arrayx workload on it: (run -> value, close)."""
    from distributed import Client, LocalCluster

    import arrayx as ax
    import arrayx.executors.dask as dex
    from arrayx.sharding import NamedSharding, P, virtual_devices

    cluster = LocalCluster(n_workers=n_workers, processes=False, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    dex.connect(client)
    mesh = ax.sharding.make_mesh((8,), ("x",), devices=virtual_devices("dask", 8))
    x = ax.device_put(x_np, NamedSharding(mesh, P("x")))  # the blocks scattered to their workers
    f = ax.shard_map(lambda b: ax.psum(ax.sum(ax.sin(b) ** 2 + b * 0.5), "x"), mesh=mesh, in_specs=P("x"),
                     out_specs=P())

    def run():
        dex.connect(client)  # the executor talks to one cluster at a time: this one, for this run
        return float(f(x))

    def close():
        dex.disconnect()
        client.close()
        cluster.close()

    return run, close


def _dask_by_hand_setup(x_np):
    import dask.array as da
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    x = client.persist(da.from_array(x_np, chunks=len(x_np) // 8))

    def run():
        return float((da.sin(x) ** 2 + x * 0.5).sum().compute(scheduler=client))

    def close():
        client.close()
        cluster.close()

    return run, close


def _interleaved(runs: dict, repeat: int) -> tuple[dict, dict]:
    """Best time of each run over ``repeat`` rounds, the runs taking turns within a round (so that
    load from other processes on a shared machine falls on all of them alike), after a warm-up."""
    values = {k: fn() for k, fn in runs.items()}
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for k, fn in runs.items():
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best, values


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2_000_000)
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args(argv)
    x = np.random.default_rng(0).normal(size=args.n)
    want = float(np.sum(np.sin(x) ** 2 + x * 0.5))
    setups = {"arrayx_2_workers": _arrayx_setup(2, x), "arrayx_1_worker": _arrayx_setup(1, x),
              "dask_array_by_hand_2_workers": _dask_by_hand_setup(x)}
    try:
        best, values = _interleaved({k: v[0] for k, v in setups.items()}, args.repeat)
    finally:
        for _, close in setups.values():
            close()
    for v in values.values():
        assert abs(v - want) <= 1e-9 * max(1.0, abs(want)), (v, want)
    t2, t1, th = best["arrayx_2_workers"], best["arrayx_1_worker"], best["dask_array_by_hand_2_workers"]
    result = {
        "workload": "shard_map(psum(sum(sin(b)**2 + b*0.5))) over 8 blocks, float64",
        "n": args.n, "repeat": args.repeat, "cpus": os.cpu_count(),
        "seconds": {"arrayx_2_workers": t2, "arrayx_1_worker": t1, "dask_array_by_hand_2_workers": th},
        "ratios": {"1_worker_over_2_workers": t1 / t2, "dask_by_hand_over_arrayx_2_workers": th / t2},
        "command": "python -m benchmarks.bench_sharding " + f"--n {args.n} --repeat {args.repeat}",
    }
    out = pathlib.Path(__file__).parent / "results" / "sharding.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
