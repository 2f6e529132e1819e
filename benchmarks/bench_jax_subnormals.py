"""Can the jax executor keep subnormals?  What switching flush-to-zero off, or correcting it, costs.

Run:  python benchmarks/bench_jax_subnormals.py [--quick]
      (writes benchmarks/results/jax_subnormals.json)

XLA's CPU runtime sets the FTZ/DAZ bits around every execution, so subnormal operands read as 0
and subnormal results become 0 (``asarray([1e-40], float32) * 1.0`` is 0).  This measures:

1. whether ``XLA_FLAGS=--xla_cpu_ftz=false`` (the flag exists in this jaxlib) changes that, in a
   fresh process per setting;
2. the cost of the cheapest correction that could route affected ops elsewhere: detecting
   subnormal operands, which needs a bitcast (comparisons are flushed too: ``1e-310 == 0`` is
   True under DAZ), against the op itself (a jitted add of 10^6 float64), side by side.  It
   would still miss results flushed from normal operands (``1e-200 * 1e-110``).
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import timeit

PROBE = """
import jax; jax.config.update('jax_enable_x64', True)
import jax.numpy as jnp, numpy as np, json
x = jnp.asarray(np.array([1e-40], np.float32))
d = jnp.asarray(np.array([1e-310]))
print(json.dumps({"f32 1e-40 * 1.0": float(np.asarray(x * 1.0)[0]), "f64 1e-310 * 1.0": float(np.asarray(d * 1.0)[0]),
                  "f64 1e-310 == 0": bool(np.asarray(d == 0)[0]),
                  "f64 1e-200 * 1e-110": float(np.asarray(jnp.asarray(1e-200) * jnp.asarray(1e-110)))}))
"""


def probe(flags: str) -> dict:
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def detection_cost(n: int, number: int, repeat: int) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    def subnormal(a):
        bits = jax.lax.bitcast_convert_type(a, jnp.int64) & 0x7FFFFFFFFFFFFFFF
        return jnp.any((bits != 0) & (bits < 0x0010000000000000))

    x = jnp.asarray(np.random.default_rng(0).standard_normal(n))
    y = x + 1.0
    add = jax.jit(lambda a, b: a + b)
    checked = jax.jit(lambda a, b: (a + b, subnormal(a) | subnormal(b)))
    times = {}
    for label, fn in (("add us", add), ("add + subnormal check us", checked)):
        jax.block_until_ready(fn(x, y))
        times[label] = min(timeit.repeat(lambda: jax.block_until_ready(fn(x, y)), number=number, repeat=repeat)) / number * 1e6
    times["ratio"] = times["add + subnormal check us"] / times["add us"]
    return times


def main(quick: bool = False) -> dict:
    result = {
        "default": probe(""),
        "--xla_cpu_ftz=false": probe("--xla_cpu_ftz=false"),
        "detection, 1e6 float64": detection_cost(10**6, 5 if quick else 50, 3 if quick else 7),
    }
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    result = main(quick)
    if not quick:
        out = pathlib.Path(__file__).parent / "results" / "jax_subnormals.json"
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {out}")
