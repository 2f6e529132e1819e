"""Compile time of jit's fused kernels on the Numba executor by region size (issue 25, item 6).

A chain of N elementwise ops (one region when uncapped) is jitted in a fresh process with an
empty kernel cache; the first call's time is compile time, the best of the next calls the run
time.  ``--cap K`` sets ``numba.fusion.lowering.MAX_REGION_OPS`` (0: no cap, one kernel per chain).

    python benchmarks/bench_numba_region_size.py --ops 200 1000 --cap 0 64
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, time
import numpy as np
import arrayx as xp
import arrayx.executors.numba.fusion.lowering as _numba_fusion
n, cap = int(sys.argv[1]), int(sys.argv[2])
_numba_fusion.MAX_REGION_OPS = cap or None

def chain(x):
    y = x
    for i in range(n // 2):
        y = (y * 0.999 + 0.001) if i % 2 else xp.sin(y) + 0.5
    return y

with xp.use_executor("numba"):
    x = xp.asarray(np.linspace(-1, 1, 1 << 16))
    jf = xp.jit(chain)
    t = time.perf_counter()
    jf(x)
    first = time.perf_counter() - t
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        jf(x)
        runs.append(time.perf_counter() - t)
    regions = len(jf.trace(x).graph.derived[next(k for k in jf.trace(x).graph.derived if k[:2] == ("compiled", "numba"))].regions)
print(json.dumps({"ops": n, "cap": cap, "regions": regions, "first_call_s": round(first, 3), "run_ms": round(min(runs) * 1e3, 3)}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, nargs="+", default=[200, 1000])
    p.add_argument("--cap", type=int, nargs="+", default=[0, 64])
    args = p.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for n in args.ops:
        for cap in args.cap:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=cache, PYTHONPATH=repo)
                out = subprocess.run([sys.executable, "-c", _CHILD, str(n), str(cap)], env=env, capture_output=True,
                                     text=True, timeout=1800)
                if out.returncode:
                    print(out.stderr[-2000:], file=sys.stderr)
                    continue
                print(json.dumps(json.loads(out.stdout.strip().splitlines()[-1])), flush=True)


if __name__ == "__main__":
    main()
