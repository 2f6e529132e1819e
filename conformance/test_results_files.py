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
