"""The bit-exact draws of arrayx.random, as digests: one process's against another's.

test_random.py ties these draws to ``jax.random`` bit for bit in its own process.  On a CPU with
AVX-512 NumPy runs other SIMD code for ``log``/``exp``/...; the draws must not move with it, so
test_random.py computes this battery here and in a fresh process with those loops off
(``NPY_DISABLE_CPU_FEATURES``) and compares the digests: equal digests plus the in-process
equality with jax.random is the file's whole claim on the other kind of CPU, without rerunning
its jax references (XLA compiles for every shape; they do not depend on NumPy's SIMD loops).

Run:  python -m tests.random_battery eager jit   (prints {run: {draw: sha256}} as JSON)
"""
from __future__ import annotations

import hashlib
import json
import math
import sys

import numpy as np

#: run -> (seeds, shapes, every float32 too): every sampler with a float path, both float dtypes.
#: Eagerly, the sizes eager slicing splits and every float32 uniform value; under ``jit`` (the
#: path transforms and Dask's lazy arrays take: every branch everywhere, then select; Dask's
#: chunks run the same NumPy loops, at seconds per draw) a few small draws.
PLAN = {"eager": ((0, 42, -1, 2**40 + 3), ((7,), (3, 5), (20000,)), True),
        "jit": ((-1,), ((3, 5),), False)}


def float32_grid():
    """Every float32 a float32 uniform can take (2**23 of them), and the erf^-1 argument built from it."""
    import arrayx as xp

    floats = xp.asarray(np.arange(2**23, dtype=np.uint32).astype(np.float32) * np.float32(2.0**-23))
    lo = float(np.nextafter(np.float32(-1), np.float32(0)))
    return floats, xp.maximum(floats * 2.0 + lo, lo)  # 1 - lo rounds to 2 in float32: the product is exact


#: exp and log by the C library, element by element: the inputs must not move with NumPy's SIMD
#: loops (on an AVX-512 CPU ``numpy.exp`` differs between the two processes this battery compares)
_libm_exp = np.frompyfunc(math.exp, 1, 1)
_libm_log = np.frompyfunc(math.log, 1, 1)


def _helper_inputs(dtype, n: int) -> np.ndarray:
    rng = np.random.default_rng(8)
    edges = [0.0, -0.0, 0.41421354, -0.41421354, 0.4142135623730951, np.nextafter(1, 0), 1.0, -1.0]
    near_one = 1 - _libm_exp(-rng.uniform(0, 37, n // 5)).astype(np.float64)
    return np.concatenate([rng.uniform(-1, 1, n), near_one, -near_one, edges]).astype(dtype)


def calls(seeds, shapes, every_float32: bool) -> dict:
    """Draw name -> (function, argument): the battery, each call a function of one array."""
    import arrayx as xp
    from arrayx import _random_math
    from arrayx import random as xr

    out = {}
    p4 = [0.1, 0.2, 0.3, 0.4]
    logits = _libm_log(np.random.default_rng(0).dirichlet(np.ones(5), size=3)).astype(np.float64)
    for dtype in (xp.float32, xp.float64):
        name = np.dtype(dtype).name
        for seed in seeds:
            k = xr.key(seed)
            for shape in shapes:
                tag = f"{name}/{seed}/{'x'.join(map(str, shape))}"
                out[f"normal/{tag}"] = (lambda k, s=shape, d=dtype: xr.normal(k, s, d)), k
                out[f"exponential/{tag}"] = (lambda k, s=shape, d=dtype: xr.exponential(k, s, d)), k
                out[f"gumbel/{tag}"] = (lambda k, s=shape, d=dtype: xr.gumbel(k, s, d)), k
                out[f"gumbel-high/{tag}"] = (lambda k, s=shape, d=dtype: xr.gumbel(k, s, d, mode="high")), k
                out[f"uniform/{tag}"] = (lambda k, s=shape, d=dtype: xr.uniform(k, s, d, -2.0, 3.0)), k
                out[f"truncated_normal/{tag}"] = (lambda k, s=shape, d=dtype: xr.truncated_normal(k, -0.3, 2.0, s, d)), k
            p = xp.asarray(p4, dtype=dtype)
            out[f"choice-p/{name}/{seed}"] = (lambda k, p=p: xr.choice(k, 4, (3,), replace=False, p=p)), k
            lg = xp.asarray(logits, dtype=dtype)
            out[f"categorical/{name}/{seed}"] = (lambda k, lg=lg: xr.categorical(k, lg, shape=(200, 3))), k
            pb = xp.asarray(np.linspace(0.05, 0.95, 12), dtype=dtype)
            out[f"bernoulli/{name}/{seed}"] = (lambda k, pb=pb: xr.bernoulli(k, pb)), k
        x = xp.asarray(_helper_inputs(dtype, 100_000 if every_float32 else 2_000))
        out[f"_log1p/{name}"] = _random_math._log1p, x
        out[f"_erf_inv/{name}"] = _random_math._erf_inv, x
    for cdtype in (xp.complex64, xp.complex128):
        out[f"normal/{np.dtype(cdtype).name}"] = (lambda k, d=cdtype: xr.normal(k, (500,), d)), xr.key(2)
    rng, n = np.random.default_rng(9), 100_000 if every_float32 else 2_000
    x32 = np.concatenate([rng.uniform(0, 3, n), _libm_exp(rng.uniform(-87, 88, n)).astype(np.float64),
                          [0.0, 1.0, 2.0**-126, np.inf, 3.4e38]]).astype(np.float32)
    out["_log32"] = _random_math._log32, xp.asarray(x32)
    if every_float32:
        floats, u = float32_grid()
        out["every-float32/_erf_inv"] = _random_math._erf_inv, u
        out["every-float32/_log1p"] = (lambda f: _random_math._log1p(-f)), floats
    return out


def digests(run: str) -> dict:
    """Draw name -> sha256 of its dtype, shape and bytes, on the NumPy executor, eager or under jit."""
    import arrayx as xp

    with xp.use_executor("numpy"), np.errstate(divide="ignore", invalid="ignore"):  # erf^-1(+-1) = +-inf
        got = {name: np.asarray(xp.jit(fn)(arg) if run == "jit" else fn(arg))
               for name, (fn, arg) in calls(*PLAN[run]).items()}
    return {name: hashlib.sha256(f"{a.dtype}{a.shape}".encode() + np.ascontiguousarray(a).tobytes()).hexdigest()
            for name, a in got.items()}


if __name__ == "__main__":
    print(json.dumps({run: digests(run) for run in sys.argv[1:]}))
