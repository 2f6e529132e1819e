"""``python -m benchmarks``: every registered bench follows the convention, and the runner writes JSON, plots, summary."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks import __main__ as runner


def test_registered_benches_follow_the_convention():
    registered, standalone = runner.discover()  # from the files' source: nothing is imported
    assert {"eager", "jit", "grad", "pytree", "random", "executors_numba", "clients"} <= set(registered)
    for name, bench in registered.items():
        assert bench.path.name == f"bench_{name}.py" and bench.title, name
        assert "Run:" in bench.doc or "python benchmarks/" in bench.doc, name  # runnable alone
    assert all(s.startswith("bench_") and s.endswith(".py") for s in standalone)
    assert not set(registered) & {s[len("bench_"):-len(".py")] for s in standalone}


def test_pytree_workloads_are_callables_per_label_with_arrayx_last():
    registered, _ = runner.discover()
    table = registered["pytree"].load().workloads(quick=True)
    assert table and all(callable(fn) for row in table.values() for fn in row.values())
    for row in table.values():
        labels = list(row)
        assert labels[-1] == "arrayx" and len(labels) >= 2, labels


def test_ratios_and_headline_are_peer_time_over_arrayx_time():
    times = {"numpy": 2.0, "jax": 8.0, "arrayx[numpy]": 4.0}
    assert runner.ratios(times) == {"arrayx[numpy] vs numpy": 0.5, "arrayx[numpy] vs jax": 2.0}
    bench = {"workloads": {"a": {"ratios": {"x vs y": 2.0}}, "b": {"ratios": {"x vs y": 8.0}}}}
    assert runner.headline(bench) == {"x vs y": pytest.approx(4.0)}


def test_time_workload_runs_every_label_in_every_round():
    calls = {"peer": 0, "arrayx": 0}

    def count(k):
        def fn():
            calls[k] += 1
        return fn

    best = runner.time_workload({k: count(k) for k in calls}, rounds=3, target_s=1e-4)
    assert set(best) == {"peer", "arrayx"} and all(v > 0 for v in best.values())
    assert all(n >= 1 + 1 + 3 for n in calls.values())  # warm-up, calibration, one timing per round


# A folder of bench files standing for the real ones: what each needs from its process, a missing
# peer, a bench that raises, one whose process dies.
_FAKE_BENCHES = {
    "bench_a_sets_state.py": """
import os, sys
TITLE = "sets an environment variable at import, as bench_clients sets SCIPY_ARRAY_API"
os.environ["ARRAYX_FAKE_BENCH_STATE"] = "a"
def workloads(quick):
    return {"w": {"peer": lambda: None, "arrayx": lambda: None}}
""",
    "bench_b_needs_a_fresh_process.py": """
import os
TITLE = "refuses to run after another bench changed the process"
def workloads(quick):
    if "ARRAYX_FAKE_BENCH_STATE" in os.environ or "bench_a_sets_state" in __import__("sys").modules:
        raise RuntimeError("bench_a's state reached this bench")
    return {"w": {"peer": lambda: sum(range(10)), "arrayx": lambda: sum(range(10))}}
""",
    "bench_c_missing_peer.py": """
TITLE = "needs a library that is not installed"
def workloads(quick):
    import arrayx_no_such_peer_library
""",
    "bench_d_raises.py": """
TITLE = "raises"
def workloads(quick):
    raise ValueError("d: a broken bench")
""",
    "bench_e_dies.py": """
import os
TITLE = "its process dies"
def workloads(quick):
    os._exit(3)
""",
    "bench_f_standalone.py": "print('no workloads: runs alone')\n",
    "bench_h_wrong_table.py": """
TITLE = "its workloads returns something else than the convention's table"
def workloads(quick):
    return [("rows",)], 256
""",
}


@pytest.fixture
def fake_benches(tmp_path):
    folder = tmp_path / "benches"
    folder.mkdir()
    for name, text in _FAKE_BENCHES.items():
        (folder / name).write_text(text)
    return folder


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=runner.ROOT)


def test_each_bench_runs_in_its_own_process_and_only_failures_fail_the_run(fake_benches, tmp_path):
    out = _run("--folder", str(fake_benches), "--quick", "--rounds", "1", "--output", str(tmp_path / "out"),
               "--only", "a_sets_state,b_needs_a_fresh_process,c_missing_peer")
    assert out.returncode == 0, out.stdout + out.stderr  # a skipped bench does not fail the run
    data = json.loads((tmp_path / "out" / "runner.json").read_text())
    a, b, c = (data["benches"][k] for k in ("a_sets_state", "b_needs_a_fresh_process", "c_missing_peer"))
    assert a["workloads"]["w"]["times_s"]["arrayx"] > 0 and "error" not in a
    assert "error" not in b, b  # bench_a's environment variable stayed in bench_a's process
    assert b["workloads"]["w"]["times_s"]["arrayx"] > 0 and set(b["workloads"]["w"]["ratios"]) == {"arrayx vs peer"}
    assert c["workloads"] == {} and "arrayx_no_such_peer_library" in c["skipped"] and "error" not in c
    assert "c_missing_peer: skipped: needs arrayx_no_such_peer_library" in out.stdout
    assert "skipped: needs arrayx_no_such_peer_library" in (tmp_path / "out" / "summary.md").read_text()
    assert data["standalone"] == ["bench_f_standalone.py"]


def test_a_bench_that_raises_or_dies_fails_the_run_and_the_others_still_run(fake_benches, tmp_path):
    out = _run("--folder", str(fake_benches), "--quick", "--rounds", "1", "--output", str(tmp_path),
               "--only", "d_raises,e_dies,h_wrong_table,a_sets_state")
    assert out.returncode == 1, out.stdout + out.stderr
    benches = json.loads((tmp_path / "runner.json").read_text())["benches"]
    assert benches["d_raises"]["error"] == "ValueError: d: a broken bench"
    assert "exited with code 3" in benches["e_dies"]["error"]
    assert "returned a tuple, not the runner's {workload: {label: callable}}" in benches["h_wrong_table"]["error"]
    assert benches["a_sets_state"]["workloads"] and "error" not in benches["a_sets_state"]
    assert "d_raises   FAILED: ValueError: d: a broken bench" in out.stdout
    assert "failed: d_raises, e_dies, h_wrong_table" in out.stderr


def test_a_bench_past_its_time_limit_is_stopped_and_fails(fake_benches, tmp_path):
    (fake_benches / "bench_g_hangs.py").write_text("TITLE = 'hangs'\ndef workloads(quick):\n"
                                                   "    import time\n    time.sleep(600)\n")
    out = _run("--folder", str(fake_benches), "--only", "g_hangs", "--timeout", "1", "--output", str(tmp_path))
    assert out.returncode == 1
    assert "still running after 1 s" in json.loads((tmp_path / "runner.json").read_text())["benches"]["g_hangs"]["error"]


def test_only_a_module_that_is_not_installed_counts_as_a_missing_peer():
    assert runner.missing_peer(ModuleNotFoundError("x", name="arrayx_no_such_peer.sub")) == "arrayx_no_such_peer"
    assert runner.missing_peer(ModuleNotFoundError("x", name="numpy")) is None  # installed: broken, not missing
    assert runner.missing_peer(ModuleNotFoundError("x", name="arrayx.no_such_module")) is None
    assert runner.missing_peer(ImportError("cannot import name 'f' from 'arrayx'", name="arrayx")) is None
    assert runner.missing_peer(ValueError("x")) is None


@pytest.mark.slow  # the README's command: every registered bench, each in its process (a few minutes)
def test_python_m_benchmarks_quick_runs_every_bench_and_writes_json_plots_and_summary(tmp_path):
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--rounds", "1", "--output", str(tmp_path)],
                         capture_output=True, text=True, timeout=1800, cwd=runner.ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    data = json.loads((tmp_path / "runner.json").read_text())
    registered, _ = runner.discover()
    assert set(data["benches"]) == set(registered)
    for name, bench in data["benches"].items():
        assert "error" not in bench, (name, bench.get("error"))
        if bench.get("skipped"):  # only a bench whose library is missing here
            assert "which is not installed here" in bench["skipped"], name
            continue
        assert bench["workloads"] and bench["headline"], name
        for w in bench["workloads"].values():
            assert all(t > 0 for t in w["times_s"].values()) and w["ratios"], (name, w)
        png = tmp_path / bench["plot"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert not data["benches"]["clients"].get("skipped")  # the [test] extra has its clients: it must run
    md = (tmp_path / "summary.md").read_text()
    assert all(f"## {name}:" in md for name in registered) and "headline" in md
    assert "headline ratios" in out.stdout and f"wrote {tmp_path / 'runner.json'}" in out.stdout


def test_unknown_bench_is_refused_with_the_registered_names():
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--only", "nope"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2 and "nope" in out.stderr and "pytree" in out.stderr


def test_interleaved_best_opens_each_round_with_another_label():
    from benchmarks._harness import interleaved_best

    order = []
    fns = {k: (lambda k=k: order.append(k)) for k in ("peer", "arrayx[a]", "arrayx[b]")}
    best = interleaved_best(fns, rounds=3, repeat=2, pause_s=0.0)
    assert set(best) == set(fns) and all(v > 0 for v in best.values())
    timed = order[3:]  # after one warm-up call each
    assert len(timed) == 3 * 3 * 2
    firsts = [timed[r * 6] for r in range(3)]
    assert sorted(firsts) == sorted(fns)  # each label opens one round


def test_lax_bench_refuses_a_label_that_disagrees_with_its_peer():
    import numpy as np

    from benchmarks.bench_lax import agree

    agree({"peer": lambda: np.ones(3) * 500, "arrayx[numpy]": lambda: np.ones(3) * 500 + np.array([0.0, 0.5, -0.5])})
    with pytest.raises(AssertionError, match="arrayx"):
        agree({"peer": lambda: np.ones(3), "arrayx[numpy]": lambda: np.zeros(3)})
