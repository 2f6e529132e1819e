"""Run client libraries' own array-API test suites with arrayx added as a backend.

    python -m conformance.client_suites --suite {sklearn,scipy,xpx,einops,xarray}
           --executor {numpy,numba,jax,dask} [--subset A,B,...] [--backends arrayx,strict]
           [--timeout 120] [--time-limit SECONDS] [-n 2] [-- extra pytest args]

Each run executes the suite's array-API tests twice in fresh pytest processes: once for
array-api-strict (the reference; it does not depend on the executor) and once for arrayx on the
chosen executor (``ARRAYX_EXECUTOR``).  Their suites are used as installed, never copied into
this repository:

* scikit-learn and SciPy: the tests inside their installed wheels (``--pyargs``), with SciPy's
  ``SCIPY_ARRAY_API=1``; arrayx is added by the pytest plugin ``conformance._client_plugin``.
* array-api-extra: the tests shipped inside its wheel (``array_api_extra.tests.main``), or a
  source checkout's ``tests/main`` given with ``--xpx-tests``.
* einops (its ``einops.array_api`` tests) and xarray (``xarray/tests/test_array_api.py``):
  ``pip install einops xarray`` (or ``pip install --target DIR --no-deps einops xarray pandas``
  and ``--site DIR``); their test files are copied to a temporary folder and pointed at the
  backend there.

Results (counts per backend, each failing test with its message, and the "new" failures: those
that fail with arrayx where array-api-strict passes or skips, grouped into the classes of
``CLASSES``) are merged into ``conformance/results/client_suites.json`` under suite -> subset.
A run cut short by ``--time-limit`` keeps what finished and says ``"complete": false``; each
test's outcome stays in ``--log-dir`` (JSON lines).  ``--table`` prints the stored counts,
``--reclassify`` re-sorts stored failures after ``CLASSES`` changes, ``--arrayx-path DIR`` tests
another checkout of arrayx (e.g. a branch exported with ``git archive``).

Needs: pytest-timeout (``--timeout``), pytest-xdist for ``-n``; matplotlib for SciPy's dendrogram
tests.  The suites run outside CI: collection alone takes a minute, SciPy's modules ~5-10 min per
backend on NumPy, and the jax and dask executors many times that (bound them with --time-limit).
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).parent
REPO = HERE.parent
RESULTS = HERE / "results" / "client_suites.json"
SUITES = ("sklearn", "scipy", "xpx", "einops", "xarray")
EXECUTORS = ("numpy", "numba", "jax", "dask")
STRICT = "array_api_strict"

DEFAULT_SUBSETS = {
    "sklearn": "sklearn",
    "scipy": "special,stats,fft,linalg,cluster,signal,ndimage",
    "xpx": "all",
    "einops": "array_api",
    "xarray": "test_array_api",
}

# Failure classes: (class name, regex searched in "test id :: message", one-line cause).
# The first match names the class; a new failure that matches none is "unclassified".
CLASSES: list[tuple[str, str, str]] = [
    ("numpy-ufunc", r"does not support ufuncs|__array_ufunc__",
     "NumPy ufuncs on arrayx arrays are refused (__array_ufunc__ = None): np.abs(x), scipy.special's "
     "Cython ufuncs, matplotlib (issue 31 item 5)"),
    ("devices-tuple", r"can only concatenate tuple|devices\(\) \+",
     "__array_namespace_info__().devices() returns a tuple; SciPy's devices fixture adds a list "
     "(issue 31 item 2)"),
    ("capabilities-keys", r"TestCapabilities|capabilities\(\).*keys",
     "numba's capabilities() has keys besides the standard's three; array-api-extra asserts the "
     "exact set (issue 31 item 6)"),
    ("astype-nan-int", r"test_array_api.py::test_astype",
     "astype(nan -> int64) gives 0 where NumPy gives INT64_MIN (issue 31 item 6)"),
    ("setitem-lossy-value", r"cannot store .* into an? \w+ array",
     "x[i] = v with a float value into an integer array is refused; NumPy and JAX cast it (JAX "
     "with a FutureWarning), array-api-extra's at().set/min/max expect that (issue 26 item 1: "
     "default mode follows NumPy, strict mode refuses)"),
    ("float-function-int-input", r"must have a floating-point dtype, got (?:u?int|bool)",
     "float functions (exp, log, ...) refuse integer/bool input; NumPy promotes to float64 "
     "(array-api-strict refuses too: SciPy xfails it there; issue 26 item 1)"),
    ("arange-array-bound", r"arange: (?:start|stop|step) must be an int or a float, got Array",
     "arange(1, n + 1) with a 0-d array n is refused (issue 31 item 4)"),
    ("arange-complex", r"arange: dtype must be real",
     "arange(n, dtype=complex128) is refused (issue 31 item 4)"),
    ("linspace-int", r"linspace: .*(?:dtype|integer)",
     "linspace(..., dtype=int16) is refused (issue 31 item 4)"),
    ("asarray-str-message", r"TestVectorizedFilter::test_input_validation",
     "asarray('a duck') raises a TypeError whose wording matches none of SciPy's expected "
     "messages (NumPy: \"could not convert string to float: 'a duck'\"; issue 31 item 6)"),
    ("moveaxis-message", r"test_input_validation.*Regex pattern did not match|moveaxis: source=",
     "an out-of-range axis raises moveaxis' own wording; SciPy matches NumPy's "
     "'axis 10 is out of bounds for array' (issue 31 item 6)"),
    ("dask-unknown-chunks", r"chunk size or shape is unknown",
     "dask: boolean-mask indexing of a unique_values result (data-dependent chunk sizes) fails "
     "at compute (issue 31 item 3)"),
    ("output-array-immutable", r"(?:test_filters|test_morphology|test_interpolation)\.py::\S+ :: AssertionError",
     "ndimage's output=array: SciPy writes the result into np.asarray(output), which on an immutable "
     "executor (dask, jax) is a copy, so `output` keeps its old values; SciPy skips these tests for "
     "dask.array and jax.numpy ('output=array requires buffer view')"),
    ("device-propagation", r"assert Device\('\w+:\w+(?::\d+)?'\) == Device|arrays live on different executors",
     "SciPy's device tests with the inputs on a non-default executor. Two causes, both SciPy "
     "creating arrays without device=: its scipy.special last resort (xp.asarray(f(np.asarray(x))), "
     "served now by arrayx.special: results on the operands' device) and 0-d arrays such as "
     "xp.asarray(popmean) (a 0-d host array of the default executor now joins the other operands' "
     "executor, like PyTorch's 0-d CPU tensors). What remains is with jax or dask as the default "
     "executor: there the 0-d array is a device buffer (jax) or lazy (dask), and moving it would "
     "copy it off the device or compute it, so it is refused with the error naming both executors "
     "(SciPy skips these tests for array-api-strict's device1 for the same reasons)"),
    ("np-where-dispatch", r"where: condition must have a bool dtype|where: at least one argument must be",
     "with NumPy functions dispatched to arrayx (__array_function__), np.where(int_mask, ...) and "
     "np.where(c, 1, 0) reach arrayx.where, which refuses a non-bool condition and two Python "
     "scalars; NumPy accepts both (seen on the branch that adds the dispatch)"),
    ("numpy-method-on-result", r"'Array' object has no attribute '(?:max|min|sum|mean|any|all|ravel|item)'",
     "a NumPy call on arrayx data now returns an arrayx array and the caller uses a NumPy method "
     "on it (np.abs(z).max() in SciPy's filtfilt test); arrayx arrays have no .max()"),
    ("concurrent-writes", r"test_pairwise_parallel",
     "jax/dask: x[i] = v from several threads loses updates (each write replaces the whole "
     "buffer); scikit-learn's pairwise_distances(n_jobs=2) returns zero columns (issue 31 item 1)"),
    ("dask-repeat-chunks", r"TestSpearmanRho::test_special_cases|assert len\(chunks\[axis\]\) == 1",
     "dask: repeat(x, counts) where x was masked with a mask built by concat fails inside "
     "dask.array.repeat (SciPy rankdata -> spearmanrho; issue 31 item 3)"),
    ("dask-per-op-overhead", r"(?:TestPower|TestPermutationTest)::test_(?:batch|randomized_test_against_exact).*Timeout \(>",
     "dask: the test calls the statistic 1000 times with batch=1 (each call a handful of lazy "
     "ops plus reads); Dask builds a graph per op (~5 ms) and computes per read (~15 ms): "
     "past the 120 s limit on a loaded 2-core machine (~40 s unloaded). Inherent to a lazy "
     "graph per op; jit the statistic to avoid it"),
    ("jax-compile-time", r"Timeout \(>[\d.]+s\) from pytest-timeout\. \[at jax/",
     "jax: the test runs many small ops on arrays of many shapes (freqz_sos_design: a dozen filter "
     "designs); the eager jax executor compiles each op for each new shape (XLA), past the 120 s "
     "limit on a loaded 2-core machine (the stack ends in jax/_src/compiler.py). Compile speed is "
     "the jax executor's own work item, not this suite's"),
    ("xla-reduction-order", r"TestBootstrap::test_bootstrap_batch\[arrayx-\d-BCa\]",
     "jax: asserts that bootstrap's BCa interval is bit-identical for batch=None and batch=10; "
     "XLA's mean over the last axis rounds differently for different batch shapes (2.8e-16 apart); "
     "SciPy on jax.numpy arrays gives the same difference (the executor's kernels are XLA's)"),
    ("timeout", r"Timeout \(>[\d.]+s\) from pytest-timeout",
     "one test ran past the per-test limit (dask: SciPy's loops call bool() each step and each "
     "call recomputes the whole graph; issue 31 item 3)"),
    ("view-writes-lost", r"test_gaussian_mixture_array_api_compliance",
     "jax/dask: a write into a basic-index view never reaches its base (GaussianMixture adds "
     "reg_covar through covariances[k] views: covariances off by reg_covar, NaN weights with "
     "random_from_data; issue 31 item 1)"),
    ("jax-static-array-param", r"Non-hashable static arguments",
     "jax: linspace(start, stop) with 0-d arrayx arrays as bounds (SciPy's _logspace): the bounds "
     "become static jit parameters and Array is unhashable, an obscure ValueError from JAX "
     "(issue 31 item 4's 0-d bounds; passes on the compat branch)"),
    ("suite-float16", r"has no attribute 'float16'",
     "suite: the test builds xp.float16, which the standard does not have; SciPy skips it for "
     "array-api-strict and Dask for that reason (arrayx: no float16, by design)"),
    ("suite-delegation-check", r"test_delegates\[",
     "suite: asserts that nunique delegates to a library it knows (NumPy, CuPy, JAX, torch); "
     "any other backend, array-api-strict included (skipped there), takes the generic path"),
]


# -- pure helpers (tested in conformance/test_client_suites.py) -------------------------------

def normalise_id(suite: str, test_id: str) -> str:
    """Test id with the backend's own parameters replaced by ``XP``, so ids compare across backends.

    scikit-learn: ``[array_api_strict-CPU_DEVICE-float64]`` and ``[arrayx-None-float64]`` both
    become ``[XP-float64]`` (strict's float32 case runs on its ``device1``, arrayx's on the default).
    """
    out = test_id
    if suite == "sklearn":
        out = re.sub(r"array_api_strict-(?:CPU_DEVICE|device1)-", "XP-", out)
        out = re.sub(r"arrayx-None-", "XP-", out)
    return re.sub(r"(?<![A-Za-z_])(?:array_api_strict|arrayx)(?![A-Za-z_])", "XP", out)


def read_log(path: pathlib.Path) -> dict[str, dict]:
    """test id -> {"outcome", "message", "seconds"} from the plugin's JSON lines.

    A test's outcome is its worst phase: error (setup/teardown) over failed over the call's.
    """
    rank = {"error": 3, "failed": 2, "xpassed": 1, "passed": 0, "xfailed": 0, "skipped": 0}
    tests: dict[str, dict] = {}
    if not path.exists():
        return tests
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a kill
            continue
        old = tests.get(rec["id"])
        if old is None or rank[rec["outcome"]] > rank[old["outcome"]]:
            tests[rec["id"]] = {"outcome": rec["outcome"], "message": rec["message"],
                                "where": rec.get("where", ""), "seconds": rec["seconds"]}
    return tests


def counts(tests: dict[str, dict]) -> dict[str, int]:
    out = {k: 0 for k in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")}
    for t in tests.values():
        key = {"error": "errors"}.get(t["outcome"], t["outcome"])
        out[key] += 1
    return out


def classify(test_id: str, message: str) -> str:
    text = f"{test_id} :: {message}"
    for name, pattern, _cause in CLASSES:
        if re.search(pattern, text):
            return name
    return "unclassified"


def new_failures(suite: str, strict: dict[str, dict], mine: dict[str, dict]) -> dict[str, dict]:
    """Tests failing (or erroring) with arrayx that do not fail with array-api-strict.

    Only strict's failures and errors excuse a test: one that strict skips or never ran counts.
    """
    bad = {"failed", "error"}
    strict_bad = {normalise_id(suite, t) for t, r in strict.items() if r["outcome"] in bad}
    out: dict[str, dict] = {}
    for tid, rec in sorted(mine.items()):
        if rec["outcome"] in bad and normalise_id(suite, tid) not in strict_bad:
            out[tid] = {"outcome": rec["outcome"], "message": rec["message"],
                        "class": classify(tid, rec["message"])}
    return out


def group_by_class(new: dict[str, dict]) -> dict[str, dict]:
    causes = {name: cause for name, _pattern, cause in CLASSES}
    groups: dict[str, dict] = {}
    for tid, rec in new.items():
        g = groups.setdefault(rec["class"], {"cause": causes.get(rec["class"], ""), "tests": []})
        g["tests"].append(tid)
    return dict(sorted(groups.items(), key=lambda kv: -len(kv[1]["tests"])))


# -- running one backend ----------------------------------------------------------------------

def _site_packages(module: str) -> pathlib.Path:
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"client_suites: {module!r} is not importable; pip install it "
                         f"(or pass --site DIR where it was installed with pip --target)")
    return pathlib.Path(spec.origin).parent


def _replace(text: str, old: str, new: str, what: str) -> str:
    if old not in text:
        raise SystemExit(f"client_suites: cannot patch {what}: {old!r} not found "
                         "(the installed version differs from the one this script knows)")
    return text.replace(old, new)


def _prepare_einops(work: pathlib.Path, backend: str) -> list[str]:
    """Copies einops' test files whose ``*_array_api`` tests import NumPy as ``xp``; patched to
    import the backend instead (and to skip the NumPy-version check that would skip arrayx)."""
    src = _site_packages("einops") / "tests"
    dst = work / "einops_tests"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("test_ops.py", "test_packing.py"):
        path = dst / name
        text = path.read_text()
        text = _replace(text, "    import numpy as xp\n", f"    import {backend} as xp\n",
                        f"einops/tests/{name}")
        text = _replace(text, 'if xp.__version__ < "2.0.0":', "if False:", f"einops/tests/{name}")
        path.write_text(text)
    return [str(dst / "test_ops.py"), str(dst / "test_packing.py"), "-k", "array_api"]


def _prepare_xarray(work: pathlib.Path, backend: str) -> list[str]:
    src = _site_packages("xarray") / "tests" / "test_array_api.py"
    dst = work / "xarray_tests" / "test_array_api.py"
    dst.parent.mkdir(parents=True)
    text = src.read_text()
    if backend == "arrayx":
        text = _replace(text, 'xp = pytest.importorskip("array_api_strict")',
                        'xp = pytest.importorskip("arrayx")', "xarray/tests/test_array_api.py")
        text = _replace(text, "from array_api_strict._array_object import Array",
                        "Array = type(xp.asarray(0))", "xarray/tests/test_array_api.py")
    dst.write_text(text)
    return [str(dst)]


def pytest_args(suite: str, subset: str, backend: str, work: pathlib.Path,
                xpx_tests: str | None) -> list[str]:
    parts = [s for s in subset.split(",") if s]
    if suite == "sklearn":
        mods = ["sklearn" if p == "sklearn" else f"sklearn.{p}" for p in parts]
        return ["--pyargs", *mods, "-k", backend]
    if suite == "scipy":
        return ["--pyargs", *[f"scipy.{p}" for p in parts], "-m", "array_api_backends"]
    if suite == "xpx":
        if xpx_tests:
            root = [str(pathlib.Path(xpx_tests))]
        else:
            root = ["--pyargs", "array_api_extra.tests.main"]
        return root + ([] if parts == ["all"] else ["-k", " or ".join(parts)])
    if suite == "einops":
        return _prepare_einops(work, backend)
    if suite == "xarray":
        return _prepare_xarray(work, backend)
    raise ValueError(suite)


def run_backend(args, backend: str, work: pathlib.Path) -> dict:
    log_dir = pathlib.Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    subset = re.sub(r"[^A-Za-z0-9_.-]+", "_", args.subset)[:60]
    log = log_dir / f"{args.suite}-{subset}-{backend}-{args.executor}.jsonl"
    log.unlink(missing_ok=True)
    env = dict(os.environ, ARRAYX_SUITE=args.suite, ARRAYX_SUITE_BACKEND=backend,
               ARRAYX_SUITE_LOG=str(log), ARRAYX_EXECUTOR=args.executor, SCIPY_ARRAY_API="1",
               EINOPS_TEST_BACKENDS="numpy")
    # the plugin travels as a top-level module of its own, so that --arrayx-path can put another
    # checkout (with its own ``conformance`` package) first on the path
    shutil.copy(HERE / "_client_plugin.py", work / "arrayx_client_plugin.py")
    paths = [p for p in (str(work), args.arrayx_path or str(REPO), args.site) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "pytest", "-p", "arrayx_client_plugin",
           "-p", "no:cacheprovider", "-q", "--no-header", "-rN", "--tb=line", "--disable-warnings",
           f"--timeout={args.timeout}", "--rootdir", str(work), "-c", os.devnull]
    if args.workers not in ("0", ""):
        cmd += ["-n", args.workers]
    cmd += pytest_args(args.suite, args.subset, backend, work, args.xpx_tests) + args.pytest_args
    print(f"[{args.suite}/{backend}/{args.executor}] running:", " ".join(cmd), flush=True)
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=work, env=env, start_new_session=True)
    complete = True
    try:
        rc = proc.wait(timeout=args.time_limit or None)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        rc, complete = None, False
    tests = read_log(log)
    return {"counts": counts(tests), "complete": complete, "exit_code": rc,
            "seconds": round(time.time() - start), "tests": tests}


# -- results file -----------------------------------------------------------------------------

_MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|home|root|Users|private|var/folders)/[^\s'\"]*")


def without_machine_paths(text: str) -> str:
    """Absolute paths of this machine cut to their last part (results name no local folder)."""
    return _MACHINE_PATH.sub(lambda m: "<path>/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def _summary(run: dict) -> dict:
    """What goes in the results file for one backend run: counts and the failing tests."""
    bad = {tid: without_machine_paths(f"{r['outcome']}: {r['message']}"
                                      + (f" [at {r['where']}]" if r["where"] else ""))
           for tid, r in sorted(run["tests"].items()) if r["outcome"] in ("failed", "error")}
    return {"counts": run["counts"], "complete": run["complete"], "seconds": run["seconds"],
            "failures": bad, **{k: run[k] for k in ("versions", "command") if k in run}}


def versions(suite: str) -> dict[str, str]:
    """Versions of the suite's library and of array-api-strict, as installed."""
    from importlib import metadata

    dist = {"sklearn": "scikit-learn", "scipy": "scipy", "xpx": "array-api-extra",
            "einops": "einops", "xarray": "xarray"}[suite]
    out = {}
    for name in (dist, "array-api-strict", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def merge_results(results: dict, suite: str, subset: str, key: str, run: dict) -> None:
    entry = results.setdefault(suite, {}).setdefault(subset, {"backends": {}, "new": {}})
    entry["backends"][key] = _summary(run)
    for sub in results[suite]:  # a strict run of a wider subset serves narrower ones too
        compare(suite, results[suite], sub)


def strict_reference(subsets: dict, subset: str) -> dict | None:
    """array-api-strict's failures for ``subset``: from its own run, else from a run of a subset
    that contains all of its parts (SciPy on dask runs its modules in smaller pieces; the whole
    of scikit-learn contains each of its subpackages)."""
    own = subsets.get(subset, {"backends": {}})["backends"].get(STRICT)
    if own is not None:
        return own["failures"]
    parts = set(subset.split(","))
    for other, entry in subsets.items():
        wider = set(other.split(","))
        if STRICT in entry["backends"] and (parts <= wider or wider == {"sklearn"}):
            return entry["backends"][STRICT]["failures"]
    return None


def compare(suite: str, subsets: dict, subset: str) -> None:
    """(Re)compute one suite/subset entry's new failures per executor from the stored runs."""
    entry = subsets[subset]
    failures = strict_reference(subsets, subset)
    if failures is None:
        return
    strict_tests = {t: {"outcome": m.split(":", 1)[0]} for t, m in failures.items()}
    for bkey, data in entry["backends"].items():
        if not bkey.startswith("arrayx:"):
            continue
        mine = {t: {"outcome": m.split(":", 1)[0], "message": m.split(": ", 1)[-1]}
                for t, m in data["failures"].items()}
        new = new_failures(suite, strict_tests, mine)
        entry["new"][bkey] = {"count": len(new), "classes": group_by_class(new),
                              "messages": {t: r["message"] for t, r in new.items()}}


def table(results: dict) -> str:
    """Markdown table: suite/subset x backend -> passed/failed/errors/skipped (new failures)."""
    keys = [STRICT] + [f"arrayx:{e}" for e in EXECUTORS]
    lines = ["| suite (subset) | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for suite, subsets in results.items():
        for subset, entry in subsets.items():
            cells = []
            for key in keys:
                run = entry["backends"].get(key)
                if run is None:
                    cells.append("-")
                    continue
                c = run["counts"]
                cell = f"{c['passed']}/{c['failed']}/{c['errors']}/{c['skipped']}"
                if key in entry["new"]:
                    cell += f" ({entry['new'][key]['count']} new)"
                if not run["complete"]:
                    cell += " (cut short)"
                cells.append(cell)
            lines.append(f"| {suite} ({subset}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\npassed/failed/errors/skipped; new = fails with arrayx, not with array-api-strict"


def update_results(path: pathlib.Path, change) -> None:
    """Read the results file, apply ``change(results)``, write it back: under a lock, since runs
    on several executors may finish at the same time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(pathlib.Path(tempfile.gettempdir()) / "arrayx-client-suites.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = json.loads(path.read_text()) if path.exists() else {}
        change(results)
        path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.client_suites",
                                description=__doc__.splitlines()[0])
    p.add_argument("--suite", choices=SUITES)
    p.add_argument("--table", action="store_true", help="run nothing: print the stored counts")
    p.add_argument("--reclassify", action="store_true",
                   help="run nothing: recompute every stored entry's new failures and classes")
    p.add_argument("--executor", default="numpy", choices=EXECUTORS)
    p.add_argument("--subset", default=None,
                   help="comma-separated: sklearn/scipy subpackages, xpx -k words; default "
                        + "; ".join(f"{k}: {v}" for k, v in DEFAULT_SUBSETS.items()))
    p.add_argument("--backends", default="strict,arrayx",
                   help="which backends to run: strict, arrayx or both (strict's result is kept "
                        "in the results file, so later runs on other executors can skip it)")
    p.add_argument("--timeout", type=int, default=120, help="per-test limit (pytest-timeout)")
    p.add_argument("--time-limit", type=int, default=0, help="whole-run limit per backend, s")
    p.add_argument("-n", "--workers", default="0", help="pytest-xdist workers (0 = none)")
    p.add_argument("--site", default=None, help="extra folder on PYTHONPATH (einops, xarray)")
    p.add_argument("--xpx-tests", default=None,
                   help="array-api-extra checkout's tests/main (default: the installed wheel's)")
    p.add_argument("--arrayx-path", default=None,
                   help="run the arrayx found in this folder (another checkout) instead of this one")
    p.add_argument("--results", default=str(RESULTS))
    p.add_argument("--log-dir", default=os.path.join(tempfile.gettempdir(), "arrayx-client-suites"),
                   help="where each run's per-test JSON lines are kept (outside the repository)")
    p.add_argument("pytest_args", nargs="*")
    args = p.parse_args(argv)
    results_path = pathlib.Path(args.results)
    if args.table:
        print(table(json.loads(results_path.read_text())))
        return 0
    if args.reclassify:
        def recompute(results):
            for suite, subsets in results.items():
                for subset in subsets:
                    compare(suite, subsets, subset)
        update_results(results_path, recompute)
        return 0
    if args.suite is None:
        p.error("--suite is required (or --table, --reclassify)")
    args.subset = args.subset or DEFAULT_SUBSETS[args.suite]
    if args.site:
        sys.path.insert(0, args.site)

    wanted = [b.strip() for b in args.backends.split(",")]
    for b in wanted:
        if b not in ("strict", "arrayx"):
            p.error(f"--backends takes strict and/or arrayx, got {b!r}")
    for b in wanted:
        backend = STRICT if b == "strict" else "arrayx"
        key = STRICT if b == "strict" else f"arrayx:{args.executor}"
        with tempfile.TemporaryDirectory(prefix=f"client-{args.suite}-") as tmp:
            run = run_backend(args, backend, pathlib.Path(tmp))
        run["versions"] = versions(args.suite)
        run["command"] = " ".join(["python -m conformance.client_suites", "--suite", args.suite,
                                   "--executor", args.executor, "--subset", args.subset,
                                   "--timeout", str(args.timeout)]
                                  + (["--time-limit", str(args.time_limit)] if args.time_limit else [])
                                  + (["-n", args.workers] if args.workers not in ("0", "") else []))
        update_results(results_path,
                       lambda results: merge_results(results, args.suite, args.subset, key, run))
        c = run["counts"]
        print(f"[{args.suite}/{args.subset}] {key}: {c['passed']} passed, {c['failed']} failed, "
              f"{c['errors']} errors, {c['skipped']} skipped"
              + ("" if run["complete"] else " (cut short by --time-limit)"), flush=True)
    entry = json.loads(results_path.read_text())[args.suite][args.subset]
    new = entry["new"].get(f"arrayx:{args.executor}")
    if new is not None:
        print(f"new failures (arrayx:{args.executor} fails, strict does not): {new['count']}")
        for cls, g in new["classes"].items():
            print(f"  {cls} ({len(g['tests'])}): {g['cause']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
