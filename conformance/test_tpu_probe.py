"""The TPU probe's supervisor survives a child that dies, and its committed results are explained:
every disagreement seen on the chip is a per-platform deviation (conformance/deviations.py), every
abort or internal XLA error is refused before XLA (arrayx/executors/jax/tpu_limits.py's test)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conformance import deviations, tpu_probe

REPO = pathlib.Path(__file__).parents[1]
RESULTS = sorted((REPO / "conformance" / "results").glob("tpu_probe*.json"))

#: the two supervisor runs below (test name -> extra environment, command-line arguments); both start
#: together, when the first of the selected ones needs its run: the hang probe's supervisor spends
#: most of its time waiting out the planted hang (5 s), which the other run's children fill
_SUPERVISED = {
    "test_a_dying_child_is_one_abort_and_the_rest_still_run": (
        {"ARRAYX_PROBE_ABORT_CASE": "<victim>"},
        ["-m", "conformance.tpu_probe", "--only", "sweep", "--first", "6", "--budget", "240"]),
    "test_the_hang_probe_records_a_call_that_never_returns_and_goes_on": (
        {"ARRAYX_PROBE_HANG_CASE": "2"}, ["-m", "conformance.tpu_hang_probe", "--only", "det", "--limit", "5"]),
}


def _victim() -> str:
    """The sweep case the dying-child run aborts (its third)."""
    return tpu_probe.all_cases(["sweep"])[:6][2][1].id


@pytest.fixture(scope="module")
def supervised(request, tmp_path_factory):
    """test name -> a function giving that run's (CompletedProcess-like result, JSON path) once it ends;
    the runs of the selected tests start at once, each in its own process."""
    selected = {item.name for item in request.session.items if item.path == request.node.path}
    started = {}
    for name, (extra, args) in _SUPERVISED.items():
        if name not in selected:
            continue
        out = tmp_path_factory.mktemp("probe") / "out.json"
        extra = {k: (_victim() if v == "<victim>" else v) for k, v in extra.items()}
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO), **extra)
        proc = subprocess.Popen([sys.executable, *args, "--json", str(out)], env=env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started[name] = (proc, out)

    def finished(name):
        proc, out = started[name]
        try:
            stdout, stderr = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), out

    yield finished
    for proc, _ in started.values():  # a test that failed before reading its run
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_dying_child_is_one_abort_and_the_rest_still_run(supervised):
    cases = tpu_probe.all_cases(["sweep"])[:6]
    victim = cases[2][1].id
    run, out = supervised("test_a_dying_child_is_one_abort_and_the_rest_still_run")
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(out.read_text())
    assert [r["id"] for r in data["results"]] == [c.id for _, c in cases]
    statuses = {r["id"]: r["status"] for r in data["results"]}
    assert statuses.pop(victim) == "abort"
    assert set(statuses.values()) <= {"ok", "not-applicable"}, statuses
    assert data["children"] == 2
    assert data["environment"]["platform"] == "cpu"


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_every_disagreement_on_the_chip_is_a_listed_deviation(path):
    data = json.loads(path.read_text())
    assert data["environment"]["platform"] == "tpu"
    summary = tpu_probe.summarize(data)
    differs = [u for u in summary["unexplained"] if ": DIFFERS: " in u]
    assert not differs, differs
    assert summary["ok"] > 0


def test_platform_entries_are_reasoned():
    ids = [d.id for d in deviations.PLATFORM_DEVIATIONS]
    assert len(ids) == len(set(ids))
    for d in deviations.PLATFORM_DEVIATIONS:
        assert d.id.startswith(d.platform + "-") and len(d.reason.split()) >= 15 and d.measured
    dev = deviations.classify_platform("tpu", "exp", ["float32"])
    assert dev is not None and dev.id == "tpu-float32-transcendentals"
    assert deviations.classify_platform("cpu", "exp", ["float32"]) is None
    assert deviations.classify_platform("tpu", "add", ["float32"]) is None  # exact there: not excused


def test_the_hang_probe_records_a_call_that_never_returns_and_goes_on(supervised):
    """conformance/tpu_hang_probe.py: a case past the limit is a ``hang``, a new child runs the rest."""
    run, out = supervised("test_the_hang_probe_records_a_call_that_never_returns_and_goes_on")
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(out.read_text())
    outcomes = [c["outcome"] for c in data["cases"]]
    assert len(outcomes) == 30 and outcomes[2] == "hang", (outcomes, run.stdout[-2000:])
    assert outcomes[:2] + outcomes[3:] == ["ok"] * 29
    assert data["device"] == "Device('jax:cpu:0')"
