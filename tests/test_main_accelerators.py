"""python -m arrayx on a machine with an accelerator: a problem large enough for it to show, full-precision
float32 products (the results are compared with NumPy's), and a line that says so."""
from __future__ import annotations

import json

import numpy as np

import pytest

from arrayx import __main__ as job
from arrayx.core import executor as base


@pytest.fixture
def numpy_as_accelerator(monkeypatch):
    """The NumPy executor's device reported as an accelerator ("tpu")."""
    monkeypatch.setattr(type(base.get("numpy")), "platform_of", lambda self, device: "tpu")
    monkeypatch.setattr(job, "ACCELERATOR_SIZE", 1024)  # small, for the test's time
    seen = []
    real = job.run_executor

    def spy(name, size, steps):
        import arrayx

        seen.append((name, size, arrayx.core.precision.current()))
        return real(name, size, steps)

    monkeypatch.setattr(job, "run_executor", spy)
    return seen


def test_cpu_only_keeps_the_small_default(capsys):
    assert job.main(["--executor", "numpy", "--steps", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["size"] == job.DEFAULT_SIZE
    assert report["accelerators"] == []


def test_accelerator_raises_the_size_and_the_precision(numpy_as_accelerator, capsys):
    assert job.main(["--executor", "numpy", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "accelerators: numpy:cpu; 1024 examples (--size to change)" in out
    assert "every executor agrees with numpy" in out
    assert numpy_as_accelerator == [("numpy", 1024, "highest")]


def test_size_given_wins(numpy_as_accelerator, capsys):
    assert job.main(["--executor", "numpy", "--steps", "2", "--size", "512", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["size"] == 512


# -- the agreement bound follows the device's float32 accuracy ---------------------------------------


def test_cpu_keeps_the_tight_bound():
    assert job.tolerance_for("numpy") == (job.TOLERANCE, "") == (1e-5, "")


def test_tpu_bound_is_looser_with_the_reason(numpy_as_accelerator):
    tol, why = job.tolerance_for("numpy")
    assert tol == job.ACCELERATOR_TOLERANCE == 1e-4
    assert "not correctly rounded" in why and "tpu-float32-transcendentals" in why


def test_other_accelerators_get_the_generic_reason(monkeypatch):
    monkeypatch.setattr(type(base.get("numpy")), "platform_of", lambda self, device: "gpu")
    assert job.tolerance_for("numpy") == (1e-4, job.GENERIC_ACCELERATOR_REASON)


def test_a_difference_between_the_bounds_fails_on_cpu_and_passes_on_a_tpu(monkeypatch, capsys):
    """A second executor whose results differ by 3e-5 (a jit(scan) on a TPU measured 3.67e-5): DIFFERS
    against the CPU bound, agreement within the TPU bound, whose reason is printed and kept in the JSON."""
    from arrayx.executors.numpy import NumpyExecutor

    class Second(NumpyExecutor):
        name = "second"

    second = Second()
    monkeypatch.setitem(base._registry, "second", second)
    real = job.run_executor

    def shifted(name, size, steps):
        out = real("numpy", size, steps)
        if name == "second":
            for r in out.values():
                r["results"] = [a + np.float32(3e-5) for a in r["results"]]
        return out

    monkeypatch.setattr(job, "run_executor", shifted)
    assert job.main(["--executor", "numpy,second", "--steps", "2", "--size", "512"]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS (> 1e-05)" in out and "max |diff| <= 1e-05;" in out

    monkeypatch.setattr(Second, "platform_of", lambda self, device: "tpu")
    assert job.main(["--executor", "numpy,second", "--steps", "2", "--size", "512", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tolerances"]["second"]["max_abs_diff"] == 1e-4
    assert "not correctly rounded" in report["tolerances"]["second"]["reason"]
    assert report["tolerances"]["numpy"] == {"max_abs_diff": 1e-5, "reason": ""}
    assert all(r["agrees"] and r["tolerance"] == 1e-4 and 2e-5 < r["max_abs_diff"] < 1e-4
               for r in report["results"]["second"].values())
    assert job.main(["--executor", "numpy,second", "--steps", "2", "--size", "512"]) == 0
    out = capsys.readouterr().out
    assert "second: results agree within 1e-04 there, not 1e-05: XLA:TPU's float32 exp and log" in out
    assert "max |diff| <= 1e-05, 1e-04 on second;" in out
