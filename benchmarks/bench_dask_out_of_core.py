"""The Dask executor on an array larger than the machine's memory, against NumPy.

Run:  python benchmarks/bench_dask_out_of_core.py [--gib 28] [--numpy-gib 1]
      (writes benchmarks/results/dask_out_of_core.json)

The statistics a standardisation needs (mean, standard deviation, min, max) of ``x``, a float64
array of ``--gib`` GiB made lazily on the Dask executor from ``arrayx.arange`` (``x = arange(n) * 1e-9 +
3``, whose statistics are known in closed form: the values are checked): the same array-API code a client writes for NumPy arrays, read once
(one ``numpy.asarray`` of the four numbers), so the array is streamed chunk by chunk through
Dask's threads and never held.  Peak resident memory is measured (``ru_maxrss``).

NumPy cannot run it: the array alone needs ``--gib`` GiB, more than the machine's physical
memory (the script checks that, and does not try to allocate it - on a shared machine without
swap that would kill other processes).  "Ahead of NumPy" here means: the Dask executor gives the
result, within a memory budget of a few chunks, where NumPy gives a MemoryError (or swaps, where
there is swap); a NumPy user would have to rewrite the code as a loop over pieces.  For a rate
to compare, NumPy runs the same code on ``--numpy-gib`` GiB, which fits; the JSON records both
rates (elements per second) and both peak memories.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import resource
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def statistics(xp, n: int):
    """The client's code: one array-API function, any namespace."""
    x = xp.arange(n, dtype=xp.float64) * 1e-9 + 3.0
    return xp.stack([xp.mean(x), xp.std(x), xp.min(x), xp.max(x)])


def _child(which: str, n: int) -> None:
    """One measurement in a fresh process (its own peak memory): prints a JSON line."""
    import numpy as np

    t0 = time.perf_counter()
    c0 = time.process_time()
    if which == "numpy":
        out = statistics(np, n)
    else:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        import arrayx as ax

        with ax.use_executor("dask"):
            out = np.asarray(statistics(ax, n))
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": wall, "cpu_seconds": time.process_time() - c0, "peak_rss_bytes": peak,
                      "values": [float(v) for v in out]}))


def _measure(which: str, n: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", which, "--n", str(n)], capture_output=True,
                         text=True, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return json.loads(out.stdout.strip().splitlines()[-1])


def _physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=float, default=28.0, help="size of the array on the Dask executor, GiB")
    p.add_argument("--numpy-gib", type=float, default=1.0, help="size NumPy runs for a rate, GiB")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child, args.n)
        return 0
    memory = _physical_memory()
    n_big = int(args.gib * 2**30) // 8
    n_small = int(args.numpy_gib * 2**30) // 8
    if n_big * 8 <= memory:
        p.error(f"--gib {args.gib}: {n_big * 8 / 2**30:.1f} GiB fits in this machine's {memory / 2**30:.1f} GiB; "
                f"ask for more than the memory")
    print(f"physical memory {memory / 2**30:.1f} GiB; array {n_big * 8 / 2**30:.1f} GiB ({n_big:.3g} float64)",
          flush=True)
    small_numpy = _measure("numpy", n_small)
    small_dask = _measure("dask", n_small)
    big_dask = _measure("dask", n_big)
    for r, n in ((small_numpy, n_small), (small_dask, n_small), (big_dask, n_big)):
        want = [3.0 + 1e-9 * (n - 1) / 2, 1e-9 * ((n * n - 1) / 12) ** 0.5, 3.0, 3.0 + 1e-9 * (n - 1)]
        r["max_relative_error"] = max(abs(g - w) / abs(w) for g, w in zip(r["values"], want))
        assert r["max_relative_error"] < 1e-6, (r, want)
    for label, r, n in (("numpy", small_numpy, n_small), ("arrayx[dask]", small_dask, n_small),
                        ("arrayx[dask]", big_dask, n_big)):
        print(f"{label:<13} {n * 8 / 2**30:6.1f} GiB: {r['seconds']:7.2f} s wall ({n / r['seconds'] / 1e6:5.0f} M "
              f"elements/s), {r['cpu_seconds']:7.2f} s CPU ({n / r['cpu_seconds'] / 1e6:5.0f} M elements/CPU-s), "
              f"peak memory {r['peak_rss_bytes'] / 2**30:.2f} GiB, max relative error {r['max_relative_error']:.1e}",
              flush=True)
    print(f"numpy {n_big * 8 / 2**30:.1f} GiB: not run - the array alone exceeds the {memory / 2**30:.1f} GiB "
          f"of memory (MemoryError, or swapping where there is swap)")
    record = {
        "command": "python benchmarks/bench_dask_out_of_core.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.platform(),
        "cpus": os.cpu_count(), "physical_memory_bytes": memory, "load average": os.getloadavg(),
        "code": "x = arange(n) * 1e-9 + 3; stack([mean(x), std(x), min(x), max(x)])",
        "numpy_small": {"n": n_small, **small_numpy}, "dask_small": {"n": n_small, **small_dask},
        "dask_big": {"n": n_big, **big_dask},
        "numpy_big": f"not run: {n_big * 8} bytes for the array alone > {memory} bytes of physical memory",
        "ahead": "the Dask executor computes the result at a size NumPy cannot hold; per element, compare "
                 "the rates of numpy_small and dask_big",
    }
    out = ROOT / "benchmarks" / "results" / "dask_out_of_core.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
