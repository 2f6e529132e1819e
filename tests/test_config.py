"""``ARRAYX_*`` environment variables: read and checked in one place (``arrayx.core.config``).

A bad value raises ``ConfigError`` (a ValueError) naming the variable, the value and what is
accepted: at ``import arrayx``, and again wherever the value is read later.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from arrayx.core import config as _config

REPO = pathlib.Path(__file__).resolve().parents[1]

BAD = [
    ("ARRAYX_DASK_CONNECT_TIMEOUT", "abc", "not a number"),
    ("ARRAYX_DASK_CONNECT_TIMEOUT", "0", "not more than 0"),
    ("ARRAYX_DASK_SCHEDULER", "tcp://127.0.0.1:notaport", "its port is not a number in 1..65535"),
    ("ARRAYX_DASK_SCHEDULER", "tpc://127.0.0.1:8786", "unknown protocol 'tpc'"),
    ("ARRAYX_DASK_SCHEDULER", "thread", "neither a scheduler name nor an address"),
    ("ARRAYX_DASK_UNKNOWN_SHAPES", "bogus", "not one of the accepted values"),
    ("ARRAYX_NUMBA_FUSED_KERNELS", "abc", "not a whole number"),
    ("ARRAYX_NUMBA_FUSED_KERNELS", "0", "less than 1"),
    ("ARRAYX_NUMBA_SPIN_US", "inf", "not finite"),
    ("ARRAYX_NUMBA_SPIN_US", "-1", "less than 0"),
    ("ARRAYX_NUMBA_THRESHOLD", "1e6", "not a whole number"),
    ("ARRAYX_NUMBA_THREADING_LAYER", "openmp", "not one of the accepted values"),
    ("ARRAYX_CACHE_DIR", "/", "the filesystem root"),
    ("ARRAYX_NUMBA_CACHE_DIR", "/", "the filesystem root"),
    ("ARRAYX_DEBUG_NANS", "maybe", "not a yes/no value"),
    ("ARRAYX_BUFFER_POOL_LIMIT", "1GB", "not a whole number"),
]


def _run(code: str, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(REPO), **env)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=full, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("name, value, problem", BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_a_bad_value_is_named_with_what_is_accepted(monkeypatch, name, value, problem):
    monkeypatch.setenv(name, value)
    with pytest.raises(_config.ConfigError) as info:
        _config.get(name)
    msg = str(info.value)
    assert msg.startswith(f"{name}={value!r}: {problem}"), msg
    assert ". Accepted: " in msg
    assert f"{name} sets " in msg and "correct or unset it" in msg
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name, value, problem", [BAD[0], BAD[2], BAD[5], BAD[6], BAD[8], BAD[12]],
                         ids=["timeout", "scheduler", "shapes", "fused", "spin", "cache-root"])
def test_import_fails_on_a_bad_value(name, value, problem):
    run = _run("import arrayx", **{name: value})
    assert run.returncode != 0
    assert f"ConfigError: {name}={value!r}: {problem}" in run.stderr, run.stderr
    assert "Install" not in run.stderr


def test_a_malformed_scheduler_builds_no_client_and_says_what_to_fix():
    # set after import: the Dask executor reads it when it loads, checks it before connecting
    code = (
        "import os, sys, arrayx\n"
        "os.environ['ARRAYX_DASK_SCHEDULER'] = 'tcp://127.0.0.1:99999'\n"
        "ex = arrayx.executors.get('dask')\n"
        "assert not ex.available()\n"
        "print(ex.unavailable_reason)\n"
        "print('distributed loaded:', 'distributed' in sys.modules)\n"
        "try:\n"
        "    arrayx.zeros(2, device='dask')\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    run = _run(code, ARRAYX_DASK_SCHEDULER="")
    assert run.returncode == 0, run.stderr
    assert "ConfigError: ARRAYX_DASK_SCHEDULER='tcp://127.0.0.1:99999': its port" in run.stdout
    assert "distributed loaded: False" in run.stdout  # no Client was started (it used to hang 10 s at exit)
    assert "Correct or unset that environment variable" in run.stdout and "Install Dask" not in run.stdout


def test_cache_dir_at_the_root_is_refused_where_the_numba_cache_is_chosen(monkeypatch, tmp_path):
    from arrayx.executors.numba import kernels as _numba_kernels

    monkeypatch.delenv("ARRAYX_NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("ARRAYX_CACHE_DIR", "/")
    with pytest.raises(_config.ConfigError, match="ARRAYX_CACHE_DIR='/': the filesystem root"):
        _numba_kernels._default_root()
    monkeypatch.setenv("ARRAYX_CACHE_DIR", str(tmp_path / "a" / ".." / ".."))  # the root too, spelt otherwise
    if pathlib.Path(os.path.realpath(tmp_path / "a" / ".." / "..")) != pathlib.Path("/"):
        assert _numba_kernels._default_root() == pathlib.Path(tmp_path / "a" / ".." / "..") / "numba"
    a_file = tmp_path / "file"
    a_file.write_text("")
    monkeypatch.setenv("ARRAYX_CACHE_DIR", str(a_file))
    with pytest.raises(_config.ConfigError, match="exists and is not a folder"):
        _numba_kernels._default_root()
    monkeypatch.setenv("ARRAYX_CACHE_DIR", str(tmp_path / "cache"))
    assert _numba_kernels._default_root() == tmp_path / "cache" / "numba"
    monkeypatch.setenv("ARRAYX_NUMBA_CACHE_DIR", str(tmp_path / "kernels"))
    assert _numba_kernels._default_root() == tmp_path / "kernels"


@pytest.mark.parametrize("name, value, parsed", [
    ("ARRAYX_DASK_CONNECT_TIMEOUT", "2.5", 2.5),
    ("ARRAYX_DASK_SCHEDULER", "tcp://127.0.0.1:8786", "tcp://127.0.0.1:8786"),
    ("ARRAYX_DASK_SCHEDULER", "tls://scheduler.example", "tls://scheduler.example"),
    ("ARRAYX_DASK_SCHEDULER", "sync", "sync"),
    ("ARRAYX_DASK_UNKNOWN_SHAPES", "lazy", "lazy"),
    ("ARRAYX_NUMBA_FUSED_KERNELS", "64", 64),
    ("ARRAYX_NUMBA_SPIN_US", "0", 0.0),
    ("ARRAYX_BUFFER_POOL", "Off", False),
    ("ARRAYX_DEBUG_NANS", "1", True),
    ("ARRAYX_NUMBA_VECTOR_WIDTH", "512", "512"),
    ("ARRAYX_BUFFER_POOL_LIMIT", " 1_000 ", 1000),
])
def test_good_values_parse(monkeypatch, name, value, parsed):
    monkeypatch.setenv(name, value)
    assert _config.get(name) == parsed


def test_unset_or_empty_means_the_default(monkeypatch):
    for name, var in _config.VARIABLES.items():
        monkeypatch.setenv(name, "  ")
        assert _config.get(name) == var.default
        monkeypatch.delenv(name)
        assert _config.get(name) == var.default


def test_every_arrayx_variable_read_in_the_package_is_in_the_table():
    # no module reads an ARRAYX_* variable from os.environ itself: only _config does
    package = REPO / "arrayx"
    for path in package.rglob("*.py"):
        if path.name == "core/config.py":
            continue
        text = path.read_text()
        for reader in ("os.environ.get(\"ARRAYX_", "os.environ[\"ARRAYX_", "os.getenv(\"ARRAYX_"):
            assert reader not in text, f"{path.relative_to(REPO)} reads an ARRAYX_ variable itself"
    import re

    named = set()
    for path in package.rglob("*.py"):
        named |= set(re.findall(r"_config\.(?:get|is_set)\(\"(ARRAYX_[A-Z0-9_]+)\"\)", path.read_text()))
    assert named <= set(_config.VARIABLES)
    assert "ARRAYX_DASK_SCHEDULER" in named and "ARRAYX_NUMBA_SPIN_US" in named
