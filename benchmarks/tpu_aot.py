"""XLA:TPU's compile of a program, without a chip: arrayx's and JAX's CNN step (bench_tpu.py's CNN
row) compiled ahead of time for a TPU v5e on this CPU, with the compile time and XLA:TPU's cost model.

Needs libtpu (the TPU's compiler, a PyPI wheel: ``pip install --target DIR libtpu==0.0.42.1``, the
chip machine's version; then ``PYTHONPATH=DIR``).  JAX builds a compile-only v5e:1x1 topology from it;
nothing runs.  Each program is compiled in its own process (a compile that takes minutes loses only
itself: ``--timeout``).

Run:  PYTHONPATH=DIR python benchmarks/tpu_aot.py [--batch 64 256] [--sides arrayx jax] [--timeout S]

Measured 2026-12-06 (JAX 0.10.2, libtpu 0.0.42.1, this 2-core machine at load 8-14): JAX's step
compiled in 39 s of CPU at batch 64 and 143 s at 256 (the kernel gradient's 28x28-window
convolution); arrayx's (products there on a TPU, executors/jax/lax.py) in 5-6 s for the whole
process.  Cost model then: arrayx 0.12 / 0.24 ms, JAX 0.10 / 0.20 ms at batch 64 / 256; with the
kernel gradient as one product and a diagonal sum (session 20): arrayx 0.103 / 0.201 ms (JAX's time
over arrayx's: 0.957 / 0.970), compiled in 4.3 / 6.6 s of CPU (JAX's: 26 s at batch 64).

benchmarks/tpu_aot_rows.py does the same for every jitted row of bench_tpu.py, both libraries, with
the optimized HLO's ops by opcode (benchmarks/results/tpu_aot.json).
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: what libtpu asks of the machine when no chip is there to ask (one host, one chip, no metadata server)
TPU_ENV = {"TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": "v5litepod-1", "TPU_WORKER_HOSTNAMES": "localhost",
           "TPU_WORKER_ID": "0", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


def _one(side: str, batch: int) -> dict:
    """Compile ``side``'s CNN step at ``batch`` for a v5e here; its compile time and cost model."""
    sys.path.insert(0, str(ROOT))
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import topologies

    import arrayx as ax
    from arrayx.core import executor as base
    from benchmarks.bench_cnn import _data, _step, cnn_loss

    device = topologies.get_topology_desc("v5e:1x1", "tpu", chips_per_host_bounds=[1, 1, 1]).devices[0]
    on_tpu = jax.sharding.SingleDeviceSharding(device)
    images, labels, params = _data(batch)
    args = (params, images, labels.astype(np.int32))

    def aval(a, weak=False):
        return jax.ShapeDtypeStruct(np.shape(a), a.dtype, sharding=on_tpu, weak_type=weak)

    t0 = time.perf_counter()
    if side == "jax":
        loss = cnn_loss(jnp, jax.lax.conv, lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2),
                                                                         (1, 1, 2, 2), "VALID"),
                        jax.nn.log_softmax, lambda t, n: jax.nn.one_hot(t, n, dtype=jnp.float32))
        step = jax.jit(_step(jax.value_and_grad(loss), jax.tree.map))
        compiled = step.trace(*jax.tree.map(aval, args)).lower().compile()
    else:
        ax.set_executor("jax")
        loss = cnn_loss(ax, ax.lax.conv, lambda h: ax.lax.max_pool(h, (2, 2)), ax.nn.log_softmax,
                        lambda t, n: ax.nn.one_hot(t, n, dtype=ax.float32))
        graph = ax.jit(_step(ax.value_and_grad(loss), ax.pytree.map)).lower(*ax.pytree.map(ax.asarray, args)).graph
        ex = base.get("jax")
        program = ex.lower(graph)  # what the executor's compile hands to jax.jit, traced with 64-bit types on
        avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=on_tpu, weak_type=a.weak_type) for a in graph.in_avals]
        compiled = ex.scoped(lambda: jax.jit(program).trace(*avals).lower().compile())()
    seconds = time.perf_counter() - t0
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return {"side": side, "batch": batch, "trace + compile s": seconds,
            "cost model ms": cost.get("optimal_seconds", float("nan")) * 1e3,
            "flops": cost.get("flops"), "bytes accessed": cost.get("bytes accessed")}


def run_child(script: str, args: list, ident: dict, timeout: float) -> dict:
    """``script --child *args`` in a child process with a compile-only TPU: the last JSON line it printed,
    or ``ident`` with the error (its last stderr line, or the time limit); the child's CPU and wall time."""
    t0, cpu0 = time.perf_counter(), os.times()
    try:
        done = subprocess.run([sys.executable, script, "--child", *args], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **TPU_ENV})
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        row = json.loads(lines[-1]) if lines else {**ident, "error": last}
    except subprocess.TimeoutExpired:
        row = {**ident, "error": f"compile still running after {timeout:.0f} s"}
    cpu1 = os.times()
    row["process CPU s"] = round(cpu1.children_user + cpu1.children_system - cpu0.children_user
                                 - cpu0.children_system, 2)
    row["process wall s"] = round(time.perf_counter() - t0, 2)
    return row


def main(batches, sides, timeout: float) -> list:
    rows = []
    for batch in batches:
        for side in sides:
            row = run_child(__file__, [side, str(batch)], {"side": side, "batch": batch}, timeout)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_one(sys.argv[2], int(sys.argv[3]))), flush=True)
        sys.exit(0)
    import argparse

    p = argparse.ArgumentParser(description="XLA:TPU compile of the CNN step, ahead of time on this CPU")
    p.add_argument("--batch", type=int, nargs="+", default=[64, 256])
    p.add_argument("--sides", nargs="+", default=["arrayx", "jax"], choices=["arrayx", "jax"])
    p.add_argument("--timeout", type=float, default=600)
    a = p.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    main(a.batch, a.sides, a.timeout)
