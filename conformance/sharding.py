"""The sharding rows of ``python -m conformance``: the sharding tutorial's programs on every executor
against jax.numpy's run of the same programs (values, shardings, the text grids).

    python -m conformance.sharding EXECUTOR      # one executor's run: one JSON object on stdout
    python -m conformance.sharding --rows [EXECUTORS]   # the rows, each executor in its own process

Each executor's run also times every program once more, warm (``warm_seconds``: issue 42 asks each
executor within 5x the jax executor's time on these programs).

The programs (:func:`run`): device_put on a 2x4 mesh, an elementwise jit, a sum along a sharded
axis (partially replicated), ``with_sharding_constraint``, ``shard_map`` of an elementwise function,
a per-shard sum with and without ``psum``, a sigmoid layer three ways (auto, constraint,
shard_map), and the same ops eagerly (results keep their operands' shardings).  Each executor runs
in its own process (XLA reads its flags once): jax with 8 forced host devices, numpy/numba with 8
virtual devices, dask with 8 virtual devices on a LocalCluster of 2 workers.  ``tests/sharding``
runs the same programs.
"""
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

        # the same ops eagerly: results of committed sharded operands keep shardings (as jit's)
        r = 2 * ax.sin(arr_sharded) + 1
        out["eager_elementwise"] = np.asarray(r).tolist()
        out["eager_elementwise_same_sharding"] = r.sharding == arr_sharded.sharding
        r = ax.sum(arr_sharded, axis=0)
        out["eager_contract"] = np.asarray(r).tolist()
        out["eager_contract_spec"] = _spec(r.sharding)
        r = ax.sum(arr_sharded, axis=1)
        out["eager_sum_kept_axis"] = np.asarray(r).tolist()
        out["eager_sum_kept_axis_spec"] = _spec(r.sharding)
        out["eager_transpose_spec"] = _spec(arr_sharded.T.sharding)
        r = ax.reshape(arr_sharded, (32,))
        out["eager_reshape"] = np.asarray(r).tolist()
        out["eager_reshape_spec"] = _spec(r.sharding)
        r = ax.nn.sigmoid(ax.device_put(xs, s8) @ ax.device_put(w, s8) + b)
        out["eager_layer"] = np.asarray(r).tolist()
        out["eager_layer_spec"] = _spec(r.sharding)
        y = ax.device_put(arr, NamedSharding(mesh, P("x", None)))
        out["eager_keeps_operand_spec"] = (y + 1).sharding == y.sharding and (y + 1).sharding.spec == P("x", None)
    return out


#: the report's rows: a program and the keys of :func:`run`'s output it is judged by
ROWS = {
    "device_put on a 2x4 mesh": ["unsharded_grid", "sharded_grid", "sharded_spec", "n_devices", "shards"],
    "jit: elementwise keeps the sharding": ["elementwise", "elementwise_same_sharding"],
    "jit: sum along a sharded axis": ["contract", "contract_spec", "contract_grid"],
    "jit: with_sharding_constraint": ["contract2", "contract2_spec", "contract2_grid"],
    "shard_map: elementwise": ["smap_elementwise", "smap_elementwise_spec", "local_shape", "smap_double"],
    "shard_map: per-shard sum": ["per_shard_sum", "per_shard_sum_spec"],
    "shard_map: psum": ["psum", "psum_spec"],
    "sigmoid layer: auto": ["layer", "layer_auto", "layer_auto_spec"],
    "sigmoid layer: with_sharding_constraint": ["layer_constraint", "layer_constraint_spec"],
    "sigmoid layer: shard_map": ["layer_smap", "layer_smap_spec"],
    "eager: elementwise keeps the sharding": ["eager_elementwise", "eager_elementwise_same_sharding",
                                              "eager_keeps_operand_spec"],
    "eager: reductions, transpose, reshape": ["eager_contract", "eager_contract_spec", "eager_sum_kept_axis",
                                              "eager_sum_kept_axis_spec", "eager_transpose_spec", "eager_reshape",
                                              "eager_reshape_spec"],
    "eager: sigmoid layer": ["eager_layer", "eager_layer_spec"],
}
REFERENCE = "jax"
EXECUTORS = ("jax", "numpy", "numba", "dask")


def mismatches(got: dict, want: dict, keys) -> list[str]:
    """The keys where ``got`` differs from ``want`` (exact for specs, grids and flags; values to
    float32 rounding), each with both results."""
    out = []
    for key in keys:
        if key not in got or key not in want:
            out.append(f"{key}: missing ({'got' if key not in got else 'reference'})")
            continue
        have, ref = got[key], want[key]
        if key.endswith(("spec", "grid")) or isinstance(ref, (str, bool)) or key in ("n_devices", "shards"):
            if have != ref:
                out.append(f"{key}: {have!r} != jax's {ref!r}")
            continue
        h, r = np.asarray(have, dtype=float), np.asarray(ref, dtype=float)
        if h.shape != r.shape or not np.allclose(h, r, rtol=2e-6, atol=1e-6):
            out.append(f"{key}: {np.array2string(h, threshold=8)} != jax's {np.array2string(r, threshold=8)}")
    return out


def run_in_process(ex: str, timeout: float = 600) -> dict:
    """:func:`run` on ``ex`` in a fresh process with 8 devices: its JSON, or ``{"error": text}``."""
    import os
    import pathlib
    import subprocess

    root = pathlib.Path(__file__).resolve().parent.parent
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", ARRAYX_VIRTUAL_DEVICES="8")
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    try:
        proc = subprocess.run([sys.executable, "-m", "conformance.sharding", ex], capture_output=True, text=True,
                              env=env, timeout=timeout, cwd=root)
    except subprocess.TimeoutExpired:
        return {"error": f"no result within {timeout} s"}
    if proc.returncode != 0:  # the exit status first: a crash at exit leaves only log lines behind
        return {"error": f"exit status {proc.returncode}: " + (proc.stderr or proc.stdout).strip()[-1500:]}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"no JSON on stdout: {proc.stdout[-500:]!r}"}


def rows(executors, runs: dict | None = None) -> dict:
    """The sharding section of the report: ``{"reference": "jax", "rows": [{"program", "cells":
    {executor: {"status", "detail"}}}], "failing": n}``; a cell is ``ok`` (jax's values and
    shardings), ``DIFFERS``, ``ERROR`` (the executor's run failed) or ``reference`` (jax itself);
    every executor is compared with jax, so without jax every cell is ``n/a``."""
    executors = [e for e in EXECUTORS if e in executors]
    runs = dict(runs or {})
    for ex in executors:
        if ex not in runs:
            runs[ex] = run_in_process(ex)
    ref = runs.get(REFERENCE)
    out = []
    failing = 0
    for program, keys in ROWS.items():
        cells = {}
        for ex in executors:
            got = runs[ex]
            if "error" in got:
                cell = {"status": "ERROR", "detail": got["error"]}
            elif ref is None or "error" in ref:
                cell = {"status": "n/a", "detail": "no jax run to compare with"}
            elif ex == REFERENCE:
                cell = {"status": "reference", "detail": ""}
            else:
                bad = mismatches(got, ref, keys)
                cell = {"status": "DIFFERS" if bad else "ok", "detail": "; ".join(bad)[:2000]}
            failing += cell["status"] in ("DIFFERS", "ERROR")
            cells[ex] = cell
        out.append({"program": program, "cells": cells})
    seconds = {ex: runs[ex]["warm_seconds"] for ex in executors if "warm_seconds" in runs[ex]}
    return {"reference": REFERENCE, "executors": executors, "rows": out, "failing": failing,
            "warm_seconds": seconds}


def render(section: dict) -> str:
    """The terminal lines of the sharding rows."""
    exs = section["executors"]
    width = max(len(r["program"]) for r in section["rows"]) + 2
    lines = ["sharding (the tutorial's programs against jax.numpy):",
             " " * width + "".join(f"{e:>11}" for e in exs)]
    for r in section["rows"]:
        lines.append(f"{r['program']:<{width}}" + "".join(f"{r['cells'][e]['status']:>11}" for e in exs))
    for r in section["rows"]:
        for e in exs:
            c = r["cells"][e]
            if c["status"] in ("DIFFERS", "ERROR"):
                lines.append(f"  {c['status']:<8} {r['program']} / {e}: {c['detail'][:200]}")
    seconds = section.get("warm_seconds") or {}
    ref = seconds.get(REFERENCE)
    if seconds:
        lines.append("every program once more (warm), wall seconds: " + ", ".join(
            f"{e} {t:.2f}" + (f" ({t / ref:.1f}x jax)" if ref and e != REFERENCE else "") for e, t in seconds.items()))
    return "\n".join(lines)


def _grid(x) -> str:
    from arrayx.sharding._api import sharding_grid

    return sharding_grid(x)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--rows":
        from arrayx.core import executor as base

        exs = argv[1].split(",") if len(argv) > 1 else [e for e in EXECUTORS if base.get(e).available()]
        section = rows(exs)
        print(render(section))
        return 1 if section["failing"] else 0
    ex = argv[0]
    if ex != "dask":
        print(json.dumps(_timed(ex)))
        return 0
    import os

    import arrayx.executors.dask as dex
    from distributed import LocalCluster

    # closed here, not by the interpreter's exit: a cluster left to the exit's finalisers was torn down
    # with its tasks still held, and under load the process then ended with a nonzero status
    with LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None) as cluster:
        dex.connect(cluster)
        os.environ["ARRAYX_VIRTUAL_DEVICES"] = "8"
        try:
            result = _timed(ex)
        finally:
            dex.disconnect()
    print(json.dumps(result))
    return 0


def _timed(ex: str) -> dict:
    """:func:`run`'s result, with ``warm_seconds``: the wall time of every program run once more (the
    first run compiles and starts what each executor needs)."""
    import time

    result = run(ex)
    t0 = time.perf_counter()
    run(ex)
    result["warm_seconds"] = time.perf_counter() - t0
    return result


if __name__ == "__main__":
    sys.exit(main())
