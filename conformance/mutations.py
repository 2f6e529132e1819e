"""``python -m conformance.mutations``: does the default test run still kill the stored mutations of arrayx?

    python -m conformance.mutations [--only m01,m05] [--results conformance/results/mutations.json] [--keep DIR]

Each mutation in ``conformance/results/mutations.json`` is a patch that breaks one function's rule
or implementation (never committed).  For each, this command copies the committed tree (``git
archive HEAD``) into a scratch folder, applies the patch there (never in the checkout, which others
may be testing; a patch whose file has moved since is applied as the same one-line replacements in
the file that now holds each line, recorded as ``ported_to``; one whose lines changed carries a
``current_patch``, the same mutation on today's code), collects the default run (``python -m pytest --collect-only -q``), keeps the tests
whose name or parameters match the mutation's ``selector`` (a regular expression on the part after
``::``) and those its ``also`` names (id prefixes: a killing test whose id does not name the
function), splits them into the file's sweeps and runs each sweep with ``-x`` (one failure kills it):
a mutation is killed when some sweep fails.  Numba's kernel cache is a private folder per mutation,
so a mutated kernel never reaches another run's cache.

It writes the outcome under ``"rerun"`` in the results file (date, commit, collected items, and per
mutation the sweeps that killed it and each sweep's counts) and prints ``killed K of N``; exit
status 1 when a mutation survives or a patch no longer applies.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "conformance" / "results" / "mutations.json"

#: sweep -> what a collected test id starts with (the file's "sweeps"; "rest" is every other test)
SWEEPS = {
    "differential": ("conformance/test_differential.py::test_agrees_with_numpy",),
    "elementwise-sweep": ("tests/api/test_elementwise.py::test_unary_matches_numpy",
                          "tests/api/test_elementwise.py::test_binary_matches_numpy"),
    "test_jit": ("tests/transforms/test_jit.py::",),
    "test_vmap": ("tests/transforms/test_vmap.py::",),
    "test_ad_functions": ("tests/transforms/test_ad_functions.py::",),
    "transforms_quick": ("conformance/test_transforms_quick.py::",),
}


def sweep_of(test_id: str) -> str:
    for sweep, prefixes in SWEEPS.items():
        if test_id.startswith(prefixes):
            return sweep
    return "rest"


def _scratch_tree(folder: pathlib.Path) -> str:
    """The committed tree (HEAD) in ``folder``; returns the commit."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return commit


def port(patch: str, tree: pathlib.Path) -> list[str] | str:
    """Apply a patch of one-line replacements where each removed line now is (the one file under
    ``arrayx/`` that holds it once); returns the files changed, or why it cannot."""
    pairs, removed = [], None
    for line in patch.splitlines():
        if line.startswith("-") and not line.startswith("---"):
            removed = line[1:]
        elif line.startswith("+") and not line.startswith("+++"):
            if removed is None:
                return "a hunk that adds lines without removing one"
            pairs.append((removed, line[1:]))
            removed = None
    changed = []
    for old, new in pairs:
        holders = [f for f in sorted((tree / "arrayx").rglob("*.py")) if f.read_text().count(old + "\n") == 1]
        if len(holders) != 1:
            return f"{len(holders)} files hold {old.strip()!r} once"
        holders[0].write_text(holders[0].read_text().replace(old + "\n", new + "\n"))
        changed.append(str(holders[0].relative_to(tree)))
    return changed or "no replaced line"


def _python(folder: pathlib.Path, args: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)


def run_mutation(mutation: dict, scratch: pathlib.Path, timeout: float) -> dict:
    """Apply one mutation in a fresh copy of HEAD, run its selected tests sweep by sweep."""
    tree = scratch / mutation["id"]
    tree.mkdir()
    commit = _scratch_tree(tree)
    patch = mutation.get("current_patch", mutation["patch"])  # the same mutation rewritten for moved code
    applied = subprocess.run(["git", "apply", "-C1", "-"], cwd=tree, input=patch + "\n",
                             capture_output=True, text=True)
    ported = None
    if applied.returncode != 0:  # files moved since the patch was made: the same line replaced where it is now
        ported = port(patch, tree)
        if isinstance(ported, str):
            return {"commit": commit, "error": f"the patch does not apply ({applied.stderr.strip()[:200]}) and "
                                               f"cannot be ported: {ported}"}
    env = dict(os.environ, ARRAYX_NUMBA_CACHE_DIR=str(scratch / f"{mutation['id']}-numba-cache"),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("ARRAYX_TEST_PROFILE", None)  # the default (ci) profile: the README's command
    where = _python(tree, ["-c", "import arrayx; print(arrayx.__file__)"], env, 300).stdout.strip()
    if not where.startswith(str(tree)):
        return {"commit": commit, "error": f"arrayx imported from {where!r}, not the mutated copy"}
    collected = _python(tree, ["-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"], env, timeout)
    ids = [line.strip() for line in collected.stdout.splitlines() if "::" in line]
    selector = re.compile(mutation["selector"])
    per_sweep: dict[str, list[str]] = {}
    also = tuple(mutation.get("also", ()))  # tests that kill it though their ids do not name the function
    for test_id in ids:
        if selector.search(test_id.split("::", 1)[1]) or test_id.startswith(also):
            per_sweep.setdefault(sweep_of(test_id), []).append(test_id)
    out = {"commit": commit, "collected": len(ids), "per_sweep": {}, "killed_by": []}
    if ported:
        out["ported_to"] = ported
    for sweep, tests in sorted(per_sweep.items()):
        listing = tree / f"selected-{sweep}.txt"
        listing.write_text("\n".join(tests) + "\n")
        t0 = time.perf_counter()
        run = _python(tree, ["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly",
                             f"@{listing}"], env, timeout)
        failed = re.search(r"^FAILED (\S+)", run.stdout, re.M)
        summary = (run.stdout.strip().splitlines() or [""])[-1]
        out["per_sweep"][sweep] = {"selected": len(tests), "exit": run.returncode, "first": failed and failed.group(1),
                                   "summary": summary, "seconds": round(time.perf_counter() - t0, 1)}
        if run.returncode == 1:  # tests failed (2-5: interrupted, usage, no tests: not a kill)
            out["killed_by"].append(sweep)
        print(f"  {mutation['id']} {sweep}: {len(tests)} selected, {summary}", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.mutations", description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None, help="comma-separated mutation ids or their prefixes (m01,m05)")
    p.add_argument("--results", default=str(RESULTS), help=f"the mutations file (default {RESULTS})")
    p.add_argument("--keep", default=None, help="scratch folder to keep (default: a temporary one, removed)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per pytest run (default 3600)")
    args = p.parse_args(argv)
    path = pathlib.Path(args.results)
    data = json.loads(path.read_text())
    wanted = args.only.split(",") if args.only else None
    mutations = [m for m in data["mutations"] if wanted is None or any(m["id"].startswith(w) for w in wanted)]
    if not mutations:
        p.error(f"--only: no mutation matches {args.only!r}; ids: {', '.join(m['id'] for m in data['mutations'])}")
    holder = None if args.keep else tempfile.TemporaryDirectory(prefix="arrayx-mutations-")
    scratch = pathlib.Path(args.keep or holder.name)
    scratch.mkdir(parents=True, exist_ok=True)
    rerun = {"command": "python -m conformance.mutations" + (f" --only {args.only}" if args.only else ""),
             "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "mutations": {}}
    killed = 0
    try:
        for m in mutations:
            print(f"{m['id']}: {m['what']}", flush=True)
            result = run_mutation(m, scratch, args.timeout)
            rerun["mutations"][m["id"]] = result
            killed += bool(result.get("killed_by"))
            print(f"{m['id']}: " + (f"ERROR {result['error']}" if "error" in result else
                                    f"killed by {', '.join(result['killed_by'])}" if result["killed_by"] else "SURVIVED"),
                  flush=True)
            data["rerun"] = {**rerun, "killed": f"{killed} of {len(rerun['mutations'])} so far"}
            path.write_text(json.dumps(data, indent=1) + "\n")  # each mutation kept as it ends
    finally:
        if holder is not None:
            holder.cleanup()
    rerun["killed"] = f"{killed} of {len(mutations)}"
    rerun["collected"] = sorted({r["collected"] for r in rerun["mutations"].values() if "collected" in r})
    data["rerun"] = rerun
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"killed {killed} of {len(mutations)}; wrote {path}")
    return 0 if killed == len(mutations) else 1


if __name__ == "__main__":
    sys.exit(main())
