"""The pure parts of conformance/client_suites.py: ids, logs, counts, new failures, results file.

The suites themselves run outside CI (python -m conformance.client_suites); these tests need none
of them.
"""
from __future__ import annotations

import json

from conformance import client_suites as cs


def test_normalise_id_makes_backend_parameters_comparable():
    strict = "metrics/tests/test_common.py::test_x[accuracy-array_api_strict-CPU_DEVICE-float64]"
    mine = "metrics/tests/test_common.py::test_x[accuracy-arrayx-None-float64]"
    assert cs.normalise_id("sklearn", strict) == cs.normalise_id("sklearn", mine)
    strict32 = "a.py::t[array_api_strict-device1-float32]"
    mine32 = "a.py::t[arrayx-None-float32]"
    assert cs.normalise_id("sklearn", strict32) == cs.normalise_id("sklearn", mine32)
    assert cs.normalise_id("sklearn", strict) != cs.normalise_id("sklearn", strict32)
    mixed = "t.py::test_mixed[f1_score-numpy to array_api_strict]"
    assert cs.normalise_id("sklearn", mixed) == cs.normalise_id("sklearn", "t.py::test_mixed[f1_score-numpy to arrayx]")
    # SciPy and array-api-extra: the backend's id is one parameter among others
    assert (cs.normalise_id("scipy", "stats/tests/t.py::T::test[array_api_strict-2]")
            == cs.normalise_id("scipy", "stats/tests/t.py::T::test[arrayx-2]"))
    assert (cs.normalise_id("xpx", "test_at.py::test_a[array_api_strict-max]")
            == cs.normalise_id("xpx", "test_at.py::test_a[arrayx-max]"))
    # the strictest variant of array-api-strict is another backend, not array_api_strict
    assert "XP" not in cs.normalise_id("xpx", "t.py::t[array_api_strictest]")
    # names that merely contain a backend's name stay
    assert cs.normalise_id("scipy", "t.py::test_arrayxyz") == "t.py::test_arrayxyz"


def test_read_log_keeps_the_worst_phase_and_skips_cut_lines(tmp_path):
    log = tmp_path / "run.jsonl"
    lines = [
        {"id": "a", "when": "call", "outcome": "passed", "message": "", "seconds": 0.1},
        {"id": "a", "when": "teardown", "outcome": "error", "message": "boom", "where": "x.py:3",
         "seconds": 0.0},
        {"id": "b", "when": "setup", "outcome": "skipped", "message": "no", "seconds": 0.0},
        {"id": "c", "when": "call", "outcome": "failed", "message": "bad", "seconds": 1.0},
        {"id": "d", "when": "call", "outcome": "xfailed", "message": "known", "seconds": 0.0},
    ]
    log.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"id": "e", "outc')
    tests = cs.read_log(log)
    assert sorted(tests) == ["a", "b", "c", "d"]
    assert tests["a"]["outcome"] == "error" and tests["a"]["where"] == "x.py:3"
    assert cs.counts(tests) == {"passed": 0, "failed": 1, "errors": 1, "skipped": 1,
                                "xfailed": 1, "xpassed": 0}
    assert cs.read_log(tmp_path / "absent.jsonl") == {}


def test_new_failures_are_those_strict_does_not_share():
    strict = {"t.py::f[array_api_strict]": {"outcome": "failed"},
              "t.py::g[array_api_strict]": {"outcome": "passed"}}
    mine = {"t.py::f[arrayx]": {"outcome": "failed", "message": "same as strict"},
            "t.py::g[arrayx]": {"outcome": "error", "message": "TypeError: oops"},
            "t.py::h[arrayx]": {"outcome": "failed", "message": "strict never ran it"},
            "t.py::k[arrayx]": {"outcome": "passed", "message": ""}}
    new = cs.new_failures("scipy", strict, mine)
    assert sorted(new) == ["t.py::g[arrayx]", "t.py::h[arrayx]"]
    assert new["t.py::g[arrayx]"]["outcome"] == "error"


def test_classify_and_group(monkeypatch):
    monkeypatch.setattr(cs, "CLASSES", [("ufunc", r"__array_ufunc__", "NumPy ufuncs refused"),
                                        ("tuple", r"test_devices|tuple", "devices() tuple")])
    assert cs.classify("t::test_x", "TypeError: ... (__array_ufunc__=None)") == "ufunc"
    assert cs.classify("t::test_devices[arrayx]", "") == "tuple"
    assert cs.classify("t::test_y", "ValueError") == "unclassified"
    new = {"a": {"class": "ufunc"}, "b": {"class": "tuple"}, "c": {"class": "ufunc"}}
    groups = cs.group_by_class(new)
    assert list(groups) == ["ufunc", "tuple"]  # largest first
    assert groups["ufunc"] == {"cause": "NumPy ufuncs refused", "tests": ["a", "c"]}


def test_merge_results_computes_new_failures_per_executor(monkeypatch):
    monkeypatch.setattr(cs, "CLASSES", [])
    def run(tests):
        return {"counts": cs.counts(tests), "complete": True, "seconds": 1, "tests": tests}
    def rec(outcome, message=""):
        return {"outcome": outcome, "message": message, "where": "", "seconds": 0.0}

    results: dict = {}
    cs.merge_results(results, "xpx", "all", "arrayx:jax",
                     run({"t.py::f[arrayx]": rec("failed", "E: x"), "t.py::g[arrayx]": rec("passed")}))
    assert results["xpx"]["all"]["new"] == {}  # no strict run yet: nothing to compare with
    cs.merge_results(results, "xpx", "all", cs.STRICT,
                     run({"t.py::f[array_api_strict]": rec("passed"),
                          "t.py::g[array_api_strict]": rec("failed", "strict bug")}))
    entry = results["xpx"]["all"]
    assert entry["backends"]["arrayx:jax"]["counts"]["failed"] == 1
    assert entry["backends"][cs.STRICT]["failures"] == {"t.py::g[array_api_strict]": "failed: strict bug"}
    new = entry["new"]["arrayx:jax"]
    assert new["count"] == 1 and new["messages"] == {"t.py::f[arrayx]": "E: x"}
    assert new["classes"]["unclassified"]["tests"] == ["t.py::f[arrayx]"]


def test_a_wider_subsets_strict_run_serves_a_narrower_one(monkeypatch):
    monkeypatch.setattr(cs, "CLASSES", [])
    rec = {"outcome": "failed", "message": "m", "where": "", "seconds": 0.0}
    strict = {"counts": {}, "complete": True, "seconds": 1,
              "tests": {"stats/t.py::f[array_api_strict]": rec}}
    mine = {"counts": {}, "complete": False, "seconds": 1,
            "tests": {"stats/t.py::f[arrayx]": rec, "stats/t.py::g[arrayx]": rec}}
    results: dict = {}
    cs.merge_results(results, "scipy", "stats", "arrayx:dask", mine)
    assert results["scipy"]["stats"]["new"] == {}
    cs.merge_results(results, "scipy", "special,stats", cs.STRICT, strict)
    assert list(results["scipy"]["stats"]["new"]["arrayx:dask"]["messages"]) == ["stats/t.py::g[arrayx]"]
    assert cs.strict_reference(results["scipy"], "fft") is None


def test_results_name_no_machine_folder():
    msg = "failed: E: no file /tmp/client-xarray-abc/xarray_tests/test_array_api.py:66 x"
    assert cs.without_machine_paths(msg) == "failed: E: no file <path>/test_array_api.py:66 x"
    assert cs.without_machine_paths("scipy/conftest.py:499") == "scipy/conftest.py:499"


def test_the_whole_of_sklearn_serves_its_subpackages():
    strict = {"backends": {cs.STRICT: {"failures": {"mixture/t.py::f[array_api_strict]": "failed: x"}}}}
    subsets = {"sklearn": strict, "mixture": {"backends": {}, "new": {}}}
    assert cs.strict_reference(subsets, "mixture") == {"mixture/t.py::f[array_api_strict]": "failed: x"}
