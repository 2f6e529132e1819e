"""Every function of the standard gives the same dtype, shape and values on every executor as on NumPy.

The cases are data (``cases.py``); ``report.check`` runs one and compares it, exactly as
``python -m conformance.report`` does.  NotImplementedError is a gap: allowed only when
``gaps.py`` lists the function for that executor, and a listed gap that works fails too.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx
from arrayx.core import executor as _base
from conformance import gaps, report, spec
from conformance.cases import CASES, Arg, Case, lookup


def _case_id(case: Case) -> str:
    return f"{case.func}:{case.label}" if case.label else case.func


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_same_as_numpy(case: Case, executor: str) -> None:
    outcome = report.check(case, executor)
    if outcome.status == report.GAP:
        why = gaps.reason(executor, case.func, case.id)
        if why is None:
            pytest.fail(
                f"{case.id}: the {executor!r} executor raised NotImplementedError ({outcome.detail}); "
                f"implement it, or list {case.func!r} under {executor!r} in conformance/gaps.py with the reason"
            )
        pytest.skip(f"known gap of {executor!r}: {why}")
    assert outcome.status == report.OK, f"{case.id} on {executor!r}: {outcome.status}: {outcome.detail}"


_LISTED = [(ex, func) for ex, table in gaps.GAPS.items() for func in table]


@pytest.mark.parametrize("executor_name,func", _LISTED, ids=[f"{e}:{f}" for e, f in _LISTED] or None)
def test_listed_gaps_are_real(executor_name: str, func: str) -> None:
    """A function listed as a gap still raises NotImplementedError on that executor in some case."""
    if executor_name not in _base.registered() or not _base.get(executor_name).available():
        pytest.skip(f"executor {executor_name!r} is not available here")
    covered = report.cases_for_gap(func)
    assert covered, f"gaps.py lists {func!r}, which is neither a function nor a case id of cases.py (a typo?)"
    outcomes = [report.check(c, executor_name).status for c in covered]
    assert report.GAP in outcomes, (
        f"{func!r} works on {executor_name!r} now ({outcomes}); remove it from conformance/gaps.py"
    )


def test_gap_table_names_known_executors_and_functions() -> None:
    known = set(spec.all_functions()) | {c.func for c in CASES} | {c.id for c in CASES}
    for ex, table in gaps.GAPS.items():
        for func, why in table.items():
            assert func in known, f"gaps.py: {ex}: {func!r} is not a function of the standard"
            assert why and why.strip(), f"gaps.py: {ex}: {func!r} needs a reason"


def test_every_standard_function_has_a_case() -> None:
    missing = sorted(set(spec.all_functions()) - {c.func for c in CASES})
    assert not missing, f"no parity case in conformance/cases.py for: {missing}"


def test_every_case_names_a_real_function() -> None:
    names = set(spec.all_functions())
    for c in CASES:
        if c.func.startswith("array."):
            member = c.func.split(".", 1)[1]
            assert member == "operators" or hasattr(arrayx.Array, member), c.id
        else:
            assert c.func in names, f"{c.id}: {c.func!r} is not in the 2025.12 standard"
            assert callable(lookup(arrayx, c.func)), c.id


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_inputs_are_deterministic_and_in_range() -> None:
    for c in CASES:
        a, b = c.inputs(), c.inputs()
        for x, y, arg in zip(a, b, c.args):
            assert x.dtype == np.dtype(arg.dtype) and x.shape == tuple(arg.shape), c.id
            np.testing.assert_array_equal(x, y)
            if arg.values == "positive":
                assert np.all(np.real(x) > 0), c.id
            if arg.values == "spd":
                assert np.all(np.linalg.eigvalsh(x) > 0), c.id
            if arg.values.startswith("index:"):
                assert np.all((0 <= x) & (x < int(arg.values.split(":")[1]))), c.id


# -- the comparison itself must be able to fail ---------------------------------------------------

_PLAIN = Case("sin", lambda xp, x: xp.sin(x), (Arg((3,)),))


@pytest.mark.parametrize(
    "got,want",
    [
        (np.zeros(3, np.float32), np.zeros(3, np.float64)),        # dtype
        (np.zeros((3, 1)), np.zeros(3)),                            # shape
        (np.array([1.0, 2.0, 3.0 + 1e-6]), np.array([1.0, 2.0, 3.0])),  # value beyond float64 tolerance
        (np.array([1, 2, 3]), np.array([1, 2, 4])),                 # integers are exact
        (np.array([np.nan, 1.0]), np.array([0.0, 1.0])),            # nan where a number is expected
    ],
)
def test_compare_detects_differences(got, want) -> None:
    with pytest.raises(report.Mismatch):
        report.compare(_PLAIN, ("array", got), ("array", want))


def test_compare_accepts_equal_and_close_values() -> None:
    want = np.array([1.0, np.nan, np.inf])
    report.compare(_PLAIN, ("array", want * (1 + 1e-13)), ("array", want))
    report.compare(_PLAIN, ("tuple", (("value", 3), ("array", want))), ("tuple", (("value", 3), ("array", want))))
    with pytest.raises(report.Mismatch):
        report.compare(_PLAIN, ("value", 3), ("value", 3.0))  # int vs float is a difference


def test_results_must_live_on_the_executor() -> None:
    x = arrayx.asarray([1.0], device="numpy")
    with pytest.raises(report.Mismatch, match="numpy"):
        report.materialise(x, "someother")
