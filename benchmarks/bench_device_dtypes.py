"""What per-device default dtypes cost the eager creation path (issue #41 point 1).

Creation functions now look up the defaults of the device they create on (a dict lookup cached
per executor and device) and index results that of their operand's device.  This times those
calls on the numpy executor, microseconds of CPU time per call (the process's own, so that other
processes on a shared machine disturb it less), best of interleaved rounds:

    python benchmarks/bench_device_dtypes.py [--rounds 7] [--number 20000]

To compare two trees, run it with each tree first on ``sys.path`` (``PYTHONPATH=/path/to/tree``),
alternating; the figures measured are in docs/executors.rst ("Default dtypes per device").
"""
from __future__ import annotations

import argparse
import time
import timeit

import numpy as np


def cases():
    import arrayx as ax

    host = np.ones((4, 5))
    values = [1.0, 2.0, 3.0]
    x = ax.asarray(host)
    small = ax.asarray(np.arange(5, dtype=np.int8))
    return {
        "zeros((4, 5))": lambda: ax.zeros((4, 5)),
        "ones(3, dtype=float32)": lambda: ax.ones(3, dtype=ax.float32),
        "asarray(numpy array)": lambda: ax.asarray(host),
        "asarray(list)": lambda: ax.asarray(values),
        "asarray(2.0)": lambda: ax.asarray(2.0),
        "arange(10)": lambda: ax.arange(10),
        "full(3, 1.5)": lambda: ax.full(3, 1.5),
        "sum(int8 array)": lambda: ax.sum(small),
        "argmax": lambda: ax.argmax(x),
        "astype(float32)": lambda: ax.astype(x, ax.float32),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=20000)
    args = ap.parse_args()
    fns = cases()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(args.rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], timeit.timeit(fn, number=args.number, timer=time.process_time) / args.number)
    for name, t in best.items():
        print(f"{name:24s} {t * 1e6:7.3f} us")


if __name__ == "__main__":
    main()
