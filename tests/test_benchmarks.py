"""``python -m benchmarks``: every registered bench follows the convention, and the runner writes JSON, plots, summary."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks import __main__ as runner


def test_registered_benches_follow_the_convention():
    registered, standalone = runner.discover()
    assert {"eager", "jit", "grad", "pytree", "random", "executors_numba"} <= set(registered)
    for name, mod in registered.items():
        assert isinstance(mod.TITLE, str) and mod.TITLE, name
        assert "Run:" in (mod.__doc__ or "") or "python benchmarks/" in (mod.__doc__ or ""), name  # runnable alone
    assert all(s.startswith("bench_") and ".py" in s for s in standalone)


def test_pytree_workloads_are_callables_per_label_with_arrayx_last():
    registered, _ = runner.discover()
    table = registered["pytree"].workloads(quick=True)
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


@pytest.mark.slow  # the benchmark runner, in a subprocess
def test_quick_run_writes_json_plots_and_summary(tmp_path):
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--only", "pytree", "--rounds", "1",
                          "--output", str(tmp_path), "--tag", "test"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads((tmp_path / "runner-test.json").read_text())
    bench = data["benches"]["pytree"]
    assert bench["workloads"] and all(w["times_s"]["arrayx"] > 0 and w["ratios"] for w in bench["workloads"].values())
    png = tmp_path / "plots" / "pytree-test.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "summary-test.md").read_text()
    assert "## pytree" in md and "headline" in md and "plots/pytree-test.png" in md
    assert "headline ratios" in out.stdout and str(png) in out.stdout


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
