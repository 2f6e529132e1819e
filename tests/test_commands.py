"""Every command the README tells a user to run, run as it is written, its exit status and main output
checked (what it writes goes to a temporary folder, never into the checkout).

These are the slow tier (``-m slow``), which ``.ci/run`` runs after the default one.  The README's
commands and the test that runs each are listed in ``COMMANDS``; a default-tier test reads the
README and fails when it names a command that is not listed, so a new command comes with its test.
"""
from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: ``python -m <module> [first option]`` as the README writes it -> the test that runs it, or why none does
COMMANDS = {
    "arrayx": "tests/test_main.py::test_python_m_arrayx_prints_agreement_and_writes_json",
    "pytest": "not a test: .ci/run runs it (the default tier, then -m slow), and the deep profile is that command",
    "sphinx": "tests/test_commands.py::test_the_documentation_builds_and_its_examples_run",
    "conformance --quick": "tests/test_commands.py::test_python_m_conformance_quick_writes_the_report",
    "benchmarks --quick": "tests/test_benchmarks.py::test_python_m_benchmarks_quick_runs_every_bench_and_writes_json_plots_and_summary",
    "conformance.client_suites --suite": "not in CI: runs a client library's own test files (an hour per suite); "
                                         "its pieces are tested in conformance/test_client_suites.py",
    "conformance.client_suites --table": "tests/test_commands.py::test_python_m_client_suites_table_prints_the_stored_counts",
    "venv": "not a test: the set-up step of every command (.ci/run does it)",
}

_COMMAND = re.compile(r"python3? -m ([\w.]+)(?: (--?[\w-]+))?")


def readme_commands() -> set[str]:
    """``module [first option]`` of each ``python -m`` in the README's command blocks (indented lines)."""
    found = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        if not line.startswith("    ") or line.startswith("     "):
            continue
        for module, option in _COMMAND.findall(line):
            key = f"{module} {option}" if f"{module} {option}" in COMMANDS else module
            found.add(key)
    return found


def test_every_readme_command_has_its_test():
    assert readme_commands() - set(COMMANDS) == set(), "a README command without a test: add one to this file"
    for key, where in COMMANDS.items():
        if where.startswith("not "):
            continue
        path, name = where.split("::")
        assert f"def {name}(" in (ROOT / path).read_text(), where


def _run(args: list[str], timeout: int, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kwargs)


@pytest.mark.slow  # every row of the parity matrix once per transform and executor (minutes)
def test_python_m_conformance_quick_writes_the_report(tmp_path):
    from conformance import matrix

    out = _run(["-m", "conformance", "--quick", "--no-progress", "--output", str(tmp_path)], timeout=1800)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    data = json.loads((tmp_path / "conformance.json").read_text())
    assert data["quick"] is True and data["summary"]["failing_cells"] == 0
    for row in data["rows"]:  # a disagreement is allowed only where a documented deviation explains it
        for transform, cells in row["cells"].items():
            for executor, cell in cells.items():
                assert not cell.get("disagreements") or cell["status"] == "deviation", (row["function"], transform, executor)
    assert {row["function"] for row in data["rows"]} >= {fn.name for fn in matrix.entries(quick=True)}
    assert set(data["transforms"]) == set(matrix.TRANSFORMS) and "numpy" in data["executors"]
    page = (tmp_path / "conformance.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="report-data"' in page
    assert f"wrote {tmp_path / 'conformance.json'}" in out.stdout and "example-executor pairs against NumPy" in out.stdout


@pytest.mark.slow  # a subprocess per command (each imports arrayx; fast, but the tier of commands)
def test_python_m_client_suites_table_prints_the_stored_counts():
    out = _run(["-m", "conformance.client_suites", "--table"], timeout=120)
    assert out.returncode == 0, out.stderr
    stored = json.loads((ROOT / "conformance" / "results" / "client_suites.json").read_text())
    lines = out.stdout.splitlines()
    assert lines[0].startswith("| suite (subset) | array_api_strict | arrayx:numpy")
    rows = {line.split(" | ")[0][2:]: line for line in lines[2:] if line.startswith("| ")}
    assert set(rows) == {f"{suite} ({subset})" for suite, subsets in stored.items() for subset in subsets}
    for suite, subsets in stored.items():
        for subset, entry in subsets.items():
            for backend, run in entry["backends"].items():  # every stored count is in its row
                c = run["counts"]
                assert f"{c['passed']}/{c['failed']}/{c['errors']}/{c['skipped']}" in rows[f"{suite} ({subset})"]
    assert "passed/failed/errors/skipped" in out.stdout


@pytest.mark.slow  # the whole site, twice: html (warnings are errors) and the pages' examples
@pytest.mark.skipif(importlib.util.find_spec("sphinx") is None, reason="no Sphinx here: pip install -e '.[docs]'")
def test_the_documentation_builds_and_its_examples_run(tmp_path):
    html = _run(["-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(tmp_path / "doctrees"),
                 "docs", str(tmp_path / "html")], timeout=1200)
    assert html.returncode == 0, html.stdout[-3000:] + html.stderr[-3000:]
    assert (tmp_path / "html" / "index.html").is_file() and (tmp_path / "html" / "api" / "arrayx.html").is_file()
    doctest = _run(["-m", "sphinx", "-W", "--keep-going", "-q", "-b", "doctest", "-d", str(tmp_path / "doctrees"),
                    "docs", str(tmp_path / "doctest")], timeout=1200)
    assert doctest.returncode == 0, doctest.stdout[-3000:] + doctest.stderr[-3000:]
    report = (tmp_path / "doctest" / "output.txt").read_text()
    assert "0 failures in tests" in report and "0 failures in setup code" in report, report[-2000:]
    tests = re.search(r"^\s*(\d+) tests", report, re.M)
    assert tests and int(tests.group(1)) > 0, report[-2000:]  # the pages' examples ran
