"""Every jitted row of bench_tpu.py compiled ahead of time for a TPU v5e on this CPU, arrayx's program and
JAX's side by side: compile time, XLA:TPU's cost model, and the ops of the optimized HLO by opcode.

Needs libtpu (``pip install --target DIR libtpu==0.0.42.1``, the chip machine's version; then
``PYTHONPATH=DIR``); tpu_aot.py says how JAX builds a compile-only v5e from it.  Each program is
compiled in its own process (``--timeout``: a compile that takes minutes loses only itself).

Run:  PYTHONPATH=DIR python benchmarks/tpu_aot_rows.py [--rows TEXT ...] [--sides arrayx jax] [--timeout S]
      [--output PATH] [--hlo-dir DIR] [--update]
      (writes benchmarks/results/tpu_aot.json; --hlo-dir keeps each side's optimized HLO and StableHLO;
      --update keeps the file's other rows and sides: one side or row compiled again, the rest kept)

Per row and side: ``trace+lower s`` and ``compile s`` (XLA:TPU's compile, in the child process; ``compile
CPU s``: the CPU time of its threads, steadier than the wall time on a loaded machine),
``cost model ms`` (XLA:TPU's ``optimal_seconds``; it counts each ``ConcatBitcast`` custom call, a
concatenation done in place, as -1 s: a negative total is given back here with those at 0, the total as
given is ``cost model ms as given``), ``flops``, ``bytes accessed``; ``kernels``: the entry
computation's instructions that run as kernels, by opcode (fusions, copies, slices, reshapes that move
data, select-and-scatter; not parameters, constants, tuples, bitcasts or the async copies' halves), and
their ``kernel count``; ``ops``: the optimized HLO's instructions by opcode outside fusion bodies (the
entry computation and the reducers' small computations: their ``parameter`` and ``add`` ops are counted
there too), ``fused ops``: inside fusions, ``fusion kinds``; ``lowered``: the StableHLO handed to XLA (its
``case`` and ``scatter`` ops).  Per row, ``diff``: JAX's cost-model time / arrayx's ("time ratio
jax/arrayx", the issue's goal >= 0.97), the bytes ratio, the kernel counts' difference and every opcode
whose count differs (arrayx minus JAX).

Measured 2026-12-06 (JAX 0.10.2, libtpu 0.0.42.1, this 2-core machine at load 10-15), written by
``--sides arrayx --timeout 900`` then ``--sides jax --rows selu mlp defaults ten per-example "cnn b64"
attention matmul --update`` (JAX's CNN step at batch 256, 311 s to compile, kept from this session's
first run: the same program).  JAX's time / arrayx's in the cost model: 1.0 for SELU, the MLP steps
(float32, bfloat16, default dtypes, bench_tpu_defaults' cross-entropy), the per-example gradients and
the matmul, their optimized programs alike op for op; 0.992 for the ten SGD steps (arrayx's loop
counts in int64: JAX's scan traced with 64-bit types on; and x.T made once before the loop); CNN
0.957 / 0.970 at batch 64 / 256 (0.80 before the kernel gradient's diagonal form); attention 0.993
(0.979 with the scatters).  The ``lax.platform_dependent`` case ops in arrayx's StableHLO (10-38
per row) are gone from every optimized program, and compile no slower (the cross-entropy step with
the branch chosen before lowering: 6.0-6.5 s of CPU against 5.8-6.1 s with them).

The CNN rows again in session 23 (load 5-8; JAX's kernel counts from its programs compiled then by
benchmarks/tpu_cnn_forms.py --aot, the same programs): arrayx 28 kernels, JAX 20, at batch 64 and 256.
The difference is the kernel gradient: 10 kernels as products (the input's bfloat16 copy, its 3 row
slices, the product, a reshape, 3 diagonal slices, their sum, the SGD update, a layout copy of the
result) where JAX's program has one convolution fused with the update, and JAX has one arrayx has not
(the relu mask packed into bits); the forward convolution, pooling, select-and-scatter, dense layer and log_softmax are
kernel for kernel alike, and both programs take the same 5 parameters in the same layouts (the 23 / 25
``parameter`` ops are the reducers': JAX has two more, its bit packing's).  Inside fusions arrayx's
9 ``pad`` are concatenations of the 3 row slices and of the 3 diagonals (XLA's pad-and-max form).  With
XLA's convolution there (bench_tpu.py --cnn-variants) arrayx has 19 kernels, yet that row was as far from
JAX's on the chip (pipelined 0.83 / 0.85) as the products (0.86 / 0.81): the CNN rows' pipelined times
are bound by the host's time per call, not by these programs (tpu_cnn_forms.py takes them apart on the
chip; results/tpu_aot_cnn_forms.json has each form of the kernel gradient compiled here).

arrayx's side takes a TPU's default dtypes, as on the chip (the jax executor's devices made to report
"tpu", as bench_tpu_defaults.py --as-tpu does: int32 indices, float32 from NumPy float64 data).  The
default-dtype row is bench_tpu.py's MLP from NumPy float64 data; ``defaults xent`` is
bench_tpu_defaults.py's own step (tanh MLP, cross-entropy, batch 4096).
"""
from __future__ import annotations

import collections
import json
import os
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.tpu_aot import run_child  # noqa: E402

#: row name -> what it compiles (see ``_build``)
ROWS = ("jit selu", "mlp float32", "mlp bfloat16", "mlp default dtypes", "defaults xent b4096", "ten sgd steps",
        "per-example grads", "cnn b64", "cnn b256", "attention", "matmul 4096 jit")
#: the opcodes whose counts the diff names first (the rest follow)
WATCHED = ("fusion", "copy", "transpose", "convert", "conditional", "scatter", "while", "dot", "convolution",
           "custom-call", "select-and-scatter", "reduce", "all-reduce")


def _build(row: str, side: str):
    """(the function to jit, its arguments as NumPy arrays, the dtype each side takes them in) for ``row``;
    ``side`` picks the library ("arrayx" or "jax")."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import arrayx as ax
    from benchmarks import bench_tpu as bt

    lib = ax if side == "arrayx" else jnp
    size = bt.sizes(False)
    rng = np.random.default_rng(1)
    vg, tmap = (ax.value_and_grad, ax.pytree.map) if side == "arrayx" else (jax.value_and_grad, jax.tree.map)
    relu = ax.nn.relu if side == "arrayx" else jax.nn.relu
    if row == "jit selu":
        return bt.selu(lib), (rng.standard_normal(size["selu"]).astype(np.float32),), None
    if row == "matmul 4096 jit":
        m = rng.standard_normal((size["mm"],) * 2).astype(np.float32)
        return (lambda a, b: a @ b), (m, m), None
    if row.startswith(("mlp", "ten sgd")):
        batch, sizes = size["mlp"]
        dtype = np.float64 if "default" in row else np.float32
        params = bt._mlp(None, sizes, dtype)
        x = rng.standard_normal((batch, sizes[0])).astype(dtype)
        y = rng.standard_normal((batch, sizes[-1])).astype(dtype)
        one = bt.sgd(vg, tmap, bt._mlp_loss(lib, relu))
        dt = "bfloat16" if "bfloat16" in row else None
        if row.startswith("ten sgd"):
            loop = ax.fori_loop if side == "arrayx" else jax.lax.fori_loop
            return (lambda p, x, y: loop(0, 10, lambda i, p: one(p, x, y)[1], p)), (params, x, y), dt
        return one, (params, x, y), dt
    if row.startswith("defaults xent"):
        from benchmarks import bench_tpu_defaults as btd
        from benchmarks._models import mlp_xent_loss

        params, x, y = btd._data(int(row.rsplit("b", 1)[1]))

        def step(p, x, y):
            loss, g = vg(lambda q: mlp_xent_loss(lib, q, x, y))(p)
            return loss, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(p, g)]
        return step, (params, x, y), None
    if row == "per-example grads":
        batch, sizes = size["per-example"]
        params = bt._mlp(None, sizes, np.float32)
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        y = rng.standard_normal((batch, sizes[-1])).astype(np.float32)
        grad, vmap = (ax.grad, ax.vmap) if side == "arrayx" else (jax.grad, jax.vmap)
        return vmap(grad(bt._mlp_loss(lib, relu)), in_axes=(None, 0, 0)), (params, x, y), None
    if row.startswith("cnn"):
        from benchmarks.bench_cnn import _data, _step

        images, labels, params = _data(int(row[5:]))
        loss = bt.cnn_losses()[0 if side == "arrayx" else 1]
        return _step(vg(loss), tmap), (params, images, labels.astype(np.int32)), None
    if row == "attention":
        ab, seq, d, heads = size["attention"]
        q = rng.standard_normal((ab, seq, d)).astype(np.float32)
        wq = (rng.standard_normal((3, d, d)) / np.sqrt(d)).astype(np.float32)
        softmax = ax.nn.softmax if side == "arrayx" else jax.nn.softmax
        return vg(bt.attention(lib, softmax, ab, seq, d, heads)), (wq, q), None
    raise ValueError(f"tpu_aot_rows: unknown row {row!r}; the rows are {ROWS}")


_OP = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+ = .*? ([a-z][a-z0-9\-]*)\(")
_COMP = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{\s*$")  # a computation's header, at column 0


#: entry instructions that launch nothing: bookkeeping, and the async copies' halves (DMAs, counted apart)
_NOT_KERNELS = ("parameter", "constant", "get-tuple-element", "tuple", "bitcast", "copy-start", "copy-done",
                "slice-start", "slice-done")


def hlo_counts(text: str) -> dict:
    """Opcode counts of an optimized HLO module: ``ops`` outside fusion bodies (the entry computation and
    the reducers' and select-and-scatter's small computations: their parameters and adds are counted
    here too), ``fused ops`` inside, ``fusion kinds`` (kLoop, kInput, kOutput, kCustom); ``kernels``: the
    entry computation's instructions that run as kernels (fusions, copies, slices, reshapes that move
    data, select-and-scatter, ...: not parameters, constants, tuples, bitcasts or the async copies)."""
    fused = set(re.findall(r" fusion\(.*?calls=%?([\w.\-]+)", text))
    ops, inner, kinds, kernels = (collections.Counter() for _ in range(4))
    comp = entry = None
    for line in text.splitlines():
        c = _COMP.match(line)
        if c:
            comp = c.group(1)
            entry = comp if line.startswith("ENTRY") else entry
            continue
        m = _OP.match(line)
        if not m or comp is None:
            continue
        (inner if comp in fused else ops)[m.group(1)] += 1
        if comp == entry and m.group(1) not in _NOT_KERNELS:
            kernels[m.group(1)] += 1
        if m.group(1) == "fusion" and comp not in fused:
            k = re.search(r"kind=(k\w+)", line)
            kinds[k.group(1) if k else "?"] += 1
    return {"ops": dict(sorted(ops.items())), "fused ops": dict(sorted(inner.items())),
            "fusion kinds": dict(sorted(kinds.items())), "kernels": dict(sorted(kernels.items())),
            "kernel count": sum(kernels.values())}


def _one(row: str, side: str, hlo_dir: str | None) -> dict:
    """Compile ``side``'s program of ``row`` for a v5e here: times, cost model, op counts."""
    import jax
    import numpy as np
    from jax.experimental import topologies

    import arrayx as ax
    from arrayx.core import executor as base

    device = topologies.get_topology_desc("v5e:1x1", "tpu", chips_per_host_bounds=[1, 1, 1]).devices[0]
    on_tpu = jax.sharding.SingleDeviceSharding(device)
    ex = base.get("jax")
    if side == "arrayx":  # a TPU's default dtypes for arrayx, as on the chip (bench_tpu_defaults.py --as-tpu)
        from arrayx.api import _device_dtypes

        ex.xp  # noqa: B018 - load JAX
        type(ex).platform_of = lambda self, device: "tpu"
        _device_dtypes.clear_caches()
    fn, args, dt = _build(row, side)
    t0 = time.perf_counter()
    if side == "jax":
        def aval(a):
            dtype = jax.numpy.bfloat16 if dt == "bfloat16" else jax.dtypes.canonicalize_dtype(a.dtype)
            return jax.ShapeDtypeStruct(np.shape(a), dtype, sharding=on_tpu)
        lowered = jax.jit(fn).trace(*jax.tree.map(aval, args)).lower()

        def compile_():
            return lowered.compile()
    else:
        from arrayx.executors.jax import programs

        ax.set_executor("jax")
        on_ax = ax.pytree.map(lambda a: ax.asarray(a, dtype=ax.bfloat16 if dt == "bfloat16" else None), args)
        graph = ax.jit(fn).lower(*on_ax).graph
        deferred = programs.deferred_outputs(graph)  # as the executor's compile does
        graph = deferred[0] if deferred is not None else graph
        program = ex.lower(graph)  # what the executor's compile hands to jax.jit (64-bit types on)
        avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=on_tpu, weak_type=a.weak_type) for a in graph.in_avals]
        lowered = ex.scoped(lambda: jax.jit(program).trace(*avals).lower())()
        compile_ = ex.scoped(lowered.compile)
    t1, c1 = time.perf_counter(), time.process_time()
    compiled = compile_()
    t2, c2 = time.perf_counter(), time.process_time()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    text, stable = compiled.as_text(), lowered.as_text()
    if hlo_dir:
        stem = pathlib.Path(hlo_dir) / f"{row.replace(' ', '_')}.{side}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(stem.suffix + ".hlo.txt").write_text(text)
        stem.with_suffix(stem.suffix + ".stablehlo.txt").write_text(stable)
    lowered_ops = collections.Counter(re.findall(r"stablehlo\.([a-z_]+)", stable))
    raw = cost.get("optimal_seconds", float("nan")) * 1e3
    concats = text.count('custom_call_target="ConcatBitcast"')
    return {"row": row, "side": side, "trace+lower s": t1 - t0, "compile s": t2 - t1, "compile CPU s": c2 - c1,
            "cost model ms": raw + 1e3 * concats if raw < 0 else raw, "cost model ms as given": raw,
            "ConcatBitcast calls": concats, "flops": cost.get("flops"),
            "bytes accessed": cost.get("bytes accessed"), **hlo_counts(text),
            "lowered": {k: lowered_ops[k] for k in ("case", "scatter", "convert", "transpose", "dot_general")}}


def diff(a: dict, j: dict) -> dict:
    """JAX's cost-model time and bytes over arrayx's, and the opcodes whose counts differ (arrayx - JAX)."""
    out = {}
    if a.get("cost model ms") and j.get("cost model ms"):
        out["time ratio jax/arrayx"] = round(j["cost model ms"] / a["cost model ms"], 4)
    if a.get("bytes accessed") and j.get("bytes accessed"):
        out["bytes ratio jax/arrayx"] = round(j["bytes accessed"] / a["bytes accessed"], 4)
    if "kernel count" in a and "kernel count" in j:
        out["kernel count arrayx - jax"] = a["kernel count"] - j["kernel count"]
    for key in ("kernels", "ops", "fused ops"):
        ca, cj = a.get(key, {}), j.get(key, {})
        names = [n for n in WATCHED if n in ca or n in cj] + sorted((set(ca) | set(cj)) - set(WATCHED))
        d = {n: ca.get(n, 0) - cj.get(n, 0) for n in names if ca.get(n, 0) != cj.get(n, 0)}
        out[f"{key} arrayx - jax"] = d
    return out


def _child(row: str, side: str, timeout: float, hlo_dir: str | None) -> dict:
    return run_child(__file__, [row, side] + ([hlo_dir] if hlo_dir else []), {"row": row, "side": side}, timeout)


def main(rows, sides, timeout: float, output: pathlib.Path | None, hlo_dir: str | None, update: bool = False) -> dict:
    import jax

    command = "PYTHONPATH=<libtpu dir> python benchmarks/tpu_aot_rows.py " + " ".join(sys.argv[1:])
    result = {"title": "bench_tpu.py's jitted rows compiled ahead of time for a TPU v5e (XLA:TPU's cost model)",
              "command": command, "jax": jax.__version__, "load average before": os.getloadavg(), "rows": []}
    kept = {}
    if update and output is not None and output.exists():  # the sides not compiled now are kept from the file
        result = json.loads(output.read_text())
        result.setdefault("updates", []).append({"command": command, "load average before": os.getloadavg()})
        kept = {e["row"]: e for e in result["rows"]}
        result["rows"] = [kept[r] for r in ROWS if r in kept]
    for row in rows:
        entry = kept.get(row) or {"row": row}
        if row not in kept:
            result["rows"].append(entry)
        for side in sides:
            entry[side] = _child(row, side, timeout, hlo_dir)
            print(json.dumps(entry[side]), flush=True)
        if "arrayx" in entry and "jax" in entry and "error" not in entry["arrayx"] and "error" not in entry["jax"]:
            entry["diff"] = diff(entry["arrayx"], entry["jax"])
            print(f"{row}: {json.dumps(entry['diff'])}", flush=True)
        if output is not None:
            output.write_text(json.dumps(result, indent=1) + "\n")
    result["load average after"] = os.getloadavg()
    if output is not None:
        output.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_one(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)), flush=True)
        sys.exit(0)
    import argparse

    p = argparse.ArgumentParser(description="bench_tpu.py's jitted rows compiled for a TPU v5e on this CPU")
    p.add_argument("--rows", nargs="+", default=None, help="rows whose name holds one of these texts (default: all)")
    p.add_argument("--sides", nargs="+", default=["arrayx", "jax"], choices=["arrayx", "jax"])
    p.add_argument("--timeout", type=float, default=400)
    p.add_argument("--output", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "tpu_aot.json")
    p.add_argument("--hlo-dir", default=None)
    p.add_argument("--update", action="store_true",
                   help="keep the output file's other rows and sides; compile and replace only these")
    a = p.parse_args()
    chosen = [r for r in ROWS if a.rows is None or any(t.lower() in r for t in a.rows)]
    main(chosen, a.sides, a.timeout, a.output, a.hlo_dir, a.update)
