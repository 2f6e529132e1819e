"""The Numba kernel cache against hostile neighbours and damaged files (real files, fresh processes).

Numba's index and data files are pickles: a folder another user can write must never be
loaded from.  Damaged files are discarded and compiled again; a read-only folder is used.
"""
from __future__ import annotations

import json
import os
import pathlib
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from arrayx.core import executor as base

pytestmark = pytest.mark.skipif(not base.get("numba").available(), reason="numba is not installed")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOBODY = 65534  # a uid that is not ours, to give a folder away (root only)
# the cache's layout on disk (arrayx/executors/numba/kernels.py): its own subfolder of the folder
# given, and in each kernel folder it made, its marker file with this text
SUBFOLDER = "arrayx-numba-kernels"
MARKER, MARKER_TEXT = "ARRAYX_KERNEL_CACHE", b"arrayx Numba kernel cache: made by arrayx, which removes it when unused for 30 days\n"
STALE_AFTER_DAYS = 30

# One process's use of two kernels (a native exp and the C library's log), reported as JSON.
_USE = r"""
import json, math, warnings
import numpy as np
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import arrayx as xp
    import arrayx.executors.libm as _libm, arrayx.executors.numba.kernels as K
    ex = xp.executors.get("numba")
    ex.thresholds.update(transcendental=1)
    x = np.linspace(0.5, 2.0, 1000)
    got_exp = np.asarray(xp.exp(xp.asarray(x, device="numba")))
    got_log = _libm.log(x)
hits = sum(sum(k.stats.cache_hits.values()) for k in K._kernels.values())
misses = sum(sum(k.stats.cache_misses.values()) for k in K._kernels.values())
print(json.dumps({
    "dir": None if K.cache_dir() is None else str(K.cache_dir()), "problem": K.cache_problem(),
    # the C library's log (CPython's math.log), not numpy.log: NumPy's AVX-512 loop differs from it
    "exp_ok": bool(np.allclose(got_exp, np.exp(x), rtol=1e-15)),
    "log_ok": got_log.tolist() == [math.log(v) for v in x.tolist()],
    "hits": hits, "misses": misses, "warnings": [str(w.message) for w in caught],
}))
"""


def _run(cache: pathlib.Path, obey_permissions: bool = False) -> dict:
    """_USE in a fresh process; ``obey_permissions``: even as root (whom file modes do not stop)."""
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(cache), HOME=str(cache.parent))
    command = [sys.executable, "-c", _USE]
    if obey_permissions and os.getuid() == 0:
        command = [shutil.which("setpriv"), "--bounding-set", "-dac_override,-dac_read_search", *command]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["exp_ok"] and out["log_ok"], out
    return out


@pytest.fixture
def scratch():
    """A folder in the system's temporary area (sticky, as /tmp is: what a real cache sits under)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="arrayx-cache-test-"))
    d.chmod(0o755)
    yield d
    subprocess.run(["chmod", "-R", "u+w", str(d)], check=False)
    subprocess.run(["rm", "-rf", str(d)], check=False)


def _kernel_dir(out: dict) -> pathlib.Path:
    assert out["dir"] is not None, out
    return pathlib.Path(out["dir"])


def test_cache_folders_are_created_private_and_reused(scratch):
    first = _run(scratch / "a" / "b")
    d = _kernel_dir(first)
    for folder in (scratch / "a", scratch / "a" / "b", d):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert first["misses"] >= 2 and first["hits"] == 0
    assert {p.suffix for p in d.iterdir()} >= {".py", ".nbi", ".nbc"}
    assert not list(d.rglob("*.pyc"))  # kernel modules are compiled from their text: no bytecode is read back
    second = _run(scratch / "a" / "b")
    assert second["hits"] >= 2 and second["misses"] == 0 and second["warnings"] == []


def _planted_index(folder: pathlib.Path, marker: pathlib.Path) -> None:
    """Index files that run code when unpickled (what an attacker would plant)."""
    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    for name in ("exp_v_float64.kernel-13.py311.nbi", "libm_log_float64.kernel-21.py311.nbi"):
        (folder / name).write_bytes(pickle.dumps(Payload()))


def test_a_folder_others_can_write_is_never_loaded_from(scratch):
    cache = scratch / "shared"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)  # created first by someone else, open to all (mkdir applies the umask)
    first = _run(cache)  # learn the kernel folder's name, then plant pickles in it
    assert first["dir"] is None and "writable by other users (mode 0777)" in first["problem"]
    assert any("without a disk cache" in w for w in first["warnings"])
    kernels = next(iter(cache.glob(f"{SUBFOLDER}/kernels-*")), None) or cache / SUBFOLDER / "kernels-x"
    kernels.mkdir(parents=True, exist_ok=True)
    kernels.chmod(0o777)
    marker = scratch / "pwned"
    _planted_index(kernels, marker)
    again = _run(cache)
    assert again["dir"] is None and not marker.exists()


def test_a_folder_owned_by_another_user_is_not_used(scratch):
    if os.getuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    cache = scratch / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, NOBODY, NOBODY)
    out = _run(cache)
    assert out["dir"] is None and f"owned by uid {NOBODY}" in out["problem"]


def test_a_parent_others_can_write_makes_the_cache_unsafe(scratch):
    parent = scratch / "open"
    parent.mkdir()
    parent.chmod(0o777)  # not sticky: anyone could swap the cache folder for their own
    out = _run(parent / "mine")
    assert out["dir"] is None and "above the cache, is writable by other users" in out["problem"]


#: one native kernel per damaged file (suffix, damage), and one left intact; all in one cache, so one
#: process reads every damaged file
_DAMAGES = [(suffix, damage) for suffix in (".nbi", ".nbc", ".py") for damage in ("empty", "truncated", "garbage")]
_USE_MANY = r"""
import json, warnings
import numpy as np
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import arrayx as xp
    import arrayx.executors.numba.kernels as K
    ex = xp.executors.get("numba")
    ex.thresholds.update(transcendental=1)
    ok = []
    for dtype in (np.float64, np.float32):
        x = np.linspace(0.5, 2.0, 1000).astype(dtype)
        for name in ("exp", "sin", "cos", "tanh", "expm1"):
            got = np.asarray(getattr(xp, name)(xp.asarray(x, device="numba")))
            ok.append(bool(np.allclose(got, getattr(np, name)(x), rtol=1e-6 if dtype == np.float32 else 1e-15)))
per = {k.py_func.__module__.removeprefix("_arrayx_numba_"): [sum(k.stats.cache_hits.values()),
                                                           sum(k.stats.cache_misses.values())]
       for k in K._kernels.values()}
print(json.dumps({"dir": None if K.cache_dir() is None else str(K.cache_dir()), "ok": ok, "per": per,
                  "warnings": [str(w.message) for w in caught]}))
"""


def _run_many(cache: pathlib.Path) -> dict:
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(cache), HOME=str(cache.parent))
    run = subprocess.run([sys.executable, "-c", _USE_MANY], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert all(out["ok"]), out
    return out


@pytest.fixture(scope="module")
def filled_cache():
    """A cache one process filled with ten kernels (copied by each test that damages it)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="arrayx-cache-test-"))
    d.chmod(0o755)
    first = _run_many(d / "c")
    kernels = _kernel_dir(first)
    assert len(first["per"]) > len(_DAMAGES), first  # a kernel per damage, and one more
    # each test copies it (copy2 keeps modification times, which Numba's index checks): that a copy is a
    # filled cache too is the damage test's intact kernel, loaded with no compile
    yield d / "c", kernels.relative_to(d / "c"), sorted(first["per"])
    subprocess.run(["rm", "-rf", str(d)], check=False)


def test_damaged_cache_files_are_discarded_and_recompiled(scratch, filled_cache):
    """Each (suffix, damage) is done to the files of its own kernel; the last kernel stays intact."""
    cache = scratch / "c"
    shutil.copytree(filled_cache[0], cache)
    d = cache / filled_cache[1]
    damaged = dict(zip(filled_cache[2], _DAMAGES))
    for stem, (suffix, damage) in damaged.items():
        paths = [p for p in d.glob(f"{stem}.*") if p.suffix == suffix]
        assert paths, (stem, suffix)
        for path in paths:
            data = path.read_bytes()
            path.write_bytes({"empty": b"", "truncated": data[: len(data) // 2],
                              "garbage": b"\x80\x04garbage" * 7}[damage])
    out = _run_many(cache)  # works, compiling what it could not load
    for stem in filled_cache[2]:
        hits, misses = out["per"][stem]
        suffix, damage = damaged.get(stem, (None, None))
        if suffix == ".py":  # rewritten as generated: the same text, so Numba's cache of it stays valid
            assert "def kernel(" in (d / f"{stem}.py").read_text() and misses == 0, (suffix, damage, out)
        elif suffix is not None:
            assert misses >= 1, (suffix, damage, out)
            assert any(stem in w and "could not be loaded" in w and "compiling it again" in w
                       for w in out["warnings"]), (suffix, damage, out)
        else:  # the intact kernel: the copied cache is a filled cache
            assert (hits, misses) == (1, 0), out
    repaired = _run_many(cache)  # a later process finds good files again
    assert repaired["warnings"] == [] and all(h >= 1 and m == 0 for h, m in repaired["per"].values()), repaired


def test_a_read_only_cache_with_valid_kernels_is_used(scratch):
    if os.getuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("root ignores file modes, and setpriv (util-linux) is not here to drop that")
    cache = scratch / "ro"
    d = _kernel_dir(_run(cache))
    for p in [*d.iterdir(), d, cache]:
        p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)
    out = _run(cache, obey_permissions=True)
    assert out["dir"] == str(d) and out["hits"] >= 2 and out["misses"] == 0, out
    assert out["warnings"] == [], out


# -- where the cache is, and what its pruning may remove ---------------------------------------------

_WHERE = r"""
import json, os, sys
if sys.argv[1] == "no-passwd-entry":  # a uid the password database does not know (containers)
    import pwd
    def unknown(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")
    pwd.getpwuid = unknown
import arrayx.executors.numba.kernels as K
print(json.dumps({"dir": None if K.cache_dir() is None else str(K.cache_dir()), "problem": K.cache_problem()}))
"""


def _where(cwd: pathlib.Path, env: dict, how: str = "") -> dict:
    run = subprocess.run([sys.executable, "-c", _WHERE, how], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _env_without_cache_settings(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOME", "XDG_CACHE_HOME", "ARRAYX_NUMBA_CACHE_DIR", "ARRAYX_CACHE_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return dict(env, **extra)


@pytest.mark.parametrize("home", ["unset", "relative"])
def test_without_a_home_folder_the_cache_is_a_private_temporary_folder(scratch, home):
    """HOME unset (and no password entry to fall back on) or relative: never a folder literally
    named ``~`` (or ``home``) in the working directory, but this user's folder in the temporary area."""
    cwd, tmp = scratch / "cwd", scratch / "tmp"
    cwd.mkdir()
    tmp.mkdir(mode=0o700)
    env = _env_without_cache_settings(TMPDIR=str(tmp))
    if home == "relative":
        env.update(HOME="home", XDG_CACHE_HOME="xdg")  # relative XDG_CACHE_HOME is ignored (XDG spec)
    out = _where(cwd, env, "no-passwd-entry")
    assert list(cwd.iterdir()) == []  # nothing made in the working directory
    assert out["problem"] is None, out
    where = pathlib.Path(out["dir"])
    assert where.parent == tmp / f"arrayx-cache-{os.getuid()}" / "arrayx" / "numba" / SUBFOLDER
    assert stat.S_IMODE((tmp / f"arrayx-cache-{os.getuid()}").stat().st_mode) == 0o700
    assert (where / MARKER).read_bytes() == MARKER_TEXT


def test_an_absolute_xdg_cache_home_is_used(scratch):
    env = _env_without_cache_settings(HOME=str(scratch / "home"), XDG_CACHE_HOME=str(scratch / "xdg"))
    out = _where(scratch, env)
    assert pathlib.Path(out["dir"]).parent == scratch / "xdg" / "arrayx" / "numba" / SUBFOLDER


def _aged(folder: pathlib.Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(folder, (t, t), follow_symlinks=False)


def test_pruning_removes_only_stale_folders_the_cache_made(scratch):
    """The cache folder given may hold the user's own ``kernels-*`` folders: arrayx keeps its
    kernels in its own subfolder and removes only stale folders there that carry its marker."""
    root = scratch / "given"
    ours = root / SUBFOLDER
    ours.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    old = STALE_AFTER_DAYS + 1

    def folder(path: pathlib.Path, marker: bytes | None, days: float) -> pathlib.Path:
        path.mkdir(mode=0o700)
        (path / "notes.txt").write_text("the user's own file\n")
        if marker is not None:
            (path / MARKER).write_bytes(marker)
        _aged(path, days)
        return path

    backup = folder(root / "kernels-backup", None, old)  # the user's, next to arrayx's subfolder
    beside = folder(root / "kernels-0000000000000000", MARKER_TEXT, old)  # marked, but not in arrayx's subfolder
    unmarked = folder(ours / "kernels-1111111111111111", None, old)
    wrong = folder(ours / "kernels-2222222222222222", b"something else\n", old)
    recent = folder(ours / "kernels-3333333333333333", MARKER_TEXT, STALE_AFTER_DAYS - 1)
    stale = folder(ours / "kernels-4444444444444444", MARKER_TEXT, old)
    target = folder(scratch / "linked", MARKER_TEXT, old)  # a link to a marked folder: not followed
    link = ours / "kernels-5555555555555555"
    link.symlink_to(target)
    _aged(link, old)

    out = _where(scratch, _env_without_cache_settings(HOME=str(scratch), ARRAYX_NUMBA_CACHE_DIR=str(root)))
    for kept in (backup, beside, unmarked, wrong, recent, target):
        assert (kept / "notes.txt").read_text() == "the user's own file\n", kept
    assert link.is_symlink()
    current = pathlib.Path(out["dir"])
    assert current.parent == ours and (current / MARKER).read_bytes() == MARKER_TEXT
    assert not stale.exists()  # arrayx's, unused for longer than STALE_AFTER_DAYS: removed
    assert sorted(p.name for p in root.iterdir()) == sorted([SUBFOLDER, backup.name, beside.name])
