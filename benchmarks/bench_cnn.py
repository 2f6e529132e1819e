"""A small CNN's training step (jit of grad plus the SGD update) on arrayx's executors against the same
model in JAX: conv 3x3 1->16 SAME -> bias -> relu -> max_pool 2x2 -> dense 16*14*14->10 -> log_softmax
cross-entropy, a batch of 64 28x28 images (MNIST-sized), float32.

Run:  nice python benchmarks/bench_cnn.py [--quick]
      (writes benchmarks/results/cnn.json; --quick: a batch of 16, fewer rounds, cnn_quick.json)
      or, with the other benches:  nice python -m benchmarks --only cnn [--quick] --tag cnn

Labels: ``jax`` (``jax.jit`` of ``jax.grad``, the peer) and ``arrayx[numpy]``, ``arrayx[numba]``,
``arrayx[jax]`` (``ax.jit(ax.grad(loss))``).  Each label's loss after the measured steps is checked
against JAX's first.  "speed vs peer" is peer time / arrayx time (above 1: arrayx is faster); issue 16
sets no goal for this workload (it shows where a model's step spends what the conv and pooling goals buy).
"""
from __future__ import annotations

import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # this checkout's arrayx

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402

TITLE = "a small CNN's jit(grad) training step on arrayx's executors vs the same model in jax.jit(jax.grad)"
EXECUTORS = ("numpy", "numba", "jax")
LEARNING_RATE = 0.1


def _data(batch: int):
    rng = np.random.default_rng(0)
    images = rng.normal(size=(batch, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, size=batch)
    params = {"conv": (rng.normal(size=(16, 1, 3, 3)) * 0.3).astype(np.float32),
              "bias": np.zeros(16, np.float32),
              "dense": (rng.normal(size=(16 * 14 * 14, 10)) * 0.01).astype(np.float32)}
    return images, labels, params


def cnn_loss(lib, conv, max_pool, log_softmax, one_hot):
    """conv -> bias -> relu -> max_pool 2x2 -> dense -> log_softmax cross-entropy in the library ``lib``
    (channels and classes read from the params); tests/test_cnn.py trains the same model."""
    def loss(params, images, labels):
        channels, classes = params["bias"].shape[0], params["dense"].shape[1]
        h = conv(images, params["conv"], (1, 1), "SAME") + lib.reshape(params["bias"], (1, channels, 1, 1))
        h = max_pool(lib.maximum(h, 0.0))
        logits = lib.reshape(h, (h.shape[0], -1)) @ params["dense"]
        return -lib.mean(lib.sum(one_hot(labels, classes) * log_softmax(logits), axis=-1))

    return loss


def _step(value_and_grad, tree_map):
    def step(params, images, labels):
        value, grads = value_and_grad(params, images, labels)
        return value, tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)

    return step


def workloads(quick: bool) -> dict:
    """The runner's convention (benchmarks/__main__.py): workload -> label -> callable."""
    import jax
    import jax.numpy as jnp

    from benchmarks._harness import block

    batch = 16 if quick else 64
    images, labels, params = _data(batch)
    jloss = cnn_loss(jnp, jax.lax.conv, lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2),
                                                                     (1, 1, 2, 2), "VALID"),
                  jax.nn.log_softmax, lambda y, n: jax.nn.one_hot(y, n, dtype=jnp.float32))
    jstep = jax.jit(_step(jax.value_and_grad(jloss), jax.tree.map))
    jargs = (jax.tree.map(jnp.asarray, params), jnp.asarray(images), jnp.asarray(labels))
    aloss = cnn_loss(ax, ax.lax.conv, lambda h: ax.lax.max_pool(h, (2, 2)), ax.nn.log_softmax,
                  lambda y, n: ax.nn.one_hot(y, n, dtype=ax.float32))
    astep = ax.jit(_step(ax.value_and_grad(aloss), ax.pytree.map))
    fns = {"jax": lambda: block(jstep(*jargs))}
    for name in EXECUTORS:
        with ax.use_executor(name):
            args = (ax.pytree.map(ax.asarray, params), ax.asarray(images), ax.asarray(labels))
        fns[f"arrayx[{name}]"] = lambda args=args: block(astep(*args))
    return {f"cnn train step batch {batch} 28x28 f32": fns}


def main(quick: bool = False) -> dict:
    import jax

    from benchmarks._harness import interleaved_best, run_record
    from benchmarks.bench_lax import agree

    load_before = os.getloadavg()
    rounds, repeat = (3, 2) if quick else (8, 3)
    rows = []
    for name, fns in workloads(quick).items():
        agree(fns, rtol=1e-4)
        times = interleaved_best(fns, rounds, repeat)
        for label in (k for k in fns if k.startswith("arrayx")):
            r = {"case": f"{name} {label}", "arrayx ms": times[label] * 1e3, "peer": "jax.jit(jax.value_and_grad)",
                 "peer ms": times["jax"] * 1e3, "speed vs peer": times["jax"] / times[label]}
            rows.append(r)
            print(json.dumps(r), flush=True)
    return run_record(quick, rounds, repeat, load_before, rows, jax=jax.__version__)


if __name__ == "__main__":
    from benchmarks._harness import write_results

    write_results("cnn", "--quick" in sys.argv, main(quick="--quick" in sys.argv))
