"""``python -m conformance.tpu_linalg_accuracy`` (the chip's linalg against LAPACK's float32): on this
CPU, where XLA calls LAPACK, no row is worse; a function that loses accuracy is flagged."""
import json

import pytest

from conformance import tpu_linalg_accuracy as acc

pytest.importorskip("jax", reason="the accuracy rows compare the jax executor with the NumPy executor")


def test_rows_on_the_cpu_match_lapack(monkeypatch, tmp_path):
    monkeypatch.setattr(acc, "MAGNITUDES", (1e19, 1e-30))
    monkeypatch.setattr(acc, "DTYPES", ("complex64",))
    assert acc.main(["--json", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["worse"] == 0 and len(out["rows"]) == 2 * 12
    for r in out["rows"]:
        assert isinstance(r["jax"], float) and r["jax"] < 1e-5, r


def test_a_function_that_loses_accuracy_is_flagged(monkeypatch):
    import numpy as np

    import arrayx as ax

    real = acc._measures

    def measures(xp, np_):
        rows = real(xp, np_)
        which, f, exact = rows["eigvalsh"]

        def rounded_on_jax(x):  # three digits on the jax executor only, as a bfloat16 pass would give
            got = f(x)
            return np.round(got, 2) if ax.get_executor().name == "jax" else got
        return {"eigvalsh": (which, rounded_on_jax, exact)}

    monkeypatch.setattr(acc, "_measures", measures)
    monkeypatch.setattr(acc, "MAGNITUDES", (1.0,))
    monkeypatch.setattr(acc, "DTYPES", ("float32",))
    out = acc.run()
    assert out["worse"] == 1 and out["rows"][0]["worse"] is True
    assert acc.main([]) == 1


def test_64_bit_rows_on_the_cpu_match_lapack_in_their_own_dtype(monkeypatch):
    monkeypatch.setattr(acc, "MAGNITUDES", (1e19,))
    out = acc.run(("float64",))
    assert out["command"].endswith("--dtypes float64")
    assert out["worse"] == 0 and len(out["rows"]) == 12
    for r in out["rows"]:  # (float32 gives ~1e-7 here: these are 64-bit results)
        assert r["dtype"] == "float64" and isinstance(r["jax"], float) and r["jax"] < 1e-12, r


def test_an_unknown_dtype_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        acc.main(["--dtypes", "float64,int8"])
    assert "'float64,int8' names a dtype other than" in capsys.readouterr().err
