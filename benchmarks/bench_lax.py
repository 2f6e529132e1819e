"""arrayx.lax / arrayx.nn against their peers: convolution, pooling, logsumexp.

Run:  nice python benchmarks/bench_lax.py [--quick] [--rows PREFIX]
      (writes benchmarks/results/lax.json; --quick: batch 8 instead of the issue's 32, fewer rounds,
      benchmarks/results/lax_quick.json; --rows "conv fwd+bwd": only the workloads whose name starts
      so, written to benchmarks/results/lax_rows.json beside the full run's file)
      or, in the runner with the other benches:  nice python -m benchmarks --only lax [--quick] --tag lax

Side by side in one process, float32, each workload's labels timed in interleaved rounds (a
shuffled order per round, a pause between labels; best time kept):

- ``conv_general_dilated``, NCHW 32x64x56x56 input, 64->64 3x3 filters, stride 1, SAME: forward,
  and forward+backward (the gradient of ``sum(conv(x, w) * g)`` for both operands), on the numpy
  executor (eager forward; ``jit(grad)`` for the backward) and the jax executor (``ax.jit`` of the
  same functions), against ``jax.jit(jax.lax.conv_general_dilated)`` / ``jax.jit(jax.grad(...))``.
  Issue 16's goals: numpy within 2x of jax.jit (ratio peer/arrayx >= 0.5), jax >= 0.9x.  The conv
  rows also time a second, separately built ``jax.jit`` of the peer in the same rounds ("jax again":
  the row's "peer vs peer again" is how far two copies of one program part in this run).
- ``max_pool`` / ``avg_pool`` 2x2 stride 2 on the same tensor: the numpy executor (eager) against
  ``jax.jit(jax.lax.reduce_window)`` (goal >= 0.5x); ``max_pool`` forward+backward (``jit(grad)``)
  against ``jax.jit(jax.grad(...))`` for information (no goal).
- ``logsumexp`` over the last axis of 4096x4096: the numpy executor against
  ``scipy.special.logsumexp`` on NumPy (goal: within 1.2x, ratio >= 0.83).

Each row's "speed vs peer" is peer time / arrayx time (above 1: arrayx is faster).  The JSON
records the load average before and after the run.
"""
from __future__ import annotations

import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # this checkout's arrayx

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402


TITLE = "arrayx.lax conv/pooling and arrayx.nn.logsumexp vs jax.jit(jax.lax) and scipy.special"


def workloads(quick: bool, controls: bool = False) -> dict:
    """The runner's convention (benchmarks/__main__.py): workload -> label -> callable; ``controls``
    adds the conv rows' "jax again" label (``main`` only)."""
    import jax
    import jax.numpy as jnp
    import scipy.special

    from benchmarks._harness import block

    n = 8 if quick else 32
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 64, 56, 56)).astype(np.float32)
    w = (rng.normal(size=(64, 64, 3, 3)) * 0.05).astype(np.float32)
    g = rng.normal(size=(n, 64, 56, 56)).astype(np.float32)
    conv_args = ((1, 1), "SAME")
    jx, jw, jg = jnp.asarray(x), jnp.asarray(w), jnp.asarray(g)
    jconv = jax.jit(lambda a, b: jax.lax.conv_general_dilated(a, b, *conv_args))
    jconv_again = jax.jit(lambda a, b: jax.lax.conv_general_dilated(a, b, *conv_args))
    jgrad, jgrad_again = (jax.jit(jax.grad(lambda a, b, c: jnp.sum(jax.lax.conv_general_dilated(a, b, *conv_args) * c),
                                           argnums=(0, 1))) for _ in range(2))
    agrad = ax.jit(ax.grad(lambda a, b, c: ax.sum(ax.lax.conv_general_dilated(a, b, *conv_args) * c), argnums=(0, 1)))
    aconv = ax.jit(lambda a, b: ax.lax.conv_general_dilated(a, b, *conv_args))
    on = {}
    for name in ("numpy", "jax"):
        with ax.use_executor(name):
            on[name] = (ax.asarray(x), ax.asarray(w), ax.asarray(g))
    xn, wn, gn = on["numpy"]
    xj, wj, gj = on["jax"]
    win = ((1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    jmax = jax.jit(lambda a: jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, *win))
    javg = jax.jit(lambda a: jax.lax.reduce_window(a, 0.0, jax.lax.add, *win) / 4.0)
    gp = np.ascontiguousarray(g[:, :, ::2, ::2])  # a cotangent of the pooled shape
    jgp = jnp.asarray(gp)
    with ax.use_executor("numpy"):
        gpn = ax.asarray(gp)
    jmax_grad = jax.jit(jax.grad(lambda a, c: jnp.sum(jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, *win) * c)))
    amax_grad = ax.jit(ax.grad(lambda a, c: ax.sum(ax.lax.max_pool(a, (2, 2)) * c)))
    big = rng.normal(size=(4096, 4096)).astype(np.float32)
    with ax.use_executor("numpy"):
        bign = ax.asarray(big)
    shape = f"{n}x64x56x56 3x3 64->64 f32"
    out = {
        f"conv fwd {shape}": {"jax": lambda: block(jconv(jx, jw)),
                              "arrayx[numpy]": lambda: ax.lax.conv_general_dilated(xn, wn, *conv_args),
                              "arrayx[jax]": lambda: block(aconv(xj, wj))},
        f"conv fwd+bwd {shape}": {"jax": lambda: block(jgrad(jx, jw, jg)),
                                  "arrayx[numpy]": lambda: agrad(xn, wn, gn),
                                  "arrayx[jax]": lambda: block(agrad(xj, wj, gj))},
        f"max_pool 2x2/2 {n}x64x56x56": {"jax": lambda: block(jmax(jx)),
                                         "arrayx[numpy]": lambda: ax.lax.max_pool(xn, (2, 2))},
        f"max_pool fwd+bwd 2x2/2 {n}x64x56x56": {"jax": lambda: block(jmax_grad(jx, jgp)),
                                                 "arrayx[numpy]": lambda: amax_grad(xn, gpn)},
        f"avg_pool 2x2/2 {n}x64x56x56": {"jax": lambda: block(javg(jx)),
                                         "arrayx[numpy]": lambda: ax.lax.avg_pool(xn, (2, 2))},
        "logsumexp 4096x4096 last axis f32": {"scipy": lambda: scipy.special.logsumexp(big, axis=-1),
                                              "arrayx[numpy]": lambda: ax.nn.logsumexp(bign, axis=-1)},
    }
    if controls:
        out[f"conv fwd {shape}"]["jax again"] = lambda: block(jconv_again(jx, jw))
        out[f"conv fwd+bwd {shape}"]["jax again"] = lambda: block(jgrad_again(jx, jw, jg))
    return out


#: workload prefix -> (peer's name in the rows, goal per arrayx label: speed vs peer)
GOALS = {
    "conv fwd ": ("jax.jit(lax.conv_general_dilated)", {"arrayx[numpy]": 0.5, "arrayx[jax]": 0.9}),
    "conv fwd+bwd": ("jax.jit(jax.grad(conv))", {"arrayx[numpy]": 0.5, "arrayx[jax]": 0.9}),
    "max_pool 2x2": ("jax.jit(lax.reduce_window max)", {"arrayx[numpy]": 0.5}),
    "max_pool fwd+bwd": ("jax.jit(jax.grad(reduce_window max))", {"arrayx[numpy]": None}),
    "avg_pool": ("jax.jit(lax.reduce_window add / 4)", {"arrayx[numpy]": 0.5}),
    "logsumexp": ("scipy.special.logsumexp", {"arrayx[numpy]": 1 / 1.2}),
}


def agree(fns: dict, rtol: float = 2e-3) -> None:
    """Every arrayx label computes what the first peer computes, to ``rtol`` of each result's largest
    magnitude (float32 sums of 1e5 products differ by rounding; a benchmark of wrong results is void)."""
    peer = next(k for k in fns if not k.startswith("arrayx"))
    want = [np.asarray(getattr(v, "_buf", v)) for v in ax.pytree.leaves(fns[peer]())]
    for label in (k for k in fns if k.startswith("arrayx")):
        got = [np.asarray(v) for v in ax.pytree.leaves(fns[label]())]
        assert len(got) == len(want), label
        for g, w in zip(got, want):
            scale = float(np.max(np.abs(w))) if w.size else 0.0
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=label)


def main(quick: bool = False, rows_prefix: str = "") -> dict:
    import jax

    from benchmarks._harness import interleaved_best, run_record

    load_before = os.getloadavg()
    rounds, repeat = (3, 1) if quick else (6, 2)
    rows = []
    for name, fns in workloads(quick, controls=True).items():
        if not name.startswith(rows_prefix):
            continue
        agree(fns)
        times = interleaved_best(fns, rounds, repeat)
        peer_label = next(k for k in fns if not k.startswith("arrayx"))
        peer, goals = next(v for prefix, v in GOALS.items() if name.startswith(prefix))
        for label, goal in goals.items():
            r = {"case": f"{name} {label}", "arrayx ms": times[label] * 1e3, "peer": peer,
                 "peer ms": times[peer_label] * 1e3, "speed vs peer": times[peer_label] / times[label],
                 "goal (speed vs peer)": goal}
            if "jax again" in times:
                r["peer again ms"] = times["jax again"] * 1e3
                r["peer vs peer again"] = times[peer_label] / times["jax again"]
            rows.append(r)
            print(json.dumps(r), flush=True)
    return run_record(quick, rounds, repeat, load_before, rows, jax=jax.__version__, batch=8 if quick else 32,
                      **({"rows_prefix": rows_prefix} if rows_prefix else {}))


if __name__ == "__main__":
    from benchmarks._harness import write_results

    prefix = sys.argv[sys.argv.index("--rows") + 1] if "--rows" in sys.argv else ""
    quick = "--quick" in sys.argv
    write_results("lax_rows" if prefix else "lax", quick, main(quick=quick, rows_prefix=prefix))
