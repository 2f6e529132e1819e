"""``python -m conformance``: the matrix finds wrong results, the JSON keeps its schema, the HTML works in a browser."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import arrayx
from arrayx.core import executor as _base
from arrayx.executors.numpy import NumpyExecutor
from arrayx.core.primitives import primitives
from conformance import __main__ as cli
from conformance import capabilities, gaps, html, matrix
from conformance.differential import functions as F, runner

HERE = pathlib.Path(__file__).parent
SCHEMA = json.loads((HERE / "report.schema.json").read_text())


def validate(value, schema: dict, path: str = "$") -> None:
    """The subset of JSON Schema that report.schema.json uses (type, const, enum, required, properties,
    additionalProperties, items, minItems, minimum): an AssertionError naming the path otherwise."""
    types = {"object": dict, "array": list, "string": str, "number": (int, float), "integer": int, "boolean": bool}
    if "type" in schema:
        assert isinstance(value, types[schema["type"]]) and not (schema["type"] in ("integer", "number")
                                                                   and isinstance(value, bool)), f"{path}: {value!r}"
    if "const" in schema:
        assert value == schema["const"], f"{path}: {value!r} != {schema['const']!r}"
    if "enum" in schema:
        assert value in schema["enum"], f"{path}: {value!r} not in {schema['enum']}"
    if "minimum" in schema:
        assert value >= schema["minimum"], f"{path}: {value!r}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            assert key in value, f"{path}: no {key!r}"
        for key, v in value.items():
            sub = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
            if isinstance(sub, dict):
                validate(v, sub, f"{path}.{key}")
    if isinstance(value, list):
        assert len(value) >= schema.get("minItems", 0), path
        for i, v in enumerate(value):
            if "items" in schema:
                validate(v, schema["items"], f"{path}[{i}]")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[dict, pathlib.Path]:
    """One small real run of the command: two functions and one PRNG row, one example each."""
    out = tmp_path_factory.mktemp("conformance")
    status = cli.main(["--functions", "negative,linalg.det,random.bits", "--max-examples", "1", "--output", str(out),
                       "--no-progress"])
    data = json.loads((out / "conformance.json").read_text())
    return data, out, status


def test_the_json_follows_its_schema_and_counts_what_ran(report):
    data, out, status = report
    validate(data, SCHEMA)
    with pytest.raises(AssertionError):  # the validator itself can fail
        validate({**data, "schema": 2}, SCHEMA)
    assert [r["function"] for r in data["rows"]] == ["negative", "linalg.det", "random.bits"]
    available = [n for n in _base.registered() if _base.get(n).available()]
    assert data["executors"] == available and set(data["unavailable"]) == set(_base.registered()) - set(available)
    for row in data["rows"]:
        assert set(row["cells"]) == set(matrix.TRANSFORMS)
        for t, per in row["cells"].items():
            assert set(per) == set(available)
    eager = {r["function"]: r["cells"]["eager"] for r in data["rows"]}
    assert all(c["examples"] == 1 and c["status"] in ("ok", "deviation") for c in eager["negative"].values())
    assert data["rows"][2]["cells"]["grad"]["numpy"]["status"] == "n/a"  # random.bits has no float input
    counted = sum(c["examples"] for r in data["rows"] for t in r["cells"].values() for e, c in t.items() if e != "numpy")
    assert data["summary"]["example_executor_pairs"] == counted
    assert status == (1 if data["summary"]["failing_cells"] else 0)
    assert data["capabilities"]["numpy"]["functions"]["negative"]["kind"] == "native"
    for ex, official in data["official"].items():  # stored official-suite results are folded in when present
        stored = json.loads((HERE / "results" / f"official-{ex}.json").read_text())
        assert official["passed"] == stored["passed"] and official["stored"].endswith(f"official-{ex}.json")


def _breaking(executor: str, name: str, impl):
    """Make primitive ``name`` run ``impl`` on ``executor`` (for the duration of a with block)."""
    class Patch:
        def __enter__(self):
            prim = primitives[name]
            ex = _base.get(executor)
            self.prim, self.had, self.saved = prim, name in ex.table, ex.table.get(name)
            # Dask runs an operation whose operands are each one chunk as one task of the NumPy
            # executor's implementation: chunks of 1 element make the examples reach Dask's own
            self.chunks = runner.DASK_CHUNKS
            if executor == "dask":
                runner.DASK_CHUNKS = 1
            ex.table[name] = impl
            ex.impls.pop(prim, None)
            ex.large_impls.pop(prim, None)

        def __exit__(self, *exc):
            runner.DASK_CHUNKS = self.chunks
            ex = _base.get(executor)
            if self.had:
                ex.table[name] = self.saved
            else:
                ex.table.pop(name, None)
            ex.impls.pop(self.prim, None)
            ex.large_impls.pop(self.prim, None)
    return Patch()


def _examples(executor: str, n: int) -> int:
    # Hypothesis draws the smallest example first (0-d, one element): on Dask one chunk, which runs
    # the NumPy executor's implementation; more examples reach arrays of several chunks
    return 25 if executor == "dask" else n


def test_a_wrong_result_is_found_under_every_transform_with_both_results(executor):
    if executor == matrix.REFERENCE:
        pytest.skip("the reference itself")
    xp = _base.get(executor).xp

    def wrong(x):  # exp off by one, in the executor's own library: only the values are wrong (grad uses exp too)
        return xp.exp(x) + 1

    with _breaking(executor, "exp", wrong):
        row = matrix.run_row(F.BY_NAME["exp"], ["numpy", executor], ("eager", "jit", "vmap", "grad"), _examples(executor, 3))
    for t in ("eager", "jit", "vmap", "grad"):
        cell = row["cells"][t][executor]
        assert cell["status"] == "DIFFERS", (t, cell)
        f = cell["failures"][0]
        assert f["input"].startswith("xp.exp(") and f["got"] and f["want"] and f["got"] != f["want"], f
        assert row["cells"][t]["numpy"]["status"] == "ok"


def test_not_implemented_is_a_gap_listed_or_not(executor, monkeypatch):
    if executor == matrix.REFERENCE:
        pytest.skip("the reference itself")

    def missing(x):
        raise NotImplementedError(f"negative is not supported by the {executor!r} executor")

    with _breaking(executor, "negative", missing):
        row = matrix.run_row(F.BY_NAME["negative"], ["numpy", executor], ("eager", "jit"), _examples(executor, 1))
        assert row["cells"]["eager"][executor]["status"] == "GAP!"
        assert row["cells"]["jit"][executor]["status"] == "GAP!"
        monkeypatch.setitem(gaps.GAPS, executor, {"negative": "a test gap"})
        row = matrix.run_row(F.BY_NAME["negative"], ["numpy", executor], ("jit",), _examples(executor, 1))
        assert row["cells"]["jit"][executor]["status"] == "gap"


def test_vmap_batches_a_flipped_copy_and_grad_needs_a_float_input():
    from conformance.differential.strategies import Input

    x = Input(np.arange(6.0).reshape(2, 3), "strided")
    (a, _), (b, _) = matrix.batch_members(F.BY_NAME["sin"], (x,), {})
    np.testing.assert_array_equal(b[0].values, x.values[::-1, ::-1])
    assert b[0].layout == "strided" and matrix.batch_members(F.BY_NAME["sin"], (Input(np.asarray(2.0)),), {})[1][0][0].values.shape == ()
    status, want = matrix.reference(F.BY_NAME["sin"], "vmap", (x,), {})
    np.testing.assert_allclose(want[1], np.sin(np.stack([x.values, x.values[::-1, ::-1]])))
    with pytest.raises(matrix.NotApplicable, match="depends on the values"):
        matrix._stack_results([("array", np.zeros(2)), ("array", np.zeros(3))])  # members of different sizes
    assert not matrix.applicable("grad")(((Input(np.asarray([1, 2])),), {}))
    status, g = matrix.reference(F.BY_NAME["sin"], "grad", (x,), {})
    w = np.resize([1.0, 1.5, 2.0], 6).reshape(2, 3)
    np.testing.assert_allclose(g[1][0][1], w * np.cos(x.values))  # d/dx sum(w * sin x)


def test_grad_draws_only_inputs_where_the_spectral_gradient_exists():
    from conformance.differential.strategies import Input

    # the deep run's one DIFFERS (svd / grad / jax): a float32 matrix whose third singular value is
    # 1.9e-16 of 3.9, where svd's gradient (1/s terms) is rounding noise on any LAPACK
    near_singular = np.asarray([[-0.5, 0.0, 1.0], [0.5, -2.2204460e-16, 5.8774718e-39],
                                [5.8774718e-39, 5.8774718e-39, -5.9604645e-08], [-0.5, 4.2e-45, 3.7028518]], np.float32)
    rng = np.random.default_rng(0)
    generic = rng.standard_normal((2, 4, 3)).astype(np.float32)
    for name in ("linalg.svd", "linalg.svdvals"):
        ok = matrix.applicable("grad", F.BY_NAME[name])
        assert ok(((Input(generic),), {})) and ok(((Input(np.zeros((0, 3), np.float32)),), {}))
        assert not ok(((Input(near_singular),), {}))
        assert not ok(((Input(np.stack([generic[0], near_singular])),), {}))  # one bad matrix of a stack
        assert not ok(((Input(np.diag([2.0, 2.0, 1.0])),), {}))  # a repeated singular value
    sym = generic[0, :3] + generic[0, :3].T
    for name in ("linalg.eigh", "linalg.eigvalsh"):
        ok = matrix.applicable("grad", F.BY_NAME[name])
        assert ok(((Input(sym),), {})) and ok(((Input(np.diag([-1.0, 0.0, 1.0])),), {}))  # zero is fine here
        assert not ok(((Input(np.eye(3)),), {}))
    assert matrix.applicable("grad", F.BY_NAME["linalg.inv"])(((Input(np.eye(3)),), {}))  # no rule: any input
    assert matrix.applicable("eager", F.BY_NAME["linalg.svd"])(((Input(near_singular),), {}))  # eager: any input


def test_a_transform_disagreement_from_flushed_subnormals_is_the_jax_deviation():
    if not _base.get("jax").available():
        pytest.skip("jax is not installed")
    from conformance.differential.strategies import Input

    fn = F.BY_NAME["maximum"]  # jax reads 5e-324 as 0: a tie with -0.0, whose gradient is shared
    args = (Input(np.asarray([[5e-324, -1.0, 6.0]])), -0.0)
    ref = matrix.reference(fn, "grad", args, {})
    found = matrix.check(fn, "grad", args, {}, "jax", ref, None)
    assert (found.status, found.deviation, found.got) == ("deviation", "jax-flushes-subnormals", "tuple(float64[1, 3] [[0.5 0.  2. ]])")
    args = (Input(np.asarray([[1e-300, -1.0, 6.0]])), -0.0)  # no subnormal: the same values, nothing to explain
    assert matrix.check(fn, "grad", args, {}, "jax", matrix.reference(fn, "grad", args, {}), None).status == "ok"


def test_capabilities_are_read_from_the_tables():
    class Partial(NumpyExecutor):
        name = "partial"
        overrides = {**NumpyExecutor.overrides, "sin": None, "cos": lambda x: x}

    ex = Partial()
    assert capabilities.path(ex, "sin")[0] == capabilities.UNSUPPORTED
    kind, what = capabilities.path(ex, "cos")
    assert kind == capabilities.ADAPTED and what.startswith(__name__) and what.endswith("Partial.<lambda>")
    assert capabilities.path(ex, "tan") == (capabilities.NATIVE, "array_api_compat.numpy.tan")
    assert capabilities.path(ex, "take")[0] == capabilities.COMPOSITE
    numba = _base.get("numba")
    if numba.available():
        assert capabilities.path(numba, "sin")[0] == capabilities.NATIVE
        kind, what = capabilities.path(numba, "sort")
        assert kind == capabilities.OTHER and "numpy executor" in what


def _refused(argv: list, capsys) -> str:
    """``python -m conformance ARGV``'s exit status 2 and its stderr, run in this process (the
    module run as ``__main__``, with its exit status, in test_unknown_rows_and_transforms_are_refused)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2, stop.value.code
    return capsys.readouterr().err


def test_unknown_rows_and_transforms_are_refused(capsys, monkeypatch):
    """``python -m conformance --functions nope`` exits with status 2 and names the row: the package's
    ``__main__`` run as ``python -m`` runs it (runpy, in this process: a fresh interpreter costs ~2.5 s
    of CPU importing arrayx; tests/test_commands.py's slow test runs the command in its own process)."""
    import runpy
    import warnings

    capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["conformance", "--functions", "nope"])
    with pytest.raises(SystemExit) as stop, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # conformance.__main__ is imported already (cli)
        runpy.run_module("conformance", run_name="__main__", alter_sys=True)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "no row named ['nope']" in err, (stop.value.code, err)
    err = _refused(["--transforms", "pmap"], capsys)
    assert "unknown ['pmap']" in err, err


def _cells(data: dict) -> dict:
    """What a run measured, without its timings."""
    return {(r["function"], t, e): (c["status"], c["examples"], c["disagreements"])
            for r in data["rows"] for t, per in r["cells"].items() for e, c in per.items()}


def test_shards_merged_are_the_whole_run(tmp_path, capsys):
    common = ["--functions", "negative,abs,floor,random.bits", "--max-examples", "1", "--no-progress",
              "--executors", "numpy,numba" if _base.get("numba").available() else "numpy"]
    paths = {}
    for label, extra in (("whole", []), ("s0", ["--shard", "0/2"]), ("s1", ["--shard", "1/2"])):
        cli.main(common + extra + ["--output", str(tmp_path / label)])
        paths[label] = tmp_path / label / "conformance.json"
    parts = [json.loads(paths[k].read_text()) for k in ("s0", "s1")]
    assert [r["function"] for r in parts[0]["rows"]] == ["negative", "floor"]  # every 2nd row from row 0
    assert [r["function"] for r in parts[1]["rows"]] == ["abs", "random.bits"]
    cli.main(["--merge", str(paths["s1"]), str(paths["s0"]), "--output", str(tmp_path / "merged")])
    whole, merged = (json.loads((tmp_path / k / "conformance.json").read_text()) for k in ("whole", "merged"))
    validate(merged, SCHEMA)
    assert [r["function"] for r in merged["rows"]] == [r["function"] for r in whole["rows"]]  # the table's order
    assert _cells(merged) == _cells(whole) and merged["summary"] == whole["summary"]
    assert merged["capabilities"] == whole["capabilities"] and merged["merged"] == ["1/2", "0/2"]
    assert merged["duration_s"] == round(parts[0]["duration_s"] + parts[1]["duration_s"], 1)
    # a row run again at the same settings (after a fix) replaces the shard's row, and is listed
    cli.main(common[:1] + ["floor"] + common[2:] + ["--output", str(tmp_path / "again")])
    again = json.loads((tmp_path / "again" / "conformance.json").read_text())
    again["rows"][0]["seconds"] = -1.0  # to tell it from the shard's row
    (tmp_path / "again" / "conformance.json").write_text(json.dumps(again))
    cli.main(["--merge", str(paths["s0"]), str(paths["s1"]), "--rerun", str(tmp_path / "again" / "conformance.json"),
              "--output", str(tmp_path / "with_rerun")])
    redone = json.loads((tmp_path / "with_rerun" / "conformance.json").read_text())
    validate(redone, SCHEMA)
    assert [r["function"] for r in redone["rows"]] == [r["function"] for r in whole["rows"]]
    assert [r["seconds"] for r in redone["rows"] if r["function"] == "floor"] == [-1.0] and redone["rerun"] == ["floor"]
    with pytest.raises(ValueError, match="in no --merge part"):
        cli.merge([parts[0]], [parts[1]])


def test_a_merge_of_parts_that_do_not_fit_is_refused(tmp_path, capsys):
    out = tmp_path / "a"
    cli.main(["--functions", "negative", "--max-examples", "1", "--no-progress", "--executors", "numpy", "--output", str(out)])
    part = json.loads((out / "conformance.json").read_text())
    other = tmp_path / "b.json"
    for changed, words in (({**part, "max_examples": 2}, "part 1 has max_examples=2"),
                           (part, "row 'negative' is in part 0 and part 1")):
        other.write_text(json.dumps(changed))
        err = _refused(["--merge", str(out / "conformance.json"), str(other)], capsys)
        assert words in err, err
    for spec in ("2/2", "x/2", "1"):
        with pytest.raises(ValueError, match="--shard"):
            cli.shard(spec)
    assert cli.shard("1/3") == (1, 3)


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _dom(browser: str, page: pathlib.Path, fragment: str) -> str:
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          f"{page.as_uri()}#{fragment}"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "<html" in out.stdout, out.stderr[-2000:]
    return out.stdout


@pytest.mark.slow  # a headless browser
@pytest.mark.skipif(_browser() is None, reason="no headless browser (chromium) here: apt-get install chromium")
def test_the_html_page_filters_and_opens_failing_cells_in_a_browser(report, tmp_path):
    data, _, _ = report
    data = json.loads(json.dumps(data))
    bad = data["rows"][0]["cells"]["jit"][data["executors"][-1]]
    bad.update(status="DIFFERS", disagreements=1, failures=[{
        "status": "DIFFERS", "detail": "result: values differ <b>", "input": "xp.negative(Input(np.asarray([1.0])))",
        "got": "float64[1] [1.]", "want": "float64[1] [-1.]"}])
    page = tmp_path / "conformance.html"
    page.write_text(html.render(data))
    text = page.read_text()
    assert "http" not in text.split("<script")[0].replace("https://json-schema", "")  # nothing fetched from outside
    browser = _browser()
    dom = _dom(browser, page, "")
    assert dom.count('data-function="') == 3 and "3 of 3 functions shown" in dom
    assert dom.count('class="cell s-DIFFERS has-failures"') == 1
    cell = f"negative/jit/{data['executors'][-1]}"
    dom = _dom(browser, page, f"status=failing&open={cell}")
    assert dom.count('data-function="') == 1 and "1 of 3 functions shown" in dom
    panel = dom[dom.index('id="panel"'):]
    assert 'style="display: block;"' in panel[:80]
    for text in ("xp.negative(Input(np.asarray([1.0])))", "float64[1] [1.]", "float64[1] [-1.]", "values differ &lt;b&gt;"):
        assert text in panel, text
    dom = _dom(browser, page, "q=random&t=eager,jit")
    assert dom.count('data-function="') == 1 and 'data-function="random.bits"' in dom
    assert dom.count('data-cell="random.bits/eager/') == len(data["executors"]) and "/vmap/" not in dom.split('id="panel"')[0]


def test_quick_runs_write_beside_the_committed_deep_report(monkeypatch):
    # the README's `python -m conformance --quick` must not replace conformance/results/conformance.json
    written = []
    monkeypatch.setattr(cli, "_write", lambda data, folder: written.append(folder) or 0)
    common = ["--functions", "negative", "--max-examples", "1", "--no-progress", "--executors", "numpy"]
    cli.main(common + ["--quick"])
    cli.main(common)
    assert written == [cli.QUICK_OUTPUT, cli.DEFAULT_OUTPUT]
    assert cli.QUICK_OUTPUT != cli.DEFAULT_OUTPUT and cli.DEFAULT_OUTPUT == HERE / "results"


def test_data_in_the_page_cannot_end_or_open_its_script_element():
    # "<!--<script" in the embedded JSON put the HTML parser in "script data double escaped" state: the
    # closing </script> was no longer seen and the rest of the page became script text
    hostile = "<!--<script>alert(1)</script></script><b>&amp;"
    data = {"summary": {"examples": 1, "example_executor_pairs": 1, "disagreements": 0, "failing_cells": 0},
            "command": hostile, "created": "t", "machine": "m", "max_examples": 1, "duration_s": 1,
            "rows": [{"function": hostile, "detail": [hostile, {"k<": hostile}]}], "executors": ["numpy"]}
    page = html.render(data)
    start = page.index('<script type="application/json" id="report-data">') + len('<script type="application/json" id="report-data">')
    end = page.index("</script>", start)
    embedded = page[start:end]
    assert "<" not in embedded and ">" not in embedded and "&" not in embedded
    assert json.loads(embedded) == data  # JSON.parse reads the \u003c escapes back as the characters
    assert page.count("<script") == 2 and page.count("</script>") == 2  # only the page's own two elements
    assert "&lt;!--&lt;script&gt;" in page  # the visible copy (the command line) is HTML-escaped
