"""Real client calls (scikit-learn, SciPy, array-api-extra) on arrayx arrays of every executor, against
the same calls on plain NumPy arrays, as ratios measured in one interleaved run.

Run:  python benchmarks/bench_clients.py                 (both sizes; writes benchmarks/results/clients.json
                                                          and benchmarks/results/plots/clients.png)
      python benchmarks/bench_clients.py --quick         (small size only, 3 rounds; clients_quick.json)
      python benchmarks/bench_clients.py --only pca,logsumexp --labels numpy,arrayx[numpy]
      python -m benchmarks --only clients                (in the runner: small size with --quick, else both)

Each workload is one client call (fit + transform/predict for estimators) at two sizes: "small"
(about 10 ms on plain NumPy) and "large" (about 0.1-0.5 s on plain NumPy on a quiet core; on the
shared, loaded 2-core machine these results come from the large size is kept modest - a few hundred
ms - so that the whole run stays short).  Labels:

- ``numpy``: plain NumPy arrays, scikit-learn's ``array_api_dispatch`` off (the reference);
- ``numpy[dispatch]``: the same NumPy arrays with ``array_api_dispatch`` on: the client's own array-API
  code path (array-api-compat's NumPy namespace), without arrayx.  It separates what the client's
  array-API code costs from what arrayx adds: ``arrayx[numpy]`` vs ``numpy[dispatch]`` is arrayx's own
  overhead.  (SciPy and array-api-extra read ``SCIPY_ARRAY_API=1``, set for the whole process, so
  on their workloads the two NumPy labels run the same code);
- ``arrayx[E]``: arrayx arrays of executor E (numpy, numba, jax, dask), ``array_api_dispatch`` on;
- ``arrayx[E,lazy]``: the same inside ``arrayx.lazy()`` (operations recorded, run fused when the
  client reads a value; numba and jax);
- ``jax.numpy``: JAX's own arrays (64-bit mode on, as arrayx's jax executor has it), dispatch on,
  where the client accepts them: the peer the jax executor is measured against;
- ``array-api-strict``: array-api-strict arrays, dispatch on, where the client accepts them.

SciPy reads ``SCIPY_ARRAY_API`` once, at its first import: this module sets it to 1 at import and
refuses to run the SciPy workloads when SciPy was imported before without it.  Every label's result
is first compared with the ``numpy`` label's (rtol 1e-6; PCA components up to sign); a label that
fails or gives a different value is not timed, and the reason is printed and kept in the JSON.
The dask executor runs on Dask's default (threaded) scheduler; its results are computed (``block``).
Ratio = NumPy time / label time (above 1: faster than plain NumPy), from wall time (``ratios``,
what a user waits) and from CPU time of the whole process (``cpu_ratios``: what a loaded, shared
machine disturbs least; with several threads - JAX, Dask, Numba's parallel kernels - it is their
sum).  Alone the bench pins BLAS to one thread (OPENBLAS/OMP/MKL_NUM_THREADS=1, unless set).
"""
from __future__ import annotations

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before anything below imports SciPy
if __name__ == "__main__":  # alone: one BLAS thread, so a shared, loaded machine times all labels alike
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # this checkout's arrayx, not an installed copy

from benchmarks._harness import block, installed  # noqa: E402

TITLE = "scikit-learn / SciPy / array-api-extra calls on arrayx arrays (per executor) vs plain NumPy arrays"

EXECUTORS = ("numpy", "numba", "jax", "dask")
#: executors also timed under ``arrayx.lazy()`` (label ``arrayx[E,lazy]``)
LAZY_EXECUTORS = ("numba", "jax")

#: workload -> (rows of X at the small size, at the large size); X is (rows, 64) float64
SIZES = {
    "pca": (2_000, 20_000), "lda": (2_000, 20_000), "ridge": (4_000, 40_000),
    "standard_scaler": (8_000, 100_000), "euclidean_distances": (500, 2_000), "rbf_kernel": (500, 2_000),
    "logsumexp": (6_000, 60_000), "softmax": (6_000, 100_000), "rfft": (4_000, 60_000),
    "fftconvolve": (300_000, 2_000_000), "xpx_cov": (6_000, 120_000),
}


def _scipy_ok() -> bool:
    """Whether SciPy's array-API support is on in this process (it is read at SciPy's first import)."""
    if "scipy" not in sys.modules:
        return True  # the environment variable set above applies when SciPy imports
    from scipy._lib import _array_api

    return getattr(_array_api, "SCIPY_ARRAY_API", False) not in (False, None, "", "0")


def _cases() -> dict:
    """name -> (make(n, rng) -> {input: NumPy array}, call(d) -> result, compare-up-to-sign)."""
    import array_api_extra as xpx
    from scipy import fft, signal, special
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.metrics.pairwise import euclidean_distances, rbf_kernel
    from sklearn.preprocessing import StandardScaler

    def table(n, rng):
        X = rng.normal(size=(n, 64))
        return {"X": X, "y": (np.arange(n) % 3).astype(np.int64), "yr": X @ rng.normal(size=64) + rng.normal(size=n)}

    def pair(n, rng):
        return {"A": rng.normal(size=(n, 64)), "B": rng.normal(size=(2 * n, 64))}

    def signal_(n, rng):
        return {"s": rng.normal(size=n), "k": rng.normal(size=1001)}

    def rows(n, rng):
        return {"S": rng.normal(size=(n, 256))}

    return {
        "pca": (table, lambda d: PCA(n_components=8, svd_solver="full").fit(d["X"]).transform(d["X"]), True),
        "lda": (table, lambda d: LinearDiscriminantAnalysis().fit(d["X"], d["y"]).predict_proba(d["X"]), False),
        "ridge": (table, lambda d: Ridge(alpha=1.0, solver="svd").fit(d["X"], d["yr"]).predict(d["X"]), False),
        "standard_scaler": (table, lambda d: StandardScaler().fit_transform(d["X"]), False),
        "euclidean_distances": (pair, lambda d: euclidean_distances(d["A"], d["B"]), False),
        "rbf_kernel": (pair, lambda d: rbf_kernel(d["A"], d["B"], gamma=0.05), False),
        "logsumexp": (table, lambda d: special.logsumexp(d["X"], axis=1), False),
        "softmax": (table, lambda d: special.softmax(d["X"], axis=1), False),
        "rfft": (rows, lambda d: fft.rfft(d["S"], axis=-1), False),
        "fftconvolve": (signal_, lambda d: signal.fftconvolve(d["s"], d["k"]), False),
        "xpx_cov": (table, lambda d: xpx.cov(d["X"].T), False),
    }


def _to_numpy(x) -> np.ndarray:
    """A result as a NumPy array (arrayx and array-api-strict arrays alike)."""
    import arrayx

    if isinstance(x, arrayx.Array):
        return np.asarray(x)
    if isinstance(x, np.ndarray):
        return x
    try:
        return np.from_dlpack(x)
    except Exception:  # noqa: BLE001 - e.g. a library whose DLPack export refuses; fall back on __array__
        return np.asarray(x)


def _check(got, want, up_to_sign: bool) -> str | None:
    """None when ``got`` matches ``want``, else what differs."""
    g = _to_numpy(got)
    if g.shape != want.shape or g.dtype != want.dtype:
        return f"shape/dtype {g.shape} {g.dtype} != {want.shape} {want.dtype}"
    if up_to_sign:
        g, want = np.abs(g), np.abs(want)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    if not np.allclose(g, want, rtol=1e-6, atol=1e-9 * max(scale, 1.0)):
        return f"values differ (max abs difference {float(np.max(np.abs(g - want))):.3g})"
    return None


def _label_fns(name: str, n: int, labels) -> tuple[dict, dict]:
    """({label: zero-argument callable}, {label: why it is not timed}) of one workload at ``n`` rows."""
    import sklearn

    import arrayx

    make, call, up_to_sign = _cases()[name]
    data = make(n, np.random.default_rng(20261202))

    def numpy_fn():
        with sklearn.config_context(array_api_dispatch=False), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(data)

    want = _to_numpy(numpy_fn())
    fns, refused = {"numpy": numpy_fn}, {}
    for label in labels:
        if label == "numpy":
            continue
        if label.startswith("arrayx["):
            ex, _, mode = label[len("arrayx["):-1].partition(",")
            if mode not in ("", "lazy"):
                raise ValueError(f"bench_clients: unknown label {label!r}; arrayx labels: arrayx[E], arrayx[E,lazy]")
            with arrayx.use_executor(ex):
                d = {k: arrayx.asarray(v) for k, v in data.items()}

            def fn(d=d, ex=ex, scope=arrayx.lazy if mode else contextlib.nullcontext):
                with arrayx.use_executor(ex), sklearn.config_context(array_api_dispatch=True), \
                        warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with scope():  # arrayx.lazy(): the call's operations recorded, run fused when read
                        out = call(d)
                    return block(out)
        elif label == "numpy[dispatch]":
            def fn():
                with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return call(data)
        elif label == "jax.numpy":  # the peer: the client on JAX's own arrays (64-bit, as arrayx's jax executor)
            import jax

            jax.config.update("jax_enable_x64", True)
            d = {k: jax.numpy.asarray(v) for k, v in data.items()}

            def fn(d=d):
                with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return block(call(d))
        elif label == "array-api-strict":
            import array_api_strict as xs

            d = {k: xs.asarray(v) for k, v in data.items()}

            def fn(d=d):
                with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return call(d)
        else:
            raise ValueError(f"bench_clients: unknown label {label!r}; labels: numpy, numpy[dispatch], arrayx[E], "
                             "jax.numpy, array-api-strict")
        try:
            why = _check(fn(), want, up_to_sign)
        except Exception as e:  # noqa: BLE001 - the client or the library refuses: say so, do not time it
            why = f"{type(e).__name__}: {str(e)[:160]}"
        if why is None:
            fns[label] = fn
        else:
            refused[label] = why
            print(f"clients: {name} n={n}: {label} not timed: {why}", flush=True)
    return fns, refused


def default_labels() -> list:
    from arrayx.core import executor as base

    have = set(base.registered())
    out = ["numpy", "numpy[dispatch]"] + [f"arrayx[{e}]" for e in EXECUTORS if e in have]
    out += [f"arrayx[{e},lazy]" for e in LAZY_EXECUTORS if e in have]
    out += ["jax.numpy"] if installed("jax") else []
    return out + (["array-api-strict"] if installed("array_api_strict") else [])


def _plan(quick: bool, only=None) -> list:
    if not _scipy_ok():
        raise RuntimeError("bench_clients: SciPy was imported before SCIPY_ARRAY_API=1 was set; run the bench "
                           "in a fresh process (python benchmarks/bench_clients.py)")
    names = [n for n in SIZES if only is None or n in only]
    sizes = ("small",) if quick else ("small", "large")
    return [(name, size) for size in sizes for name in names]


def workloads(quick: bool) -> dict:
    """The runner's table: "workload size" -> {label: callable}, labels whose result is wrong left out."""
    labels = default_labels()
    out = {}
    for name, size in _plan(quick):
        n = SIZES[name][size == "large"]
        out[f"{name} {size} (n={n})"], _ = _label_fns(name, n, labels)
    return out


def _time_both(fns: dict, rounds: int, target_s: float) -> tuple[dict, dict]:
    """Best wall seconds and best CPU seconds (``process_time``: every thread of the process) per
    call of each label, over ``rounds`` interleaved rounds (the order rotates per round).  CPU time
    is what a loaded, shared machine disturbs least; wall time is what a user waits."""
    for fn in fns.values():
        fn()  # warm up: compile, fill caches
    numbers = {}
    for k, fn in fns.items():
        t0 = time.perf_counter()
        fn()
        numbers[k] = max(1, min(1000, int(target_s / max(time.perf_counter() - t0, 1e-7))))
    wall = {k: float("inf") for k in fns}
    cpu = dict(wall)
    labels = list(fns)
    for r in range(rounds):
        for k in labels[r % len(labels):] + labels[: r % len(labels)]:
            fn, n = fns[k], numbers[k]
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                fn()
            wall[k] = min(wall[k], (time.perf_counter() - t0) / n)
            cpu[k] = min(cpu[k], (time.process_time() - c0) / n)
    return wall, cpu


def main(argv=None) -> int:
    from benchmarks.__main__ import headline, plot, ratios

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small size only, 3 rounds")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 5; --quick 3)")
    p.add_argument("--only", default=None, help=f"comma-separated workloads of: {', '.join(SIZES)}")
    p.add_argument("--labels", default=None, help="comma-separated labels (default: numpy, numpy[dispatch], "
                                                   "arrayx[each executor], jax.numpy, array-api-strict)")
    p.add_argument("--output", default=None, help="JSON path (default benchmarks/results/clients[_quick].json)")
    args = p.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if only and only - set(SIZES):
        p.error(f"--only: unknown workloads {sorted(only - set(SIZES))}; known: {', '.join(SIZES)}")
    # commas inside brackets belong to a label (arrayx[numba,lazy])
    labels = re.findall(r"[^,\[]+(?:\[[^\]]*\])?", args.labels) if args.labels else default_labels()
    rounds = args.rounds or (3 if args.quick else 5)
    load_before = os.getloadavg()
    t_start = time.perf_counter()
    bench = {"title": TITLE, "workloads": {}}
    for name, size in _plan(args.quick, only):
        n = SIZES[name][size == "large"]
        fns, refused = _label_fns(name, n, labels)
        times, cpu = _time_both(fns, rounds, 0.05)
        key = f"{name} {size} (n={n})"
        bench["workloads"][key] = {"times_s": times, "ratios": {f"{k}": times["numpy"] / t for k, t in times.items()
                                                                if k != "numpy"},
                                   "cpu_s": cpu, "cpu_ratios": {k: cpu["numpy"] / t for k, t in cpu.items()
                                                                if k != "numpy" and t > 0},
                                   "runner_ratios": ratios(times), "not_timed": refused}
        base = times.get("numpy[dispatch]")
        if base is not None:  # arrayx's own cost: against the client's array-API path on NumPy arrays
            bench["workloads"][key]["ratios_vs_dispatch"] = {k: base / t for k, t in times.items()
                                                             if k.startswith("arrayx")}
        print(f"{key:<34} numpy {times['numpy'] * 1e3:8.2f} ms  " + "  ".join(
            f"{k} {times['numpy'] / t:5.2f}x ({cpu['numpy'] / cpu[k]:4.2f}x cpu"
            + (f", {base / t:4.2f}x vs dispatch" if base is not None and k.startswith("arrayx") else "") + ")"
            for k, t in times.items() if k != "numpy"), flush=True)
    bench["headline"] = headline(bench)
    for size in ("small", "large"):
        sub = {"workloads": {k: v for k, v in bench["workloads"].items() if f" {size} " in k}}
        if sub["workloads"]:
            bench[f"headline_{size}"] = headline(sub)
            bench[f"headline_{size}_cpu"] = headline({"workloads": {k: {"ratios": v["cpu_ratios"]}
                                                                    for k, v in sub["workloads"].items()}})
            vs = {k: {"ratios": v["ratios_vs_dispatch"]} for k, v in sub["workloads"].items()
                  if "ratios_vs_dispatch" in v}
            if vs:
                bench[f"headline_{size}_vs_dispatch"] = headline({"workloads": vs})
    stem = "clients_quick" if args.quick else "clients"
    out = pathlib.Path(args.output) if args.output else ROOT / "benchmarks" / "results" / f"{stem}.json"
    png = out.parent / "plots" / f"{out.stem}.png"
    if plot("clients", bench, png):
        bench["plot"] = str(png.relative_to(out.parent))
    import platform

    import sklearn
    import scipy

    record = {"command": "python benchmarks/bench_clients.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.platform(),
              "cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
              "sklearn": sklearn.__version__, "scipy": scipy.__version__, "rounds": rounds,
              "ratio": "plain NumPy time / label time (above 1: faster than plain NumPy); best of the rounds",
              "ratio_vs_dispatch": "numpy[dispatch] time / arrayx label time: arrayx's own cost, the client's "
                                   "array-API path taken out",
              "load average before (1, 5, 15 min)": load_before, "load average after": os.getloadavg(),
              "duration_s": round(time.perf_counter() - t_start, 1), **bench}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print("geometric means (NumPy time / label time; wall, and CPU time):")
    for size in ("small", "large"):
        for pair, v in bench.get(f"headline_{size}", {}).items():
            vs = bench.get(f"headline_{size}_vs_dispatch", {}).get(pair)
            print(f"  {size:<6} {pair:<24} {v:.3g}x   cpu {bench[f'headline_{size}_cpu'].get(pair, float('nan')):.3g}x"
                  + (f"   vs numpy[dispatch] {vs:.3g}x" if vs is not None else ""))
    print(f"wrote {out} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
