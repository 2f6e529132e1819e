"""Fused CUDA kernels: ``arrayx.jit`` on the cupy executor against ``jax.jit`` on the GPU and CuPy eager.

Run (on a machine with an NVIDIA GPU, CuPy and JAX with CUDA; benchmarks/gpu_check.sh runs it):
      python benchmarks/bench_cupy.py [--quick] [--output PATH]
      (writes benchmarks/results/cupy_gpu.json unless --output says otherwise)

Peers per row, in one process, interleaved, best of several repeats of a batch of calls, each batch
ended by a device synchronisation: ``arrayx`` (jit on the cupy executor: the fused kernels of
``executors/cupy/fusion.py``), ``arrayx eager`` (the cupy executor op by op), ``cupy`` (the same
function written with CuPy's own calls, one kernel per op) and ``jax.jit`` (XLA on the GPU).  Ratios
are peer time / arrayx time, so >= 1 means arrayx is faster.  Rows: SELU, the 6-op chain
``exp(-(x * x)) * tanh(x) + 0.5``, the arithmetic chain ``((x * 2 + 1) * x - 0.5) * x + 3`` (also
as GB/s against a device-to-device copy), ``var`` and a row softmax (rows of 1000), float32 and
float64, 1e6 and 1e7 elements (--quick: 1e6 only, fewer repeats).  Every row first checks
arrayx's values against NumPy's, and records how many fused regions ran and any kernel that did
not compile (``failed``).
"""
from __future__ import annotations

import json
import math
import pathlib
import platform
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402
from benchmarks._models import arith, chain6, selu, softmax  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 7
CALLS = 10  # calls per timed batch (one synchronisation per batch: launches overlap as in real use)
OUTPUT = pathlib.Path(sys.argv[sys.argv.index("--output") + 1]) if "--output" in sys.argv else (
    REPO / "benchmarks" / "results" / "cupy_gpu.json")


def var(m, x):
    return m.var(x)


def best_times(fns: dict, sync) -> dict:
    """Best seconds per call of each function (batches of CALLS, timed in alternation, warmed first)."""
    for fn in fns.values():
        fn()
    sync()
    best = dict.fromkeys(fns, math.inf)
    for _ in range(REPEAT):
        for k, fn in fns.items():
            t = time.perf_counter()
            for _ in range(CALLS):
                out = fn()
            sync(out)
            best[k] = min(best[k], (time.perf_counter() - t) / CALLS)
    return best


def main() -> dict:
    import cupy
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    ex = ax.executors.get("cupy")
    if not ex.available():
        raise SystemExit(f"bench_cupy: the cupy executor is unavailable here: {ex.unavailable_reason}")
    gpu = jax.devices("gpu")[0]

    def sync(out=None):
        cupy.cuda.Device().synchronize()
        if out is not None and hasattr(out, "block_until_ready"):
            out.block_until_ready()

    props = cupy.cuda.runtime.getDeviceProperties(0)
    results: dict = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
                     "cupy": cupy.__version__, "jax": jax.__version__, "machine": platform.machine(),
                     "quick": QUICK, "calls_per_batch": CALLS, "repeats": REPEAT, "rows": []}
    rng = np.random.default_rng(0)

    def compare(name, fn, host, dtype):
        x_ax = ax.asarray(host, device="cupy")
        x_cp = cupy.asarray(host)
        x_jx = jax.device_put(host, gpu)
        f_ax = ax.jit(lambda x: fn(ax, x))
        f_jx = jax.jit(lambda x: fn(jnp, x))
        got = np.asarray(f_ax(x_ax))
        want = fn(np, host)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        ok = bool(np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True))
        runners = [c for key, c in f_ax.trace(x_ax).graph.derived.items()
                   if isinstance(key, tuple) and key[:2] == ("compiled", "cupy")][0].regions
        peers = {"arrayx": lambda: f_ax(x_ax)._buf, "arrayx eager": lambda: fn(ax, x_ax)._buf,
                 "cupy": lambda: fn(cupy, x_cp), "jax.jit": lambda: f_jx(x_jx)}
        t = best_times(peers, sync)
        row = {"function": name, "shape": list(host.shape), "dtype": np.dtype(dtype).name, "values_ok": ok,
               "regions": len(runners), "failed": [r.failed for r in runners if r.failed],
               "us": {k: round(v * 1e6, 2) for k, v in t.items()},
               "speedup": {k: round(v / t["arrayx"], 2) for k, v in t.items() if k != "arrayx"}}
        results["rows"].append(row)
        print(json.dumps(row), flush=True)
        return t

    sizes = (10**6,) if QUICK else (10**6, 10**7)
    for n in sizes:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(n).astype(dtype)
            for name, fn in (("selu", selu), ("chain6", chain6), ("arith", arith)):
                t = compare(name, fn, x, dtype)
                if name == "arith":  # read x, write the result
                    results["rows"][-1]["arrayx_GBps"] = round(2 * x.nbytes / t["arrayx"] / 1e9, 1)
            x = rng.standard_normal(n).astype(dtype) * 3 + 10
            compare("var", var, x, dtype)
            compare("softmax", softmax, x.reshape(-1, 1000), dtype)
    n = sizes[-1]
    a, b = cupy.empty(n), cupy.asarray(rng.standard_normal(n))
    copy = best_times({"copy": lambda: a.__setitem__(slice(None), b)}, sync)["copy"]
    results["device_copy_GBps"] = round(16 * n / copy / 1e9, 1)  # read 8 bytes, write 8 per element
    results["compile_failures"] = ex.executor_info()["compile failures"]
    return results


if __name__ == "__main__":
    t0 = time.perf_counter()
    out = main()
    out["seconds"] = round(time.perf_counter() - t0, 1)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUTPUT}")
