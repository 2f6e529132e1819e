"""The program of ``test_multiprocess.py``, the same text for one process and for many.

    python -m arrayx.sharding.launch -n 2 --devices-per-process 4 tests/sharding/multiprocess_program.py
    python -m arrayx.sharding.launch -n 1 --devices-per-process 8 tests/sharding/multiprocess_program.py
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/sharding/multiprocess_program.py

(started by the launcher it joins JAX's runtime, ``arrayx.distributed.initialize``, even as one
process; started alone it is the plain one-process program).

A global mesh of 8 devices ``(4, 2)`` named ``("data", "model")``; a batch made from each
process's rows (``make_array_from_process_local_data``); a two-layer model trained for a few steps
by ``jit`` with in/out shardings (the hidden layer split over ``"model"``), then by a
``shard_map`` step whose gradients are ``psum``-ed over ``"data"``; a ``shard_map`` with ``psum``
for the loss.  Each process prints one line ``RESULT {json}``: the values read with
``process_allgather`` (as the hex of their bytes, for a bit-for-bit comparison), each result's
sharding by mesh position (so that device ids, which differ between one and two processes, do not
enter), this process's shards, and what reading a sharded array on the host raised.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

import arrayx as ax
from arrayx.sharding import NamedSharding, P

if "JAX_NUM_PROCESSES" in os.environ:  # started by python -m arrayx.sharding.launch (even with -n 1)
    ax.distributed.initialize()  # reads JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
BATCH, FEATURES, HIDDEN, OUT = 64, 16, 32, 8


def layout(x):
    """The sharding by mesh position: spec, mesh shape and names, each position's block."""
    s = x.sharding
    pos = {d: i for i, d in enumerate(s.mesh.devices.flat)}
    blocks = sorted((pos[d], [[sl.start, sl.stop] for sl in idx]) for d, idx in s.devices_indices_map(x.shape).items())
    return {"spec": repr(s.spec), "mesh": list(s.mesh.devices.shape), "axes": list(s.mesh.axis_names),
            "blocks": blocks}


def value(x):
    v = ax.sharding.process_allgather(x, tiled=True)
    return {"dtype": str(v.dtype), "shape": list(v.shape), "hex": np.ascontiguousarray(v).tobytes().hex()}


def main() -> None:
    ax.set_executor("jax")
    me, count = ax.sharding.process_index(), ax.sharding.process_count()
    mesh = ax.sharding.make_mesh((4, 2), ("data", "model"))  # every process's devices
    rows = NamedSharding(mesh, P("data", None))
    rep = NamedSharding(mesh, P())
    rng = np.random.default_rng(42)
    x_all = rng.normal(size=(BATCH, FEATURES)).astype(np.float32)
    y_all = rng.normal(size=(BATCH, OUT)).astype(np.float32)
    mine = slice(me * BATCH // count, (me + 1) * BATCH // count)  # this process's rows (its "data" blocks)
    x = ax.sharding.make_array_from_process_local_data(rows, x_all[mine], (BATCH, FEATURES))
    y = ax.sharding.make_array_from_process_local_data(rows, y_all[mine])  # global shape inferred
    shardings = {"w1": NamedSharding(mesh, P(None, "model")), "b1": NamedSharding(mesh, P("model")),
                 "w2": NamedSharding(mesh, P("model", None))}
    params = {"w1": (rng.normal(size=(FEATURES, HIDDEN)) * 0.3).astype(np.float32),
              "b1": np.zeros(HIDDEN, np.float32),
              "w2": (rng.normal(size=(HIDDEN, OUT)) * 0.3).astype(np.float32)}
    params = {k: ax.device_put(v, shardings[k]) for k, v in params.items()}  # the same host values everywhere

    def loss_fn(p, xb, yb):
        h = ax.tanh(xb @ p["w1"] + p["b1"])
        return ax.mean((h @ p["w2"] - yb) ** 2)

    def step(p, xb, yb):
        loss, g = ax.value_and_grad(loss_fn)(p, xb, yb)
        return {k: p[k] - 0.1 * g[k] for k in p}, loss

    jstep = ax.jit(step, in_shardings=(shardings, rows, rows), out_shardings=(shardings, rep))
    losses = []
    for _ in range(STEPS):
        params, loss = jstep(params, x, y)
        losses.append(loss)

    # data parallel by hand: each "data" row of the mesh its own gradient, psum-ed (pmap's way)
    n_data = mesh.shape["data"]

    def dp_step(p, xb, yb):
        loss, g = ax.value_and_grad(loss_fn)(p, xb, yb)
        g = ax.lax.psum(g, "data")
        loss = ax.lax.psum(loss, "data") / n_data
        return {k: p[k] - (0.1 / n_data) * g[k] for k in p}, loss

    full = {k: P() for k in params}
    sm_step = ax.jit(ax.shard_map(dp_step, mesh=mesh, in_specs=(full, P("data", None), P("data", None)),
                                  out_specs=(full, P())))
    dp = {k: ax.device_put(v, rep) for k, v in params.items()}
    for _ in range(STEPS):
        dp, loss = sm_step(dp, x, y)
        losses.append(loss)

    # a shard_map with psum, eagerly: the global sum of squared errors
    sse = ax.shard_map(lambda xb, yb: ax.lax.psum(ax.sum((xb[:, :OUT] - yb) ** 2), "data"), mesh=mesh,
                       in_specs=(P("data", None), P("data", None)), out_specs=P())(x, y)
    h = ax.jit(lambda p, xb: ax.tanh(xb @ p["w1"] + p["b1"]))(params, x)  # sharding as XLA propagates it
    z = x * 2.0 + 1.0  # eager operations on a global array: each process computes its blocks
    total = ax.sum(z)  # replicated on every device: every process reads it

    try:
        np.asarray(x)
        read_error = None
    except RuntimeError as e:
        read_error = str(e)
    results = {"x": x, "y": y, "z": z, "total": total, "h": h, "sse": sse, **{f"jit_{k}": v for k, v in params.items()},
               **{f"dp_{k}": v for k, v in dp.items()}, **{f"loss_{i}": v for i, v in enumerate(losses)}}
    out = {"process": me, "processes": count, "local_devices": ax.sharding.local_device_count(),
           "values": {k: value(v) for k, v in results.items()},
           "shardings": {k: layout(v) for k, v in results.items()},
           "loss_read": float(losses[-1]), "total_read": float(total),  # replicated: every process reads them
           "my_x_blocks": sorted([[sl.start, sl.stop] for sl in sh.index] for sh in x.addressable_shards),
           "x_device_is_local": x.device in ax.sharding.local_devices(),
           "addressable": len(rows.addressable_devices), "fully_addressable": rows.is_fully_addressable,
           "read_error": read_error}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
