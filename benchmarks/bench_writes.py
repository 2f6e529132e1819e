"""Per-op time of getitem, setitem and in-place operators on tiny arrays, per executor.

Run:  python benchmarks/bench_writes.py [executor ...]     (default: numpy jax)

Thread CPU time (``time.thread_time``), best of 7 repeats; prints one line per executor.  The
figure to compare is the same op before and after a change (views of JAX/Dask arrays are linked to
their base, functional writes hold a lock: see arrayx/api/_views.py).
"""
from __future__ import annotations

import pathlib
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # this checkout's arrayx
import arrayx as ax  # noqa: E402


def best(fn, number: int, repeat: int = 7) -> float:
    return min(timeit.Timer(fn, timer=time.thread_time).repeat(number=number, repeat=repeat)) / number * 1e6


def main(executors) -> None:
    for name in executors:
        with ax.use_executor(name):
            x = ax.asarray(np.arange(1.0, 9.0))
            m = ax.asarray(np.arange(16.0).reshape(4, 4))
            ops = {
                "x[1:3]": lambda: x[1:3],
                "m[1, 2:]": lambda: m[1, 2:],
                "m[1]": lambda: m[1],
                "x[2] = 1.0": lambda: x.__setitem__(2, 1.0),
                "m[1, 2:] = 1.0": lambda: m.__setitem__((1, slice(2, None)), 1.0),
                "x += 1.0": lambda: x.__iadd__(1.0),
            }
            n = 20000 if name in ("numpy", "numba") else 1000
            print(name, "  ".join(f"{k}: {best(op, n):.2f}us" for k, op in ops.items()))


if __name__ == "__main__":
    main(sys.argv[1:] or ["numpy", "jax"])
