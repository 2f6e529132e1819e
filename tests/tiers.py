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


def register(config) -> None:
    if not config.pluginmanager.has_plugin("arrayx-tiers"):
        config.pluginmanager.register(_Tiers(), "arrayx-tiers")
