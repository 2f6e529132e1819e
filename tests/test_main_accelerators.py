"""python -m arrayx on a machine with an accelerator: a problem large enough for it to show, full-precision
float32 products (the results are compared with NumPy's), and a line that says so."""
from __future__ import annotations

import json

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
