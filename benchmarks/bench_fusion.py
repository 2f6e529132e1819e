"""Fused kernels: ``arrayx.jit`` on the numba executor against ``jax.jit``, NumPy eager and hand-written Numba.

Run:  nice python benchmarks/bench_fusion.py [--quick] [--runs N]
      (writes benchmarks/results/fusion.json; --runs N: N whole runs, each in a new process, one after
      another, every run and the medians in benchmarks/results/fusion_runs.json, fusion.json the last)

All peers run in one process, interleaved, best of at least seven rounds, more for fast calls until each peer
has run 0.3 s in all (at most 200 rounds; JAX results waited for).
Ratios are peer time / arrayx time, so >= 1 means arrayx is faster.  Rows:

- ``selu`` (SELU) and ``chain6`` (the 6-op chain ``exp(-(x * x)) * tanh(x) + 0.5``: multiply,
  negative, exp, tanh, multiply, add) at 1e6 and 1e7 elements, float32 and float64, against
  ``jax.jit``, NumPy eager and a hand-written parallel ``numba.njit`` loop (``math.exp``/``tanh``);
- ``arith`` (``((x * 2 + 1) * x - 0.5) * x + 3``, 1e7 float64) as bandwidth (16 bytes per element:
  read x, write the result) against a STREAM triad (``a = b + s * c``, parallel Numba,
  preallocated, 24 bytes per element) measured in the same run, and NumPy's bandwidth on it; also
  with the buffer pool off (each call's 80 MB output then a fresh allocation, page faults included);
- ``var`` (``jit(lambda x: var(x))``, 1e7) and ``softmax`` (rows of 1000, 1e4 x 1e3) against jax.jit;
- ``random.normal`` (float64, 1e7) under jit against ``jax.jit(jax.random.normal)`` (the same bits,
  checked) and eager arrayx;
- compile latency of one fused kernel: the first call of a jitted chain in a new process with
  an empty kernel cache (cold), with the cache the first process left (cached), and of another
  kernel (SELU) whose math functions that cache already holds (cold kernel), minus a warm call; Numba itself is imported and initialised before the clock starts (wall time, and the
  process's CPU time, which a machine shared with other jobs inflates less).  ``cached`` loads
  the kernel with Python's bytecode caches present (as an installed arrayx has them; kept in a
  folder of the run's own), ``cached_nopyc`` without them (every arrayx module the first call
  imports compiled from source: how the earlier runs measured, under ``PYTHONDONTWRITEBYTECODE``).

The arrayx rows run with the NumPy executor's buffer pool on (fused kernels' outputs come from it).
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402
from benchmarks._models import arith, chain6, selu, softmax  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 7
#: rounds go on past REPEAT until every peer has run this long in all (a 1e6 call takes ~1 ms,
#: and seven samples of it on a shared machine say little), at most MAX_ROUNDS
MIN_SECONDS, MAX_ROUNDS = (0.05, 30) if QUICK else (0.3, 200)


def best_times(fns: dict) -> dict:
    """Best seconds per call of each function, timed in alternation (each called once first)."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, math.inf)
    spent = dict.fromkeys(fns, 0.0)
    rounds = 0
    while rounds < REPEAT or (min(spent.values()) < MIN_SECONDS and rounds < MAX_ROUNDS):
        rounds += 1
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            dt = time.perf_counter() - t
            best[k] = min(best[k], dt)
            spent[k] += dt
    return best


# -- the peers (the workloads, written once against a namespace m: benchmarks/_models.py) ---------------

def hand_numba():
    import numba

    @numba.njit(parallel=True, fastmath={"contract"})
    def selu_nb(x):
        out = np.empty_like(x)
        a = x.dtype.type(1.6732632423543772)
        s = x.dtype.type(1.0507009873554805)
        for i in numba.prange(x.size):
            v = x[i]
            out[i] = s * (v if v > 0 else a * (math.exp(v) - 1))
        return out

    @numba.njit(parallel=True, fastmath={"contract"})
    def chain6_nb(x):
        out = np.empty_like(x)
        h = x.dtype.type(0.5)
        for i in numba.prange(x.size):
            v = x[i]
            out[i] = math.exp(-(v * v)) * math.tanh(v) + h
        return out

    @numba.njit(parallel=True)
    def triad(a, b, c, s):
        for i in numba.prange(a.size):
            a[i] = b[i] + s * c[i]

    return {"selu": selu_nb, "chain6": chain6_nb}, triad


def main() -> dict:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    nb_fns, triad = hand_numba()
    ex = ax.executors.get("numba")
    ex.available()
    ex.set_buffer_pool(True)
    from arrayx.executors.common import buffer_pool as _buffer_pool
    rng = np.random.default_rng(0)
    results: dict = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                     "load_average_at_start": round(os.getloadavg()[0], 2),
                     "threads": __import__("numba").get_num_threads(), "buffer_pool": True, "rows": []}

    def compare(name, fn, host, dtype, nb=None, pool_off=False):
        x_ax = ax.asarray(host, device="numba")
        x_jx = jnp.asarray(host)
        f_ax = ax.jit(lambda x: fn(ax, x))
        f_jx = jax.jit(lambda x: fn(jnp, x))
        peers = {"arrayx": lambda: f_ax(x_ax), "jax.jit": lambda: f_jx(x_jx).block_until_ready(),
                 "numpy": lambda: fn(np, host)}
        if nb is not None:
            flat = host.reshape(-1)
            peers["numba (hand-written)"] = lambda: nb(flat)
        if pool_off:
            def without_pool():
                _buffer_pool.ENABLED = False
                try:
                    f_ax(x_ax)
                finally:
                    _buffer_pool.ENABLED = True
            peers["arrayx (pool off)"] = without_pool
        got = np.asarray(f_ax(x_ax))
        want = fn(np, host)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        assert np.allclose(got, want, rtol=tol, atol=tol), name
        t = best_times(peers)
        row = {"function": name, "shape": list(host.shape), "dtype": np.dtype(dtype).name,
               "ms": {k: round(v * 1e3, 3) for k, v in t.items()},
               "speedup": {k: round(v / t["arrayx"], 2) for k, v in t.items() if k != "arrayx"}}
        results["rows"].append(row)
        print(json.dumps(row), flush=True)
        return t

    sizes = (10**6,) if QUICK else (10**6, 10**7)
    for n in sizes:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(n).astype(dtype)
            for name, fn in (("selu", selu), ("chain6", chain6)):
                compare(name, fn, x, dtype, nb_fns[name])
    n = 10**6 if QUICK else 10**7
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(n).astype(dtype) * 3 + 10
        compare("var", lambda m, x: m.var(x), x, dtype)
        compare("softmax", softmax, x.reshape(-1, 1000), dtype)

    # random numbers under jit: threefry and the float conversion in fused kernels, same bits as jax.random
    key = ax.random.key(0)
    k_ax = ax.asarray(np.asarray(key), device="numba")
    for dtype in (np.float64,):
        draw_ax = ax.jit(lambda k: ax.random.normal(k, (n,), dtype=dtype))
        with jax.threefry_partitionable(True):
            k_jx = jax.random.PRNGKey(0)
            draw_jx = jax.jit(lambda k: jax.random.normal(k, (n,), dtype=dtype))
            want = np.asarray(draw_jx(k_jx))
            assert np.array_equal(np.asarray(draw_ax(k_ax)), want), "jit(random.normal) differs from jax.random"
            t = best_times({"arrayx": lambda: draw_ax(k_ax), "jax.jit": lambda: draw_jx(k_jx).block_until_ready(),
                            "arrayx eager": lambda: ax.random.normal(k_ax, (n,), dtype=dtype)})
        row = {"function": "random.normal", "shape": [n], "dtype": np.dtype(dtype).name,
               "ms": {k: round(v * 1e3, 3) for k, v in t.items()},
               "speedup": {k: round(v / t["arrayx"], 2) for k, v in t.items() if k != "arrayx"}}
        results["rows"].append(row)
        print(json.dumps(row), flush=True)

    # bandwidth: the arithmetic chain against a STREAM triad, one run
    x = rng.standard_normal(n)
    a, b, c = np.empty(n), rng.standard_normal(n), rng.standard_normal(n)
    t_chain = compare("arith", arith, x, np.float64, pool_off=True)
    t_triad = best_times({"triad": lambda: triad(a, b, c, 3.0)})["triad"]
    triad_gbs = 24 * n / t_triad / 1e9
    results["bandwidth"] = {
        "stream_triad_GBps": round(triad_gbs, 2),
        "arith_arrayx_GBps": round(16 * n / t_chain["arrayx"] / 1e9, 2),
        "arith_arrayx_pool_off_GBps": round(16 * n / t_chain["arrayx (pool off)"] / 1e9, 2),
        "arith_numpy_GBps": round(16 * n / t_chain["numpy"] / 1e9, 2),
        "arith_jax_GBps": round(16 * n / t_chain["jax.jit"] / 1e9, 2),
    }
    bw = results["bandwidth"]
    bw["arrayx_fraction_of_triad"] = round(bw["arith_arrayx_GBps"] / triad_gbs, 3)
    bw["arrayx_pool_off_fraction_of_triad"] = round(bw["arith_arrayx_pool_off_GBps"] / triad_gbs, 3)
    bw["numpy_fraction_of_triad"] = round(bw["arith_numpy_GBps"] / triad_gbs, 3)
    print(json.dumps(bw), flush=True)
    results["compile_ms"] = compile_latency()
    results["load_average_at_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(results["compile_ms"]), flush=True)
    return results


_LATENCY_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numba, numpy as np
numba.njit(lambda v: v + 1)(1.0)  # Numba imported and initialised before the clock starts
import arrayx as ax
import arrayx.executors.numba.fusion.lowering as _numba_fusion, arrayx.executors.numba.fusion.run as _numba_fused_run
x = ax.asarray(np.linspace(-2, 2, 100_000), device="numba")
fns = {"chain6": lambda x: ax.exp(-(x * x)) * ax.tanh(x) + 0.5,
       "selu": lambda x: 1.0507009873554805 * ax.where(x > 0, x, 1.6732632423543772 * (ax.exp(x) - 1.0))}
f = ax.jit(fns[sys.argv[2]])
c0 = time.process_time(); t0 = time.perf_counter(); f(x); t1 = time.perf_counter(); c1 = time.process_time()
f(x); t2 = time.perf_counter(); c2 = time.process_time()
phases = {}  # the kernel's compile by Numba's own timers (typing includes math functions compiled for it)
for k in _numba_fused_run._loaded.values():
    for sig in k.signatures:
        md = k.get_metadata(sig) or {}
        passes = md.get("pipeline_times", {}).get("nopython", {})
        for name, t in passes.items():
            key = name.split("_", 1)[1]
            if key in ("nopython_type_inference", "native_lowering"):
                phases[key + "_ms"] = round(t.run * 1e3, 1)
        if "llvm_lock" in md.get("timers", {}):
            phases["llvm_ms"] = round(md["timers"]["llvm_lock"] * 1e3, 1)
print(json.dumps({"first_ms": (t1 - t0) * 1e3, "warm_ms": (t2 - t1) * 1e3, "first_cpu_ms": (c1 - c0) * 1e3,
                  "warm_cpu_ms": (c2 - c1) * 1e3, "phases": phases, **_numba_fusion.kernel_stats()}))
"""


def compile_latency() -> dict:
    with tempfile.TemporaryDirectory() as d:
        # as the earlier runs: arrayx's modules without bytecode caches (compiled from source when imported)
        env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=os.path.join(d, "cache"), PYTHONDONTWRITEBYTECODE="1")
        # as an installed arrayx: bytecode caches (of every module, in a folder of their own) written once
        pyc = dict(env, PYTHONPYCACHEPREFIX=os.path.join(d, "pyc"))
        pyc.pop("PYTHONDONTWRITEBYTECODE")
        runs = []
        for fn, child_env in (("chain6", env), ("chain6", env), ("chain6", pyc), ("chain6", pyc), ("selu", env)):
            out = subprocess.run([sys.executable, "-c", _LATENCY_CHILD, str(REPO), fn], env=child_env,
                                 capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cold, cached_nopyc, _, cached, kernel_cold = runs  # (the third wrote the bytecode caches)
    return {"cold_ms": round(cold["first_ms"] - cold["warm_ms"], 1),
            "cold_cpu_ms": round(cold["first_cpu_ms"] - cold["warm_cpu_ms"], 1), "cold_compiled": cold["compiled"],
            "cached_ms": round(cached["first_ms"] - cached["warm_ms"], 1),
            "cached_cpu_ms": round(cached["first_cpu_ms"] - cached["warm_cpu_ms"], 1),
            "cached_loaded": cached["loaded"], "cached_compiled": cached["compiled"],
            "cached_nopyc_ms": round(cached_nopyc["first_ms"] - cached_nopyc["warm_ms"], 1),
            "cached_nopyc_cpu_ms": round(cached_nopyc["first_cpu_ms"] - cached_nopyc["warm_cpu_ms"], 1),
            # a new kernel (SELU) once the math functions it calls are in the cache (from chain6)
            "cold_kernel_ms": round(kernel_cold["first_ms"] - kernel_cold["warm_ms"], 1),
            "cold_kernel_cpu_ms": round(kernel_cold["first_cpu_ms"] - kernel_cold["warm_cpu_ms"], 1),
            "cold_kernel_compiled": kernel_cold["compiled"],
            # wall ms by Numba's timers: typing, lowering (LLVM included), LLVM (optimisation, machine code)
            "cold_phases": cold["phases"], "cold_kernel_phases": kernel_cold["phases"]}


def _row_key(row: dict) -> str:
    return f"{row['function']} {row['dtype']} {'x'.join(map(str, row['shape']))}"


def summarize(runs: list, command: str) -> dict:
    """Every run and the median of each figure that decides issue 14 (fusion_runs.json)."""
    def entry(values):
        return {"runs": values, "median": statistics.median(values)}

    keys = [_row_key(r) for r in runs[0]["rows"]]
    ratios = {k: entry([next(r["speedup"]["jax.jit"] for r in run["rows"] if _row_key(r) == k) for run in runs])
              for k in keys}
    bw = ("arrayx_fraction_of_triad", "arrayx_pool_off_fraction_of_triad")
    return {"command": command, "machine": runs[0]["machine"], "cpus": runs[0]["cpus"],
            "jax_jit_over_arrayx": ratios,
            "fraction_of_triad": entry([run["bandwidth"][bw[0]] for run in runs]),
            "fraction_of_triad_pool_off": entry([run["bandwidth"][bw[1]] for run in runs]),
            "compile_ms": {k: entry([run["compile_ms"][k] for run in runs])
                           for k in ("cold_ms", "cached_ms", "cached_nopyc_ms", "cold_kernel_ms")},
            "load_average": [[run["load_average_at_start"], run["load_average_at_end"]] for run in runs],
            "runs": runs}


if __name__ == "__main__":
    results = REPO / "benchmarks" / "results"
    if "--one-run-to" in sys.argv:  # one of --runs N's runs, in its own process
        pathlib.Path(sys.argv[sys.argv.index("--one-run-to") + 1]).write_text(json.dumps(main()))
        sys.exit(0)
    n_runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    if n_runs == 1:
        res = main()
    else:
        runs = []
        with tempfile.TemporaryDirectory() as d:
            for i in range(n_runs):  # whole runs in new processes: one 1e6 row swings from run to run
                path = os.path.join(d, f"run{i}.json")
                subprocess.run([sys.executable, __file__, *(a for a in sys.argv[1:] if a != "--runs"
                                                             and a != str(n_runs)), "--one-run-to", path], check=True)
                runs.append(json.loads(pathlib.Path(path).read_text()))
        command = "nice python benchmarks/bench_fusion.py" + (" --quick" if QUICK else "") + f" --runs {n_runs}"
        summary = summarize(runs, command)
        (results / "fusion_runs.json").write_text(json.dumps(summary, indent=1) + "\n")
        print(json.dumps({k: {kk: vv["median"] for kk, vv in v.items()} if k in ("jax_jit_over_arrayx", "compile_ms")
                          else v for k, v in summary.items() if k != "runs"}, indent=1))
        res = runs[-1]
    out = results / "fusion.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {out}")
