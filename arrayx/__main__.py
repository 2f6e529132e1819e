"""``python -m arrayx``: the executors found here, and the same small training job on each.

    python -m arrayx [--executor numpy,jax] [--size 2048] [--steps 20] [--json [PATH]]

Where an executor has an accelerator (a TPU, a GPU), the problem is 64x larger unless ``--size``
says otherwise, and float32 products run at full precision so that the results can be compared.

First the registered executors and their devices (or why one is unavailable), then on every
available executor (or those given) three jobs written once against arrayx, in float32:

``train``        logistic regression, ``--steps`` gradient-descent steps, each one call of
                 ``jit(step)`` where ``step`` applies ``grad(loss)``
``per-example``  the gradient of every example's loss at once: ``jit(vmap(grad(loss_one)))``
``scan``         minibatch SGD over the data as one ``jit(scan(...))`` call

For each job: the first call (compile time, tracing and compilation included), the time per
call after that (median), the speed against the NumPy executor (its time / this one's) and the
largest absolute difference from the NumPy executor's results, which must stay <= ``TOLERANCE``
on a CPU, and within the looser bound of :func:`tolerance_for` on an accelerator whose float32
transcendentals are not correctly rounded (a TPU), with the reason printed.
Exit status 1 when a job fails or disagrees.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

#: largest absolute difference from the NumPy executor's float32 results that counts as agreement (CPUs)
TOLERANCE = 1e-5
#: the same on an accelerator: its float32 exp and log (the loss's logaddexp) are the hardware's own
#: approximations, not correctly rounded, and the scan job's 512 SGD steps in one jit(scan) amplify that
ACCELERATOR_TOLERANCE = 1e-4
#: platform -> why its results may differ more (platforms not listed, other than "cpu": the generic reason)
ACCELERATOR_REASONS = {
    "tpu": "XLA:TPU's float32 exp and log are approximations with about 1e-6 relative error, not correctly "
           "rounded (conformance/deviations.py: tpu-float32-transcendentals), which the scan job's hundreds of "
           "SGD steps amplify (3.7e-05 measured on a TPU v5e)",
}
GENERIC_ACCELERATOR_REASON = ("the accelerator's float32 exp and log are its math library's approximations, not "
                              "correctly rounded, which the scan job's SGD steps amplify")
FEATURES = 16
LEARNING_RATE = 0.5
BATCH = 512
#: timed calls after the first one stop once they have taken this long (at least one is timed)
TIME_BUDGET_S = 1.0
#: examples without --size: small on CPUs; where an accelerator (a TPU, a GPU) is among the executors'
#: devices, large enough that its speed shows over the launch cost of each call (4,096 examples ran
#: at 0.11x the NumPy executor on a TPU v5e: every call was launch overhead)
DEFAULT_SIZE = 4096
ACCELERATOR_SIZE = 1 << 18


def problem(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A separable-ish binary classification problem: ``size`` examples of ``FEATURES`` features."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size, FEATURES)).astype(np.float32)
    w_true = rng.standard_normal(FEATURES).astype(np.float32)
    y = (x @ w_true + 0.3 * rng.standard_normal(size) > 0).astype(np.float32)
    return x, y


def jobs(xp):
    """The three jobs as ``name -> (make_args(x, y), jitted function)``, written once against ``xp``."""

    def loss(params, x, y):
        w, b = params
        z = x @ w + b
        return xp.mean(xp.logaddexp(0.0, z) - y * z)  # the logistic loss, stable for large |z|

    def step(params, x, y):
        gw, gb = xp.grad(loss)(params, x, y)
        w, b = params
        return w - LEARNING_RATE * gw, b - LEARNING_RATE * gb

    def loss_one(params, x1, y1):
        w, b = params
        z = xp.vecdot(x1, w) + b
        return xp.logaddexp(0.0, z) - y1 * z

    per_example = xp.vmap(xp.grad(loss_one), in_axes=(None, 0, 0))

    def sgd_scan(params, xb, yb):
        def body(p, batch):
            bx, by = batch
            return step(p, bx, by), loss(p, bx, by)
        return xp.scan(body, params, (xb, yb))

    def zeros():
        return xp.zeros(FEATURES, dtype=xp.float32), xp.asarray(0.0, dtype=xp.float32)

    def batches(x, y):
        k = x.shape[0] // BATCH
        return xp.reshape(x[: k * BATCH], (k, BATCH, FEATURES)), xp.reshape(y[: k * BATCH], (k, BATCH))

    return {
        "train": (lambda x, y: (zeros(), x, y), xp.jit(step)),
        "per-example": (lambda x, y: (zeros(), x, y), xp.jit(per_example)),
        "scan": (lambda x, y: (zeros(), *batches(x, y)), xp.jit(sgd_scan)),
    }


def _host(tree) -> list[np.ndarray]:
    if isinstance(tree, (tuple, list)):
        return [a for t in tree for a in _host(t)]
    return [np.asarray(tree)]


def _block(tree) -> None:
    _host(tree)  # reading the values waits for lazy (Dask) and asynchronous (JAX) executors


def run_executor(name: str, size: int, steps: int) -> dict:
    """Every job on executor ``name``: timings and the final results (host arrays)."""
    import arrayx as xp

    x_host, y_host = problem(size)
    out = {}
    with xp.use_executor(name):
        x, y = xp.asarray(x_host), xp.asarray(y_host)
        for job, (make_args, fn) in jobs(xp).items():
            args = make_args(x, y)
            t0 = time.perf_counter()
            result = fn(*args)
            _block(result)
            first = time.perf_counter() - t0
            times = []
            if job == "train":  # the training loop itself: each step feeds the next
                params = result
                for _ in range(steps - 1):
                    t0 = time.perf_counter()
                    params = fn(params, x, y)
                    _block(params)
                    times.append(time.perf_counter() - t0)
                result = params
            else:
                while not times or (sum(times) < TIME_BUDGET_S and len(times) < steps):
                    t0 = time.perf_counter()
                    _block(fn(*args))
                    times.append(time.perf_counter() - t0)
            per_call = statistics.median(times)
            out[job] = {"first_call_s": first, "compile_s": max(first - per_call, 0.0), "per_call_s": per_call,
                        "results": _host(result)}
    return out


def tolerance_for(name: str) -> tuple[float, str]:
    """``(largest |diff| from NumPy's results, why)`` for executor ``name`` on its default device: ``TOLERANCE``
    (no reason) on a CPU, ``ACCELERATOR_TOLERANCE`` with its platform's reason elsewhere."""
    from arrayx.core import executor as base

    ex = base.get(name)
    platform = ex.platform_of(ex.default_device())
    if platform == "cpu":
        return TOLERANCE, ""
    return ACCELERATOR_TOLERANCE, ACCELERATOR_REASONS.get(platform, GENERIC_ACCELERATOR_REASON)


def describe_executors() -> list[dict]:
    from arrayx.core import executor as base

    found = []
    for name in base.registered():
        ex = base.get(name)
        if ex.available():
            found.append({"executor": name, "available": True, "devices": [str(d) for d in ex.devices()],
                          "accelerators": [f"{name}:{d.label}" for d in ex.devices() if ex.platform_of(d) != "cpu"]})
        else:
            found.append({"executor": name, "available": False, "reason": ex.unavailable_reason})
    return found


def main(argv=None) -> int:
    import arrayx

    parser = argparse.ArgumentParser(prog="python -m arrayx", description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default=None, help="comma-separated executors (default: every available one)")
    parser.add_argument("--size", type=int, default=None,
                        help=f"examples in the problem (default {DEFAULT_SIZE}, {ACCELERATOR_SIZE} where an "
                             f"accelerator is found)")
    parser.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                        help="write the results as JSON to PATH (or stdout with no PATH) instead of the table")
    args = parser.parse_args(argv)
    found = describe_executors()
    accelerators = [d for f in found if f["available"] and (not args.executor or f["executor"] in args.executor.split(","))
                    for d in f.get("accelerators", [])]
    if args.size is None:
        args.size = ACCELERATOR_SIZE if accelerators else DEFAULT_SIZE
    if args.size < BATCH:
        parser.error(f"--size must be at least {BATCH} (one minibatch of the scan job), got {args.size}")
    if args.steps < 2:
        parser.error(f"--steps must be at least 2 (the first call compiles), got {args.steps}")

    available = [f["executor"] for f in found if f["available"]]
    chosen = args.executor.split(",") if args.executor else available
    for name in chosen:
        if name not in available:
            known = {f["executor"]: f for f in found}
            why = known[name]["reason"] if name in known else f"not registered (registered: {', '.join(known)})"
            parser.error(f"executor {name!r} cannot run here: {why}")
    if "numpy" not in chosen:
        chosen = ["numpy"] + chosen  # the reference every other executor is compared with

    text = args.json is None
    say = print if text else (lambda *a, **k: None)
    say(f"arrayx {arrayx.__version__}  (array API standard {arrayx.__array_api_version__}), "
        f"python {sys.version.split()[0]}, numpy {np.__version__}\n")
    say("executors:")
    for f in found:
        say(f"  {f['executor']:<6} " + (f"available    devices: {', '.join(f['devices'])}" if f["available"]
                                       else f"unavailable  {f['reason']}"))
    tolerances = {name: tolerance_for(name) for name in chosen}
    looser = {name: t for name, t in tolerances.items() if t[1]}
    if accelerators:
        say(f"\naccelerators: {', '.join(accelerators)}; {args.size} examples (--size to change), float32 products "
            f"at full precision (arrayx.default_matmul_precision('highest'): the results are compared with NumPy's)")
    for name, (tol, why) in looser.items():
        say(f"{name}: results agree within {tol:.0e} there, not {TOLERANCE:.0e}: {why}")
    say(f"\nlogistic regression on {args.size} x {FEATURES} float32 examples: train = {args.steps} steps of "
        f"jit(grad), per-example = jit(vmap(grad)), scan = jit(scan) of SGD over {args.size // BATCH} minibatches")
    say(f"{'executor':<8} {'job':<12} {'compile':>10} {'per call':>11} {'vs numpy':>9} {'max |diff|':>11}")

    report = {"executors": found, "accelerators": accelerators, "size": args.size, "steps": args.steps, "features": FEATURES,
              "tolerance": TOLERANCE, "results": {},
              "tolerances": {name: {"max_abs_diff": tol, "reason": why} for name, (tol, why) in tolerances.items()}}
    reference = None
    failures = 0
    for name in chosen:
        try:
            with arrayx.default_matmul_precision("highest" if accelerators else None):
                res = run_executor(name, args.size, args.steps)
        except Exception as e:  # report it and go on with the other executors
            say(f"{name:<8} failed: {type(e).__name__}: {e}")
            report["results"][name] = {"error": f"{type(e).__name__}: {e}"}
            failures += 1
            continue
        reference = reference or res
        report["results"][name] = {}
        for job, r in res.items():
            diff = max(float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)), initial=0.0))
                       for g, w in zip(r["results"], reference[job]["results"]))
            speed = reference[job]["per_call_s"] / r["per_call_s"]
            tol = tolerances[name][0]
            ok = diff <= tol
            failures += not ok
            report["results"][name][job] = {k: r[k] for k in ("first_call_s", "compile_s", "per_call_s")} | {
                "speed_vs_numpy": speed, "max_abs_diff": diff, "agrees": ok, "tolerance": tol}
            say(f"{name:<8} {job:<12} {r['compile_s'] * 1e3:>8.1f}ms {r['per_call_s'] * 1e3:>9.3f}ms "
                f"{speed:>8.3g}x {diff:>11.2e}{'' if ok else '  DIFFERS (> %.0e)' % tol}")
    bound = f"max |diff| <= {TOLERANCE:.0e}" + "".join(f", {t:.0e} on {n}" for n, (t, _) in looser.items())
    say(f"\n{'every executor agrees with numpy' if not failures else f'{failures} failures'} "
        f"({bound}; speed = numpy's time per call / the executor's)")
    if args.json is not None:
        body = json.dumps(report, indent=1)
        if args.json == "-":
            print(body)
        else:
            with open(args.json, "w") as fh:
                fh.write(body + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
