"""arrayx.lax / arrayx.nn against their peers: convolution, pooling, logsumexp.

Run:  nice python benchmarks/bench_lax.py [--quick]
      or, interleaved with the peers (rounds rotate the order, so load hits all alike):
      nice python -m benchmarks --only lax [--quick] --tag lax
      (writes benchmarks/results/lax.json; --quick: batch 8 instead of 32, fewer repeats,
      benchmarks/results/lax_quick.json)

Side by side in one process, best of several repeats, float32:

- ``conv_general_dilated``, NCHW 32x64x56x56 input, 64->64 3x3 filters, stride 1, SAME: forward,
  and forward+backward (the gradient of ``sum(conv(x, w) * g)`` for both operands), on the numpy
  executor (eager forward; ``jit(grad)`` for the backward) and the jax executor (``ax.jit`` of the
  same functions), against ``jax.jit(jax.lax.conv_general_dilated)`` / ``jax.jit(jax.grad(...))``.
  Issue 16's goals: numpy within 2x of jax.jit (ratio peer/arrayx >= 0.5), jax >= 0.9x.
- ``max_pool`` / ``avg_pool`` 2x2 stride 2 on the same tensor: the numpy executor against
  ``jax.jit(jax.lax.reduce_window)`` (goal >= 0.5x).
- ``logsumexp`` over the last axis of 4096x4096: the numpy executor against
  ``scipy.special.logsumexp`` on NumPy (goal: within 1.2x, ratio >= 0.83).

Each row's "speed vs peer" is peer time / arrayx time (above 1: arrayx is faster).
"""
from __future__ import annotations

import json
import os
import pathlib
import platform
import sys
import timeit

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # this checkout's arrayx

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402


TITLE = "arrayx.lax conv/pooling and arrayx.nn.logsumexp vs jax.jit(jax.lax) and scipy.special"


def workloads(quick: bool) -> dict:
    """The runner's convention (benchmarks/__main__.py): workload -> label -> callable."""
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
    jgrad = jax.jit(jax.grad(lambda a, b, c: jnp.sum(jax.lax.conv_general_dilated(a, b, *conv_args) * c),
                             argnums=(0, 1)))
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
    big = rng.normal(size=(4096, 4096)).astype(np.float32)
    with ax.use_executor("numpy"):
        bign = ax.asarray(big)
    shape = f"{n}x64x56x56 3x3 64->64 f32"
    return {
        f"conv fwd {shape}": {"jax": lambda: block(jconv(jx, jw)),
                              "arrayx[numpy]": lambda: ax.lax.conv_general_dilated(xn, wn, *conv_args),
                              "arrayx[jax]": lambda: block(aconv(xj, wj))},
        f"conv fwd+bwd {shape}": {"jax": lambda: block(jgrad(jx, jw, jg)),
                                  "arrayx[numpy]": lambda: agrad(xn, wn, gn),
                                  "arrayx[jax]": lambda: block(agrad(xj, wj, gj))},
        f"max_pool 2x2/2 {n}x64x56x56": {"jax": lambda: block(jmax(jx)),
                                         "arrayx[numpy]": lambda: ax.lax.max_pool(xn, (2, 2))},
        f"avg_pool 2x2/2 {n}x64x56x56": {"jax": lambda: block(javg(jx)),
                                         "arrayx[numpy]": lambda: ax.lax.avg_pool(xn, (2, 2))},
        "logsumexp 4096x4096 last axis f32": {"scipy": lambda: scipy.special.logsumexp(big, axis=-1),
                                              "arrayx[numpy]": lambda: ax.nn.logsumexp(bign, axis=-1)},
    }


def best(fn, repeat: int) -> float:
    fn()  # warm up: compile, caches
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def _ready(x):
    """Block until a JAX (or arrayx-on-jax) result is computed."""
    buf = getattr(x, "_buf", x)
    if hasattr(buf, "block_until_ready"):
        buf.block_until_ready()
    return x


def _ready_tree(t):
    for leaf in (t if isinstance(t, (tuple, list)) else (t,)):
        _ready(leaf)
    return t


def main(quick: bool = False) -> dict:
    import jax
    import jax.numpy as jnp
    import scipy.special

    repeat = 3 if quick else 5
    n = 8 if quick else 32
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 64, 56, 56)).astype(np.float32)
    w = (rng.normal(size=(64, 64, 3, 3)) * 0.05).astype(np.float32)
    g = rng.normal(size=(n, 64, 56, 56)).astype(np.float32)
    rows = []

    def row(name, arrayx_s, peer_s, peer, goal):
        r = {"case": name, "arrayx ms": arrayx_s * 1e3, "peer": peer, "peer ms": peer_s * 1e3,
             "speed vs peer": peer_s / arrayx_s, "goal (speed vs peer)": goal}
        rows.append(r)
        print(json.dumps(r), flush=True)

    # -- convolution ------------------------------------------------------------------------------
    conv_args = ((1, 1), "SAME")
    jconv = jax.jit(lambda a, b: jax.lax.conv_general_dilated(a, b, *conv_args))
    jx, jw, jg = jnp.asarray(x), jnp.asarray(w), jnp.asarray(g)
    peer_fwd = best(lambda: _ready(jconv(jx, jw)), repeat)
    jgrad = jax.jit(jax.grad(lambda a, b, c: jnp.sum(jax.lax.conv_general_dilated(a, b, *conv_args) * c),
                             argnums=(0, 1)))
    peer_bwd = best(lambda: _ready_tree(jgrad(jx, jw, jg)), repeat)

    def loss(a, b, c):
        return ax.sum(ax.lax.conv_general_dilated(a, b, *conv_args) * c)

    for executor in ("numpy", "jax"):
        with ax.use_executor(executor):
            ax_x, ax_w, ax_g = ax.asarray(x), ax.asarray(w), ax.asarray(g)
            if executor == "numpy":
                fwd = lambda: ax.lax.conv_general_dilated(ax_x, ax_w, *conv_args)  # noqa: E731 - eager
            else:
                jitted = ax.jit(lambda a, b: ax.lax.conv_general_dilated(a, b, *conv_args))
                fwd = lambda: _ready(jitted(ax_x, ax_w))  # noqa: E731
            row(f"conv fwd {executor}", best(fwd, repeat), peer_fwd, "jax.jit(lax.conv_general_dilated)",
                0.5 if executor == "numpy" else 0.9)
            grad = ax.jit(ax.grad(loss, argnums=(0, 1)))
            row(f"conv fwd+bwd {executor}", best(lambda: _ready_tree(grad(ax_x, ax_w, ax_g)), repeat), peer_bwd,
                "jax.jit(jax.grad(conv))", 0.5 if executor == "numpy" else 0.9)

    # -- pooling ------------------------------------------------------------------------------------
    win = ((1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    jmax = jax.jit(lambda a: jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, *win))
    javg = jax.jit(lambda a: jax.lax.reduce_window(a, 0.0, jax.lax.add, *win) / 4.0)
    with ax.use_executor("numpy"):
        ax_x = ax.asarray(x)
        row("max_pool 2x2/2 numpy", best(lambda: ax.lax.max_pool(ax_x, (2, 2)), repeat),
            best(lambda: _ready(jmax(jx)), repeat), "jax.jit(lax.reduce_window max)", 0.5)
        row("avg_pool 2x2/2 numpy", best(lambda: ax.lax.avg_pool(ax_x, (2, 2)), repeat),
            best(lambda: _ready(javg(jx)), repeat), "jax.jit(lax.reduce_window add / 4)", 0.5)

    # -- logsumexp -----------------------------------------------------------------------------------
    big = rng.normal(size=(4096, 4096)).astype(np.float32)
    with ax.use_executor("numpy"):
        ax_big = ax.asarray(big)
        got = ax.nn.logsumexp(ax_big, axis=-1)
        np.testing.assert_allclose(np.asarray(got), scipy.special.logsumexp(big, axis=-1), rtol=1e-5)
        row("logsumexp 4096x4096 last axis numpy", best(lambda: ax.nn.logsumexp(ax_big, axis=-1), repeat),
            best(lambda: scipy.special.logsumexp(big, axis=-1), repeat), "scipy.special.logsumexp", 1 / 1.2)

    return {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "python": sys.version.split()[0], "jax": jax.__version__, "batch": n, "quick": quick, "rows": rows}


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    result = main(quick=quick)
    out = pathlib.Path(__file__).parent / "results" / ("lax_quick.json" if quick else "lax.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
