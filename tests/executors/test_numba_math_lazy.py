"""_numba_math defines its functions on first use: a new kernel compiles in a fresh process (the
intrinsics made while Numba types it are found), and a kernel loaded from the disk cache does
not run the definitions."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from arrayx.core import executor as base

NUMBA = base.get("numba")
pytestmark = pytest.mark.skipif(not NUMBA.available(), reason=f"executor 'numba' unavailable: {NUMBA.unavailable_reason}")

_CHILD = r"""
import json, sys
import numpy as np
import arrayx as ax
from arrayx import random as xr
import arrayx.executors.numba.fusion.lowering as _numba_fusion, arrayx.executors.numba.math as _numba_math
x = ax.asarray(np.linspace(-2, 2, 50_000), device="numba")
with ax.use_executor("numba"):
    selu = ax.jit(lambda x: 1.0507 * ax.where(x > 0, x, 1.6733 * (ax.exp(x) - 1.0)))
    draw = ax.jit(lambda k: xr.normal(k, (50_000,), dtype=ax.float64))
    z, y = np.asarray(draw(xr.key(5))), np.asarray(selu(x))  # fma (an intrinsic) is the first name read
    failed = [r.failed for f, a in ((selu, x), (draw, xr.key(5))) for fn in f.trace(a).graph.derived.values()
              for r in getattr(fn, "regions", ())]
print(json.dumps({"failed": failed, "defined": _numba_math._defined, "stats": _numba_fusion.kernel_stats(),
                  "y": float(y.sum()), "z": float(z.sum())}))
"""


def _run(cache) -> dict:
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_new_kernels_compile_and_cached_ones_skip_the_definitions(tmp_path):
    first = _run(tmp_path)
    assert first["failed"] and all(f is None for f in first["failed"])  # compiled, none fell back
    assert first["defined"] and first["stats"]["compiled"] >= 2
    again = _run(tmp_path)
    assert again["stats"]["compiled"] == 0 and again["stats"]["loaded"] >= 2
    assert again["defined"] is False  # loading linked kernels imported the module, not its definitions
    assert (again["y"], again["z"]) == (first["y"], first["z"])
