"""pytest plugin that adds arrayx as a backend to a client library's own test suite.

Loaded by ``python -m conformance.client_suites`` (copied beside the run as the top-level module
``arrayx_client_plugin``, loaded with ``-p``) in the pytest process that runs the library's tests;
it imports nothing from this repository, and is configured through environment variables:

``ARRAYX_SUITE``          which suite: sklearn, scipy, xpx, einops or xarray
``ARRAYX_SUITE_BACKEND``  the one backend whose tests run: ``arrayx`` or ``array_api_strict``
``ARRAYX_SUITE_LOG``      file that receives one JSON line per finished test phase
``ARRAYX_EXECUTOR``       (read by arrayx itself) the executor arrayx runs on

How arrayx becomes a backend of each suite (nothing of theirs is copied into this repo):

* scikit-learn lists namespaces in ``sklearn.utils._array_api.yield_namespaces``; the test
  modules parametrise over ``yield_namespace_device_dtype_combinations`` and
  ``yield_mixed_namespace_input_permutations`` when they are imported.  This module replaces the
  three generators before any test module is imported, so that they yield only the selected
  backend (float64 and float32, and its conversions to and from NumPy).
* SciPy's ``xp`` fixture is parametrised over a list built in ``scipy/conftest.py``.  Before
  each test function is parametrised, this module sets that fixture's parameters to the selected
  backend, and registers ``arrayx`` among the backends SciPy's skip/xfail markers know (so
  ``np_only`` tests skip for arrayx as for every other non-NumPy backend).
* array-api-extra parametrises over its ``Backend`` enum; this module rebuilds the enum with an
  ``ARRAYX`` member before the suite's conftest reads it.
* einops and xarray: the runner patches copies of their test files in a temporary folder (see
  client_suites.py); this plugin only records outcomes.

Every suite: collected tests that do not run on the selected backend are deselected, so the
counts of two backends are comparable test for test.
"""
from __future__ import annotations

import enum
import json
import os
import sys

import pytest
from _pytest.mark.structures import Mark, ParameterSet

STRICT = "array_api_strict"
SUITE = os.environ.get("ARRAYX_SUITE", "")
BACKEND = os.environ.get("ARRAYX_SUITE_BACKEND", "arrayx")
LOG = os.environ.get("ARRAYX_SUITE_LOG")


# -- scikit-learn -----------------------------------------------------------------------------

def _patch_sklearn() -> None:
    from sklearn.utils import _array_api as aa

    def yield_namespaces(include_numpy_namespaces=True):
        yield BACKEND

    def yield_namespace_device_dtype_combinations(include_numpy_namespaces=True):
        if BACKEND == "array_api_strict":  # as scikit-learn itself yields it
            yield BACKEND, "CPU_DEVICE", "float64"
            yield BACKEND, "device1", "float32"
        else:  # arrayx: its default device is the executor named by ARRAYX_EXECUTOR
            yield BACKEND, None, "float64"
            yield BACKEND, None, "float32"

    def yield_mixed_namespace_input_permutations():
        dev = "device1" if BACKEND == "array_api_strict" else None
        yield (aa.NamespaceAndDevice("numpy", None), aa.NamespaceAndDevice(BACKEND, dev),
               f"numpy to {BACKEND}")
        yield (aa.NamespaceAndDevice(BACKEND, dev), aa.NamespaceAndDevice("numpy", None),
               f"{BACKEND} to numpy")

    aa.yield_namespaces = yield_namespaces
    aa.yield_namespace_device_dtype_combinations = yield_namespace_device_dtype_combinations
    aa.yield_mixed_namespace_input_permutations = yield_mixed_namespace_input_permutations


def _is(v, *names) -> bool:
    return isinstance(v, str) and v in names


def _swap_strict_for_arrayx(value):
    """A parametrize value with "array_api_strict" replaced by "arrayx" (and strict's device
    names by None), or the value itself if it names no array-api-strict."""
    if _is(value, STRICT):
        return "arrayx"
    if isinstance(value, (tuple, list)) and any(_is(v, STRICT) for v in value):
        out = ["arrayx" if _is(v, STRICT) else None if _is(v, "device1", "CPU_DEVICE") else v
               for v in value]
        return type(value)(out)
    if isinstance(value, ParameterSet) and any(_is(v, STRICT) for v in value.values):
        return value._replace(values=_swap_strict_for_arrayx(tuple(value.values)))
    return value


def _sklearn_hardcoded_strict(metafunc) -> None:
    """scikit-learn names "array_api_strict" literally in some parametrize lists (not through
    the generators): run those cases with arrayx in its place."""
    node = metafunc.definition
    for i, mark in enumerate(node.own_markers):
        if mark.name != "parametrize" or len(mark.args) < 2 or not isinstance(mark.args[1], (list, tuple)):
            continue  # (a generator comes from the patched yield_* functions: already arrayx's)
        old = list(mark.args[1])
        values = [_swap_strict_for_arrayx(v) for v in old]
        if any(a is not b for a, b in zip(values, old)):
            node.own_markers[i] = Mark(mark.name, (mark.args[0], values, *mark.args[2:]),
                                       mark.kwargs, _ispytest=True)


# -- SciPy ------------------------------------------------------------------------------------

_scipy_done = False


def _scipy_backend_param():
    if BACKEND == "arrayx":
        import arrayx as mod
    else:
        import array_api_strict as mod
        mod.set_array_api_strict_flags(api_version="2024.12")  # as scipy/conftest.py does
    return pytest.param(mod, id=BACKEND, marks=pytest.mark.array_api_backends)


def _patch_scipy_conftest() -> None:
    global _scipy_done
    if _scipy_done:
        return
    conftest = sys.modules.get("scipy.conftest")
    if conftest is None:
        return
    conftest.xp_known_backends.add("arrayx")
    _scipy_done = True


# -- array-api-extra --------------------------------------------------------------------------

def _patch_xpx() -> None:
    from array_api_extra._lib import _backends

    old = _backends.Backend
    if "ARRAYX" in old.__members__:
        return
    body = type(old).__prepare__("Backend", (enum.Enum,))
    for member in old:
        body[member.name] = member.value
    body["ARRAYX"] = "arrayx"
    for name in ("modname", "like", "pytest_param"):  # the enum's methods, unchanged
        body[name] = old.__dict__[name]
    new = type(old)("Backend", (enum.Enum,), body)
    new.__module__, new.__qualname__, new.__doc__ = old.__module__, old.__qualname__, old.__doc__
    _backends.Backend = new  # pytest_param() resolves ``Backend`` through this module global


if SUITE == "sklearn":
    _patch_sklearn()
elif SUITE == "xpx":
    _patch_xpx()


# -- hooks ------------------------------------------------------------------------------------

@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc):
    if SUITE == "sklearn" and BACKEND == "arrayx":
        _sklearn_hardcoded_strict(metafunc)
    if SUITE != "scipy" or "xp" not in metafunc.fixturenames:
        return
    _patch_scipy_conftest()
    for fixturedef in metafunc._arg2fixturedefs.get("xp", ()):
        params = fixturedef.params
        if params is not None and not getattr(fixturedef, "_arrayx_patched", False):
            fixturedef.params = (_scipy_backend_param(),)
            fixturedef._arrayx_patched = True


def _runs_on_backend(item) -> bool:
    """True if the collected test is parametrised to run on the selected backend."""
    callspec = getattr(item, "callspec", None)
    if SUITE in ("einops", "xarray"):
        return True  # the runner selects those by file and -k
    if callspec is None:
        return False
    if SUITE == "xpx":
        lib = callspec.params.get("library")
        return lib is not None and getattr(lib, "value", None) == BACKEND
    if SUITE == "scipy":
        xp = callspec.params.get("xp")
        return xp is not None and getattr(xp, "__name__", None) == BACKEND
    # scikit-learn: parametrised with the namespace's name among the values
    def names(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, tuple):  # NamespaceAndDevice and plain tuples
            for w in v:
                yield from names(w)
    return any(BACKEND in set(names(v)) for v in callspec.params.values())


def pytest_collection_modifyitems(session, config, items):
    keep, drop = [], []
    for item in items:
        (keep if _runs_on_backend(item) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _message(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.strip().splitlines()[0][:300] if crash.message.strip() else ""
    if isinstance(report.longrepr, tuple):  # skip: (file, line, reason)
        return str(report.longrepr[2])[:300]
    return str(report.longrepr or "").strip().splitlines()[-1][:300] if report.longrepr else ""


def _where(report) -> str:
    """Innermost frame of the failure, as package-relative ``path:line``."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is None:
        return ""
    path = str(crash.path)
    for marker in ("site-packages/", "/arrayx/", "/tmp/"):
        if marker in path:
            path = path.split(marker, 1)[1] if marker != "/arrayx/" else "arrayx/" + path.split(marker, 1)[1]
            break
    return f"{path}:{crash.lineno}"


def _write(record: dict) -> None:
    with open(LOG, "a") as f:  # one write per line: safe with xdist workers appending
        f.write(json.dumps(record) + "\n")


def pytest_collectreport(report):
    if LOG and report.failed:  # a module that cannot be collected: one error for the module
        _write({"id": report.nodeid, "when": "collect", "outcome": "error",
                "message": _message(report), "seconds": 0.0})


def pytest_runtest_logreport(report):
    if not LOG:
        return
    if report.when == "call":
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.passed else "xfailed"
        else:
            outcome = report.outcome  # passed / failed / skipped
    elif report.failed:
        outcome = "error"  # setup or teardown
    elif report.skipped and report.when == "setup":
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    else:
        return
    _write({"id": report.nodeid, "when": report.when, "outcome": outcome,
            "message": "" if outcome == "passed" else _message(report),
            "where": _where(report) if outcome in ("failed", "error") else "",
            "seconds": round(report.duration, 3)})
