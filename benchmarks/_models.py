"""Models and timing shared by the benchmarks: the tanh MLP, logistic regression (bench_jit.py,
bench_vmap.py), the fused-kernel workloads (bench_fusion.py, bench_cupy.py).

Each model is written once against a namespace ``m`` (``arrayx`` or ``jax.numpy``), so every side
of a comparison computes the same function.  Parameters are lists of ``(w, b)`` NumPy arrays.
"""
from __future__ import annotations

import numpy as np

from benchmarks._harness import block, interleaved_best

MLP_SIZES = (784, 512, 512, 10)


def interleaved(fns: dict, number: int = 1, repeat: int = 5) -> dict:
    """Best seconds per call of each function (waited for), ``repeat`` rotating rounds of ``number`` calls."""
    return interleaved_best({k: (lambda fn=fn: block(fn())) for k, fn in fns.items()}, rounds=repeat, repeat=number)


def mlp_params(rng, sizes=MLP_SIZES, dtype=np.float32) -> list:
    """``[(w, b), ...]`` with w scaled by 1/sqrt(fan-in), b zero."""
    return [((rng.standard_normal((a, b)) / np.sqrt(a)).astype(dtype), np.zeros(b, dtype))
            for a, b in zip(sizes[:-1], sizes[1:])]


def mlp_logits(m, params, x):
    """tanh hidden layers, a linear last layer."""
    h = x
    for w, b in params[:-1]:
        h = m.tanh(h @ w + b)
    w, b = params[-1]
    return h @ w + b


def mlp_xent_loss(m, params, x, y):
    """Mean softmax cross-entropy against one-hot rows ``y``."""
    logits = mlp_logits(m, params, x)
    top = m.max(logits, axis=-1, keepdims=True)
    logp = logits - top - m.log(m.sum(m.exp(logits - top), axis=-1, keepdims=True))
    return -m.mean(m.sum(logp * y, axis=-1))


def mlp_squared_loss(m, params, x, y):
    """Summed squared error (one example or a batch)."""
    return m.sum((mlp_logits(m, params, x) - y) ** 2)


def logreg_data(rng, n=10000, d=100, dtype=np.float32):
    """``(w, x, y)``: weights, features and labels in {-1, 1}."""
    x = rng.standard_normal((n, d)).astype(dtype)
    w = (rng.standard_normal(d) * 0.1).astype(dtype)
    y = np.sign(rng.standard_normal(n)).astype(dtype)
    return w, x, y


def logreg_loss(m, w, x, y):
    return m.mean(m.log(1.0 + m.exp(-(x @ w) * y)))


# -- the fused-kernel workloads (bench_fusion.py on the CPU, bench_cupy.py on a GPU) -------------------

def selu(m, x):
    return 1.0507009873554805 * m.where(x > 0, x, 1.6732632423543772 * (m.exp(x) - 1.0))


def chain6(m, x):
    """The 6-op chain: multiply, negative, exp, tanh, multiply, add."""
    return m.exp(-(x * x)) * m.tanh(x) + 0.5


def arith(m, x):
    """Arithmetic only: a bandwidth row."""
    return ((x * 2 + 1) * x - 0.5) * x + 3


def softmax(m, x):
    """Softmax of each row: a row reduction, elementwise work, a second reduction."""
    e = m.exp(x - m.max(x, axis=-1, keepdims=True))
    return e / m.sum(e, axis=-1, keepdims=True)
