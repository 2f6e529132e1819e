"""The default-dtype MLP on a TPU (issue #41 point 1): arrayx against JAX's own defaults.

Both sides start from the same NumPy float64 data (weights, batch, one-hot labels) and pass no
dtype anywhere: arrayx takes it with ``xp.asarray(np_data)`` on the jax executor (a TPU's defaults
make it float32, with one DowncastWarning), JAX with ``jnp.asarray(np_data)`` (float32 while
``jax_enable_x64`` is off, its default).  Each side runs in its own process, so the JAX side sees
JAX's default configuration whatever the arrayx side does to it.  Timed: one training step
(``value_and_grad`` of the mean cross-entropy, then the SGD update) under ``jit``, and the eager
forward pass, at two batch sizes; the best of several rounds, sides alternating.

Where a side's time goes (issue #41: arrayx's step took 1.5x JAX's time at batch 256 and 3.7x at
4096 on the chip, the op counts of both programs alike), each side also reports:

- ``asarray batch``: its ``asarray`` of the NumPy float64 batch (cast to float32 and moved);
- ``asarray+step``: a step from NumPy data, what a training loop over NumPy batches does per step
  (``asarray`` of the batch, then the step);
- ``dispatch``: the host time of one step call, measured with nothing queued before it (JAX returns
  before the device has finished: this is the host's part of a step);
- the op counts of the lowered program, and of the program XLA compiled (``compiled ops``:
  transposes and copies left after XLA's passes; arrayx's lowered and compiled inside its 64-bit
  scope, as it runs);
- arrayx only: its compiled program called directly, and called on buffers made by ``jnp.asarray``
  (if that is fast and the first slow, the cost is in arrayx's buffers, not in its call).

    python benchmarks/bench_tpu_defaults.py [--rounds 3] [--output tpu_defaults.json] [--as-tpu] [--batches 256,4096]

``--as-tpu`` (the CPU mode, where there is no TPU) has the jax executor's devices report the "tpu"
platform, so arrayx takes a TPU's defaults on the CPU (the 32-bit rules of
``arrayx/api/_device_dtypes.py``); JAX's side is unchanged.  The figures that count for the chip
are from the chip.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._models import MLP_SIZES, mlp_logits, mlp_params, mlp_xent_loss  # noqa: E402

BATCHES = (256, 4096)
#: what the lowered step programs hold, counted per side (where the time goes when the dtypes agree)
_OPS = ("dot_general", "precision = [HIGHEST", "f64", "i64", "compare", "select", "custom_call", "while",
        "transpose", "stablehlo.case")
#: the same in the HLO XLA compiled (after its passes: a transpose folded into a product is gone, and so
#: is a ``case`` on a constant index, which ``lax.platform_dependent`` leaves in arrayx's lowered program)
_COMPILED_OPS = (" dot(", " transpose(", " copy(", " fusion(", " custom-call(", " convert(", "f64[", " conditional(")


def _op_counts(program_text: str) -> dict:
    return {op: program_text.count(op) for op in _OPS}


def _compiled_counts(hlo_text: str) -> dict:
    return {op.strip(" (["): hlo_text.count(op) for op in _COMPILED_OPS}


def _data(batch: int):
    rng = np.random.default_rng(0)
    params = mlp_params(rng, MLP_SIZES, dtype=np.float64)  # NumPy's default: float64
    x = rng.standard_normal((batch, MLP_SIZES[0]))
    y = np.eye(MLP_SIZES[-1])[rng.integers(0, MLP_SIZES[-1], batch)]
    return params, x, y


def _dispatch(fn, block, repeat: int) -> float:
    """Best host seconds of one call of ``fn`` with nothing queued before it (each result waited for
    after the clock stops)."""
    block(fn())
    best = float("inf")
    for _ in range(max(repeat, 1) * 4):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
        block(out)
    return best


def _best(fn, block, number: int, repeat: int) -> float:
    block(fn())  # compile, warm caches
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        block(out)
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def _side_jax(repeat: int, batches=BATCHES) -> dict:
    import jax
    import jax.numpy as jnp

    out = {"device": str(jax.devices()[0]), "x64": bool(jax.config.jax_enable_x64)}

    def block(v):
        return jax.block_until_ready(v)

    for batch in batches:
        params, x, y = _data(batch)
        p = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        xj, yj = jnp.asarray(x), jnp.asarray(y)

        @jax.jit
        def step(p, x, y):
            loss, g = jax.value_and_grad(lambda q: mlp_xent_loss(jnp, q, x, y))(p)
            return loss, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(p, g)]

        out[f"dtype b{batch}"] = str(p[0][0].dtype)
        lowered = step.lower(p, xj, yj)
        out[f"ops b{batch}"] = _op_counts(lowered.as_text())
        out[f"compiled ops b{batch}"] = _compiled_counts(lowered.compile().as_text())
        out[f"jit step b{batch}"] = _best(lambda: step(p, xj, yj), block, 20, repeat)
        out[f"dispatch b{batch}"] = _dispatch(lambda: step(p, xj, yj), block, repeat)
        out[f"asarray batch b{batch}"] = _best(lambda: jnp.asarray(x), block, 5, repeat)
        out[f"asarray+step b{batch}"] = _best(lambda: step(p, jnp.asarray(x), jnp.asarray(y)), block, 5, repeat)
        out[f"eager forward b{batch}"] = _best(lambda: mlp_logits(jnp, p, xj), block, 5, repeat)
    return out


def _side_arrayx(repeat: int, as_tpu: bool, batches=BATCHES) -> dict:
    import warnings

    import jax.numpy as jnp

    import arrayx as ax
    from arrayx.core import executor as base
    from arrayx.executors.jax import x64

    jx = base.get("jax")
    jx.xp  # noqa: B018 - load JAX
    if as_tpu:
        from arrayx.api import _device_dtypes

        type(jx).platform_of = lambda self, device: "tpu"
        _device_dtypes.clear_caches()
    out = {"device": str(jx.default_device()),
           "defaults": {k: str(v) for k, v in ax.__array_namespace_info__().default_dtypes(device="jax").items()}}

    def block(v):  # one batched wait, as jax.block_until_ready on JAX's side (not one wait per leaf)
        jx._jax.block_until_ready([leaf._buf for leaf in ax.pytree.leaves(v)])
        return v

    with ax.use_executor("jax"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch in batches:
            params, x, y = _data(batch)
            p = [(ax.asarray(w), ax.asarray(b)) for w, b in params]  # no dtype: the device's defaults
            xa, ya = ax.asarray(x), ax.asarray(y)

            @ax.jit
            def step(p, x, y):
                loss, g = ax.value_and_grad(lambda q: mlp_xent_loss(ax, q, x, y))(p)
                return loss, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(p, g)]

            out[f"dtype b{batch}"] = str(p[0][0].dtype)
            graph = ax.make_graph(step)(p, xa, ya)
            program = jx.compile(graph)  # the jax.jit program arrayx's jit runs for this graph
            bufs = [leaf._buf for leaf in ax.pytree.leaves((p, xa, ya))]
            lower = getattr(program, "lower", None)  # absent where the graph runs as several programs
            if lower:  # lowered and compiled in arrayx's 64-bit scope, as the program runs (outside it
                # JAX would trace it again with 32-bit types)
                lowered = x64.call_scoped(lower, bufs, {})
                out[f"ops b{batch}"] = _op_counts(lowered.as_text())
                out[f"compiled ops b{batch}"] = _compiled_counts(x64.call_scoped(
                    lambda: lowered.compile().as_text(), (), {}))
            else:
                out[f"ops b{batch}"] = "several programs"
            out[f"jit step b{batch}"] = _best(lambda: step(p, xa, ya), block, 20, repeat)
            out[f"dispatch b{batch}"] = _dispatch(lambda: step(p, xa, ya), block, repeat)
            out[f"asarray batch b{batch}"] = _best(lambda: ax.asarray(x), block, 5, repeat)
            out[f"asarray+step b{batch}"] = _best(lambda: step(p, ax.asarray(x), ax.asarray(y)), block, 5, repeat)
            out[f"compiled program b{batch}"] = _best(lambda: program(*bufs), jx._jax.block_until_ready, 20, repeat)
            jbufs = [jnp.asarray(np.asarray(b)) for b in bufs]  # the same values, placed by JAX itself
            out[f"compiled program on jnp buffers b{batch}"] = _best(lambda: program(*jbufs),
                                                                     jx._jax.block_until_ready, 20, repeat)
            out[f"eager forward b{batch}"] = _best(lambda: mlp_logits(ax, p, xa), block, 5, repeat)
        out["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:90]}" for w in caught})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the two processes")
    ap.add_argument("--repeat", type=int, default=5, help="timed repeats per case in each process")
    ap.add_argument("--output", default=None, help="write the results as JSON here")
    ap.add_argument("--as-tpu", action="store_true",
                    help="CPU mode: the jax executor's devices count as TPUs (arrayx takes a TPU's 32-bit defaults)")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)), help="batch sizes, comma-separated")
    ap.add_argument("--side", choices=("jax", "arrayx"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    batches = tuple(int(b) for b in args.batches.split(","))
    if args.side:
        res = _side_jax(args.repeat, batches) if args.side == "jax" else _side_arrayx(args.repeat, args.as_tpu, batches)
        print(json.dumps(res))
        return
    best: dict = {"jax": {}, "arrayx": {}}
    info: dict = {}
    for _ in range(args.rounds):
        for side in ("jax", "arrayx"):
            cmd = [sys.executable, os.path.abspath(__file__), "--side", side, "--repeat", str(args.repeat),
                   "--batches", args.batches]
            if args.as_tpu:
                cmd.append("--as-tpu")
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode:
                sys.exit(f"{side} side failed:\n{done.stderr[-3000:]}")
            res = json.loads(done.stdout.strip().splitlines()[-1])
            for k, v in res.items():
                if isinstance(v, float):
                    best[side][k] = min(v, best[side].get(k, float("inf")))
                else:
                    info.setdefault(side, {})[k] = v
    rows = []
    for case in best["jax"]:
        j, a = best["jax"][case], best["arrayx"][case]
        rows.append({"case": case, "jax_ms": j * 1e3, "arrayx_ms": a * 1e3, "arrayx_over_jax": a / j})
        print(f"{case:24s} jax {j * 1e3:9.3f} ms  arrayx {a * 1e3:9.3f} ms  ratio {a / j:5.2f}")
    for case in best["arrayx"]:  # arrayx's own (its compiled program called directly): where its time goes
        if case not in best["jax"]:
            rows.append({"case": f"arrayx only: {case}", "arrayx_ms": best["arrayx"][case] * 1e3})
            print(f"{case:24s} arrayx {best['arrayx'][case] * 1e3:9.3f} ms")
    print(json.dumps(info, indent=1))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"rows": rows, "info": info, "as_tpu": args.as_tpu, "rounds": args.rounds,
                       "load average after (1, 5, 15 min)": os.getloadavg()}, f, indent=1)


if __name__ == "__main__":
    main()
