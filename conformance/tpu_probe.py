"""Which calls XLA on an accelerator refuses or aborts on: the table's cases on the jax executor's
default device, each call in a process that may die, so that a compiler abort is data, not the end.

    python -m conformance.tpu_probe [--json PATH] [--budget SECONDS] [--only sweep,examples32,examples,linalg64]
                                    [--from CASE_ID]

XLA:TPU kills the whole Python process (SIGABRT inside the compiler) on some function x dtype
combinations, so the probe cannot run them in the process that collects the results.  A supervisor
starts a child that runs the cases in order, writing ``B i`` before case ``i`` and ``E i {json}``
after it (flushed); when the child dies, the case it had begun is recorded as an ``abort`` with the
tail of the child's stderr (XLA's message), and a new child carries on from the next case.  One
program at a time may hold a TPU, so the children run one after another.

The cases, in the order the budget spends on them:

``examples32``  every hand-picked example of the table (``differential/table/examples.py``) with its
                64-bit inputs made 32-bit (float64 -> float32, complex128 -> complex64, int64 -> int32,
                uint64 -> uint32): what a TPU user computes with the device's 32-bit defaults;
``sweep``       every unary and binary entry of the differential table on every dtype, and ``astype``
                between every pair of dtypes, on small inputs;
``examples``    the hand-picked examples as they are (64-bit, which XLA:TPU emulates);
``linalg64``    every hand-picked example of the linalg extension with its floating inputs made
                complex128 (run with ``ARRAYX_TPU_64BIT=emulate``: the complex128 paths no other
                group reaches; session 26 found complex128 decompositions aborting the process).

``--from CASE_ID`` starts at that case (a run that ran out of budget carries on there).  A case after
which the TPU core halted (XLA:TPU's ``RuntimeUnexpectedCoreHalt``: every later program of that
process fails) ends its child, so that the next case runs in a fresh one.

Each result names the function, the input dtypes and an outcome: ``ok`` (agrees with the NumPy
executor), ``DIFFERS``, ``GAP`` (NotImplementedError), ``ERROR`` (any other Python exception, with
its first line; ``xla-internal`` when XLA's own error text reached the user) or ``abort`` (the
process died).  The JSON records the JAX, jaxlib and device versions the facts were measured on;
``arrayx/executors/jax/tpu_limits.py`` turns the aborts and internal errors into Python errors
raised before XLA compiles.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time
from dataclasses import replace

import numpy as np

HERE = pathlib.Path(__file__).parent
DEFAULT_JSON = HERE / "results" / "tpu_probe.json"
ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64", "complex64", "complex128")
NARROW = {"float64": "float32", "complex128": "complex64", "int64": "int32", "uint64": "uint32"}
GROUPS = ("examples32", "sweep", "examples", "linalg64")
#: what XLA says once a TPU core halted: the process's later programs all fail, so its child stops
_HALTED = ("Core halted unexpectedly", "program continuator has halted")
#: folders of the machine that ran the probe, kept out of the committed results
_MACHINE_PATH = re.compile(r"(?<![\w.])/(work|tmp|home|root|Users|private|var/folders)/\S*")


def _clean(text: str) -> str:
    return _MACHINE_PATH.sub("<path>", text)
#: XLA's own words: an error whose text has one of these came from inside XLA, not from arrayx
XLA_INTERNAL = ("RET_CHECK", "INTERNAL:", "UNIMPLEMENTED:", "XlaRuntimeError", "INVALID_ARGUMENT:",
                "Check failed", "Unsupported")


def _second_values(name: str) -> str:
    if name in ("floor_divide", "remainder", "divide"):
        return "nonzero"
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        return "shift"
    if name == "pow":
        return "small"
    return "normal"


def sweep_cases():
    from conformance.differential import functions as F
    from conformance.differential.table.examples import Arg, Case, lookup

    out = []
    for fn in F.TABLE:
        if fn.name.startswith("array.") or fn.signature not in ("unary", "binary"):
            continue
        for dt in ALL_DTYPES:
            if fn.signature == "unary":
                out.append(Case(fn.name, lambda xp, x, f=fn.name: lookup(xp, f)(x), (Arg((3, 4), dt),),
                                label=f"sweep:{dt}", tolerance=fn.tolerance))
            else:
                second = Arg((3, 4), dt, _second_values(fn.name))
                out.append(Case(fn.name, lambda xp, a, b, f=fn.name: lookup(xp, f)(a, b),
                                (Arg((3, 4), dt), second), label=f"sweep:{dt}", tolerance=fn.tolerance))
    for src in ALL_DTYPES:
        for dst in ALL_DTYPES:
            out.append(Case("astype", lambda xp, x, d=dst: xp.astype(x, getattr(xp, d)), (Arg((3, 4), src, "small"),),
                            label=f"sweep:{src}->{dst}", tolerance="elementwise"))
    return out


def narrowed(case):
    args = tuple(replace(a, dtype=NARROW.get(a.dtype, a.dtype)) for a in case.args)
    return replace(case, args=args, label=f"32:{case.label}")


_FLOATING = frozenset({"float32", "float64", "complex64", "complex128"})


def widened(case):
    """``case`` with its floating inputs complex128, or None where it has none or already is so."""
    if not any(a.dtype in _FLOATING and a.dtype != "complex128" for a in case.args):
        return None
    args = tuple(replace(a, dtype="complex128") if a.dtype in _FLOATING else a for a in case.args)
    return replace(case, args=args, label=f"c128:{case.label}")


def all_cases(groups, first: int | None = None, start_id: str | None = None) -> list:
    """(group, case) pairs of ``groups`` in order; from the case ``start_id`` on where given, then the
    first ``first`` of them."""
    from conformance.differential.table.examples import CASES

    by_group = {
        "examples32": lambda: [narrowed(c) for c in CASES if any(a.dtype in NARROW for a in c.args)],
        "sweep": sweep_cases,
        "examples": lambda: list(CASES),
        "linalg64": lambda: [w for w in (widened(c) for c in CASES if c.func.startswith("linalg.")) if w is not None],
    }
    out = []
    for g in groups:
        out += [(g, c) for c in by_group[g]()]
    if start_id is not None:
        ids = [c.id for _, c in out]
        if start_id not in ids:
            raise ValueError(f"tpu_probe --from: no case {start_id!r} in the groups {', '.join(groups)}")
        out = out[ids.index(start_id):]
    return out[:first]


def _record(group, case, outcome, seconds):
    from conformance import report

    detail = _clean(outcome.detail.splitlines()[0][:400]) if outcome.detail else ""
    status = outcome.status
    if status == report.ERROR and outcome.detail.startswith("on the reference executor"):
        status = "not-applicable"  # NumPy's executor refuses these dtypes too (the standard's categories)
    elif status == report.ERROR and any(w in outcome.detail for w in XLA_INTERNAL):
        status = "xla-internal"
    return {"group": group, "id": case.id, "func": case.func, "dtypes": [a.dtype for a in case.args],
            "status": status, "detail": detail, "seconds": round(seconds, 3)}


def child(groups, start: int, progress: str, first: int | None = None, start_id: str | None = None) -> int:
    """Run the cases from ``start`` on, appending ``B i`` / ``E i {json}`` lines to ``progress``; exit
    status 3 after a case that halted the TPU core (the supervisor then starts a fresh child)."""
    from conformance import report

    cases = all_cases(groups, first, start_id)
    abort_at = os.environ.get("ARRAYX_PROBE_ABORT_CASE")  # the supervisor's own test: die at this case id
    with open(progress, "a", buffering=1) as log:
        for i in range(start, len(cases)):
            group, case = cases[i]
            log.write(f"B {i}\n")
            log.flush()
            os.fsync(log.fileno())
            t0 = time.perf_counter()
            if case.id == abort_at:
                os.abort()
            outcome = report.check(case, "jax")
            log.write(f"E {i} {json.dumps(_record(group, case, outcome, time.perf_counter() - t0))}\n")
            log.flush()
            if outcome.detail and any(h in outcome.detail for h in _HALTED):
                return 3
    return 0


def environment() -> dict:
    import jax
    import jaxlib

    dev = jax.devices()[0]
    info = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "platform": dev.platform,
            "device_kind": getattr(dev, "device_kind", ""), "python": sys.version.split()[0]}
    try:
        from importlib.metadata import version

        info["libtpu"] = version("libtpu")
    except Exception:  # noqa: BLE001 - not a TPU machine
        info["libtpu"] = None
    return info


def supervise(groups, budget: float, path: pathlib.Path, progress=print, first: int | None = None,
              start_id: str | None = None) -> dict:
    cases = all_cases(groups, first, start_id)
    log_path = path.with_suffix(".progress")
    log_path.unlink(missing_ok=True)
    results: dict[int, dict] = {}
    start, restarts, t0 = 0, 0, time.monotonic()
    env_info = None
    while start < len(cases) and time.monotonic() - t0 < budget:
        left = budget - (time.monotonic() - t0)
        cmd = [sys.executable, "-W", "ignore", "-m", "conformance.tpu_probe", "--child", str(start), "--progress", str(log_path),
               "--only", ",".join(groups)] + (["--first", str(first)] if first else []) \
            + (["--from", start_id] if start_id is not None else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max(left, 5))
            rc, err = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = "timeout", (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        begun = None
        for line in log_path.read_text().splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "B":
                begun = int(rest)
            elif kind == "E":
                i, _, js = rest.partition(" ")
                results[int(i)] = json.loads(js)
                begun = None
        if rc == 0:
            break
        if begun is None:  # died between cases (or before the first): carry on after the last result
            start = max(results, default=start - 1) + 1
            if rc != "timeout" and restarts > 3 and not results:
                raise RuntimeError(f"tpu_probe: the child failed before any case: {err[-2000:]}")
            restarts += 1
            if rc == "timeout":
                break
            continue
        group, case = cases[begun]
        tail = [ln for ln in err.strip().splitlines() if ln.strip()][-6:]
        results[begun] = {"group": group, "id": case.id, "func": case.func, "dtypes": [a.dtype for a in case.args],
                          "status": "abort" if rc != "timeout" else "timeout", "returncode": rc,
                          "detail": _clean(" | ".join(tail))[-600:]}
        progress(f"[{time.monotonic() - t0:6.0f} s] case {begun} {case.id}: {results[begun]['status']} ({rc}) "
                 f"{results[begun]['detail'][-200:]}")
        start = begun + 1
        restarts += 1
    if env_info is None:
        env_info = json.loads(subprocess.run(
            [sys.executable, "-c", "import json; from conformance.tpu_probe import environment; "
             "print(json.dumps(environment()))"], capture_output=True, text=True).stdout or "{}")
    ordered = [results[i] for i in sorted(results)]
    counts: dict[str, dict[str, int]] = {}
    for r in ordered:
        g = counts.setdefault(r["group"], {})
        g[r["status"]] = g.get(r["status"], 0) + 1
    out = {"command": _clean("python -m conformance.tpu_probe " + " ".join(sys.argv[1:])),
           "environment": env_info, "cases_total": len(cases), "cases_run": len(ordered),
           "children": restarts + 1, "duration_s": round(time.monotonic() - t0, 1), "counts": counts,
           "results": ordered}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    log_path.unlink(missing_ok=True)
    return out


def summarize(data: dict) -> dict:
    """The run's results classified: agreements, disagreements that a per-platform deviation of
    ``conformance/deviations.py`` covers (by id), calls refused before XLA (``tpu_limits``: GAP),
    and everything else, which is a failure (``unexplained``)."""
    from conformance import deviations

    platform = data.get("environment", {}).get("platform", "tpu")
    out = {"ok": 0, "not-applicable": 0, "covered": {}, "refused before XLA": 0, "unexplained": []}
    for r in data["results"]:
        status = r["status"]
        if status in ("ok", "not-applicable"):
            out[status] += 1
        elif status == "GAP" and "tpu_limits.py" in r["detail"]:
            out["refused before XLA"] += 1
        elif status == "DIFFERS" and (dev := deviations.classify_platform(platform, r["func"], r["dtypes"])):
            out["covered"][dev.id] = out["covered"].get(dev.id, 0) + 1
        else:
            out["unexplained"].append(f"{r['id']}: {status}: {r['detail'][:200]}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.tpu_probe", description=__doc__.splitlines()[0])
    p.add_argument("--json", type=pathlib.Path, default=DEFAULT_JSON)
    p.add_argument("--budget", type=float, default=480.0, help="seconds for the whole probe (default 480)")
    p.add_argument("--only", default=",".join(GROUPS), help="groups, in order: " + ",".join(GROUPS))
    p.add_argument("--first", type=int, default=None, help="only the first N cases (a quick look)")
    p.add_argument("--from", dest="start_id", default=None, metavar="CASE_ID",
                   help="start at this case (its id, e.g. 'linalg.inv[float32]')")
    p.add_argument("--summarize", type=pathlib.Path, default=None, metavar="JSON",
                   help="classify a run's results against conformance/deviations.py's per-platform entries")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--progress", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    groups = [g for g in a.only.split(",") if g]
    bad = [g for g in groups if g not in GROUPS]
    if bad:
        p.error(f"unknown groups {bad}; choose from {', '.join(GROUPS)}")
    if a.child is not None:
        return child(groups, a.child, a.progress, a.first, a.start_id)
    if a.summarize is not None:
        summary = summarize(json.loads(a.summarize.read_text()))
        print(json.dumps(summary, indent=1))
        return 1 if summary["unexplained"] else 0
    try:
        all_cases(groups, a.first, a.start_id)
    except ValueError as e:
        p.error(str(e))
    out = supervise(groups, a.budget, a.json, first=a.first, start_id=a.start_id)
    print(json.dumps({"environment": out["environment"], "counts": out["counts"], "children": out["children"],
                      "cases_run": out["cases_run"], "cases_total": out["cases_total"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
