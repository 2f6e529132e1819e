"""Cost of eager reverse-mode gradients: gradient time / forward time, side by side with peers.

Run:  python benchmarks/bench_grad.py            (writes benchmarks/results/grad.json)
      python benchmarks/bench_grad.py --quick    (fewer repeats)

Two models, float64, on the NumPy executor:

- logistic regression, X of 10000 x 100: mean(log(1 + exp(-y * (X @ w))));
- an MLP 784-512-512-10 (tanh, softmax cross-entropy) on a batch of 256.

For each library the same model is written in its own API and timed in the same
process: arrayx (``arrayx.grad``), HIPS autograd (``autograd.grad``) and JAX without
jit (``jax.grad``, x64 enabled).  The figure that matters is the ratio gradient time /
forward time of each library (goal for arrayx: <= 3).

Times are the best of several runs of CPU time (``time.process_time``), which is
far less disturbed than wall time on a shared machine; ``--clock wall`` measures wall
time instead.  BLAS runs on one thread (``--threads``) for the same reason.

**The cheap-gradient rule under jit** (issue #44 point 3): ``python benchmarks/bench_grad.py --jit``
times ``jit(f)`` and ``jit(grad(f))`` on the NumPy executor and ``jax.jit`` of the same two, all four
interleaved in one process (wall time, BLAS threads left as they are, best of ``--rounds`` rounds),
for logistic regression and the MLP above (float64) and the CNN of bench_cnn.py (float32, batch 64),
and prints the ratio gradient / function of each library side by side (goal for arrayx: <= 2.0);
it writes benchmarks/results/grad_jit.json.  ``--jit --clock process`` times CPU time instead (all of
the process's threads: XLA's and BLAS's workers too), which a loaded machine disturbs far less, and
writes benchmarks/results/grad_jit_process.json.  The same rows are registered with ``python -m
benchmarks`` (workloads "<model> jit(f)" and "<model> jit(grad)", jax.jit beside arrayx), and the
runner's summary shows each library's ratio (``PAIRS`` below).

What bounds each ratio (``python benchmarks/bench_grad.py --gemms`` times the MLP's GEMMs and the
CNN's convolutions alone, CPU time, and writes benchmarks/results/grad_gemms.json):

- logistic regression reads X (10000 x 100, 8 MB, in cache on a quiet machine) once in jit(f) and
  twice in jit(grad) (``X @ w``, then the cotangent ``@ X``), so its ratio is 2 plus the gradient's
  elementwise work on 10000 values against the loss's; on a loaded machine X leaves the cache between
  calls and the ratio drops toward 1 (the second pass reads what the first brought in);
- the MLP's backward pass is GEMMs of 239.6M multiply-adds against the forward's 171.2M (dW1, dW2,
  dW3, dH1, dH2; the input's gradient is not taken): (forward + backward) / forward is 2.40 by count
  before any elementwise work, so 2.0 cannot hold for a matmul-bound network whose weights all get
  gradients (jax.jit's ratio on the same model is above 3);
- the CNN's backward pass is the pooling's scatter, relu's derivative, the kernel's gradient (a
  convolution with as many multiply-adds as the forward's: 7.23M; the images get no gradient, so there
  is no input-gradient convolution) and the dense layer's two GEMMs: 11.24M multiply-adds against the
  forward's 9.23M, 2.22 by count, but the forward convolution (im2col, then a GEMM with K = 9) runs at
  a third of the kernel gradient's speed per multiply-add, so timed the convolutions and GEMMs alone
  give 1.46, and the forward's bias, relu and pooling lower the bound further: 2.0 is within reach.
  The NumPy executor's scatter was a ``where`` per window offset (a data-dependent branch per element:
  6 ns each) into fresh pages, after reducing x again; it is now branch-free, pooled and given the
  forward's result (executors/numpy/lax.py, lax/_window_prims.py), and relu's derivative takes two
  floating-point passes instead of four (transforms/rules/elementwise.py).  The kernel's gradient was
  one GEMM of 9 x 16 outputs over K = 64 x 784 (1.2 ms in jit(grad)); it is now one GEMM per image
  (K = 784) over a strided patch view, summed (executors/numpy/lax.py ``_by_feature``: ~0.4 ms).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import timeit

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # this checkout's arrayx

import numpy as np  # noqa: E402


CLOCK = time.process_time


def timed(fn) -> float:
    t0 = CLOCK()
    fn()
    return CLOCK() - t0


# -- the models, once per library ---------------------------------------------------------------


def logistic(m, log1p, w, X, y):
    z = X @ w
    return m.mean(log1p(m.exp(-y * z)))


def mlp(m, params, X, labels_onehot):
    (w1, b1), (w2, b2), (w3, b3) = params
    h = m.tanh(X @ w1 + b1)
    h = m.tanh(h @ w2 + b2)
    logits = h @ w3 + b3
    shifted = logits - m.max(logits, axis=1, keepdims=True)
    logp = shifted - m.log(m.sum(m.exp(shifted), axis=1, keepdims=True))
    return -m.mean(m.sum(logp * labels_onehot, axis=1))


def _data(rng):
    X = rng.standard_normal((10000, 100))
    y = np.sign(rng.standard_normal(10000))
    w = rng.standard_normal(100) * 0.1
    Xm = rng.standard_normal((256, 784))
    labels = np.eye(10)[rng.integers(0, 10, 256)]
    sizes = [(784, 512), (512, 512), (512, 10)]
    params = [(rng.standard_normal(s) / np.sqrt(s[0]), np.zeros(s[1])) for s in sizes]
    return (w, X, y), (params, Xm, labels)


def bench_arrayx(data):
    import arrayx as ax

    (w, X, y), (params, Xm, labels) = data
    w, X, y = ax.asarray(w), ax.asarray(X), ax.asarray(y)
    params = [(ax.asarray(a), ax.asarray(b)) for a, b in params]
    Xm, labels = ax.asarray(Xm), ax.asarray(labels)
    lr = lambda w: logistic(ax, ax.log1p, w, X, y)  # noqa: E731
    net = lambda p: mlp(ax, p, Xm, labels)  # noqa: E731
    g_lr, g_net = ax.grad(lr), ax.grad(net)
    return {
        "logistic": (lambda: lr(w), lambda: g_lr(w)),
        "mlp": (lambda: net(params), lambda: g_net(params)),
    }


def bench_autograd(data):
    import autograd
    import autograd.numpy as anp

    (w, X, y), (params, Xm, labels) = data
    lr = lambda w: logistic(anp, anp.log1p, w, X, y)  # noqa: E731
    net = lambda p: mlp(anp, p, Xm, labels)  # noqa: E731
    g_lr, g_net = autograd.grad(lr), autograd.grad(net)
    return {
        "logistic": (lambda: lr(w), lambda: g_lr(w)),
        "mlp": (lambda: net(params), lambda: g_net(params)),
    }


def bench_jax(data):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    (w, X, y), (params, Xm, labels) = data
    w, X, y = jnp.asarray(w), jnp.asarray(X), jnp.asarray(y)
    params = [(jnp.asarray(a), jnp.asarray(b)) for a, b in params]
    Xm, labels = jnp.asarray(Xm), jnp.asarray(labels)
    lr = lambda w: logistic(jnp, jnp.log1p, w, X, y)  # noqa: E731
    net = lambda p: mlp(jnp, p, Xm, labels)  # noqa: E731
    g_lr, g_net = jax.grad(lr), jax.grad(net)

    def block(f):
        return lambda *a: jax.block_until_ready(f(*a))

    return {
        "logistic": (lambda: block(lr)(w), lambda: block(g_lr)(w)),
        "mlp": (lambda: block(net)(params), lambda: block(g_net)(params)),
    }


# -- the cheap-gradient rule under jit: jit(grad(f)) / jit(f), arrayx's numpy executor beside jax.jit ----


def jit_pairs(data, quick: bool = False) -> dict:
    """{model: {"arrayx[numpy] jit" | "jax.jit": {"f": call, "grad": call}}}: each call runs the jitted
    loss or its jitted gradient once and waits for it (JAX with 64-bit types: the models are float64,
    the CNN float32); every gradient is checked against JAX's first."""
    import jax
    import jax.numpy as jnp

    import arrayx as ax
    from benchmarks import bench_cnn
    from benchmarks._harness import block

    jax.config.update("jax_enable_x64", True)
    (w, X, y), (params, Xm, labels) = data
    images, classes, cnn_params = bench_cnn._data(16 if quick else 64)
    ax_cnn = bench_cnn.cnn_loss(ax, ax.lax.conv, lambda h: ax.lax.max_pool(h, (2, 2)), ax.nn.log_softmax,
                                lambda t, n: ax.nn.one_hot(t, n, dtype=ax.float32))
    jax_cnn = bench_cnn.cnn_loss(
        jnp, jax.lax.conv,
        lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
        jax.nn.log_softmax, lambda t, n: jax.nn.one_hot(t, n, dtype=jnp.float32))
    models = {  # name: (arrayx loss, jax loss, arguments; the gradient is taken of the first)
        "logistic": (lambda w, X, y: logistic(ax, ax.log1p, w, X, y), lambda w, X, y: logistic(jnp, jnp.log1p, w, X, y),
                     (w, X, y)),
        "mlp": (lambda p, X, t: mlp(ax, p, X, t), lambda p, X, t: mlp(jnp, p, X, t), (params, Xm, labels)),
        "cnn": (ax_cnn, jax_cnn, (cnn_params, images, classes)),
    }
    out = {}
    for name, (fa, fj, args) in models.items():
        aa = ax.pytree.map(ax.asarray, args)
        ja = jax.tree_util.tree_map(jnp.asarray, args)
        jf, jg = ax.jit(fa), ax.jit(ax.grad(fa))
        kf, kg = jax.jit(fj), jax.jit(jax.grad(fj))
        for got, want in zip(ax.pytree.leaves(jg(*aa)), jax.tree_util.tree_leaves(kg(*ja))):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-4, atol=1e-6)
        out[name] = {"jax.jit": {"f": lambda kf=kf, ja=ja: block(kf(*ja)), "grad": lambda kg=kg, ja=ja: block(kg(*ja))},
                     "arrayx[numpy] jit": {"f": lambda jf=jf, aa=aa: block(jf(*aa)),
                                           "grad": lambda jg=jg, aa=aa: block(jg(*aa))}}
    return out


def _interleaved_cpu_best(fns: dict, rounds: int, repeat: int) -> dict:
    """``interleaved_best`` (benchmarks/_harness.py) with CPU time of this process (all its threads)
    instead of wall time: on a loaded machine a call preempted by other processes does not count the
    time it waited."""
    import random

    for fn in fns.values():
        fn()
    labels = list(fns)
    best = {k: float("inf") for k in labels}
    order = random.Random(0)
    for r in range(rounds):
        rest = labels[r % len(labels):] + labels[: r % len(labels)]
        first, rest = rest[0], rest[1:]
        order.shuffle(rest)
        for k in [first] + rest:
            for _ in range(repeat):
                t0 = time.process_time()
                fns[k]()
                best[k] = min(best[k], time.process_time() - t0)
    return best


def jit_main(quick: bool, rounds: int, clock: str = "wall") -> dict:
    """The --jit run: per model, the four calls interleaved in one process, best of ``rounds``; ``clock``
    "process" times CPU time instead of wall time (XLA's and BLAS's worker threads included)."""
    import os

    from benchmarks._harness import interleaved_best, run_record

    load_before = os.getloadavg()
    rows = []
    print(f"{'model':<10}{'library':<20}{'jit(f)':>12}{'jit(grad)':>12}{'ratio':>8}")
    timer = interleaved_best if clock == "wall" else _interleaved_cpu_best
    for model, sides in jit_pairs(_data(np.random.default_rng(0)), quick).items():
        calls = {f"{lib} {which}": fn for lib, pair in sides.items() for which, fn in pair.items()}
        t = timer(calls, rounds, repeat=5 if model == "logistic" else 2)
        row = {"case": f"{model} jit(grad)/jit(f)", "goal": "arrayx ratio <= 2.0"}
        for lib in sides:
            f, g = t[f"{lib} f"], t[f"{lib} grad"]
            row[lib] = {"f_ms": f * 1e3, "grad_ms": g * 1e3, "ratio": g / f}
            print(f"{model:<10}{lib:<20}{f * 1e3:>10.3f}ms{g * 1e3:>10.3f}ms{g / f:>8.2f}", flush=True)
        rows.append(row)
    return run_record(quick, rounds, 5, load_before, rows, command="python benchmarks/bench_grad.py --jit"
                      + (" --quick" if quick else "") + f" --rounds {rounds}"
                      + (" --clock process" if clock == "process" else ""), clock=clock,
                      environment={"OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")})


def gemms_main() -> dict:
    """The --gemms run: the MLP's forward and backward GEMMs alone, in NumPy (best of 9 rounds of 20
    calls, CPU time), against the multiply-add count of each; then the CNN's (``cnn_convs``)."""
    rng = np.random.default_rng(0)
    n, sizes = 256, [(784, 512), (512, 512), (512, 10)]
    x = rng.standard_normal((n, 784))
    ws = [rng.standard_normal(s) for s in sizes]
    hs = [rng.standard_normal((n, s[1])) for s in sizes]  # each layer's output (and cotangent) shape
    forward = {f"h{i} @ W{i + 1}": (lambda a=a, w=w: a @ w) for i, (a, w) in enumerate(zip([x] + hs[:2], ws))}
    backward = {}
    for i, (a, w, d) in enumerate(zip([x] + hs[:2], ws, hs)):
        backward[f"dW{i + 1} = h{i}.T @ d{i + 1}"] = lambda a=a, d=d: a.T @ d
        if i:  # no gradient for the input
            backward[f"dh{i} = d{i + 1} @ W{i + 1}.T"] = lambda d=d, w=w: d @ w.T
    macs = {"forward": sum(a.shape[0] * w.shape[0] * w.shape[1] for a, w in zip([x] + hs[:2], ws))}
    macs["backward"] = 2 * macs["forward"] - n * 784 * 512  # every GEMM twice but the input's gradient
    t = {k: min(timeit.repeat(f, number=20, repeat=9, timer=time.process_time)) / 20
         for k, f in {**forward, **backward}.items()}
    for k, v in t.items():
        print(f"{k:<22}{v * 1e3:8.3f} ms")
    tf, tb = sum(t[k] for k in forward), sum(t[k] for k in backward)
    print(f"forward {tf * 1e3:.3f} ms ({macs['forward'] / 1e6:.1f}M MACs), backward {tb * 1e3:.3f} ms "
          f"({macs['backward'] / 1e6:.1f}M MACs): (forward + backward) / forward = "
          f"{(macs['forward'] + macs['backward']) / macs['forward']:.2f} by count, {(tf + tb) / tf:.2f} timed")
    mlp_row = {"times_ms": {k: v * 1e3 for k, v in t.items()}, "macs": macs,
               "ratio_by_count": (macs["forward"] + macs["backward"]) / macs["forward"], "ratio_timed": (tf + tb) / tf}
    return {"mlp": mlp_row, "cnn": cnn_convs()}


def cnn_convs() -> dict:
    """The --gemms rows of the CNN (bench_cnn.py, batch 64, float32): the convolutions and GEMMs its
    jit(grad) needs, each timed alone on the NumPy executor's host implementation (best of 9 rounds of 20
    calls, CPU time): the forward convolution and dense GEMM; backward, the kernel's gradient (a
    convolution of the images with the cotangent, as lax/_conv.py's rule binds it; the images get no
    gradient, so there is no input-gradient convolution) and the dense layer's two GEMMs."""
    from arrayx.executors.numpy import lax as host

    rng = np.random.default_rng(0)
    n, c, o, hw, k, classes = 64, 1, 16, 28, 3, 10
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)
    ct = rng.standard_normal((n, o, hw, hw)).astype(np.float32)  # the cotangent of the conv's result
    h = rng.standard_normal((n, o * (hw // 2) ** 2)).astype(np.float32)  # pooled, flattened
    dense = rng.standard_normal((o * (hw // 2) ** 2, classes)).astype(np.float32)
    d = rng.standard_normal((n, classes)).astype(np.float32)
    same = dict(strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1), groups=1)
    canonical, swapped = ((0, 1, 2, 3),) * 3, ((1, 0, 2, 3),) * 3
    forward = {"conv x * w (3x3 SAME)": lambda: host.conv(x, w, dimension_numbers=canonical, **same),
               "h @ dense": lambda: h @ dense}
    backward = {"dw = conv x * ct (kernel gradient)": lambda: host.conv(x, ct, dimension_numbers=swapped, **same),
                "d_dense = h.T @ d": lambda: h.T @ d, "dh = d @ dense.T": lambda: d @ dense.T}
    conv_macs = n * o * hw * hw * c * k * k
    dense_macs = h.shape[0] * h.shape[1] * classes
    macs = {"forward": conv_macs + dense_macs, "backward": conv_macs + 2 * dense_macs}
    t = {name: min(timeit.repeat(f, number=20, repeat=9, timer=time.process_time)) / 20
         for name, f in {**forward, **backward}.items()}
    for name, v in t.items():
        print(f"cnn {name:<38}{v * 1e3:8.3f} ms")
    tf, tb = sum(t[k] for k in forward), sum(t[k] for k in backward)
    by_count = (macs["forward"] + macs["backward"]) / macs["forward"]
    print(f"cnn forward {tf * 1e3:.3f} ms ({macs['forward'] / 1e6:.2f}M MACs), backward {tb * 1e3:.3f} ms "
          f"({macs['backward'] / 1e6:.2f}M MACs): (forward + backward) / forward = {by_count:.2f} by count, "
          f"{(tf + tb) / tf:.2f} timed (convolutions and GEMMs only: the forward's bias, relu and pooling "
          f"are not in it, so jit(f) is larger and the bound on jit(grad)/jit(f) lower)")
    return {"times_ms": {k: v * 1e3 for k, v in t.items()}, "macs": macs, "ratio_by_count": by_count,
            "ratio_timed": (tf + tb) / tf}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--gemms", action="store_true", help="the MLP's GEMMs and the CNN's convolutions alone: what bounds their "
                        "jit(grad)/jit(f) (writes benchmarks/results/grad_gemms.json)")
    parser.add_argument("--jit", action="store_true",
                        help="the cheap-gradient rows: jit(grad)/jit(f) on the numpy executor and in jax.jit")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of the --jit run (default 9)")
    parser.add_argument("--clock", choices=("process", "wall"), default=None,
                        help="CPU time of this process or wall time (default: CPU time; wall time for --jit, "
                             "whose --clock process run writes grad_jit_process.json)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    args = parser.parse_args(argv)
    if args.gemms:
        import os

        from benchmarks._harness import run_record, write_results

        load_before = os.getloadavg()
        models = gemms_main()
        record = run_record(False, 9, 20, load_before, [{"case": f"{m} convolutions/GEMMs alone", **r}
                                                        for m, r in models.items()],
                            command="python benchmarks/bench_grad.py --gemms", clock="process (CPU) time",
                            environment={"OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")})
        write_results("grad_gemms", False, record)
        return record
    if args.jit:
        from benchmarks._harness import write_results

        clock = args.clock or "wall"
        record = jit_main(args.quick, args.rounds, clock)
        write_results("grad_jit" if clock == "wall" else "grad_jit_process", args.quick, record)
        return record
    repeat = 5 if args.quick else 20
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time
    try:
        import threadpoolctl

        threadpoolctl.threadpool_limits(args.threads)
    except ImportError:
        pass
    data = _data(np.random.default_rng(0))
    callables = {}
    for name, make in (("arrayx", bench_arrayx), ("autograd", bench_autograd), ("jax_nojit", bench_jax)):
        try:
            callables[name] = make(data)
        except ImportError as e:
            print(f"{name}: skipped ({e})")
    # rounds interleave the libraries and models, so that drifts in machine load hit all alike;
    # each figure is the best of its rounds
    results = {lib: {m: [float("inf"), float("inf")] for m in fns} for lib, fns in callables.items()}
    for lib, fns in callables.items():
        for fwd, grad in fns.values():
            fwd(), grad()  # warm-up: caches, first-call compilation
    for _ in range(repeat):
        for lib, fns in callables.items():
            for model, (fwd, grad) in fns.items():
                best = results[lib][model]
                best[0] = min(best[0], timed(fwd))
                best[1] = min(best[1], timed(grad))
    rows = {}
    print(f"{'model':<10}{'library':<12}{'forward':>12}{'gradient':>12}{'ratio':>8}")
    for model in ("logistic", "mlp"):
        rows[model] = {}
        for lib, r in results.items():
            fwd, grad = r[model]
            rows[model][lib] = {"forward_ms": fwd * 1e3, "grad_ms": grad * 1e3, "ratio": grad / fwd}
            print(f"{model:<10}{lib:<12}{fwd * 1e3:>10.2f}ms{grad * 1e3:>10.2f}ms{grad / fwd:>8.2f}")
    out = pathlib.Path(__file__).parent / "results" / "grad.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"command": "python benchmarks/bench_grad.py", "goal": "arrayx ratio <= 3",
                               "clock": args.clock or "process", "blas_threads": args.threads, "repeat": repeat,
                               "models": rows}, indent=2))
    return rows


# -- registered with ``python -m benchmarks`` (see its docstring) --------------------------------------

TITLE = ("reverse-mode gradients on the numpy executor: eager arrayx.grad vs autograd and jax.grad; "
         "jit(f) and jit(grad(f)) of logistic regression, an MLP and a CNN vs jax.jit")


#: the cheap-gradient rows in the runner's summary: per library, jit(grad) time / jit(f) time
PAIRS = {f"{model} jit(grad)/jit(f)": (f"{model} jit(grad)", f"{model} jit(f)") for model in ("logistic", "mlp", "cnn")}


def workloads(quick: bool = False) -> dict:
    from benchmarks._harness import installed

    data = _data(np.random.default_rng(0))
    libs = {"arrayx[numpy]": bench_arrayx(data)}
    if installed("autograd"):
        libs["autograd"] = bench_autograd(data)
    if installed("jax"):
        libs["jax.grad"] = bench_jax(data)
    order = [k for k in libs if not k.startswith("arrayx")] + ["arrayx[numpy]"]
    out = {f"{model} grad": {lib: libs[lib][model][1] for lib in order} for model in ("logistic", "mlp")}
    if installed("jax"):  # the cheap-gradient rows: jit(f) and jit(grad(f)), jax.jit beside arrayx's numpy jit
        for model, sides in jit_pairs(data, quick).items():
            for which in ("f", "grad"):
                out[f"{model} jit({which})"] = {"jax.jit": sides["jax.jit"][which],
                                                "arrayx[numpy] jit": sides["arrayx[numpy] jit"][which]}
    return out


if __name__ == "__main__":
    main()
