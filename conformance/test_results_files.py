"""The committed results (conformance/results, benchmarks/results) name no folder of the machine that made them."""
import json
import pathlib
import re

import pytest

from conformance.official import _without_paths

REPO = pathlib.Path(__file__).resolve().parent.parent
RESULTS = sorted(p for d in ("conformance/results", "benchmarks/results") for p in (REPO / d).glob("*")
                 if p.suffix in (".json", ".md", ".html"))
MACHINE_PATH = re.compile(r"(?<![\w.])/(work|tmp|home|root|Users|private|var/folders)/")


def test_there_are_results_to_check():
    assert len(RESULTS) >= 5


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: str(p.relative_to(REPO)))
def test_results_name_no_machine_folder(path):
    text = path.read_text()
    found = MACHINE_PATH.search(text)
    assert found is None, f"{path.relative_to(REPO)} names a folder of this machine: {text[found.start():found.start() + 80]!r}"
    if path.suffix == ".json":
        json.loads(text)


def test_official_command_line_names_the_suite_not_its_folder():
    assert _without_paths(["--suite", "/x/array-api-tests", "--executor", "jax"]) == \
        ["--suite", "<array-api-tests checkout>", "--executor", "jax"]
    assert _without_paths(["--suite=/x/y", "-n", "2"]) == ["--suite=<array-api-tests checkout>", "-n", "2"]


def test_official_runs_cover_every_executor_in_both_modes():
    """``official_modes.json`` (written by ``python -m conformance.official``): each executor in the default
    and strict (ARRAYX_STRICT=1) modes, no failure outside known_failures/, counts as in official-<ex>[-strict].json."""
    data = json.loads((REPO / "conformance" / "results" / "official_modes.json").read_text())
    runs, explained = data["runs"], data.get("explained_new_failures", {})
    for ex in ("numpy", "numba", "jax", "dask"):
        for mode, suffix in (("default", ""), ("strict", "-strict")):
            run = runs[ex][mode]
            stored = json.loads((REPO / "conformance" / "results" / f"official-{ex}{suffix}.json").read_text())
            # a failure outside known_failures/ is there only with its reason (not fixed yet: the report says why)
            assert run["new_failures"] == len(stored["new_failures"]), (ex, mode)
            assert all(t in explained.get(ex, {}) for t in stored["new_failures"]), (ex, mode, stored["new_failures"])
            assert run["passed"] == stored["passed"] > 0 and stored["mode"] == mode, (ex, mode)
            assert ("ARRAYX_STRICT=1" in run["command"]) == (mode == "strict"), run["command"]
