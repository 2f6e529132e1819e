"""Run the official array-api-tests suite against arrayx on one executor.

    python -m conformance.official --suite /path/to/array-api-tests --executor numpy
           [--max-examples 20] [-n 2] [--update-known-failures] [-- extra pytest args]

The suite is not vendored (CI cannot fetch it): clone data-apis/array-api-tests, put
data-apis/array-api at its ``array-api`` folder at the commit the submodule pins, and
``pip install pytest-json-report ndindex hypothesis``.

Known failures live in ``conformance/known_failures/<executor>.txt``: one test id per line,
optionally followed by ``# reason``.  They are passed to the suite as xfails, so the run fails
only on new failures.  The summary goes to ``conformance/results/official-<executor>.json``, or
``official-<executor>-strict.json`` for a run in strict mode (``ARRAYX_STRICT=1``: the same known
failures apply); ``official_modes.json`` gathers the counts of every executor in both modes.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).parent
REPO = HERE.parent


def read_known_failures(executor: str) -> dict[str, str]:
    """test id -> reason, from known_failures/<executor>.txt."""
    path = HERE / "known_failures" / f"{executor}.txt"
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        test_id, _, reason = line.partition(" # ")
        out[test_id.strip()] = reason.strip()
    return out


def write_known_failures(executor: str, failures: dict[str, str]) -> None:
    path = HERE / "known_failures" / f"{executor}.txt"
    lines = [f"# array-api-tests failures on the {executor!r} executor: test id  # reason"]
    lines += [f"{tid}  # {reason}" if reason else tid for tid, reason in sorted(failures.items())]
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.official", description=__doc__.splitlines()[0])
    p.add_argument("--suite", help="path of the array-api-tests clone (not needed with --merge)")
    p.add_argument("--executor", default="numpy")
    p.add_argument("--max-examples", type=int, default=20)
    p.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (0 = none)")
    p.add_argument("--label", default="",
                   help="a platform label for the results and known failures (--label tpu: "
                        "official-jax-tpu.json, known_failures/jax-tpu.txt)")
    p.add_argument("--skip-dtypes", default="",
                   help="dtypes the device does not hold, passed to the suite as ARRAY_API_TESTS_SKIP_DTYPES "
                        "(a TPU: float64,complex128,int64,uint64; dtypes(device=) lists what it holds)")
    p.add_argument("--update-known-failures", action="store_true",
                   help="rewrite known_failures/<executor>.txt with this run's failures (reasons kept)")
    p.add_argument("--no-shrink", action="store_true",
                   help="report a failing example without shrinking it (conformance/hypothesis_no_shrink.py: "
                        "on a TPU every example compiles, and shrinking one failure took minutes)")
    p.add_argument("--part", default="",
                   help="K/N: run only the K-th of N shares of the suite's test files (split by size, "
                        "deterministic), for a machine whose calls are time-limited; the summary goes to "
                        "official-<name>-partKofN.json, and --merge folds the N shares into one summary")
    p.add_argument("--merge", type=int, default=0, metavar="N",
                   help="no run: fold official-<name>-part1ofN.json .. partNofN.json into official-<name>.json")
    p.add_argument("pytest_args", nargs="*")
    args = p.parse_args(argv)

    name = f"{args.executor}-{args.label}" if args.label else args.executor
    if args.merge:
        return merge_parts(name, args.merge)
    if not args.suite:
        p.error("--suite is required (the array-api-tests clone)")
    paths = ["array_api_tests"]
    part = ""
    if args.part:
        k, n = _parse_part(args.part)
        paths = suite_share(pathlib.Path(args.suite), k, n)
        part = f"-part{k}of{n}"
    known = read_known_failures(name)
    report = pathlib.Path(tempfile.mkdtemp()) / "report.json"
    xfails = report.with_name("xfails.txt")
    xfails.write_text("" if args.update_known_failures else "\n".join(known) + "\n")
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="arrayx", ARRAYX_EXECUTOR=args.executor,
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    if args.skip_dtypes:
        env["ARRAY_API_TESTS_SKIP_DTYPES"] = args.skip_dtypes
    cmd = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider",
           f"--max-examples={args.max_examples}", "--disable-deadline", "--xfails-file", str(xfails),
           "--json-report", f"--json-report-file={report}", "-o", "xfail_strict=false"]
    if args.no_shrink:
        cmd += ["-p", "conformance.hypothesis_no_shrink"]
    if args.workers not in ("0", ""):
        cmd += ["-n", args.workers]
    cmd += args.pytest_args
    print("running:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=args.suite, env=env)
    if not report.exists():  # pytest could not start (bad suite path, collection error, ...)
        print(f"no report from pytest (exit code {proc.returncode}); see its output above")
        return proc.returncode or 2
    data = json.loads(report.read_text())
    outcomes: dict[str, list[str]] = {}
    for t in data["tests"]:
        outcomes.setdefault(t["outcome"], []).append(t["nodeid"])
    failed = sorted(outcomes.get("failed", []) + outcomes.get("error", []))
    summary = {
        "executor": args.executor,
        **({"label": args.label, "skipped dtypes": args.skip_dtypes} if args.label else {}),
        "command": " ".join([f"{k}={v}" for k, v in sorted(os.environ.items())
                             if k.startswith("ARRAYX_") and not k.endswith("_DIR")]  # a folder is this machine's
                            + ["python -m conformance.official"]
                            + _without_paths(argv if argv is not None else sys.argv[1:])),
        "max_examples": args.max_examples,
        "counts": {k: len(v) for k, v in sorted(outcomes.items())},
        "passed": len(outcomes.get("passed", [])),
        "failed_or_xfailed": len(failed) + len(outcomes.get("xfailed", [])),
        "new_failures": [t for t in failed if t not in known],
        "xpassed": sorted(outcomes.get("xpassed", [])),
        "duration_s": round(data.get("duration", 0.0), 1),
    }
    mode = "strict" if _strict_run() else "default"
    summary["mode"] = mode
    if part:
        summary["part"] = args.part
        summary["files"] = [pathlib.PurePosixPath(x).name for x in paths]
    out = HERE / "results" / f"official-{name}{part}{'-strict' if mode == 'strict' else ''}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    if not part:  # a share's counts are not the suite's: --merge records them
        record_mode(name, mode, summary, len(known))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("new_failures", "xpassed")}, indent=2))
    if args.update_known_failures:
        write_known_failures(name, {t: known.get(t, "") for t in failed})
        print(f"wrote {len(failed)} known failures for {name!r}")
        return proc.returncode if proc.returncode not in (0, 1) else 0
    if summary["new_failures"]:
        print(f"{len(summary['new_failures'])} failures not in known_failures/{name}.txt:")
        for t in summary["new_failures"]:
            print("  ", t)
    return 1 if summary["new_failures"] else proc.returncode if proc.returncode not in (1,) else 0


def _parse_part(text: str) -> tuple[int, int]:
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise SystemExit(f"conformance.official: --part wants K/N with 1 <= K <= N (e.g. 1/2), got {text!r}")
    return int(k), int(n)


def suite_share(suite: pathlib.Path, k: int, n: int) -> list[str]:
    """The suite's test files of share ``k`` of ``n``: largest file first into the lightest share (by
    size, a stand-in for run time), so the shares are disjoint, cover every file and are the same on
    every machine for the same suite."""
    files = sorted((suite / "array_api_tests").glob("test_*.py"), key=lambda f: (-f.stat().st_size, f.name))
    loads = [0] * n
    shares: list[list[str]] = [[] for _ in range(n)]
    for f in files:
        i = loads.index(min(loads))
        loads[i] += f.stat().st_size
        shares[i].append(f"array_api_tests/{f.name}")
    return sorted(shares[k - 1])


def merge_parts(name: str, n: int) -> int:
    """Fold the N shares' summaries (one mode, one example count) into ``official-<name>.json``."""
    mode = "strict" if _strict_run() else "default"
    tail = "-strict" if mode == "strict" else ""
    parts = []
    for k in range(1, n + 1):
        path = HERE / "results" / f"official-{name}-part{k}of{n}{tail}.json"
        if not path.exists():
            print(f"conformance.official --merge: {path.name} is missing; run --part {k}/{n} first")
            return 2
        parts.append(json.loads(path.read_text()))
    if len({p["max_examples"] for p in parts}) != 1:
        print("conformance.official --merge: the shares ran with different --max-examples; run them again alike")
        return 2
    counts: dict[str, int] = {}
    for p in parts:
        for key, v in p["counts"].items():
            counts[key] = counts.get(key, 0) + v
    summary = {k: v for k, v in parts[0].items() if k not in ("part", "files")}
    summary["command"] = " ; ".join(p["command"] for p in parts)
    summary["counts"] = dict(sorted(counts.items()))
    for key in ("passed", "failed_or_xfailed"):
        summary[key] = sum(p[key] for p in parts)
    for key in ("new_failures", "xpassed"):
        summary[key] = sorted(t for p in parts for t in p[key])
    summary["duration_s"] = round(sum(p["duration_s"] for p in parts), 1)
    summary["parts"] = n
    (HERE / "results" / f"official-{name}{tail}.json").write_text(json.dumps(summary, indent=2) + "\n")
    record_mode(name, mode, summary, len(read_known_failures(name)))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("new_failures", "xpassed")}, indent=2))
    return 1 if summary["new_failures"] else 0


def _strict_run() -> bool:
    """Whether this run's arrayx starts in strict mode (``ARRAYX_STRICT``, parsed as arrayx parses it)."""
    from arrayx import _config

    return bool(_config.get("ARRAYX_STRICT"))


MODES_FILE = HERE / "results" / "official_modes.json"


def record_mode(executor: str, mode: str, summary: dict, n_known: int) -> None:
    """Fold one run's counts into ``official_modes.json``: executor -> mode -> passed / known / new."""
    data = json.loads(MODES_FILE.read_text()) if MODES_FILE.exists() else {}
    data.setdefault("runs", {}).setdefault(executor, {})[mode] = {
        "passed": summary["passed"],
        "known_failures": summary["failed_or_xfailed"] - len(summary["new_failures"]),
        "known_failures_listed": n_known,
        "new_failures": len(summary["new_failures"]),
        "xpassed": len(summary["xpassed"]),
        "skipped": summary["counts"].get("skipped", 0),
        "max_examples": summary["max_examples"],
        "command": summary["command"],
    }
    data["runs"] = {e: dict(sorted(m.items())) for e, m in sorted(data["runs"].items())}
    MODES_FILE.write_text(json.dumps(data, indent=2) + "\n")


def _without_paths(argv: list[str]) -> list[str]:
    """The command line as recorded in the results: the suite's folder is this machine's, so it is named, not given."""
    out, after_suite = [], False
    for a in argv:
        if after_suite:
            a, after_suite = "<array-api-tests checkout>", False
        elif a == "--suite":
            after_suite = True
        elif a.startswith("--suite="):
            a = "--suite=<array-api-tests checkout>"
        out.append(a)
    return out


if __name__ == "__main__":
    sys.exit(main())
