"""``python -m arrayx``: its workload agrees across executors, and the command itself succeeds."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

import arrayx as xp
from arrayx.__main__ import workload


def test_workload_agrees_with_the_numpy_executor(executor):
    got = {k: np.asarray(v) for k, v in workload(xp).items()}
    with xp.use_executor("numpy"):
        want = {k: np.asarray(v) for k, v in workload(xp).items()}
    assert set(got) == set(want) and {"grad", "solve", "random.uniform"} <= set(got)
    for k, w in want.items():
        assert got[k].dtype == w.dtype and got[k].shape == w.shape, k
        if k.startswith("random.") or w.dtype.kind not in "fc":
            np.testing.assert_array_equal(got[k], w, err_msg=k)
        else:
            np.testing.assert_allclose(got[k], w, rtol=1e-9, atol=1e-9, err_msg=k)


def test_python_m_arrayx_reports_every_executor_and_agreement():
    out = subprocess.run([sys.executable, "-m", "arrayx", "--repeat", "1"], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "numpy" in out.stdout and "all equal to numpy" in out.stdout
    assert "DIFFERS" not in out.stdout and "failed" not in out.stdout
