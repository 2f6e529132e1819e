"""The deep profile of the differential suite.

    python -m conformance.differential [--max-examples 200] [--executors numpy,numba,jax,dask]
                                       [--only sin,linalg.inv] [--seed N] [--json PATH] [--shard K/N]
    python -m conformance.differential --merge PART.json ... [--json PATH]

draws ``--max-examples`` calls of every entry of the function table, runs each on every
executor and on NumPy, groups the disagreements into classes (function, executor, kind of
difference) with the smallest example as the reproducer, classifies each class against
``conformance/deviations.py`` and writes ``conformance/results/differential.json``
(``python -m conformance.report --differential`` prints it).  Exit status 1 when a class is
not a known deviation.  ``--shard K/N`` runs every N-th entry of the table starting at K (one
process per shard on a multi-core machine); ``--merge`` joins the shards' JSON files.  Parts
run with different ``--seed`` values add up to more examples per function (rounds: run what
the time allows), and a part that reruns a function with the same seed replaces that run.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

from conformance import deviations as _deviations
from conformance.differential import functions as F
from conformance.differential.explore import classes, explore
from conformance.differential.runner import REFERENCE, available_executors, keep_jax_programs_on_disk

DEFAULT_JSON = pathlib.Path(__file__).parent.parent / "results" / "differential.json"


def run(max_examples: int, executors: list[str], names: list[str], seed: int | None, progress=print) -> dict:
    per_function = {}
    found = []
    start = time.perf_counter()
    for name in names:
        r = explore(F.BY_NAME[name], executors, max_examples, seed)
        found += r["disagreements"]
        per_function[name] = {"examples": r["examples"], "pairs": r["pairs"], "seconds": round(r["seconds"], 2),
                              "disagreements": len(r["disagreements"])}
        if progress:
            progress(f"{name}: {r['examples']} examples, {len(r['disagreements'])} disagreements, {r['seconds']:.1f} s")
    found_classes = classes(found)
    return {
        "max_examples": max_examples, "seed": seed, "executors": executors,
        "settings": {k: ("(set)" if k.endswith("_DIR") else v) for k, v in sorted(os.environ.items()) if k.startswith("ARRAYX_")},
        "machine": platform.platform(), "duration_s": round(time.perf_counter() - start, 1),
        "examples": sum(v["examples"] for v in per_function.values()),
        "pairs": sum(v["pairs"] for v in per_function.values()),
        "disagreements": len(found),
        "classes": found_classes,
        "unexplained": [c["class"] for c in found_classes if c["deviation"] is None],
        "deviations": _deviations.table(),
        "functions": per_function,
    }


def merge(parts: list[dict]) -> dict:
    """Shards and rounds of the deep profile as one result.

    Parts with different seeds are different examples: a function's examples add up over them.
    A later part that runs a function again with the same seed (a rerun after a fix) replaces
    the earlier run of that function, its classes included.
    """
    runs: dict[tuple, tuple] = {}   # (table entry, seed) -> (per-function record, its classes)
    for p in parts:
        for name, record in p["functions"].items():
            mine = [c for c in p["classes"] if c.get("entry", c["function"]) == name
                    or ("entry" not in c and F.standard_name(F.BY_NAME[name]) == c["function"])]
            runs[name, p["seed"] or 0] = (record, mine)  # no seed draws the examples of seed 0
    functions: dict[str, dict] = {}
    groups: dict[tuple, dict] = {}
    for (name, _seed), (record, mine) in runs.items():
        total = functions.setdefault(name, {"examples": 0, "pairs": 0, "seconds": 0.0, "disagreements": 0})
        for key in total:
            total[key] = round(total[key] + record[key], 2)
        for c in mine:
            g = groups.setdefault((c["class"], c["deviation"] or ""), dict(c, count=0))
            g["count"] += c["count"]
    found = [groups[k] for k in sorted(groups)]
    seeds = sorted({p["seed"] or 0 for p in parts})
    per_seed = {s: max(p["max_examples"] for p in parts if (p["seed"] or 0) == s) for s in seeds}
    return {
        **parts[0], "max_examples": sum(per_seed.values()), "seeds": seeds, "shards": len(parts),
        "duration_s": round(sum(p["duration_s"] for p in parts), 1),
        "examples": sum(v["examples"] for v in functions.values()), "pairs": sum(v["pairs"] for v in functions.values()),
        "disagreements": sum(v["disagreements"] for v in functions.values()), "classes": found,
        "unexplained": [c["class"] for c in found if c["deviation"] is None], "functions": functions,
        "deviations": parts[-1]["deviations"],
    }


def _per_function(data: dict) -> str:
    counts = sorted({v["examples"] for v in data["functions"].values()})
    if len(data.get("seeds", [])) < 2 or not counts:
        return f"{data['max_examples']} per function"
    return f"{counts[0]}-{counts[-1]} per function over seeds {data['seeds']}"


def render(data: dict) -> str:
    lines = [f"differential profile: {data['examples']} examples, {data['pairs']} example-executor pairs over "
             f"{', '.join(data['executors'])} ({_per_function(data)}, {data['duration_s']} s)",
             f"{data['disagreements']} disagreements in {len(data['classes'])} classes, "
             f"{len(data['unexplained'])} not in conformance/deviations.py"]
    for c in data["classes"]:
        tag = f"deviation {c['deviation']}" if c["deviation"] else "UNEXPLAINED"
        lines += [f"  [{tag}] {c['class']}  (x{c['count']})", f"      {c['detail'][:200]}",
                  f"      {c['reproducer'][:400]}"]
    lines += ["", f"known deviations (conformance/deviations.py when the profile ran): {len(data['deviations'])}"]
    lines += [f"  {d['id']} [{', '.join(d['executors'])}] {', '.join(d['functions'])}: {d['reason']}"
              for d in data["deviations"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.differential", description=__doc__.splitlines()[0])
    p.add_argument("--max-examples", type=int, default=200, help="examples per function (default 200)")
    p.add_argument("--executors", default=None, help="comma-separated (default: every available executor)")
    p.add_argument("--only", default=None, help="comma-separated table names (default: the whole table)")
    p.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: derandomized, repeatable)")
    p.add_argument("--json", default=str(DEFAULT_JSON), help=f"where to write the results (default {DEFAULT_JSON})")
    p.add_argument("-q", "--quiet", action="store_true", help="no line per function")
    p.add_argument("--shard", default=None, help="K/N: run every N-th table entry starting at entry K")
    p.add_argument("--merge", nargs="+", default=None, metavar="PART", help="join shard results and exit")
    args = p.parse_args(argv)
    if args.merge:
        data = merge([json.loads(pathlib.Path(m).read_text()) for m in args.merge])
        print(render(data))
        pathlib.Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
        print(f"\nwrote {args.json}")
        return 1 if data["unexplained"] else 0
    exs = args.executors.split(",") if args.executors else available_executors()
    if REFERENCE not in exs:
        exs = [REFERENCE] + exs
    names = args.only.split(",") if args.only else [f.name for f in F.TABLE]
    unknown = sorted(set(names) - set(F.BY_NAME))
    if unknown:
        p.error(f"not in the differential table: {unknown}")
    if args.shard:
        k, n = (int(v) for v in args.shard.split("/"))
        names = names[k::n]
    keep_jax_programs_on_disk()
    data = run(args.max_examples, exs, names, args.seed, None if args.quiet else (lambda s: print(s, flush=True)))
    print(render(data))
    path = pathlib.Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"\nwrote {path}")
    return 1 if data["unexplained"] else 0


if __name__ == "__main__":
    sys.exit(main())
