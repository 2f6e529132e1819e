"""``python -m arrayx``: its jobs agree across executors and train, and the command itself reports that."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import arrayx as xp
from arrayx import __main__ as main_job


def test_jobs_agree_with_the_numpy_executor(executor):
    got = main_job.run_executor(executor, size=1024, steps=3)
    want = main_job.run_executor("numpy", size=1024, steps=3)
    assert set(got) == {"train", "per-example", "scan"}
    for job in got:
        g, w = got[job]["results"], want[job]["results"]
        assert [a.shape for a in g] == [a.shape for a in w] and all(a.dtype == np.float32 for a in g), job
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=0, atol=main_job.TOLERANCE, err_msg=job)
        assert got[job]["per_call_s"] > 0 and got[job]["first_call_s"] > 0


def test_the_jobs_compute_what_they_claim():
    """Training lowers the loss; per-example gradients average to the full gradient; scan runs every minibatch."""
    x, y = main_job.problem(1024)
    res = main_job.run_executor("numpy", size=1024, steps=5)
    w, b = res["train"]["results"]
    z0 = np.zeros(len(y))
    z = x @ w + b
    start_loss, end_loss = np.mean(np.logaddexp(0, z0) - y * z0), np.mean(np.logaddexp(0, z) - y * z)
    assert end_loss < start_loss - 0.05  # 5 steps of gradient descent from zero
    gw, gb = res["per-example"]["results"]
    assert gw.shape == (1024, main_job.FEATURES) and gb.shape == (1024,)
    p = 0.5  # at zero parameters the sigmoid is 1/2: d loss_i / d w = (1/2 - y_i) x_i
    np.testing.assert_allclose(gw, (p - y)[:, None] * x, rtol=1e-6, atol=1e-6)
    (sw, sb, losses) = res["scan"]["results"]
    assert losses.shape == (1024 // main_job.BATCH,) and losses[0] == pytest.approx(np.log(2), rel=1e-6)


@pytest.mark.slow  # the main job, in a subprocess
def test_python_m_arrayx_prints_agreement_and_writes_json(tmp_path):
    out = subprocess.run([sys.executable, "-m", "arrayx", "--size", "1024", "--steps", "3"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "every executor agrees with numpy" in out.stdout and "DIFFERS" not in out.stdout
    for ex in ("numpy", "numba", "jax", "dask"):
        if xp.executors.get(ex).available():
            assert f"\n{ex:<8} train" in out.stdout, out.stdout
    path = tmp_path / "main.json"
    out = subprocess.run([sys.executable, "-m", "arrayx", "--executor", "numpy", "--size", "512", "--steps", "2",
                          "--json", str(path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(path.read_text())
    assert data["tolerance"] == main_job.TOLERANCE and data["size"] == 512
    assert {e["executor"] for e in data["executors"]} >= {"numpy", "cupy"}
    assert all(e["available"] or e["reason"] for e in data["executors"])
    numpy = data["results"]["numpy"]
    assert set(numpy) == {"train", "per-example", "scan"}
    assert all(r["agrees"] and r["max_abs_diff"] == 0.0 and r["speed_vs_numpy"] == 1.0 for r in numpy.values())


def test_unknown_executor_is_refused_with_the_registered_names(capsys):
    # the command's main in this process (``python -m arrayx`` is ``sys.exit(main())``; the command
    # itself runs in the slow test above): a fresh interpreter cost ~2.4 s of CPU importing arrayx
    try:
        code = main_job.main(["--executor", "nope"])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and "'nope'" in err and "registered" in err, (code, err)
