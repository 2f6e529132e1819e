"""Which cases ``python -m conformance.tpu_probe`` runs: the complex128 linalg group, ``--from`` (a
run that ran out of budget carries on at a case), and a child that stops after a TPU core halted
(its later programs would all fail) -- checked on the CPU without starting children."""
from __future__ import annotations

import json
import re

import pytest

from conformance import report, tpu_probe


def test_linalg64_widens_every_floating_linalg_example_to_complex128():
    from conformance.differential.table.examples import CASES

    cases = [c for g, c in tpu_probe.all_cases(["linalg64"])]
    assert cases and all(c.func.startswith("linalg.") and c.label.startswith("c128:") for c in cases)
    assert all(a.dtype == "complex128" for c in cases for a in c.args if a.dtype.startswith(("float", "complex")))
    widenable = {c.id for c in CASES if c.func.startswith("linalg.")
                 and any(a.dtype in ("float32", "float64", "complex64") for a in c.args)}
    assert {f"{c.func}[{c.label[len('c128:'):]}]" for c in cases} == widenable
    assert {"linalg.det", "linalg.cholesky", "linalg.eigh", "linalg.qr", "linalg.svd"} <= {c.func for c in cases}


def test_from_starts_at_the_case_named_and_first_counts_from_there():
    every = tpu_probe.all_cases(["examples", "linalg64"])
    start = next(i for i, (g, c) in enumerate(every) if c.id == "linalg.inv[float32]")
    assert tpu_probe.all_cases(["examples", "linalg64"], start_id="linalg.inv[float32]") == every[start:]
    assert tpu_probe.all_cases(["examples", "linalg64"], first=3, start_id="linalg.inv[float32]") == every[start:start + 3]
    with pytest.raises(ValueError, match=r"tpu_probe --from: no case 'linalg.nothing\[x\]' in the groups examples"):
        tpu_probe.all_cases(["examples"], start_id="linalg.nothing[x]")


def test_an_unknown_from_is_refused_by_the_command_line(capsys):
    with pytest.raises(SystemExit):
        tpu_probe.main(["--only", "linalg64", "--from", "sin[nothing]"])
    assert "no case 'sin[nothing]'" in capsys.readouterr().err


@pytest.mark.parametrize("detail, status", [
    ("JaxRuntimeError: INTERNAL: E0200: RuntimeUnexpectedCoreHalt: Core halted unexpectedly: ...", 3),
    ("JaxRuntimeError: FAILED_PRECONDITION: The program continuator has halted unexpectedly.", 3),
    ("ValueError: something else", 0),
])
def test_a_child_stops_after_a_halted_core_and_goes_on_otherwise(monkeypatch, tmp_path, detail, status):
    calls = []

    def check(case, executor):
        calls.append(case.id)
        return report.Outcome(report.ERROR, detail)

    monkeypatch.setattr(report, "check", check)
    progress = tmp_path / "p.progress"
    assert tpu_probe.child(["linalg64"], 0, str(progress), first=3) == status
    lines = progress.read_text().splitlines()
    ran = 1 if status else 3
    assert len(calls) == ran and [ln.split()[0] for ln in lines] == ["B", "E"] * ran
    assert json.loads(lines[1].split(" ", 2)[2])["id"] == calls[0]


def test_what_the_emulated_64_bit_run_on_the_chip_saw_is_refused_or_explained():
    """conformance/results/tpu_emulate64.json (session 26, the chip, ARRAYX_TPU_64BIT=emulate): every abort,
    internal XLA error, halt and timeout is refused before XLA now (complex128 at the door, the rest by
    tpu_limits), and every disagreement is the TPU's 32-bit default dtypes or a listed deviation."""
    import pathlib

    import numpy as np

    from arrayx.api import _device_dtypes
    from arrayx.executors.jax import tpu_limits
    from conformance import deviations

    data = json.loads((pathlib.Path(__file__).parent / "results" / "tpu_emulate64.json").read_text())
    assert data["environment"]["libtpu"] == tpu_limits.MEASURED_ON["libtpu"]
    primitive = {"linalg.matrix_power": "inv", "linalg.pinv": "svd"}
    failures, unexplained = 0, []
    for r in data["results"]:
        dtypes = [np.dtype(d) for d in r["dtypes"]]
        if r["status"] in ("abort", "xla-internal", "timeout"):
            failures += 1
            name = primitive.get(r["func"], r["func"].split(".")[-1])
            if not any(d in _device_dtypes.TPU.unemulated for d in dtypes) and tpu_limits.reason(name, dtypes) is None:
                unexplained.append(r["id"])
        elif r["status"] == "DIFFERS":
            dtype_only = re.fullmatch(r"result(\.\w+|\[\d\])*: dtype (int32|float32|complex64) != (int64|float64|complex128)"
                                      r"|result\[0\]\[0\]: dtype\('float32'\).*", r["detail"])
            if not dtype_only and deviations.classify_platform("tpu", r["func"], r["dtypes"]) is None:
                unexplained.append(r["id"])
    assert failures >= 30 and not unexplained, unexplained
