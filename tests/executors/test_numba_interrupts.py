"""Ctrl-C during Numba executor calls (arrayx/executors/numba/team.py): a KeyboardInterrupt raised at
any bytecode of a call leaves the team of worker threads usable, and the next call right.

A fresh process calls a fused jitted function, an eager elementwise kernel (on the team) and an
eager reduction (a Numba kernel on the team) in a loop while a timer interrupts it at random points,
each interrupt a KeyboardInterrupt caught by the loop; then last calls must return the values the
first ones did, and the reduction must still run as a Numba kernel, from this thread and another
one (not on NumPy for good: a launch guard left taken).  A call that hangs (a lock left held by an
interrupted call: the bug this guards against) is caught by a time limit in the child, which prints
every thread's stack, and a larger one in the parent.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from arrayx.core import executor as base

pytestmark = pytest.mark.skipif(not base.get("numba").available(), reason="numba is not installed")

ROOT = pathlib.Path(__file__).resolve().parents[2]

# argv: repository, seconds of interrupting, interrupts wanted (stops at whichever comes last, or at
# 4x the seconds), seeds (comma-separated: one run of interrupts each, in turn, each reported on its
# own), seconds after the warm-up before the child gives up as hung (per seed)
_CHILD = r"""
import faulthandler, json, random, signal, sys, threading, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import arrayx as xp
from arrayx.core import executor as base
from arrayx.executors.numba import team as T
seconds, wanted, limit = float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[5])
seeds = [int(s) for s in sys.argv[4].split(",")]
ex = base.get("numba")
ex.fusion_min_size = ex.fusion_parallel_size = 0  # a parallel fused kernel: run by the team
ex.min_team_share = 0  # the eager kernel runs on the team too, however little the workers take
ex.thresholds["reduction"] = 1  # the sum below runs as a Numba kernel on the team
native = []  # whether each eager kernel ran (False: it went to NumPy)
real_call = ex._call
def spy(*args, **kw):
    ran = real_call(*args, **kw)
    native.append(ran)
    return ran
ex._call = spy
host = np.linspace(-3.0, 3.0, 60_001)
fn = lambda x: xp.exp(x) * 2.0 - xp.sum(x * 0.5)
with xp.use_executor("numba"):
    jf, a = xp.jit(fn), xp.asarray(host)
    m = xp.reshape(a[:60_000], (30, 2000))
    calls = (lambda: jf(a), lambda: xp.tanh(a), lambda: xp.sum(m, axis=1))
    want = [np.asarray(c()).copy() for c in calls]
    start = time.perf_counter()
    for _ in range(20):
        for c in calls:
            c()
    per_call = (time.perf_counter() - start) / 60
    state = {"armed": False, "interrupts": 0}

    def interrupt(signum, frame):  # Ctrl-C's KeyboardInterrupt, only inside the try below
        if state["armed"]:
            state["armed"] = False
            state["interrupts"] += 1
            raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, interrupt)
    report = {}
    for seed in seeds:
        faulthandler.dump_traceback_later(limit, exit=True)  # hung: every thread's stack, exit 1
        rng = random.Random(seed)
        state["interrupts"] = 0
        done = 0
        start = time.monotonic()
        while True:
            elapsed = time.monotonic() - start
            if (elapsed >= seconds and state["interrupts"] >= wanted) or elapsed >= 4 * seconds:
                break
            call = calls[done % 3]
            signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.0, 1.5 * per_call))
            try:
                state["armed"] = True
                call()
                state["armed"] = False
                done += 1
            except KeyboardInterrupt:
                state["armed"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        got = [np.asarray(c()) for c in calls]
        native_here = native[-1]
        elsewhere = threading.Thread(target=calls[2])
        elsewhere.start()
        elsewhere.join()
        faulthandler.cancel_dump_traceback_later()
        report[seed] = {
            "interrupts": state["interrupts"], "completed": done, "native": [native_here, native[-1]],
            "right": all(np.allclose(g, w, rtol=1e-12, atol=0) for g, w in zip(got, want)),
            "teams": [t.size for t in T._teams.values()],
            "failures": [f for t in T._teams.values() for f in t.failures],
        }
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    """One kernel cache for the module's children (compiled by the first)."""
    return tmp_path_factory.mktemp("interrupts") / "cache"


def _interrupted(cache, seconds: float, wanted: int, seeds: tuple) -> dict:
    """{seed: that run's report} from one child running the interrupts of each seed in turn."""
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(cache),
               NUMBA_NUM_THREADS=str(max(2, os.cpu_count() or 1)))  # a team, even on one core
    limit = 4 * seconds + 30
    try:
        run = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), str(seconds), str(wanted),
                              ",".join(map(str, seeds)), str(limit)], env=env, cwd=cache.parent,
                             capture_output=True, text=True, timeout=len(seeds) * limit + 600)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the interrupted calls hung (killed after {e.timeout:.0f} s); stderr: {e.stderr!r}")
    assert run.returncode == 0, f"hung or failed (exit {run.returncode}):\n{run.stderr[-6000:]}"
    return {int(k): v for k, v in json.loads(run.stdout.strip().splitlines()[-1]).items()}


def _check(out: dict, wanted: int) -> None:
    assert out["right"], out
    assert out["teams"] and min(out["teams"]) >= 2, out  # the calls ran on a team of workers
    assert out["failures"] == [], out
    assert out["native"] == [True, True], out  # the reduction's kernel ran, here and in another thread
    assert out["interrupts"] >= wanted, out
    assert out["completed"] > 0, out  # interrupts land at random points, not always


SEEDS = (1, 2)


@pytest.fixture(scope="module")
def seeded_runs(kernel_cache):
    """The runs of every seed in ONE fresh process (one interpreter, Numba and team start), in turn:
    each seed's interrupts, then its checks' values; a later seed starts from the team the earlier
    one's interrupts left."""
    return _interrupted(kernel_cache, seconds=2.0, wanted=300, seeds=SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_interrupted_calls_leave_the_team_usable(seeded_runs, seed):
    _check(seeded_runs[seed], wanted=300)


@pytest.mark.slow
def test_twenty_thousand_interrupted_calls_leave_the_team_usable(kernel_cache):
    _check(_interrupted(kernel_cache, seconds=20.0, wanted=20_000, seeds=(3,))[3], wanted=20_000)
