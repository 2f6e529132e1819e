"""``python -m benchmarks``: every registered ratio benchmark, its peers side by side, plots and a summary.

    python -m benchmarks [--quick] [--only eager,jit] [--rounds N] [--tag gpu] [--timeout S] [--list]

**Registry convention** (how a bench file joins the runner): a ``benchmarks/bench_*.py`` module
that defines

    TITLE = "one line: what is compared"
    def workloads(quick: bool) -> dict[str, dict[str, Callable[[], object]]]:
        return {"selu 1e6 float32": {"arrayx[jax]": lambda: ..., "jax": lambda: ...}, ...}

is run by this runner (its name is the file's name without ``bench_``).  Each workload maps a
label to a zero-argument callable that does the work once and waits for it (``block`` below:
JAX is asynchronous and Dask lazy), both from
``benchmarks/_harness.py``.  Labels starting with ``arrayx`` are arrayx; the others are
peers; a peer that is not installed is simply left out by the module (``installed(name)``).  The
callables are set up by ``workloads`` (data made, functions jitted); the runner calls each once
to warm it up, calibrates how many calls make one timing, then times every label in
``--rounds`` interleaved rounds (the order rotates per round, so load on a shared machine hits
all alike) and keeps the best round.  Files without ``workloads`` stay runnable alone and are
listed as standalone.  Each file also keeps its own ``python benchmarks/bench_X.py`` command.
A module may also define ``PAIRS = {"name": ("workload a", "workload b")}``: the summary then shows,
per label timed in both, time a / time b (bench_grad: jit(grad) / jit(f) of each library).

**One process per benchmark.**  The runner reads the bench files without importing them (their
source: ``TITLE`` and whether ``workloads`` is defined) and runs each registered bench in a fresh
Python process (``python -m benchmarks --one NAME``), so what one bench sets before an import
(``bench_clients`` sets ``SCIPY_ARRAY_API=1`` before SciPy loads), the libraries it loads and the
threads they start do not reach the next.  A bench whose import or ``workloads`` needs a library
that is not installed here is **skipped**, with the missing module named; any other exception, a
crash, or a bench still running after ``--timeout`` seconds is a **failure**.  The command exits 1
when a bench failed, else 0 (skipped benches do not fail it).

Writes, under ``benchmarks/results/`` (``--output`` elsewhere; ``--tag`` adds a suffix, e.g. GPU
runs: ``--tag gpu``): ``runner[-tag].json`` (every time and ratio, and each bench's ``skipped`` or
``error``), ``plots/<bench>[-tag].png`` (per workload, bars of each label's speed relative to the
first peer, whose line is 1) and ``summary[-tag].md``.  A ratio is peer time / arrayx time: above
1 arrayx is faster.  The closing note prints the headline ratios (geometric mean per arrayx label
and peer), the skipped and failed benches, and the paths of the plots.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import math
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # this checkout's arrayx, not an installed copy
HERE = ROOT / "benchmarks"
RESULTS = HERE / "results"
#: what a skipped bench's reason suggests
INSTALL_PEERS = "pip install -e '.[all]'"

from benchmarks._harness import block, installed  # noqa: E402,F401  (what bench files use too)


@dataclass(frozen=True)
class Bench:
    """A registered bench file, read from its source: importing it may need a peer, or set process state."""

    name: str
    path: pathlib.Path
    title: str
    doc: str

    def load(self):
        """The bench module (in a ``--one`` process: the runner itself never imports a bench)."""
        if self.path.parent == HERE:
            return importlib.import_module(f"benchmarks.{self.path.stem}")
        spec = importlib.util.spec_from_file_location(self.path.stem, self.path)  # a --folder of the tests
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.path.stem] = module
        spec.loader.exec_module(module)
        return module


def _read(path: pathlib.Path) -> tuple[bool, str, str]:
    """``(defines workloads, TITLE, docstring)`` of a bench file, from its syntax tree."""
    tree = ast.parse(path.read_text(), filename=str(path))
    title = ""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TITLE" for t in node.targets):
            try:
                title = str(ast.literal_eval(node.value))
            except ValueError:
                title = ""
    defines = any(isinstance(n, ast.FunctionDef) and n.name == "workloads" for n in tree.body)
    return defines, title, ast.get_docstring(tree) or ""


def discover(folder: pathlib.Path = HERE) -> tuple[dict, list]:
    """``({name: Bench}, [standalone file names])`` of the bench files, sorted by name.  A file that
    does not parse is registered (with that as its title) so that running it reports the failure."""
    registered, standalone = {}, []
    for path in sorted(pathlib.Path(folder).glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        try:
            defines, title, doc = _read(path)
        except SyntaxError as e:
            registered[name] = Bench(name, path, f"(does not parse: {e})", "")
            continue
        if defines:
            registered[name] = Bench(name, path, title, doc)
        else:
            standalone.append(path.name)
    return registered, standalone


def _calibrate(fn, target_s: float) -> int:
    """Calls per timing so that one timing lasts about ``target_s`` (at least one call)."""
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    return max(1, min(10_000, int(target_s / max(once, 1e-7))))


def time_workload(fns: dict, rounds: int, target_s: float) -> dict:
    """Best seconds per call of each label, over ``rounds`` interleaved rounds."""
    for fn in fns.values():
        fn()  # warm up: compile, fill caches
    numbers = {k: _calibrate(fn, target_s) for k, fn in fns.items()}
    best = {k: math.inf for k in fns}
    labels = list(fns)
    for r in range(rounds):
        for k in labels[r % len(labels):] + labels[: r % len(labels)]:
            fn, n = fns[k], numbers[k]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[k] = min(best[k], (time.perf_counter() - t0) / n)
    return best


def ratios(times: dict) -> dict:
    """``{"arrayx label vs peer": peer time / arrayx time}`` for every arrayx label and peer."""
    ours = [k for k in times if k.startswith("arrayx")]
    peers = [k for k in times if not k.startswith("arrayx")]
    return {f"{a} vs {p}": times[p] / times[a] for a in ours for p in peers if times[a] > 0}


def within_label(pairs: dict, workloads: dict) -> dict:
    """A bench's ``PAIRS`` (``{"name": (workload a, workload b)}``): per label timed in both, time a /
    time b (e.g. jit(grad) / jit(f): what a gradient costs against its function, per library)."""
    out = {}
    for name, (a, b) in pairs.items():
        ta, tb = workloads.get(a, {}).get("times_s", {}), workloads.get(b, {}).get("times_s", {})
        row = {label: ta[label] / tb[label] for label in ta if label in tb and tb[label] > 0}
        if row:
            out[name] = row
    return out


def headline(bench: dict) -> dict:
    """Geometric mean of each ratio over the bench's workloads."""
    by_pair: dict[str, list] = {}
    for w in bench["workloads"].values():
        for pair, r in w["ratios"].items():
            by_pair.setdefault(pair, []).append(r)
    return {pair: math.exp(sum(math.log(r) for r in rs) / len(rs)) for pair, rs in by_pair.items()}


def plot(name: str, bench: dict, path: pathlib.Path) -> bool:
    """Bars per workload: each label's speed relative to the workload's first peer (the line at 1)."""
    try:
        import matplotlib
    except ImportError:
        print(f"{name}: no plot: matplotlib is not installed (pip install -e '.[bench]')", flush=True)
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(bench["workloads"])
    labels = sorted({k for w in bench["workloads"].values() for k in w["times_s"]},
                    key=lambda k: (k.startswith("arrayx"), k))
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(workloads) + 2), 4.2))
    for i, label in enumerate(labels):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            times = bench["workloads"][w]["times_s"]
            peers = [k for k in times if not k.startswith("arrayx")]
            ref = times[peers[0]] if peers else times[next(iter(times))]
            if label in times:
                xs.append(j + (i - (len(labels) - 1) / 2) * width)
                ys.append(ref / times[label])
        ax.bar(xs, ys, width, label=label)
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="first peer = 1")
    ax.set_xticks(range(len(workloads)), workloads, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("speed relative to the first peer (higher is faster)")
    ax.set_yscale("log")
    ax.set_title(f"{name}: {bench['title']}", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def missing_peer(e: BaseException) -> str | None:
    """The top-level module an import error names when it is not installed here, else ``None``: a
    broken import of arrayx, of the benchmarks or of an installed package is a failure, not a skip."""
    name = getattr(e, "name", None)
    if not isinstance(e, ModuleNotFoundError) or not name:
        return None
    top = name.split(".")[0]
    if top in ("arrayx", "benchmarks"):
        return None
    try:
        return top if importlib.util.find_spec(top) is None else None
    except (ImportError, ValueError):
        return top


def run_one(bench: Bench, quick: bool, rounds: int, target_s: float) -> dict:
    """One bench timed in this process: ``{"title", "workloads", "seconds"}`` and ``skipped`` (a library
    its import or ``workloads`` needs is not installed) or ``error`` (any other exception)."""
    out = {"title": bench.title, "workloads": {}}
    t0 = time.perf_counter()
    try:
        table = bench.load().workloads(quick)
        if not isinstance(table, dict) or not all(isinstance(fns, dict) for fns in table.values()):
            raise TypeError(f"bench_{bench.name}.workloads(quick) returned a {type(table).__name__}, not the "
                            "runner's {workload: {label: callable}}; rename it if the file is meant to run alone")
        for w, fns in table.items():
            times = time_workload(fns, rounds, target_s)
            out["workloads"][w] = {"times_s": times, "ratios": ratios(times)}
            print(f"{bench.name:<10} {w:<34} " + "  ".join(f"{k} {t * 1e6:.3g}us" for k, t in times.items()),
                  flush=True)
        pairs = within_label(getattr(bench.load(), "PAIRS", {}), out["workloads"])
        if pairs:
            out["pairs"] = pairs
    except Exception as e:  # noqa: BLE001 - reported in the result, which the runner reads
        peer = missing_peer(e)
        if peer is not None and not out["workloads"]:
            out["skipped"] = f"needs {peer}, which is not installed here ({INSTALL_PEERS})"
        else:
            out["error"] = f"{type(e).__name__}: {e}"
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def run_in_process(bench: Bench, quick: bool, rounds: int, timeout_s: float) -> dict:
    """``run_one`` of ``bench`` in a fresh ``python -m benchmarks --one`` process; its progress lines
    print as they come.  A crash, a non-zero exit or ``timeout_s`` without a result is an ``error``."""
    with tempfile.TemporaryDirectory(prefix="arrayx-bench-") as tmp:
        result = pathlib.Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "benchmarks", "--one", bench.name, "--result", str(result),
               "--rounds", str(rounds), "--folder", str(bench.path.parent)] + (["--quick"] if quick else [])
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            _echo(e.stderr)
            return {"title": bench.title, "workloads": {}, "seconds": round(time.perf_counter() - t0, 1),
                    "error": f"still running after {timeout_s:g} s (--timeout): stopped"}
        _echo(proc.stderr)
        data = json.loads(result.read_text()) if result.is_file() else None
    if data is None:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        return {"title": bench.title, "workloads": {}, "seconds": round(time.perf_counter() - t0, 1),
                "error": f"its process exited with code {proc.returncode} before writing a result: {tail}"}
    if proc.returncode != 0 and "error" not in data:
        data["error"] = f"its process exited with code {proc.returncode}"
    return data


def _echo(text) -> None:
    if text:
        sys.stderr.write(text if isinstance(text, str) else text.decode(errors="replace"))
        sys.stderr.flush()


def markdown(data: dict) -> str:
    lines = [f"# Benchmarks ({data['command']})", "", f"{data['machine']}, python {data['python']}, "
             f"{data['created']}; ratio = peer time / arrayx time (above 1: arrayx is faster), best of "
             f"{data['rounds']} interleaved rounds.", ""]
    for name, b in data["benches"].items():
        lines += [f"## {name}: {b['title']}", ""]
        if b.get("error"):
            lines += [f"failed: `{b['error']}`", ""]
            continue
        if b.get("skipped"):
            lines += [f"skipped: {b['skipped']}", ""]
            continue
        labels = sorted({k for w in b["workloads"].values() for k in w["times_s"]})
        lines += ["| workload | " + " | ".join(f"{k} (us)" for k in labels) + " | ratios |",
                  "|---" * (len(labels) + 2) + "|"]
        for w, r in b["workloads"].items():
            cells = [f"{r['times_s'][k] * 1e6:.3g}" if k in r["times_s"] else "" for k in labels]
            rs = ", ".join(f"{p}: {v:.3g}" for p, v in r["ratios"].items())
            lines.append(f"| {w} | " + " | ".join(cells) + f" | {rs} |")
        for pair, row in b.get("pairs", {}).items():
            lines.append(f"| {pair} (time / time) | " + " | ".join(f"{row[k]:.3g}" if k in row else "" for k in labels)
                         + " | |")
        lines += ["", "headline (geometric mean): " + ", ".join(f"{p} **{v:.3g}x**" for p, v in b["headline"].items()),
                  "", f"![{name}]({b['plot']})" if b.get("plot") else "", ""]
    if data["standalone"]:
        lines += ["Standalone benchmarks (not registered, run them alone): " + ", ".join(data["standalone"]), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller workloads, 3 rounds of short timings")
    p.add_argument("--only", default=None, help="comma-separated bench names (see --list)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7; --quick 3)")
    p.add_argument("--tag", default="", help="suffix of the output files (e.g. gpu)")
    p.add_argument("--output", default=str(RESULTS), help=f"folder of the results (default {RESULTS})")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds one bench may run before it is stopped and counted as failed (default 1800)")
    p.add_argument("--list", action="store_true", help="list the registered and standalone benches and exit")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)     # the process of one bench (run_in_process)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)  # where that process writes its result
    p.add_argument("--folder", default=str(HERE), help=argparse.SUPPRESS)  # of the bench files (the tests' own)
    args = p.parse_args(argv)
    registered, standalone = discover(pathlib.Path(args.folder))
    rounds = args.rounds or (3 if args.quick else 7)
    target = 0.01 if args.quick else 0.05
    if args.one is not None:
        if args.one not in registered or not args.result:
            p.error(f"--one: needs a registered bench and --result; registered: {', '.join(registered)}")
        bench = run_one(registered[args.one], args.quick, rounds, target)
        pathlib.Path(args.result).write_text(json.dumps(bench) + "\n")
        return 1 if bench.get("error") else 0
    if args.list:
        for name, bench in registered.items():
            print(f"{name:<16} {bench.title}")
        print("standalone:", ", ".join(standalone))
        return 0
    names = args.only.split(",") if args.only else list(registered)
    unknown = sorted(set(names) - set(registered))
    if unknown:
        p.error(f"--only: not registered: {unknown}; registered: {', '.join(registered)}")
    suffix = f"-{args.tag}" if args.tag else ""
    data = {"command": "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.platform(),
            "processor": platform.processor() or platform.machine(), "python": platform.python_version(),
            "quick": args.quick, "rounds": rounds, "benches": {}, "standalone": standalone}
    out = pathlib.Path(args.output)
    start = time.perf_counter()
    for name in names:
        bench = run_in_process(registered[name], args.quick, rounds, args.timeout)
        if bench.get("skipped"):
            print(f"{name}: skipped: {bench['skipped']}", flush=True)
        elif bench.get("error"):
            print(f"{name}: failed: {bench['error']}", flush=True)
        bench["headline"] = headline(bench)
        if bench["workloads"]:
            path = out / "plots" / f"{name}{suffix}.png"
            if plot(name, bench, path):
                bench["plot"] = str(path.relative_to(out))  # relative: the JSON names no machine path
        data["benches"][name] = bench
    data["duration_s"] = round(time.perf_counter() - start, 1)
    out.mkdir(parents=True, exist_ok=True)
    out_json, out_md = out / f"runner{suffix}.json", out / f"summary{suffix}.md"
    out_json.write_text(json.dumps(data, indent=1) + "\n")
    out_md.write_text(markdown(data))
    print(f"\nheadline ratios (peer time / arrayx time, geometric mean over workloads; {data['duration_s']} s):")
    for name, b in data["benches"].items():
        heads = ", ".join(f"{pair} {v:.3g}x" for pair, v in b["headline"].items())
        if b.get("error"):
            heads = f"FAILED: {b['error']}"
        elif b.get("skipped"):
            heads = f"skipped: {b['skipped']}"
        if not heads:
            heads = "no peer here to compare with (times in the JSON)" if b["workloads"] else "no workloads"
        print(f"  {name:<10} {heads}")
        for pair, row in b.get("pairs", {}).items():
            print(f"  {'':<10} {pair}: " + ", ".join(f"{label} {r:.3g}" for label, r in row.items()))
    print(f"plots: {', '.join(str(out / b['plot']) for b in data['benches'].values() if b.get('plot'))}")
    print(f"wrote {out_json} and {out_md}")
    failed = [name for name, b in data["benches"].items() if b.get("error")]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
