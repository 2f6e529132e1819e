"""shard_map + psum on a dask LocalCluster: 2 workers vs 1 worker vs dask.array written by hand.

The workload: ``sum(sin(x) ** 2 + x * 0.5)`` over a float64 vector cut into 8 blocks (a mesh of 8
virtual dask devices, 4 per worker on 2 workers), as ``arrayx.shard_map(f, in_specs=P("x"),
out_specs=P())`` with a ``psum`` over ``"x"``; the same on a 1-worker cluster; and the same
reduction as ``dask.array`` by hand on the 2-worker cluster.  In-process workers
(``processes=False``, 1 thread each), best of ``--repeat`` runs after one warm-up.

    python -m benchmarks.bench_sharding [--n 2000000] [--repeat 5]

Writes benchmarks/results/sharding.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import numpy as np


def _best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _arrayx_run(n_workers, x_np, repeat):
    from distributed import LocalCluster

    import arrayx as ax
    import arrayx.executors.dask as dex
    from arrayx.sharding import NamedSharding, P, virtual_devices

    cluster = LocalCluster(n_workers=n_workers, processes=False, threads_per_worker=1, dashboard_address=None)
    try:
        dex.connect(cluster)
        mesh = ax.sharding.make_mesh((8,), ("x",), devices=virtual_devices("dask", 8))
        with ax.use_executor("dask"):
            x = ax.device_put(ax.asarray(x_np), NamedSharding(mesh, P("x")))
        f = ax.shard_map(lambda b: ax.psum(ax.sum(ax.sin(b) ** 2 + b * 0.5), "x"), mesh=mesh, in_specs=P("x"),
                         out_specs=P())
        value = float(f(x))
        return _best(lambda: float(f(x)), repeat), value
    finally:
        dex.disconnect()
        cluster.close()


def _dask_by_hand(x_np, repeat):
    import dask.array as da
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    try:
        x = client.persist(da.from_array(x_np, chunks=len(x_np) // 8))
        expr = lambda: float((da.sin(x) ** 2 + x * 0.5).sum().compute(scheduler=client))  # noqa: E731
        value = expr()
        return _best(expr, repeat), value
    finally:
        client.close()
        cluster.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2_000_000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    x = np.random.default_rng(0).normal(size=args.n)
    want = float(np.sum(np.sin(x) ** 2 + x * 0.5))
    t2, v2 = _arrayx_run(2, x, args.repeat)
    t1, v1 = _arrayx_run(1, x, args.repeat)
    th, vh = _dask_by_hand(x, args.repeat)
    for v in (v2, v1, vh):
        assert abs(v - want) <= 1e-9 * max(1.0, abs(want)), (v, want)
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
