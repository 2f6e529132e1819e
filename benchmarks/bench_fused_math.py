"""Accuracy of the inline transcendentals fused kernels use (arrayx/executors/numba/math.py).

Run:  nice python benchmarks/bench_fused_math.py [--quick]
      (writes benchmarks/results/fused_math_ulp.json; ``_quick.json`` with --quick)
      NUMBA_CPU_NAME=x86-64 NUMBA_CPU_FEATURES=+sse2,-avx,-avx2,-fma,-fma4,-f16c \
          nice python benchmarks/bench_fused_math.py --stride 16
      (the same compiled for a CPU without FMA or AVX, every 16th float32: fused_math_ulp_x86-64.json)

float32: every one of the 2**32 bit patterns (``--quick``: every 251st, ``--stride N``: every Nth), the reference being the
C library's float64 function rounded to float32 (its error, < 1 float64 ulp, cannot move a
float32 result by more than a rounding).  float64: a dense sample (8e6 uniform points over each
function's interesting range plus 8e6 log-spaced magnitudes, half of each sign; --quick: 2e5), the reference
NumPy's ``longdouble`` function (80-bit on x86).  Errors are in units in the last place of the
result dtype; NaN, +-inf and -0 results must be exactly the reference's (counted as
``special_mismatches``).  The conformance tolerances (conformance/differential: rtol 2e-5 for
float32, 1e-12 for float64) allow ~170 and ~4500 ulp.
"""
from __future__ import annotations

import json
import math
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

numba.config.THREADING_LAYER = "workqueue"  # (the default layer spins: several times slower on a shared machine)

from arrayx.executors.numba import math as nm  # noqa: E402

QUICK = "--quick" in sys.argv
STRIDE = int(sys.argv[sys.argv.index("--stride") + 1]) if "--stride" in sys.argv else 251 if QUICK else 1


def _f32_sweep(fast, ref):
    @njit(parallel=True, error_model="numpy")
    def sweep(stride):
        chunks = 64
        total = (1 << 32) // stride
        worst = np.zeros(chunks)
        where = np.zeros(chunks, np.int64)
        special = np.zeros(chunks, np.int64)
        for c in prange(chunks):
            lo = total * c // chunks
            hi = total * (c + 1) // chunks
            for k in range(lo, hi):
                bits = k * stride
                x = nm.f32_from_bits(bits)
                got = fast(x)
                want = np.float32(ref(np.float64(x)))
                if want != want or got != got or abs(want) == np.inf or abs(got) == np.inf or want == 0:
                    same = (want != want and got != got) or (got == want and (math.copysign(1.0, got)
                                                                              == math.copysign(1.0, want)))
                    if not same:
                        special[c] += 1
                    continue
                gb = nm.bits_of_f32(got)
                wb = nm.bits_of_f32(want)
                if (gb < 0) != (wb < 0):
                    err = 1e9
                else:
                    err = abs(float(gb - wb))
                if err > worst[c]:
                    worst[c] = err
                    where[c] = bits
        return worst, where, special
    return sweep


def _ulp64(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(want).astype(np.float64))
    return (np.abs(got.astype(np.longdouble) - want) / spacing).astype(np.float64)


def _f64_sample(name: str, fast, ref_ld, lo: float, hi: float) -> dict:
    rng = np.random.default_rng(0)
    n = 200_000 if QUICK else 8_000_000
    x = np.concatenate([rng.uniform(lo, hi, n), np.geomspace(1e-300, hi, n // 2),
                        -np.geomspace(1e-300, -lo, n // 2), [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324]])

    @njit(parallel=True, error_model="numpy")
    def run(x, out):
        for i in prange(x.size):
            out[i] = fast(x[i])

    got = np.empty_like(x)
    run(x, got)
    want = ref_ld(x.astype(np.longdouble))
    want64 = want.astype(np.float64)
    special = ~np.isfinite(want64) | (want64 == 0) | ~np.isfinite(got)
    mismatch = special & ~((np.isnan(got) & np.isnan(want64)) | ((got == want64) & (np.signbit(got) == np.signbit(want64))))
    ok = ~special
    err = _ulp64(got[ok], want[ok])
    i = int(np.argmax(err))
    return {"max_ulp": round(float(err[i]), 3), "at": float(x[ok][i]), "points": int(x.size),
            "special_mismatches": int(mismatch.sum())}


def main() -> dict:
    from numba.core import config

    from arrayx.executors.numba.fusion import contract as _numba_contract

    out: dict = {"float32": {}, "float64": {}, "stride": STRIDE,
                 "target": {"cpu": config.CPU_NAME or "host", "fma": _numba_contract.hardware_fma()}}
    for name, fast, ref in (("exp", nm.exp32, math.exp), ("expm1", nm.expm1_32, math.expm1),
                            ("tanh", nm.tanh32, math.tanh)):
        t = time.perf_counter()
        fast_j = fast
        ref_j = njit(inline="always")(lambda v, f=ref: f(v))
        worst, where, special = _f32_sweep(fast_j, ref_j)(STRIDE)
        c = int(np.argmax(worst))
        out["float32"][name] = {"max_ulp": float(worst[c]), "at": float(nm_f32(int(where[c]))),
                                "inputs": (1 << 32) // STRIDE, "special_mismatches": int(special.sum()),
                                "seconds": round(time.perf_counter() - t, 1)}
        print(name, "float32", out["float32"][name], flush=True)
    for name, fast, ref, lo, hi in (("exp", nm.exp64, np.exp, -745.2, 709.8),
                                    ("expm1", nm.expm1_64, np.expm1, -40.0, 709.8),
                                    ("tanh", nm.tanh64, np.tanh, -20.0, 20.0)):
        out["float64"][name] = _f64_sample(name, fast, ref, lo, hi)
        print(name, "float64", out["float64"][name], flush=True)
    return out


def nm_f32(bits: int) -> float:
    return float(np.array([bits & 0xFFFFFFFF], np.uint32).view(np.float32)[0])


if __name__ == "__main__":
    res = main()
    from numba.core import config

    name = "fused_math_ulp" + ("_quick" if QUICK else "") + (f"_{config.CPU_NAME}" if config.CPU_NAME not in (None, "host") else "")
    path = REPO / "benchmarks" / "results" / f"{name}.json"
    path.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {path}")
