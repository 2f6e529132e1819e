"""Test tiers: the ``slow`` marker and one marker per executor (registered in pyproject.toml).

- ``slow``: the main job (``python -m arrayx``), the benchmark runner, the headless browser, the
  tests that rerun a suite in a subprocess, and checks that compile many kernels in fresh
  processes (the Numba vector widths).  The default run (``python -m pytest -n 2 -q``,
  profile ``ci``) leaves them out; ``-m slow`` runs them, and the deep profile
  (``ARRAYX_TEST_PROFILE=deep``) runs everything.
- ``numpy``, ``numba``, ``jax``, ``dask``, ``cupy``: a test that runs on that executor (its
  ``executor`` parameter, or its file ``tests/executors/test_<name>*.py``), added at collection:
  ``-m "not jax"`` leaves JAX out, ``-m dask`` runs Dask's tests only.

Both conftests (``tests/`` and ``conformance/``) call ``register`` so that either folder alone
gets the same tiers; the plugin is registered once.
"""
from __future__ import annotations

import re

import pytest

from conformance import profile

EXECUTORS = ("numpy", "numba", "jax", "dask", "cupy")
_FILE = re.compile(r"(?:^|/)tests/executors/test_(numpy|numba|jax|dask|cupy)[a-z_]*\.py$")


class _Tiers:
    @pytest.hookimpl(tryfirst=True)  # before -m selects by the markers added here
    def pytest_collection_modifyitems(self, config, items):
        for item in items:
            names = set()
            callspec = getattr(item, "callspec", None)
            param = callspec.params.get("executor") if callspec is not None else None
            if isinstance(param, tuple):  # ("dask", chunk size): tests/conftest.py's dask_chunks mark
                param = param[0]
            if param in EXECUTORS:
                names.add(param)
            m = _FILE.search(item.nodeid.split("::")[0])
            if m:
                names.add(m.group(1))
            for name in names:
                item.add_marker(getattr(pytest.mark, name))
        if config.option.markexpr or profile.current().name == "deep":
            return
        keep, slow = [], []
        for item in items:
            (slow if item.get_closest_marker("slow") else keep).append(item)
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = keep


class _OneSkipPerFile:
    """An executor that is not available here (no CuPy, no GPU) skips every test of it, with one reason
    (``tests/conftest.py``'s ``executor`` fixture).  Each file keeps one of those tests, which skips
    and says why (``-rs``: ``SKIPPED [1] tests/...: executor 'cupy' unavailable: ...``); its others of
    that executor are deselected (``N deselected``): the same information, without collecting,
    scheduling and reporting thousands of skips (about 2-3 ms each under xdist).  Only tests whose
    ``executor`` is that fixture's parameter are concerned (not a test's own ``executor`` argument)."""

    @pytest.hookimpl(trylast=True)  # after -m, -k and the slow tier have selected
    def pytest_collection_modifyitems(self, config, items):
        from arrayx.core import executor as base

        absent: dict = {}  # executor name -> whether it is unavailable here (each probed once)
        seen, keep, drop = set(), [], []
        for item in items:
            name = _fixture_executor(item)
            if name is not None and name not in absent:
                absent[name] = name in base.registered() and not base.get(name).available()
            if name is not None and absent[name]:
                key = (str(item.path), name)
                if key in seen:
                    drop.append(item)
                    continue
                seen.add(key)
            keep.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


def _fixture_executor(item):
    """The executor name ``item`` runs on through tests/conftest.py's ``executor`` fixture, else None."""
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get("executor") if callspec is not None else None
    if isinstance(param, tuple):  # ("dask", chunk size): tests/conftest.py's dask_chunks mark
        param = param[0]
    if not isinstance(param, str):
        return None
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).get("executor") or ()
    func = getattr(defs[-1], "func", None) if defs else None
    if getattr(func, "__module__", None) != "tests.conftest" or getattr(func, "__name__", None) != "executor":
        return None
    return param


def register(config) -> None:
    if not config.pluginmanager.has_plugin("arrayx-tiers"):
        config.pluginmanager.register(_Tiers(), "arrayx-tiers")
        config.pluginmanager.register(_OneSkipPerFile(), "arrayx-one-skip-per-file")
