"""The parity report on a device with 32-bit defaults (a TPU), tested without one.

The ``tpu`` fixture has the jax executor take its CPU device for a TPU, as
``tests/executors/test_jax_tpu_limits.py`` does: the table's "tpu" row of default dtypes (no native
64-bit types, ``ARRAYX_TPU_64BIT=downcast``) and tpu_limits' refusals apply.  The report must then
compare against NumPy on the inputs cast as that device holds them (``conformance/narrow.py``),
call what cannot run there as written not applicable (with the reason), list tpu_limits' refusals
as per-platform gaps, and accept a per-platform deviation's tolerance on that platform only.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as _base
from conformance import compare, deviations, gaps, narrow, report, spec
from conformance.differential.table.examples import CASES

_jax = _base.get("jax")
pytestmark = pytest.mark.skipif(not _jax.available(), reason=f"executor 'jax' unavailable: {_jax.unavailable_reason}")

BY_ID = {c.id: c for c in CASES}
#: a few rows of every kind: 64-bit inputs, defaults, refusals by design, values beyond int32, tpu_limits gaps
ROWS = ["arange", "asarray", "full_like", "astype", "sin", "matmul", "argmax", "sum", "mean",
        "__array_namespace_info__", "linalg.svd", "linalg.pinv", "linalg.eigh", "array.operators", "fft.rfft"]


@pytest.fixture
def tpu(monkeypatch):
    """The jax executor's devices taken for TPUs (default dtypes and tpu_limits), 64-bit data downcast."""
    from arrayx.api import _device_dtypes
    from tests.executors.platform_tolerances import taken_for_tpu

    with taken_for_tpu(monkeypatch, "downcast"), warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        yield _jax.default_device()


def test_a_cpu_is_plain_and_its_reference_stays_64bit():
    t = narrow.target("jax")
    assert narrow.plain("jax") and not t.narrows and t.platform == "cpu"
    case = BY_ID["sin[float64]"]
    assert report.reference(case)[1].dtype == np.float64
    assert report.check(case, "jax").status == report.OK


def test_the_target_says_what_the_device_does(tpu):
    t = narrow.target("jax")
    assert t.narrows and t.accelerator and not narrow.plain("jax")
    assert {str(a): str(b) for a, b in t.narrow.items()} == {
        "float64": "float32", "complex128": "complex64", "int64": "int32", "uint64": "uint32"}
    assert "ARRAYX_TPU_64BIT=downcast" in t.describe() and "'highest'" in t.describe()
    with ax.tpu_64bit("emulate"):  # 64-bit types kept: nothing is narrowed, the precision still applies
        kept = narrow.target("jax")
        assert not kept.narrows and kept.accelerator and not narrow.plain("jax")


@pytest.mark.parametrize("case_id", ["sin[float64]", "add[int64]", "subtract[float64]", "mean[axis]", "exp[complex128]"])
def test_the_reference_runs_on_the_downcast_inputs(tpu, case_id):
    case = BY_ID[case_id]
    t = narrow.target("jax")
    host = case.inputs()
    want = narrow.narrow_result(report.reference(case, t.narrow), t.narrow)[1]
    assert want.dtype == t.narrow[host[0].dtype]
    on_numpy = report.run(case, "numpy", [h.astype(t.narrow[h.dtype]) for h in host])
    np.testing.assert_array_equal(want, np.asarray(on_numpy).astype(want.dtype))
    assert report.check(case, "jax").status == report.OK


def test_the_table_on_a_tpu_compares_what_the_device_holds(tpu):
    data = report.matrix(["numpy", "jax"], ROWS)
    cells = {f: row["jax"] for f, row in data["functions"].items()}
    assert set(cells.values()) <= {report.OK, report.NA, report.GAP}, data["cases"]
    assert cells["sin"] == cells["matmul"] == cells["argmax"] == cells["arange"] == report.OK
    assert cells["__array_namespace_info__"] == report.OK  # compared with the device's own table
    # svd and pinv run: their TPU lowering is built with 64-bit types off (tpu_limits.LOWER_IN_32_BITS)
    assert cells["linalg.svd"] == report.OK and cells["linalg.pinv"] in (report.OK, report.NA)  # (NA: rtol=1e-8)
    assert data["unlisted_gaps"] == [] and data["stale_gaps"] == []
    cases = {cid: per["jax"] for cid, per in data["cases"].items() if "jax" in per}
    assert "do not fit its 32-bit types" in cases["array.operators[int64-precision]"]["detail"]
    for cid in ("full_like[dtype]", "astype[float->complex]", "asarray[array-copy]"):
        assert cases[cid]["status"] == report.NA and "refuses by design" in cases[cid]["detail"], cid
    refused = "NotImplementedError: svd: complex128 on a TPU is not run"  # what a complex128 svd there raises
    assert "JAX 0.10.2" in report.gap_reason("jax", "linalg.svd", "linalg.svd[full]", refused)
    assert data["devices"]["jax"]["narrow"]["float64"] == "float32"
    assert data["devices"]["jax"]["matmul_precision"] == "highest"
    assert data["summary"]["jax"][report.NA] >= 3
    text = report.render(data)
    assert text.startswith("jax runs on ") and "n/a" in text and "GAP!" not in text  # (no gap left in these rows)


def test_a_wrong_float32_result_is_still_found(tpu, monkeypatch):
    """Narrowing changes the reference, not the rule: a float32 ``add`` off by 1% (beyond its tolerance,
    and no TPU deviation covers add) still DIFFERS."""
    case = BY_ID["add[float64]"]
    real = report.materialise

    def off(result, executor, path="result"):
        out = real(result, executor, path)
        return ("array", out[1] * np.float32(1.01)) if executor == "jax" and out[0] == "array" else out

    monkeypatch.setattr(report, "materialise", off)
    outcome = report.excuse(case, "jax", report.check(case, "jax"))
    assert outcome.status == report.DIFFERS and "float32" in repr(outcome.got[1].dtype)


def _exp_outcome(factor: float):
    """exp at the table's strictest floating class for functions ("elementwise", as the differential
    suite compares it; the hand-picked example's "composite" already allows 4.9e-4), ``factor`` off."""
    case = dataclasses.replace(BY_ID["exp[float32]"], tolerance="elementwise")
    want = ("array", np.exp(case.inputs()[0]))
    got = ("array", (want[1] * np.float32(factor)).astype(np.float32))
    try:
        compare.compare(got, want, case.tolerance, 1.0)
    except compare.Mismatch as e:
        return case, report.Outcome(report.DIFFERS, str(e), got, want, 1.0)
    raise AssertionError("the planted error is within the elementwise tolerance")


def test_a_platform_tolerance_applies_on_its_platform_only(tpu, monkeypatch):
    case, outcome = _exp_outcome(1 + 2e-4)  # the size of XLA:TPU's float32 approximations
    excused = report.excuse(case, "jax", outcome)
    assert excused.status == report.DEVIATION and excused.detail.startswith("tpu-float32-transcendentals")
    case, outcome = _exp_outcome(1 + 2e-3)  # beyond what the TPU entry allows
    assert report.excuse(case, "jax", outcome).status == report.DIFFERS
    monkeypatch.setattr(type(_jax), "platform_of", lambda self, device: "cpu")
    case, outcome = _exp_outcome(1 + 2e-4)
    assert report.excuse(case, "jax", outcome).status == report.DIFFERS  # never loosened on a CPU


def test_platform_tolerances_are_reasoned_and_bounded():
    with_tol = [d for d in deviations.PLATFORM_DEVIATIONS if d.tolerance is not None]
    assert [d.id for d in with_tol] == ["tpu-float32-transcendentals"]
    for d in with_tol:
        assert "report accepts" in d.reason and d.measured
        assert max(d.tolerance) * np.finfo(np.float32).eps < 1e-3  # still three digits at least
    assert deviations.platform_tolerance("tpu", "exp", ["float32"]).id == "tpu-float32-transcendentals"
    assert deviations.platform_tolerance("tpu", "add", ["float32"]) is None
    assert deviations.platform_tolerance("cpu", "exp", ["float32"]) is None


def test_values_beyond_the_32bit_types_are_not_applicable():
    cast = narrow.narrow_inputs([np.arange(3, dtype=np.int64), np.ones(2)], narrow.target("jax").narrow or {
        np.dtype("int64"): np.dtype("int32"), np.dtype("float64"): np.dtype("float32")})
    assert [c.dtype for c in cast] == [np.int32, np.float32]
    to32 = {np.dtype("int64"): np.dtype("int32"), np.dtype("float64"): np.dtype("float32"),
            np.dtype("uint64"): np.dtype("uint32")}
    for wide in (np.asarray([1, 2**40]), np.asarray([1e300, 1.0]), np.asarray([2**33], dtype=np.uint64)):
        with pytest.raises(narrow.NotApplicable, match="do not fit"):
            narrow.narrow_inputs([wide], to32)
    assert narrow.narrow_inputs([np.asarray([np.inf, np.nan, 1e-50])], to32)[0].dtype == np.float32
    with pytest.raises(narrow.NotApplicable, match="the reference's int64 values"):
        narrow.narrow_result(("tuple", (("array", np.asarray([2**40])),)), to32)


def test_tpu_gaps_are_read_from_tpu_limits():
    from arrayx.executors.jax import tpu_limits

    table = gaps.platform_gaps("jax", "tpu")
    names = set(spec.all_functions())
    for prim, by_dtype in tpu_limits.REFUSED.items():
        for func in gaps.FUNCTIONS_OF_PRIMITIVE.get(prim, (prim,)):
            assert func in names or hasattr(ax.linalg, func.removeprefix("linalg.")), func  # (eig: beyond spec.py's list)
            assert set(table[func]) == set(by_dtype)
            for why in table[func].values():
                assert tpu_limits.MEASURED_ON["jax"] in why and "tpu_limits.py" in why
    assert set(table["linalg.pinv"]) == {"complex128"}
    assert gaps.platform_gaps("jax", "cpu") == {} and gaps.platform_gaps("numpy", "tpu") == {}
    assert gaps.platform_reason("jax", "tpu", "linalg.svd", ["complex64"]) is None
    assert gaps.dtypes_named("NotImplementedError: astype: complex128 on a TPU is not run") == ["complex128"]
