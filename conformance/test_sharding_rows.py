"""The sharding rows of ``python -m conformance`` (conformance/sharding.py): each executor's run of
the tutorial's programs judged against jax's, in the report's JSON (schema), summary and exit status."""
from __future__ import annotations

import copy
import json

import pytest

from arrayx.core import executor as _base
from conformance import __main__ as cli
from conformance import matrix, sharding
from conformance.test_report import SCHEMA, validate


def _fake_reference() -> dict:
    ref = {}
    for keys in sharding.ROWS.values():
        for k in keys:
            ref[k] = [["x"]] if k.endswith("spec") else ("grid" if k.endswith("grid") else [1.0, 2.0])
    ref["elementwise_same_sharding"] = True
    return ref


def test_rows_judge_each_executor_against_jax():
    ref = _fake_reference()
    wrong_value = copy.deepcopy(ref)
    wrong_value["psum"] = [1.0, 2.5]
    wrong_spec = copy.deepcopy(ref)
    wrong_spec["contract_spec"] = []
    section = sharding.rows(["jax", "numpy", "numba", "dask"], runs={
        "jax": ref, "numpy": copy.deepcopy(ref), "numba": wrong_value, "dask": {"error": "boom"}})
    cells = {r["program"]: r["cells"] for r in section["rows"]}
    assert set(cells) == set(sharding.ROWS) and section["executors"] == ["jax", "numpy", "numba", "dask"]
    assert all(c["jax"]["status"] == "reference" and c["numpy"]["status"] == "ok" for c in cells.values())
    assert cells["shard_map: psum"]["numba"]["status"] == "DIFFERS" and "psum" in cells["shard_map: psum"]["numba"]["detail"]
    assert cells["jit: sum along a sharded axis"]["numba"]["status"] == "ok"
    assert all(c["dask"]["status"] == "ERROR" and c["dask"]["detail"] == "boom" for c in cells.values())
    assert section["failing"] == 1 + len(sharding.ROWS)
    validate({"sharding": section}, {"type": "object", "properties": {"sharding": SCHEMA["properties"]["sharding"]}})
    text = sharding.render(section)
    assert "DIFFERS  shard_map: psum / numba" in text and "ERROR" in text
    section = sharding.rows(["numpy", "jax"], runs={"jax": ref, "numpy": wrong_spec})
    assert {r["program"]: r["cells"]["numpy"]["status"] for r in section["rows"]}["jit: sum along a sharded axis"] \
        == "DIFFERS"
    assert sharding.rows(["numpy"], runs={"numpy": ref})["rows"][0]["cells"]["numpy"]["status"] == "n/a"


def test_the_report_carries_the_rows_and_fails_on_them(tmp_path, monkeypatch):
    one = [fn for fn in matrix.entries() if fn.name == "negative"]
    monkeypatch.setattr(matrix, "entries", lambda quick=False: one)
    ref = _fake_reference()
    bad = copy.deepcopy(ref)
    bad["psum_spec"] = [["x"], ["y"]]
    seen = {}
    real_rows = sharding.rows

    def fake_rows(executors, runs=None):
        seen["executors"] = list(executors)
        return real_rows(["jax", "numpy"], runs={"jax": ref, "numpy": bad})

    monkeypatch.setattr(sharding, "rows", fake_rows)
    status = cli.main(["--executors", "numpy", "--max-examples", "1", "--output", str(tmp_path), "--no-progress",
                       "--transforms", "eager"])
    data = json.loads((tmp_path / "conformance.json").read_text())
    validate(data, SCHEMA)
    assert seen["executors"] == ["numpy"] and data["sharding"]["failing"] == 1 and status == 1
    assert "sharding (the tutorial's programs against jax.numpy)" in cli.render_summary(data)
    seen.clear()
    cli.main(["--executors", "numpy", "--max-examples", "1", "--output", str(tmp_path), "--no-progress",
              "--transforms", "eager", "--no-sharding"])
    assert not seen and "sharding" not in json.loads((tmp_path / "conformance.json").read_text())


def test_a_real_run_on_numpy_matches_jax():
    for name in ("jax", "numpy"):
        if not _base.get(name).available():
            pytest.skip(f"executor {name!r} unavailable")
    section = sharding.rows(["jax", "numpy"])
    assert section["failing"] == 0, sharding.render(section)
    assert all(r["cells"]["numpy"]["status"] == "ok" for r in section["rows"])
