"""``python -m conformance``: does a result depend on the executor?  The whole report in one command.

    python -m conformance [--quick] [--executors numpy,jax] [--functions sin,linalg.inv,random.*]
                          [--transforms eager,jit,vmap,grad] [--max-examples N] [--output DIR]
                          [--array-api-tests PATH] [--seed N] [--no-progress] [--shard K/N]
    python -m conformance --merge PART.json ... [--rerun PART.json ...] [--output DIR] [--array-api-tests PATH]

runs the parity matrix (``matrix.py``: every function of the standard, the operators, linalg, fft
and the PRNG, each eagerly and under ``jit``, ``vmap`` and ``grad``, on every available executor,
compared with the NumPy executor on hypothesis-drawn inputs), reads each executor's capabilities
from its tables (``capabilities.py``), optionally runs the official data-apis/array-api-tests from
a local checkout per executor (``official.py``) and folds its counts in, then prints a summary
table and writes ``DIR/conformance.json`` and a self-contained ``DIR/conformance.html`` (a
filterable, colour-coded function x executor x transform matrix; a red cell opens its failing
inputs and both results).  ``--quick`` draws one example per function and transform and keeps
the PRNG rows of ``matrix.QUICK_RANDOM`` (under ten minutes on two cores).  ``--shard K/N`` runs
every N-th row starting at row K (one process per core); ``--merge`` joins the parts' JSON files
into one report, as if one process had run them; the sharding rows (``sharding.py``: the tutorial's
programs on every executor against jax, in their own processes) run unless ``--functions`` or
``--no-sharding`` is given (with ``--shard``, in part 0); ``--rerun`` parts (rows run again at the same
settings after a fix) replace those rows, and the report lists them under ``rerun``.  Exit status 1 when a cell is DIFFERS, ERROR or GAP! (an unlisted gap).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

from conformance import profile

HERE = pathlib.Path(__file__).parent
DEFAULT_OUTPUT = HERE / "results"  # the committed deep run
QUICK_OUTPUT = DEFAULT_OUTPUT / "quick"  # --quick runs (git ignores it), so they never replace the deep report
SCHEMA_VERSION = 1
QUICK_EXAMPLES = profile.PROFILES["ci"].transform_examples  # the test profiles (conformance.profile)
DEFAULT_EXAMPLES = profile.PROFILES["deep"].transform_examples
#: statuses that fail the run (the exit status and CI)
FAILING = ("DIFFERS", "ERROR", "GAP!")


def _progress(total: int, enabled: bool):
    """A progress callback ``advance(label)`` and a ``close()``: rich, else tqdm, else (and when the output
    is not a terminal) one line per row."""
    if not enabled:
        return (lambda label: None), (lambda: None)
    try:
        if not sys.stderr.isatty():
            raise ImportError("a log, not a terminal: plain lines")
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       transient=False)
        task = bar.add_task("conformance", total=total)
        bar.start()
        return (lambda label: bar.update(task, advance=1, description=label[:28])), bar.stop
    except ImportError:
        pass
    try:
        from tqdm import tqdm

        if not sys.stderr.isatty():
            raise ImportError("a log, not a terminal: plain lines")
        bar = tqdm(total=total, unit="row")
        return (lambda label: (bar.set_description(label[:28]), bar.update(1))), bar.close
    except ImportError:
        count = [0]

        def line(label):
            count[0] += 1
            print(f"[{count[0]}/{total}] {label} ({time.strftime('%H:%M:%S')})", file=sys.stderr, flush=True)
        return line, (lambda: None)


def select(names: list[str], patterns: str | None) -> list[str]:
    """The names matching any comma-separated pattern (``sin``, ``linalg.*``); ValueError for a pattern matching none."""
    if not patterns:
        return names
    out, unknown = [], []
    for pat in patterns.split(","):
        hits = [n for n in names if fnmatch.fnmatchcase(n, pat) or n.split("[")[0] == pat]
        (out.extend(h for h in hits if h not in out) if hits else unknown.append(pat))
    if unknown:
        raise ValueError(f"--functions: no row named {unknown}; rows are the differential table's names "
                         f"and random.* (e.g. sin, linalg.inv, array.__add__, random.uniform)")
    return out


def summarise(rows: list[dict], executors: list[str], transforms: tuple) -> dict:
    """``{transform: {executor: {status: count}}}`` and the totals of examples and disagreements."""
    from conformance import matrix as M

    per = {t: {ex: {s: 0 for s in M.SEVERITY} for ex in executors} for t in transforms}
    examples = pairs = disagreements = failing = 0
    for r in rows:
        for t in transforms:
            for ex in executors:
                c = r["cells"][t][ex]
                per[t][ex][c["status"]] += 1
                if ex != M.REFERENCE:
                    pairs += c["examples"]
                    disagreements += c["disagreements"]
                failing += c["status"] in FAILING
            examples += r["cells"][t][M.REFERENCE]["examples"] if M.REFERENCE in executors else 0
    return {"by_transform": per, "examples": examples, "example_executor_pairs": pairs,
            "disagreements": disagreements, "failing_cells": failing}


def run_official(suite: str, executors: list[str], max_examples: int) -> dict:
    """The official array-api-tests per executor (``python -m conformance.official``), their counts."""
    out = {}
    for ex in executors:
        cmd = [sys.executable, "-m", "conformance.official", "--suite", suite, "--executor", ex,
               "--max-examples", str(max_examples)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True)
        result = HERE / "results" / f"official-{ex}.json"
        entry = {"command": " ".join(cmd[1:]), "exit_status": proc.returncode,
                 "seconds": round(time.perf_counter() - start, 1)}
        if result.exists() and result.stat().st_mtime >= time.time() - entry["seconds"] - 5:
            data = json.loads(result.read_text())
            entry.update({k: data[k] for k in ("counts", "passed", "failed_or_xfailed", "new_failures", "xpassed")})
        else:
            entry["error"] = (proc.stdout + proc.stderr).strip()[-1500:] or "no result file"
        out[ex] = entry
    return out


def stored_official(executors: list[str]) -> dict:
    """The last official-suite results kept under ``conformance/results/`` (without ``--array-api-tests``)."""
    out = {}
    for ex in executors:
        path = HERE / "results" / f"official-{ex}.json"
        if path.exists():
            data = json.loads(path.read_text())
            out[ex] = {"command": data.get("command", ""), "exit_status": 0 if not data.get("new_failures") else 1,
                       "seconds": data.get("duration_s", 0.0), "stored": str(path.relative_to(HERE.parent)),
                       **{k: data[k] for k in ("counts", "passed", "failed_or_xfailed", "new_failures", "xpassed")
                          if k in data}}
    return out


def render_summary(data: dict) -> str:
    """The terminal summary: one line per transform x executor, then the failing cells."""
    from conformance import matrix as M

    exs, ts = data["executors"], data["transforms"]
    shown = [s for s in M.SEVERITY if any(data["summary"]["by_transform"][t][e][s] for t in ts for e in exs)]
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"parity with the NumPy executor: {len(data['rows'])} functions", show_lines=False)
        table.add_column("transform")
        table.add_column("executor")
        for s in shown:
            table.add_column(s, justify="right", style=_RICH_STYLE.get(s, ""))
        for t in ts:
            for e in exs:
                table.add_row(t, e, *(str(data["summary"]["by_transform"][t][e][s] or "") for s in shown))
        import io

        console = Console(file=io.StringIO(), record=True, width=120)
        console.print(table)
        text = console.export_text()
    except ImportError:
        head = f"{'transform':<10}{'executor':<9}" + "".join(f"{s:>10}" for s in shown)
        lines = [head] + [f"{t:<10}{e:<9}" + "".join(f"{data['summary']['by_transform'][t][e][s] or '':>10}" for s in shown)
                          for t in ts for e in exs]
        text = "\n".join(lines) + "\n"
    lines = [text]
    s = data["summary"]
    lines.append(f"{s['examples']} examples, {s['example_executor_pairs']} example-executor pairs against NumPy, "
                 f"{s['disagreements']} disagreements ({data['duration_s']} s)")
    for r in data["rows"]:
        for t in ts:
            for e in exs:
                c = r["cells"][t][e]
                if c["status"] in FAILING + ("open",):
                    first = c["failures"][0] if c["failures"] else {}
                    lines.append(f"  {c['status']:<8} {r['function']} / {t} / {e}: {first.get('detail', '')[:160]}")
                    if first.get("input"):
                        lines.append(f"           input: {first['input'][:200]}")
    if data.get("official"):
        lines.append("official array-api-tests" + (" (stored results; --array-api-tests PATH runs them):"
                                                   if any("stored" in o for o in data["official"].values()) else ":"))
        for e, o in data["official"].items():
            lines.append(f"  {e}: " + (f"{o['passed']} passed, {o['failed_or_xfailed']} failed or known, "
                                        f"{len(o['new_failures'])} new failures" if "passed" in o else o["error"][:200])
                         + (f"  [{o['command']}]" if "stored" in o else ""))
    if data.get("sharding"):
        from conformance import sharding

        lines.append(sharding.render(data["sharding"]))
    return "\n".join(lines)


_RICH_STYLE = {"ok": "green", "deviation": "yellow", "gap": "yellow", "open": "magenta", "GAP!": "red",
               "DIFFERS": "bold red", "ERROR": "bold red", "n/a": "dim"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.splitlines()[0])
    p.add_argument("--executors", default=None, help="comma-separated names (default: every available executor)")
    p.add_argument("--functions", default=None, help="comma-separated rows or patterns: sin,linalg.*,random.*")
    p.add_argument("--transforms", default=None, help="comma-separated subset of eager,jit,vmap,grad (default: all)")
    p.add_argument("--max-examples", type=int, default=None,
                   help=f"examples per function and transform (default {DEFAULT_EXAMPLES}; --quick {QUICK_EXAMPLES})")
    p.add_argument("--quick", action="store_true", help=f"{QUICK_EXAMPLES} example per function and transform")
    p.add_argument("--output", default=None,
                   help=f"folder for conformance.json/.html (default {DEFAULT_OUTPUT}; with --quick {QUICK_OUTPUT})")
    p.add_argument("--array-api-tests", default=None, metavar="PATH",
                   help="a local data-apis/array-api-tests checkout: run it per executor and fold in its counts")
    p.add_argument("--official-max-examples", type=int, default=10, help="--max-examples of the official suite")
    p.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: fixed per row, repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-sharding", action="store_true",
                   help="skip the sharding rows (conformance/sharding.py; run unless --functions is given)")
    p.add_argument("--shard", default=None, metavar="K/N", help="run every N-th row starting at row K (0 <= K < N)")
    p.add_argument("--merge", nargs="+", default=None, metavar="PART",
                   help="join the conformance.json files of shards (same executors, transforms, examples, seed) and exit")
    p.add_argument("--rerun", nargs="+", default=(), metavar="PART",
                   help="with --merge: parts whose rows (run again at the same settings) replace the shards' rows")
    args = p.parse_args(argv)
    if args.output is None:
        args.output = str(QUICK_OUTPUT if args.quick else DEFAULT_OUTPUT)
    if args.rerun and not args.merge:
        p.error("--rerun replaces rows of a --merge: give the shards with --merge PART ...")
    if args.merge:
        try:
            data = merge([json.loads(pathlib.Path(f).read_text()) for f in args.merge],
                         [json.loads(pathlib.Path(f).read_text()) for f in args.rerun])
        except ValueError as e:
            p.error(str(e))
        data["command"] = "python -m conformance " + " ".join(sys.argv[1:] if argv is None else argv)
        if args.array_api_tests:
            data["official"] = run_official(args.array_api_tests, data["executors"], args.official_max_examples)
        return _write(data, pathlib.Path(args.output))

    import arrayx
    from arrayx.core import executor as _base
    from conformance import capabilities, matrix

    exs = args.executors.split(",") if args.executors else [n for n in _base.registered() if _base.get(n).available()]
    for ex in exs:
        if not _base.get(ex).available():  # ValueError for unknown names comes from get()
            p.error(f"executor {ex!r} is not available here: {_base.get(ex).unavailable_reason}")
    if matrix.REFERENCE not in exs:
        exs = [matrix.REFERENCE] + exs
    transforms = tuple(args.transforms.split(",")) if args.transforms else matrix.TRANSFORMS
    bad = sorted(set(transforms) - set(matrix.TRANSFORMS))
    if bad:
        p.error(f"--transforms: unknown {bad}; choose from {','.join(matrix.TRANSFORMS)}")
    table = {fn.name: fn for fn in matrix.entries()}
    try:
        names = select([fn.name for fn in matrix.entries(quick=args.quick and not args.functions)], args.functions)
    except ValueError as e:
        p.error(str(e))
    if args.shard:
        try:
            k, of = shard(args.shard)
        except ValueError as e:
            p.error(str(e))
        names = names[k::of]
    n = args.max_examples or (QUICK_EXAMPLES if args.quick else DEFAULT_EXAMPLES)

    from conformance.differential.runner import keep_jax_programs_on_disk

    keep_jax_programs_on_disk()  # a rerun skips JAX's per-shape compiles
    start = time.perf_counter()
    advance, close = _progress(len(names), not args.no_progress)
    open_table = matrix.open_issues()
    rows = []
    try:
        for name in names:
            rows.append(matrix.run_row(table[name], exs, transforms, n, args.seed, open_table))
            advance(name)
    finally:
        close()
    standard_names = sorted({r["standard_name"] for r in rows})
    data = {
        "schema": SCHEMA_VERSION,
        "command": "python -m conformance " + " ".join(sys.argv[1:] if argv is None else argv),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "arrayx": arrayx.__version__, "machine": platform.platform(), "python": platform.python_version(),
        # folders are named, not spelled out: a report must not carry this machine's paths
        "settings": {k: ("(set)" if k.endswith("_DIR") else v) for k, v in sorted(os.environ.items()) if k.startswith("ARRAYX_")},
        "max_examples": n, "quick": args.quick, "seed": args.seed, "shard": args.shard,
        "executors": exs, "transforms": list(transforms),
        "unavailable": {name: _base.get(name).unavailable_reason for name in _base.registered()
                        if not _base.get(name).available()},
        "rows": rows,
        "capabilities": capabilities.table(exs, standard_names),
        "deviations": _deviations_table(),
    }
    data["duration_s"] = round(time.perf_counter() - start, 1)
    data["summary"] = summarise(rows, exs, transforms)
    if args.array_api_tests:
        data["official"] = run_official(args.array_api_tests, exs, args.official_max_examples)
    else:
        data["official"] = stored_official(exs)
    if not (args.no_sharding or args.functions or (args.shard and shard(args.shard)[0] != 0)):
        from conformance import sharding

        data["sharding"] = sharding.rows(exs)  # the tutorial's programs, each executor against jax
    return _write(data, pathlib.Path(args.output))


def shard(spec: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)``; ValueError naming the option for anything else."""
    try:
        k, of = (int(v) for v in spec.split("/"))
    except ValueError:
        raise ValueError(f"--shard: expected K/N with integers, e.g. 0/2; got {spec!r}") from None
    if not (of >= 1 and 0 <= k < of):
        raise ValueError(f"--shard: need 0 <= K < N; got {spec!r}")
    return k, of


#: what every part of a merge must share: rows drawn under other settings are other measurements
_SAME_IN_EVERY_PART = ("schema", "executors", "transforms", "max_examples", "quick", "seed")


def merge(parts: list[dict], reruns: list[dict] = ()) -> dict:
    """The shards' reports as one report: their rows in the table's order, summary, capabilities and
    duration recomputed; each row of a ``reruns`` part replaces the shards' row of that name.
    ValueError when the parts differ in a setting, share a row, or a rerun's row is in no part."""
    from conformance import capabilities

    first = parts[0]
    for i, part in enumerate([*parts[1:], *reruns], 1):
        for key in _SAME_IN_EVERY_PART:
            if part.get(key) != first.get(key):
                raise ValueError(f"--merge: part {i} has {key}={part.get(key)!r}, part 0 has {first.get(key)!r}")
    seen: dict[str, int] = {}
    for i, part in enumerate(parts):
        for r in part["rows"]:
            if r["function"] in seen:
                raise ValueError(f"--merge: row {r['function']!r} is in part {seen[r['function']]} and part {i}")
            seen[r["function"]] = i
    again = {}
    for part in reruns:
        for r in part["rows"]:
            if r["function"] not in seen or r["function"] in again:
                raise ValueError(f"--rerun: row {r['function']!r} is " +
                                 ("in two reruns" if r["function"] in again else "in no --merge part"))
            again[r["function"]] = r
    rows = sorted((again.get(r["function"], r) for part in parts for r in part["rows"]), key=_row_position(parts))
    exs, transforms = first["executors"], tuple(first["transforms"])
    data = {k: v for k, v in first.items() if k not in ("rows", "summary", "official")}
    data.update({
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "shard": None, "merged": [p.get("shard") for p in parts], "rows": rows,
        "capabilities": capabilities.table(exs, sorted({r["standard_name"] for r in rows})),
        "duration_s": round(sum(p["duration_s"] for p in [*parts, *reruns]), 1),
        "rerun": sorted(again),
        "summary": summarise(rows, exs, transforms),
        "official": next((p["official"] for p in parts if p.get("official")), {}),
    })
    sharding = next((p["sharding"] for p in parts if p.get("sharding")), None)
    if sharding is not None:
        data["sharding"] = sharding
    return data


def _row_position(parts: list[dict]):
    """Where each row stood in the run the shards were cut from (part K/N holds rows K, K+N, ...);
    the function table's order for parts that are not shards of one run."""
    specs = [p.get("shard") for p in parts]
    if all(specs) and len({s.split("/")[1] for s in specs}) == 1:
        place = {r["function"]: i * int(s.split("/")[1]) + int(s.split("/")[0])
                 for p, s in zip(parts, specs) for i, r in enumerate(p["rows"])}
    else:
        from conformance import matrix

        place = {name: i for i, name in enumerate(fn.name for fn in matrix.entries())}
    return lambda row: place.get(row["function"], len(place))


def _write(data: dict, out: pathlib.Path) -> int:
    """``conformance.json`` and ``.html`` under ``out``, the summary printed; the exit status."""
    from conformance import html

    out.mkdir(parents=True, exist_ok=True)
    (out / "conformance.json").write_text(json.dumps(data, indent=1) + "\n")
    (out / "conformance.html").write_text(html.render(data))
    print(render_summary(data))
    print(f"\nwrote {out / 'conformance.json'} and {out / 'conformance.html'}")
    return 1 if data["summary"]["failing_cells"] or data.get("sharding", {}).get("failing") else 0


def _deviations_table() -> list[dict]:
    from conformance import deviations

    return deviations.table()


if __name__ == "__main__":
    sys.exit(main())
