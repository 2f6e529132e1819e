"""ppermute and psum_scatter inside shard_map: only the blocks each member needs (issue 42) against
the earlier formulation over all_gather/psum (``_collectives.ppermute_gathered``/``psum_scatter_summed``).

A 1-D mesh of 8 virtual devices (``ARRAYX_VIRTUAL_DEVICES=8``), a float64 vector of 8 blocks of
``--block`` elements; the member functions are ``ppermute(b, "x", perm)`` (``+1``: member i to
i + 1; ``+2``: to i + 2, the same worker on the cluster) and ``psum_scatter(b, "x", tiled=True)``,
each followed by ``* 2.0`` (so the collective's result enters a task), the result read to the host.  For each executor and each formulation: the best wall time
of ``--repeat`` runs (after a warm-up; the formulations take turns), and the bytes the members
received from other members (``_collectives.record_transfers``: what the runner hands a member
that another member made).  On ``dask-cluster`` (a LocalCluster of 2 in-process workers, 1 thread
each, the 8 devices 4 per worker) also the bytes the workers really fetched from each other
(their ``transfer_incoming_log``).

    python -m benchmarks.bench_collectives [--block 1000000] [--repeat 5]

Writes benchmarks/results/collectives.json.  Measured on this machine (2 shared cores, load
average 7-9 from other processes), 8 MB blocks, earlier formulation -> this one:

- received by the members (every executor): ppermute 448 -> 64 MB (each member 1 block instead of
  the 7 others'), psum_scatter 448 -> 56 MB (each member 7/8 of a block instead of 7 blocks);
- dask-cluster, bytes the 2 workers fetched from each other: ppermute +1 (every block crosses)
  64 -> 64 MB (the all_gather also cost each worker the other's 4 blocks), ppermute +2 (same
  worker) 64 -> 0 MB, psum_scatter 40 -> 32 MB;
- best times: numpy ppermute 122 -> 66 ms, psum_scatter 36 -> 27 ms; dask (threads) ppermute
  523 -> 49 ms, psum_scatter 52 -> 27 ms; dask-cluster ppermute +1 551 -> 208 ms, +2 396 ->
  79 ms, psum_scatter 168 -> 197 ms (0.85x: 24 tasks instead of 10 for 8 members on 2 workers,
  the parts added in member order on each destination so that the bits are the numpy executor's).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

os.environ.setdefault("ARRAYX_VIRTUAL_DEVICES", "8")

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402
from arrayx.sharding import P, _collectives as C, virtual_devices  # noqa: E402

N = 8
STEP1 = tuple((i, (i + 1) % N) for i in range(N))
STEP2 = tuple((i, (i + 2) % N) for i in range(N))
KINDS = ("ppermute+1", "ppermute+2", "psum_scatter")


def _bodies(how):
    if how == "new":
        return {"ppermute+1": lambda b: C.ppermute(b, "x", STEP1) * 2.0,
                "ppermute+2": lambda b: C.ppermute(b, "x", STEP2) * 2.0,
                "psum_scatter": lambda b: C.psum_scatter(b, "x", tiled=True) * 2.0}
    return {"ppermute+1": lambda b: C.ppermute_gathered(b, ("x",), STEP1) * 2.0,
            "ppermute+2": lambda b: C.ppermute_gathered(b, ("x",), STEP2) * 2.0,
            "psum_scatter": lambda b: C.psum_scatter_summed(b, ("x",), 0, True) * 2.0}


def _worker_bytes(client) -> int:
    logs = client.run(lambda dask_worker: sum(e["total"] for e in dask_worker.transfer_incoming_log))
    return int(sum(logs.values()))


def _measure(ex, block, repeat, client=None):
    out = {}
    with ax.use_executor("dask" if ex.startswith("dask") else ex):
        mesh = ax.sharding.make_mesh((N,), ("x",), devices=virtual_devices("dask" if ex.startswith("dask") else ex, N))
        host = np.arange(N * block, dtype=np.float64) % 1000.0
        sharding = ax.sharding.NamedSharding(mesh, P("x"))

        def fresh():  # new blocks (on a cluster scattered from the host): nothing fetched before is reused
            x = ax.device_put(host, sharding)
            if client is not None:
                from arrayx.sharding import _dask

                _dask.block_placement(x)
            return x

        x = fresh()
        fns = {how: {k: ax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
                     for k, f in _bodies(how).items()} for how in ("old", "new")}
        for kind in KINDS:
            results = {}
            for how in ("old", "new"):
                np.asarray(fns[how][kind](x))  # warm-up (staging, compiling)
                x = fresh()
                with C.record_transfers() as t:
                    before = _worker_bytes(client) if client is not None else 0
                    r = fns[how][kind](x)
                    if client is not None:
                        from arrayx.sharding import _dask

                        _dask.block_placement(r)  # computed (on a cluster the results are submitted at once)
                    fetched = _worker_bytes(client) - before if client is not None else None
                    results[how] = np.asarray(r)  # (the read's own transfers are not counted)
                out[f"{kind} {how}"] = {"received_bytes": t.bytes, "worker_fetched_bytes": fetched, "times": []}
            assert np.array_equal(results["old"], results["new"]), kind
            for _ in range(repeat):
                for how in ("old", "new"):
                    t0 = time.perf_counter()
                    np.asarray(fns[how][kind](x))
                    out[f"{kind} {how}"]["times"].append(time.perf_counter() - t0)
    for v in out.values():
        v["best_s"] = min(v.pop("times"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--block", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--executors", default="numpy,dask,dask-cluster")
    args = ap.parse_args(argv)
    report = {"block_elements": args.block, "block_bytes": args.block * 8, "members": N,
              "load_before": os.getloadavg(), "results": {}}
    for ex in args.executors.split(","):
        if ex == "dask-cluster":
            from distributed import LocalCluster

            import arrayx.executors.dask as dex

            cluster = LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None)
            try:
                client = dex.connect(cluster)
                report["results"][ex] = _measure(ex, args.block, args.repeat, client)
            finally:
                dex.disconnect()
                cluster.close()
        else:
            report["results"][ex] = _measure(ex, args.block, args.repeat)
    report["load_after"] = os.getloadavg()
    for ex, res in report["results"].items():
        for kind in KINDS:
            o, n = res[f"{kind} old"], res[f"{kind} new"]
            fetched = "" if o["worker_fetched_bytes"] is None else \
                f"; workers fetched {o['worker_fetched_bytes'] / 1e6:.1f} -> {n['worker_fetched_bytes'] / 1e6:.1f} MB"
            print(f"{ex:13s} {kind:12s} received {o['received_bytes'] / 1e6:7.1f} -> {n['received_bytes'] / 1e6:6.1f} MB"
                  f"{fetched}; best {o['best_s'] * 1e3:7.1f} -> {n['best_s'] * 1e3:7.1f} ms "
                  f"({o['best_s'] / n['best_s']:.2f}x)")
    path = pathlib.Path(__file__).resolve().parent / "results" / "collectives.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
