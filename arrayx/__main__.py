"""``python -m arrayx``: the executors found here, and a small workload on each.

For every registered executor it prints its devices (or why it is unavailable),
runs the same workload (elementwise, reductions, linear algebra, sorting,
indexing, a gradient and random numbers), times it, and checks the results
against the NumPy executor (random numbers bit for bit).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def workload(xp, key_seed: int = 0) -> dict:
    """A small mixed computation written once against the standard namespace."""
    rng = np.random.default_rng(key_seed)
    a = xp.asarray(rng.standard_normal((256, 128)))
    b = xp.asarray(rng.standard_normal((128, 64)))
    w = xp.asarray(rng.standard_normal((64,)))
    h = xp.tanh(a @ b)                                   # matmul + elementwise
    logits = h * w
    m = xp.max(logits, axis=1, keepdims=True)
    p = xp.exp(logits - m)
    p = p / xp.sum(p, axis=1, keepdims=True)              # softmax
    out = {
        "softmax_colsum": xp.sum(p, axis=0),
        "var": xp.var(h, axis=0, correction=1),
        "sorted": xp.sort(h[:, 0]),
        "argmax": xp.argmax(logits, axis=1),
        "cumsum": xp.cumulative_sum(w),
        "where": xp.where(h > 0, h, 0.0),
        "take": xp.take(w, xp.asarray([3, 1, 4, 1, 5])),
    }
    if hasattr(xp, "linalg") and hasattr(xp.linalg, "solve"):
        g = xp.matmul(xp.matrix_transpose(b), b) + xp.eye(64)
        out["solve"] = xp.linalg.solve(g, w)
    if hasattr(xp, "grad"):
        def loss(v):
            return xp.sum(xp.tanh(a @ b) @ v) ** 2 / 100.0

        out["grad"] = xp.grad(loss)(w)
    if hasattr(xp, "random"):  # the same bits on every executor (compared exactly)
        out["random.uniform"] = xp.random.uniform(xp.random.key(key_seed), (1000,))
    return out


def _host(v) -> np.ndarray:
    return np.asarray(v)


def main(argv=None) -> int:
    import arrayx
    from arrayx.executors import base

    parser = argparse.ArgumentParser(prog="python -m arrayx", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions per executor")
    args = parser.parse_args(argv)

    print(f"arrayx {arrayx.__version__}  (array API standard {arrayx.__array_api_version__})")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    print()
    print("executors:")
    names = base.registered()
    for name in names:
        ex = base.get(name)
        if ex.available():
            print(f"  {name:<6} available    devices: {', '.join(str(d) for d in ex.devices())}")
        else:
            print(f"  {name:<6} unavailable  {ex.unavailable_reason}")
    print()

    with arrayx.use_executor("numpy"):
        reference = {k: _host(v) for k, v in workload(arrayx).items()}

    print(f"workload: {', '.join(reference)}")
    print(f"{'executor':<8} {'first call':>12} {'best of ' + str(args.repeat):>12} {'vs numpy':>9}  agreement")
    numpy_best = None
    failures = 0
    for name in names:
        ex = base.get(name)
        if not ex.available():
            continue
        with arrayx.use_executor(name):
            t0 = time.perf_counter()
            try:
                result = {k: _host(v) for k, v in workload(arrayx).items()}
            except Exception as e:  # report and go on with the other executors
                print(f"{name:<8} failed: {type(e).__name__}: {e}")
                failures += 1
                continue
            first = time.perf_counter() - t0
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                {k: _host(v) for k, v in workload(arrayx).items()}
                times.append(time.perf_counter() - t0)
        best = min(times)
        numpy_best = best if name == "numpy" else numpy_best
        bad = []
        for k, want in reference.items():
            got = result[k]
            tol = 1e-9 if want.dtype.kind in "fc" and not k.startswith("random.") else 0
            if got.shape != want.shape or got.dtype != want.dtype or not np.allclose(got, want, rtol=tol, atol=tol):
                bad.append(k)
        agreement = "all equal to numpy" if not bad else f"DIFFERS in {', '.join(bad)}"
        failures += bool(bad)
        ratio = f"{best / numpy_best:8.2f}x" if numpy_best else "       -"
        print(f"{name:<8} {first * 1e3:>10.1f}ms {best * 1e3:>10.2f}ms {ratio}  {agreement}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
