"""The jax executor's malloc settings (arrayx/executors/common/heap.py): speed against memory kept.

Run:  python benchmarks/bench_jax_heap.py [--quick]
      (writes benchmarks/results/jax_heap.json)

Each setting runs in its own process (malloc's settings are process-wide and taken once):
``ARRAYX_JAX_REUSE_MEMORY=1`` (freed heap reused, at most ``heap.keep_bound()`` of it kept
resident) and ``=0`` (glibc's defaults: every large block mapped afresh and handed back on free).

- ``a + 1.0`` on 100,000 x 64 float64 (a 51 MB result) on the jax executor, eager: best wall and
  CPU time per call, and page faults per call.
- resident memory kept after a NumPy program frees 60 arrays of 40 MB that sit under small live
  blocks (so glibc's own trim of the heap's top cannot hand them back), read after 1 s.
"""
from __future__ import annotations

import json
import os
import pathlib
import platform
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import numpy as np
    import arrayx as ax

    def resident():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))

    def speed(calls):
        with ax.use_executor("jax"):
            a = ax.asarray(np.random.default_rng(0).normal(size=(100_000, 64)))
            (a + 1.0)._buf.block_until_ready()
            walls, cpus, faults = [], [], []
            for _ in range(calls):
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                c0, w0 = time.process_time(), time.perf_counter()
                (a + 1.0)._buf.block_until_ready()
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
                faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        return {"wall_ms": min(walls) * 1e3, "cpu_ms": min(cpus) * 1e3,
                "faults_per_call": sorted(faults)[len(faults) // 2]}

    def kept():
        before = resident()
        blocks, live = [], []
        for _ in range(60):
            blocks.append(np.ones(5_000_000))
            live.append(np.ones(100))
        del blocks
        time.sleep(1.0)
        return {"kept_after_free_mb": (resident() - before) / 1e6}

    assert "jax" in ax.executors()
    calls = int(sys.argv[1])
    print(json.dumps(speed(calls) if calls else kept()))
""")


def main(quick: bool = False) -> dict:
    calls = 20 if quick else 100
    rows = {}
    for reuse in ("1", "0"):
        r = {}
        for arg in (str(calls), "0"):  # the speed, then the memory kept, each in a fresh process
            out = subprocess.run([sys.executable, "-c", _CHILD, arg], capture_output=True, text=True,
                                 check=True, env={**os.environ, "ARRAYX_JAX_REUSE_MEMORY": reuse})
            r.update(json.loads(out.stdout))
        rows[f"ARRAYX_JAX_REUSE_MEMORY={reuse}"] = r
        print(f"REUSE_MEMORY={reuse}: a + 1.0 (51 MB) {r['wall_ms']:.2f} ms wall, {r['cpu_ms']:.2f} ms CPU, "
              f"{r['faults_per_call']} faults per call; kept after freeing 60 x 40 MB: "
              f"{r['kept_after_free_mb']:.0f} MB")
    path = pathlib.Path(__file__).parent / "results" / "jax_heap.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({
        "command": "python benchmarks/bench_jax_heap.py" + (" --quick" if quick else ""),
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "rows": rows}, indent=2))
    return rows


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
