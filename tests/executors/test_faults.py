"""Faults a process meets in ordinary use, each in a fresh subprocess with a bounded time.

- fork after each kind of Numba op (eager elementwise, eager reduction, a fused jit region), with
  ``os.fork`` and a ``multiprocessing`` fork pool: the child runs the same op and exits cleanly
  (a reduction used to start GNU OpenMP, which kills fork children);
- fork while another thread holds a lock arrayx's Numba paths take (a team's, the buffer pool's,
  the kernel compile lock, Numba's compiler lock), and forks under a busy team: the child never
  waits forever;
- a kernel cache with bit-flipped files (compiled again, never loaded), and a cache folder whose
  link is swapped after the check (the process keeps the folder it verified).

Every case is a script run with ``subprocess.run(..., timeout=...)``: a hang or a crash fails the
test, never the test session (the three fork checks share one script, each reported by name).
"""
from __future__ import annotations

import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile

import pytest

from arrayx.core import executor as base

pytestmark = [pytest.mark.skipif(not base.get("numba").available(), reason="numba is not installed"),
              pytest.mark.skipif(sys.platform != "linux", reason="fork and file modes as on Linux")]

ROOT = pathlib.Path(__file__).resolve().parents[2]

_PRELUDE = r"""
import json, os, sys, threading, time, warnings
import numpy as np
import arrayx as xp
from arrayx.core import executor as base
ex = base.get("numba")
ex.thresholds.update(dict.fromkeys(ex.thresholds, 1))  # every op on its Numba kernel,
ex.min_team_share = 0  # whatever share the worker team took of recent calls
ex.fusion_min_size = ex.fusion_parallel_size = 0  # every region fused, on the team
HOST = np.linspace(-2.0, 2.0, 2_000_000)

def selu(x):
    return 1.0507009873554805 * xp.where(x > 0, x, 1.6732632423543772 * (xp.exp(x) - 1.0))

JF = xp.jit(selu)

def op(kind, host=HOST):
    with xp.use_executor("numba"):
        x = xp.asarray(host)
        if kind == "elementwise":
            return np.asarray(xp.exp(x) * 2.0)
        if kind == "reduction":
            return np.asarray(xp.mean(x))
        return np.asarray(JF(x))

def regions(jf, host):
    # the RegionRunners of jf's compiled graph (on numba)
    with xp.use_executor("numba"):
        derived = jf.trace(xp.asarray(host)).graph.derived
    return next(fn for key, fn in derived.items() if key[:2] == ("compiled", "numba")).regions

def wait_child(pid, seconds):
    # the child's exit status, or "hung" (then killed)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"

def child_checks(kind, want):
    # in a fork child: the op again, compared with the parent's result; exit 0 only if equal
    try:
        ok = np.array_equal(op(kind), want)
    except BaseException:
        os._exit(3)
    os._exit(0 if ok else 4)
"""


def _script(body: str, timeout: float = 240, env: dict | None = None) -> dict:
    """Run ``_PRELUDE + body`` in a fresh process; its last line of output, as JSON."""
    env = dict(os.environ, **(env or {}))
    env.setdefault("ARRAYX_CACHE_DIR", str(pathlib.Path(tempfile.gettempdir()) / f"arrayx-faults-{os.getuid()}"))
    try:
        run = subprocess.run([sys.executable, "-c", _PRELUDE + body], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the script ran past {timeout} s (a hang): {(e.stderr or b'')[-2000:]!r}")
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    return json.loads(run.stdout.strip().splitlines()[-1])


# -- fork after each kind of op ---------------------------------------------------------------------

# The three fork checks run in ONE fresh process (a module fixture), in this order: the first forks
# right after each kind of op's first use, so it comes first; each check's outcome, or its
# traceback, is reported under its name (one process start and Numba team instead of three).

_FORK_AFTER_EACH_KIND = """
import multiprocessing
report = {}
for kind in ("elementwise", "reduction", "fused"):  # each forked after its first use
    want = op(kind)
    statuses = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            child_checks(kind, want)
        statuses.append(wait_child(pid, 60))
    with multiprocessing.get_context("fork").Pool(2) as pool:
        res = pool.map_async(op, [kind] * 4)
        try:
            pooled = [bool(np.array_equal(r, want)) for r in res.get(timeout=60)]
        except multiprocessing.TimeoutError:
            pooled = "hung"
    report[kind] = {"statuses": statuses, "pooled": pooled}
RESULT = report
"""


@pytest.fixture(scope="module")
def forks():
    """{check name: its RESULT, or {"error": traceback}} of the three fork checks, in one process."""
    checks = [("after_each_kind", _FORK_AFTER_EACH_KIND), ("lock_held", _fork_while_held()),
              ("busy_team", _FORKS_UNDER_A_BUSY_TEAM)]
    return _script(f"""
import traceback
results = {{}}
for name, body in {checks!r}:
    try:
        exec(body, globals())
        results[name] = RESULT
    except BaseException:
        results[name] = {{"error": traceback.format_exc()}}
print(json.dumps(results))
""", timeout=600)


def test_fork_after_each_kind_of_numba_op(forks):
    """One process runs each kind of op for the first time and forks right after it (three children,
    then a fork pool of two): every child runs the same op and exits cleanly."""
    out = forks["after_each_kind"]
    for kind in ("elementwise", "reduction", "fused"):
        assert out.get(kind) == {"statuses": [0, 0, 0], "pooled": [True] * 4}, (kind, out)


# -- fork while another thread holds a lock ---------------------------------------------------------

_HOLDERS = {
    # the teams' lock, taken while a team is made (a team's callers and workers take no lock)
    "team": "import arrayx.executors.numba.team as _numba_team\nlock = _numba_team._teams_lock",
    # the buffer pool, which the kernels' outputs come from
    "pool": "import arrayx.executors.common.buffer_pool as _buffer_pool\nlock = _buffer_pool.POOL._lock",
    # arrayx's compile lock and Numba's: a compile in another thread at the fork
    "compile": "import arrayx.executors.numba.kernels as _numba_kernels\nlock = _numba_kernels._lock",
    "numba_compiler": "from numba.core.compiler_lock import global_compiler_lock\nlock = global_compiler_lock._lock",
}


def _fork_while_held() -> str:
    holders = "\n".join(f"{name}_lock = None\n" + code.replace("\nlock = ", f"\n{name}_lock = ")
                        for name, code in sorted(_HOLDERS.items()))
    return holders + f"""
want = op("fused")
statuses = {{}}
for holder in {sorted(_HOLDERS)!r}:
    lock = globals()[holder + "_lock"]
    taken, release = threading.Event(), threading.Event()
    def hold():
        with lock:
            taken.set()
            release.wait(1.0)  # a compile, a worker between jobs: held a while
    holder_thread = threading.Thread(target=hold, daemon=True)
    holder_thread.start()
    taken.wait()
    pid = os.fork()
    if pid == 0:
        try:  # a new region (a compile) and the one the parent made
            ok = np.array_equal(op("fused"), want) and np.array_equal(np.asarray(xp.jit(lambda x: selu(x) + 1.0)(
                xp.asarray(HOST, device="numba"))), want + 1.0)
        except BaseException:
            os._exit(3)
        os._exit(0 if ok else 4)
    release.set()
    statuses[holder] = wait_child(pid, 90)
    holder_thread.join()  # the lock is free again before the next one is taken
RESULT = statuses
"""


def test_fork_while_another_thread_holds_a_lock(forks):
    """The child must not wait forever on a lock whose holder (a parent thread) it does not have: one
    process forks once while each lock is held in turn (one child per lock)."""
    assert forks["lock_held"] == dict.fromkeys(sorted(_HOLDERS), 0), forks["lock_held"]


_FORKS_UNDER_A_BUSY_TEAM = """
want = op("fused")
stop = threading.Event()
def busy():
    while not stop.is_set():
        op("fused")
        op("elementwise")
threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
for t in threads:
    t.start()
statuses = []
small = HOST[:200_000]
want_small = op("fused", small)
for _ in range(30):
    pid = os.fork()
    if pid == 0:
        try:
            ok = np.array_equal(op("fused", small), want_small)
        except BaseException:
            os._exit(3)
        os._exit(0 if ok else 4)
    statuses.append(wait_child(pid, 60))
stop.set()
for t in threads:
    t.join()
RESULT = {"statuses": statuses}
"""


def test_forks_under_a_busy_team(forks):
    """Threads keep the team busy while the main thread forks a few dozen times: every child runs
    the same region (on the team the parent's region holds) and exits in bounded time."""
    assert forks["busy_team"] == {"statuses": [0] * 30}, forks["busy_team"]


# -- the kernel cache -----------------------------------------------------------------------------

_CACHE_USE = r"""
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import arrayx.executors.numba.fusion.run as _numba_fused_run, arrayx.executors.numba.kernels as K
    got = op("fused", HOST[:100_000])
    want = np.asarray(selu(xp.asarray(HOST[:100_000], device="numpy")))
print(json.dumps({"ok": bool(np.allclose(got, want, rtol=1e-14, atol=0)), "dir": str(K.cache_dir()),
                  "stats": _numba_fused_run.kernel_stats(), "warnings": [str(w.message) for w in caught]}))
"""


def _fill(cache: pathlib.Path) -> pathlib.Path:
    out = _script(_CACHE_USE, env={"ARRAYX_NUMBA_CACHE_DIR": str(cache)})
    assert out["ok"] and out["dir"] != "None", out
    return pathlib.Path(out["dir"])


#: one fused region per flipped file (suffix, where: the header, the payload, the end, checksummed
#: alike), and one left intact; all in one cache, so one process reads every damaged file
_FLIPS = [(suffix, where) for suffix in (".nbc", ".nbi") for where in (0.02, 0.5, 0.98)]
_REGIONS = ["selu(x)", "x * 2.0 + 1.0", "xp.exp(x) * x", "xp.tanh(x) - x", "xp.sin(x) + xp.cos(x)",
            "xp.sqrt(xp.abs(x)) * x", "x * x - 3.0"]
_FLIP_USE = r"""
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import arrayx.executors.numba.fusion.run as _numba_fused_run, arrayx.executors.numba.kernels as K
    host = HOST[:100_000]
    ok = []
    for text in %r:
        fn = eval("lambda x: " + text)
        with xp.use_executor("numba"):
            got = np.asarray(xp.jit(fn)(xp.asarray(host)))
        want = np.asarray(fn(xp.asarray(host, device="numpy")))
        ok.append(bool(np.allclose(got, want, rtol=1e-14, atol=0)))
per = {stem: [sum(k._cache_hits.values()), sum(k._cache_misses.values())]
       for stem, k in _numba_fused_run._loaded.items()}
print(json.dumps({"ok": ok, "dir": str(K.cache_dir()), "per": per, "warnings": [str(w.message) for w in caught]}))
""" % (_REGIONS,)


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A kernel cache one process filled with the regions of ``_REGIONS`` (a test works on a copy)."""
    cache = tmp_path_factory.mktemp("filled") / "cache"
    out = _script(_FLIP_USE, env={"ARRAYX_NUMBA_CACHE_DIR": str(cache)})
    assert all(out["ok"]) and out["dir"] != "None", out
    assert len(out["per"]) == len(_REGIONS), out  # one kernel per region
    return cache, pathlib.Path(out["dir"]).relative_to(cache), sorted(out["per"])


def test_bit_flipped_cache_files_are_compiled_again(filled, tmp_path):
    """A flipped bit in a cached kernel's file never reaches Numba's loader (which crashed on some:
    SIGSEGV/SIGILL/SIGABRT, in this and every later run): the kernel is compiled again, and a later
    process loads the rewritten files.  Each (suffix, position) flips the files of its own kernel;
    the last kernel stays intact and is loaded.  (0.25 and 0.75 were dropped: two more flips inside
    the payload.)"""
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(filled[0], cache)
    kernels, stems = cache / filled[1], filled[2]
    damaged = dict(zip(stems, _FLIPS))
    for stem, (suffix, where) in damaged.items():
        files = sorted(kernels.glob(f"{stem}*{suffix}"))
        assert files, (stem, suffix)
        for p in files:
            data = bytearray(p.read_bytes())
            i = min(len(data) - 1, int(len(data) * where))
            data[i] ^= 0x10
            p.write_bytes(bytes(data))
    out = _script(_FLIP_USE, timeout=240, env={"ARRAYX_NUMBA_CACHE_DIR": str(cache)})
    assert all(out["ok"]), out
    for stem in stems:
        hits, misses = out["per"][stem]
        if stem in damaged:
            assert misses >= 1, (damaged[stem], out)  # compiled again, never loaded
            assert any(stem in w and "could not be loaded" in w for w in out["warnings"]), (damaged[stem], out)
        else:
            assert (hits, misses) == (1, 0), out
    again = _script(_FLIP_USE, timeout=240, env={"ARRAYX_NUMBA_CACHE_DIR": str(cache)})  # repaired
    assert all(again["ok"]) and again["warnings"] == [], again
    assert all(again["per"][stem] == [1, 0] for stem in stems), again


def test_a_link_swapped_after_the_check_is_not_followed(tmp_path):
    """The cache folder is reached through a link; once the process verified it, the link is pointed
    at another folder holding index files that run code when unpickled.  The process keeps using
    the folder it verified: the planted files are never read."""
    good = tmp_path / "good"
    good.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(good)
    kernels = _fill(link)  # fills good/ through the link (the reported folder is the resolved one)
    assert kernels.resolve().is_relative_to(good.resolve())
    evil = tmp_path / "evil"
    marker = tmp_path / "pwned"
    import shutil

    shutil.copytree(good, evil)
    planted = _plant(evil / kernels.relative_to(good.resolve()), marker)
    assert planted
    out = _script(f"""
import arrayx.executors.numba.kernels as K
K.cache_dir()  # verified and opened: now the link is swapped
os.unlink({str(link)!r})
os.symlink({str(evil)!r}, {str(link)!r})
""" + _CACHE_USE, env={"ARRAYX_NUMBA_CACHE_DIR": str(link)})
    assert out["ok"], out
    assert not marker.exists(), "a planted index file was unpickled"
    assert out["stats"]["loaded"] >= 1, out  # from the verified folder


def _plant(folder: pathlib.Path, marker: pathlib.Path) -> int:
    """Replace each index file in ``folder`` by a pickle that creates ``marker`` when loaded, in the
    format the code under test reads (with a valid checksum where files carry one)."""
    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    try:
        from arrayx.executors.numba.cache import seal
    except ImportError:
        seal = None
    n = 0
    for p in folder.glob("*.nbi"):
        payload = pickle.dumps(Payload())
        p.write_bytes(seal(payload) if seal is not None else payload)
        n += 1
    return n


def test_a_link_in_a_folder_others_can_write_is_refused(tmp_path):
    """The path as given is checked too: a link in a folder anyone may write (not sticky) could be
    swapped by anyone, whatever folder it points at now."""
    good = tmp_path / "good"
    good.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "link").symlink_to(good)
    out = _script(_CACHE_USE, env={"ARRAYX_NUMBA_CACHE_DIR": str(shared / "link")})
    assert out["ok"] and out["dir"] == "None", out
    assert any("writable by other users" in w for w in out["warnings"]), out


def test_a_folder_owned_by_someone_else_above_the_cache_is_refused(tmp_path):
    """A folder above the cache owned by another user (not root) lets that user swap what is below."""
    if os.getuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    out = _script(_CACHE_USE, env={"ARRAYX_NUMBA_CACHE_DIR": str(theirs / "mine")})
    assert out["ok"] and out["dir"] == "None", out
    assert any("owned by uid 65534" in w for w in out["warnings"]), out
