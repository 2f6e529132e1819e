"""The sharding tutorial's programs on one executor (``python tests/sharding/tutorial.py EXECUTOR``):
prints one JSON object of values (lists), shardings (mesh shape, spec) and grids, so that the tests
can compare every executor with jax.numpy's run of the same programs (tutorial_jax.py)."""
from __future__ import annotations

import json
import sys

import numpy as np


def _spec(s):
    return [list(e) for e in s.spec.normalized()] if hasattr(s, "spec") else "single"


def run(ex: str) -> dict:
    import arrayx as ax
    from arrayx.sharding import NamedSharding, P

    out = {}
    with ax.use_executor(ex):
        arr = ax.reshape(ax.arange(32.0), (4, 8))
        out["unsharded_grid"] = _grid(arr)
        mesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
        sharding = NamedSharding(mesh, P("x", "y"))
        arr_sharded = ax.device_put(arr, sharding)
        out["sharded_grid"] = _grid(arr_sharded)
        out["sharded_spec"] = _spec(arr_sharded.sharding)
        out["n_devices"] = len(arr_sharded.devices())
        out["shards"] = sorted([[int(sl.start or 0) for sl in s.index] + np.asarray(s.data).ravel().tolist()[:1]
                                for s in arr_sharded.addressable_shards])

        @ax.jit
        def f_elementwise(x):
            return 2 * ax.sin(x) + 1

        r = f_elementwise(arr_sharded)
        out["elementwise"] = np.asarray(r).tolist()
        out["elementwise_same_sharding"] = r.sharding == arr_sharded.sharding

        @ax.jit
        def f_contract(x):
            return ax.sum(x, axis=0)

        r = f_contract(arr_sharded)
        out["contract"] = np.asarray(r).tolist()
        out["contract_spec"] = _spec(r.sharding)
        out["contract_grid"] = _grid(r)

        mesh8 = ax.sharding.make_mesh((8,), ("x",))

        @ax.jit
        def f_contract_2(x):
            o = ax.sum(x, axis=0)
            return ax.lax.with_sharding_constraint(o, NamedSharding(mesh8, P("x")))

        r = f_contract_2(arr_sharded)
        out["contract2"] = np.asarray(r).tolist()
        out["contract2_spec"] = _spec(r.sharding)
        out["contract2_grid"] = _grid(r)

        x = ax.arange(32)
        y = ax.shard_map(lambda b: 2 * ax.sin(b) + 1, mesh=mesh8, in_specs=P("x"), out_specs=P("x"))(
            ax.arange(32.0))  # the standard refuses sin of integers
        out["smap_elementwise"] = np.asarray(y).tolist()
        out["smap_elementwise_spec"] = _spec(y.sharding)
        shapes = []

        def f(b):
            shapes.append(tuple(b.shape))
            return b * 2

        y = ax.shard_map(f, mesh=mesh8, in_specs=P("x"), out_specs=P("x"))(x)
        out["local_shape"] = list(shapes[0])
        out["smap_double"] = np.asarray(y).tolist()
        y = ax.shard_map(lambda b: ax.reshape(ax.sum(b), (1,)), mesh=mesh8, in_specs=P("x"), out_specs=P("x"))(x)
        out["per_shard_sum"] = np.asarray(y).tolist()
        out["per_shard_sum_spec"] = _spec(y.sharding)
        y = ax.shard_map(lambda b: ax.psum(ax.sum(b), "x"), mesh=mesh8, in_specs=P("x"), out_specs=P())(x)
        out["psum"] = np.asarray(y).tolist()
        out["psum_spec"] = _spec(y.sharding)

        rng = np.random.default_rng(0)
        xs = ax.asarray(rng.normal(size=(32,)).astype(np.float32))
        w = ax.asarray(rng.normal(size=(32, 4)).astype(np.float32))
        b = ax.asarray(rng.normal(size=(4,)).astype(np.float32))

        @ax.jit
        def layer(x, w, b):
            return ax.nn.sigmoid(x @ w + b)

        out["layer"] = np.asarray(layer(xs, w, b)).tolist()
        s8 = NamedSharding(mesh8, P("x"))
        r = layer(ax.device_put(xs, s8), ax.device_put(w, s8), b)
        out["layer_auto"] = np.asarray(r).tolist()
        out["layer_auto_spec"] = _spec(r.sharding)

        @ax.jit
        def layer_constraint(x, w, b):
            x = ax.lax.with_sharding_constraint(x, s8)
            w = ax.lax.with_sharding_constraint(w, s8)
            return layer(x, w, b)

        r = layer_constraint(xs, w, b)
        out["layer_constraint"] = np.asarray(r).tolist()
        out["layer_constraint_spec"] = _spec(r.sharding)

        @ax.jit
        @ax.shard_map(mesh=mesh8, in_specs=(P("x"), P("x", None), P()), out_specs=P())
        def layer_sharded(x, w, b):
            return ax.nn.sigmoid(ax.psum(x @ w, "x") + b)

        r = layer_sharded(xs, w, b)
        out["layer_smap"] = np.asarray(r).tolist()
        out["layer_smap_spec"] = _spec(r.sharding)
    return out


def _grid(x) -> str:
    from arrayx.sharding._api import sharding_grid

    return sharding_grid(x)


if __name__ == "__main__":
    ex = sys.argv[1]
    if ex == "dask":
        import arrayx.executors.dask as dex
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None)
        client = dex.connect(cluster)
        import os

        os.environ["ARRAYX_VIRTUAL_DEVICES"] = "8"
    print(json.dumps(run(ex)))
