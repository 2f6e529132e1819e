"""Peak memory of jitted chains against the same chains run eagerly (issue 25, item 5).

Run:  nice python benchmarks/bench_jit_memory.py [--quick] [--executors numpy,numba,jax,dask]
      (writes benchmarks/results/jit_memory.json; --quick: the small sizes only, printed, not written)

Each row runs in a fresh subprocess: build the inputs, run the function once (jit compiles there),
drop the result and the buffer pool's free buffers, give freed heap back (``malloc_trim``), reset the process's peak resident size
(``/proc/self/clear_refs``), run it again and read the peak (``VmHWM``): ``peak_mb`` is that peak
minus the resident size just before the run.  A third run under ``tracemalloc`` gives
``traced_peak_mb``, the peak of NumPy's allocations alone (not XLA's: read ``peak_mb`` on jax; only up
to 2,000 steps: tracemalloc's cost grows with the generated function's length).
On the dask executor the result is computed (``np.asarray``) inside the measured runs.

Rows (each eager and jitted):

- ``matmul_chain``: ``steps`` times ``x = (x @ m) * 0.5 + 0.25``, x (65536, 16) float64 (8 MB), m 16x16;
- ``elementwise_chain``: ``ops`` elementwise ops (``x * 0.999 + 0.001`` repeated) on 8,192 float64
  elements (64 KB each); on the numba executor the jitted form is one fused region, so its size is
  kept to what the fusion compiler takes in seconds.

``ratio`` is jitted peak / eager peak (the goal: at most 2; eager peaks below 1 MB count as 1 MB).
``distinct_floats`` / ``distinct_shapes`` (numpy, numba): 10,000 calls of a jitted function with a Python
float / an array shape that changes every call; ``kept_mb`` is what the process's allocations grew by
(the jit cache), ``traces`` the stagings, ``cache_entries`` what the cache keeps.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tracemalloc

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's arrayx

QUICK = "--quick" in sys.argv


def _status(field: str) -> int:
    """A ``/proc/self/status`` size in bytes (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident size (Linux >= 4.0)


def worker(executor: str, case: str, mode: str, size: int) -> dict:
    import gc

    import numpy as np

    import arrayx as xp

    xp.set_executor(executor)
    if case == "matmul_chain":
        rng = np.random.default_rng(0)
        x0 = xp.asarray(rng.standard_normal((65536, 16)))
        m = xp.asarray(rng.standard_normal((16, 16)) / 4.0)

        def chain(x, m):
            for _ in range(size):
                x = (x @ m) * 0.5 + 0.25
            return x

        args = (x0, m)
    elif case == "elementwise_chain":
        x0 = xp.asarray(np.linspace(0.0, 1.0, 8192))

        def chain(x):
            for _ in range(size // 2):
                x = x * 0.999 + 0.001
            return x

        args = (x0,)
    elif case in ("distinct_floats", "distinct_shapes"):
        return _distinct(xp, executor, case, size)
    else:
        raise ValueError(case)
    f = xp.jit(chain) if mode == "jit" else chain

    def run():
        out = f(*args)
        host = np.asarray(out)  # dask computes here; jax waits for the buffer
        return float(host[0, 0] if host.ndim == 2 else host[0])

    from arrayx.executors.common.buffer_pool import POOL

    first = run()
    gc.collect()
    POOL.clear()  # the warm-up's pooled buffers: a run that held them all would allocate nothing new
    _trim()
    _reset_peak()
    before = _status("VmRSS")
    again = run()
    peak = _status("VmHWM")
    assert first == again, (first, again)
    row = {"executor": executor, "case": case, "mode": mode, "size": size,
           "peak_mb": round((peak - before) / 2**20, 1), "value": again}
    if size <= 2000:  # tracemalloc finds each allocation's line in the generated code by a scan: quadratic
        # NumPy's allocations alone (its data is traced by tracemalloc; XLA's is not): a third run
        gc.collect()
        POOL.clear()
        tracemalloc.start()
        run()
        row["traced_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    return row


def _distinct(xp, executor: str, case: str, size: int) -> dict:
    """Memory the jit cache keeps after ``size`` calls with a Python float that changes every call
    (a learning-rate schedule), or with an array whose shape changes every call: the traced growth of
    the process's allocations, the stagings and the entries kept."""
    import gc
    import warnings

    x = xp.ones(64)
    f = xp.jit(lambda x, lr: x - lr * x)
    f(x, 0.5)
    gc.collect()
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the retrace storm
        for i in range(size):
            if case == "distinct_floats":
                f(x, 1.0 / (i + 2))
            else:
                f(xp.ones(i + 1), 0.5)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {"executor": executor, "case": case, "mode": "jit", "size": size,
            "kept_mb": round(grown / 2**20, 1), "traces": f.trace_count, "cache_entries": len(f._cache)}


def _trim() -> None:
    """Give freed heap memory back to the system (glibc keeps it otherwise: the warm-up run's
    small buffers would hide the measured run's)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def measure(executor: str, case: str, mode: str, size: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, __file__, "--worker", executor, case, mode, str(size)],
                          capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        return {"executor": executor, "case": case, "mode": mode, "size": size,
                "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    executors = ["numpy", "numba", "jax", "dask"]
    if "--executors" in sys.argv:
        executors = sys.argv[sys.argv.index("--executors") + 1].split(",")
    rows = []
    for ex in executors:
        cases = [("matmul_chain", 20 if QUICK else 200)]
        if ex in ("numpy", "numba"):  # 100,000 ops: one fused region on numba, kept small there
            cases.append(("elementwise_chain", 1000 if QUICK or ex == "numba" else 100_000))
        for case, size in cases:
            pair = {}
            for mode in ("eager", "jit"):
                row = measure(ex, case, mode, size)
                pair[mode] = row
                print(json.dumps(row), flush=True)
            row = {"executor": ex, "case": case, "size": size,
                   "eager_peak_mb": pair["eager"].get("peak_mb"), "jit_peak_mb": pair["jit"].get("peak_mb")}
            if "peak_mb" in pair["eager"] and "peak_mb" in pair["jit"]:
                row["ratio"] = round(pair["jit"]["peak_mb"] / max(pair["eager"]["peak_mb"], 1.0), 2)
            else:
                row["error"] = pair["eager"].get("error") or pair["jit"].get("error")
            rows.append(row)
    for ex in ("numpy", "numba"):  # the jit cache's growth under arguments that change every call
        for case in ("distinct_floats", "distinct_shapes"):
            row = measure(ex, case, "jit", 1000 if QUICK else 10_000)
            print(json.dumps(row), flush=True)
            rows.append(row)
    if not QUICK:
        out = ROOT / "benchmarks" / "results" / "jit_memory.json"
        out.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
        print(f"wrote {out}")
    for r in rows:
        print(r)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, ex, case, mode, size = sys.argv
        print(json.dumps(worker(ex, case, mode, int(size))))
    else:
        main()
