"""The parity matrix: every hand-picked example of the table (``differential/table/examples.py``) on
every executor, compared with the NumPy executor by the one comparator (``conformance.compare``).

    python -m conformance.report [--executors numpy,jax] [--json PATH] [--only NAME,...] [-v]
    python -m conformance.report --differential [PATH]   # the differential suite's last deep profile

prints one row per standard function and one column per executor, each cell one of

    ok        every case of the function gives NumPy's dtype, shape and values
    DIFFERS   some case gives another dtype, shape or value (or a result on another executor)
    GAP       the executor raised NotImplementedError (listed in gaps.py: ``gap``; not listed: ``GAP!``)
    ERROR     some case raised another exception

and, on a device with 32-bit defaults or an accelerator only (``conformance/narrow.py``: the NumPy
reference then runs on the inputs cast as that device holds them),

    n/a        some case cannot run there as written (its values do not fit the 32-bit types, or it asks
               for a 64-bit dtype= the device refuses by design); the reason is in the detail
    deviation  some case differs within a per-platform deviation's tolerance (``conformance/deviations.py``)

and writes the matrix with every non-ok case's detail to ``conformance/results/parity.json``.
Both views end with the known-deviations table (``conformance/deviations.py``).
``check`` is what the eager sweep (``test_differential.py``) runs for the examples, so the table and
the test agree.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import sys
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

import arrayx
from arrayx.core import executor as _base
from conformance import gaps as _gaps
from conformance import compare as _compare
from conformance import narrow as _narrow
from conformance.differential.table.examples import CASES, Case, by_function

HERE = pathlib.Path(__file__).parent
DEFAULT_JSON = HERE / "results" / "parity.json"
DIFFERENTIAL_JSON = HERE / "results" / "differential.json"
REFERENCE = "numpy"

OK, DIFFERS, GAP, ERROR = "ok", "DIFFERS", "GAP", "ERROR"
#: only on a device with 32-bit defaults / an accelerator (conformance/narrow.py, deviations.py)
NA, DEVIATION = "not-applicable", "deviation"
_SEVERITY = {OK: 0, NA: 1, DEVIATION: 2, GAP: 3, DIFFERS: 4, ERROR: 5}
_CELL = {NA: "n/a"}

Mismatch = _compare.Mismatch


@dataclass
class Outcome:
    status: str
    detail: str = ""
    got: object = field(default=None, repr=False, compare=False)    # the materialised results of a DIFFERS
    want: object = field(default=None, repr=False, compare=False)
    scale: float = field(default=1.0, repr=False, compare=False)

    def __bool__(self) -> bool:
        return self.status == OK


# -- running a case ------------------------------------------------------------------------


@contextlib.contextmanager
def own_kernels(executor: str):
    """Make ``executor`` compute the small parity inputs with its own kernels.

    Executors that hand arrays below a size threshold to NumPy (numba's ``thresholds``,
    documented as changeable) would otherwise agree with NumPy trivially.
    """
    ex = _base.get(executor)
    thresholds = getattr(ex, "thresholds", None)
    if not isinstance(thresholds, dict):
        yield
        return
    saved = dict(thresholds)
    thresholds.update(dict.fromkeys(thresholds, 1))
    share = getattr(ex, "min_team_share", None)  # numba: memory-bound kernels whatever the team does
    if share is not None:
        ex.min_team_share = 0
    try:
        yield
    finally:
        thresholds.clear()
        thresholds.update(saved)
        if share is not None:
            ex.min_team_share = share


def run(case: Case, executor: str, host: list | None = None):
    """``case.fn(arrayx, *inputs)`` with the inputs (``host``, default the case's own) and any created
    arrays on ``executor`` (Numba's own kernels, Dask chunks of 2 elements: ``differential.runner.small_pieces``)."""
    from conformance.differential.runner import small_pieces

    host = case.inputs() if host is None else host
    with arrayx.use_executor(executor), small_pieces(executor):
        arrays = [arrayx.asarray(h, device=executor) for h in host]
        return case.fn(arrayx, *arrays)


def materialise(result, executor: str, path: str = "result"):
    """Arrays -> ("array", host ndarray); checks each array lives on ``executor``."""
    if isinstance(result, arrayx.Array):
        if result.executor != executor:
            raise Mismatch(f"{path}: the result lives on the {result.executor!r} executor, expected {executor!r}")
        if type(result._buf) is not result._ex.array_type:
            raise Mismatch(f"{path}: the result's buffer is a {type(result._buf).__name__}, not the {executor!r} "
                           f"executor's {result._ex.array_type.__name__}")
        return ("array", np.asarray(result))
    if isinstance(result, tuple) and hasattr(result, "_fields"):  # named tuples: the field names are API
        return ("named", tuple(result._fields),
                tuple(materialise(v, executor, f"{path}.{f}") for f, v in zip(result._fields, result)))
    if isinstance(result, (tuple, list)):
        return (type(result).__name__, tuple(materialise(v, executor, f"{path}[{i}]") for i, v in enumerate(result)))
    if isinstance(result, dict):
        return ("dict", tuple((k, materialise(v, executor, f"{path}[{k!r}]")) for k, v in result.items()))
    return ("value", result)


_reference_cache: dict = {}


def reference(case: Case, narrow: dict | None = None):
    """The case's result on the NumPy executor, materialised (cached per process); with ``narrow``
    (a device's casts of 64-bit data, ``conformance/narrow.py``) computed on the inputs cast that way."""
    key = (case.id, tuple(sorted((str(a), str(b)) for a, b in (narrow or {}).items())))
    if key not in _reference_cache:
        host = _narrow.narrow_inputs(case.inputs(), narrow) if narrow else None
        _reference_cache[key] = materialise(run(case, REFERENCE, host), REFERENCE)
    return _reference_cache[key]


# -- comparing --------------------------------------------------------------------------------


def compare(case: Case, got, want, path: str = "result", scale: float | None = None) -> None:
    """Raise Mismatch unless ``got`` equals ``want`` (both materialised): the one comparator with the
    case's tolerance class, scaled by the largest magnitude among its inputs and ``want``."""
    scale = _compare.scale_of(case.inputs(), want) if scale is None else scale
    _compare.compare(got, want, case.tolerance, scale, path)


# -- one case on one executor --------------------------------------------------------------------


def _short(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def check(case: Case, executor: str) -> Outcome:
    """Run ``case`` on ``executor`` and on NumPy and compare: an Outcome with status and detail.  On a
    device with 32-bit defaults the reference is computed as that device holds the data (:func:`check_narrowed`)."""
    if executor != REFERENCE:
        t = _narrow.target(executor)
        if t.narrows:
            return check_narrowed(case, t)
    try:
        want = reference(case)
    except NotImplementedError as e:
        return Outcome(GAP if executor == REFERENCE else ERROR, f"on the reference executor: {_short(e)}")
    except Exception as e:  # noqa: BLE001 - a broken case or a NumPy-executor bug
        return Outcome(ERROR, f"on the reference executor: {_short(e)}")
    if executor == REFERENCE:
        return Outcome(OK)
    try:
        got = materialise(run(case, executor), executor)
    except Mismatch as e:
        return Outcome(DIFFERS, str(e))
    except NotImplementedError as e:
        return Outcome(GAP, _short(e))
    except Exception as e:  # noqa: BLE001
        return Outcome(ERROR, _short(e) + "\n" + "".join(traceback.format_exception(e)[-3:]).strip())
    scale = _compare.scale_of(case.inputs(), want)
    try:
        compare(case, got, want, scale=scale)
    except Mismatch as e:
        return Outcome(DIFFERS, str(e), got, want, scale)
    return Outcome(OK)


def _device_run(case: Case, t) -> Outcome | tuple:
    """The case on the target's executor: ("result", materialised) or the Outcome of its exception."""
    host = case.inputs()
    if t.mode == "refuse":  # there the user converts 64-bit data first, as the reference does
        host = _narrow.narrow_inputs(host, t.narrow)
    try:
        return ("result", materialise(run(case, t.executor, host), t.executor))
    except Mismatch as e:
        return Outcome(DIFFERS, str(e))
    except NotImplementedError as e:
        return Outcome(GAP, _short(e))
    except Exception as e:  # noqa: BLE001
        if _narrow.refused_64bit_request(e):
            return Outcome(NA, f"not applicable on {t.device}, which has no native 64-bit types: the example asks "
                               f"for 64-bit data or a 64-bit dtype=, which ARRAYX_TPU_64BIT={t.mode} refuses by "
                               f"design (arrayx/api/_device_dtypes.py): {_short(e)}")
        return Outcome(ERROR, _short(e) + "\n" + "".join(traceback.format_exception(e)[-3:]).strip())


def check_narrowed(case: Case, t) -> Outcome:
    """``check`` on a device that narrows 64-bit data (``t``: ``narrow.target``): the reference on the
    inputs cast as the device holds them, its 64-bit results cast as the device's defaults give them."""
    try:
        host = _narrow.narrow_inputs(case.inputs(), t.narrow)
    except _narrow.NotApplicable as e:
        return Outcome(NA, f"not applicable on {t.device}: {e}")
    try:
        want = reference(case, t.narrow)
    except OverflowError as e:  # a Python int beyond the 32-bit type: the device must refuse it too
        got = _device_run(case, t)
        if isinstance(got, Outcome) and got.status == ERROR and got.detail.startswith("OverflowError"):
            return Outcome(NA, f"not applicable on {t.device}: the example's values do not fit its 32-bit types "
                               f"(the reference and the device both raise {_short(e)})")
        return Outcome(ERROR if isinstance(got, Outcome) else DIFFERS,
                       f"the reference raises {_short(e)} on the inputs as {t.device} holds them, but the device "
                       f"{'raised ' + got.detail if isinstance(got, Outcome) else 'returned a result'}")
    except NotImplementedError as e:
        return Outcome(ERROR, f"on the reference executor: {_short(e)}")
    except Exception as e:  # noqa: BLE001 - a broken case or a NumPy-executor bug
        return Outcome(ERROR, f"on the reference executor: {_short(e)}")
    try:
        want = _narrow.narrow_result(want, t.narrow)
    except _narrow.NotApplicable as e:
        return Outcome(NA, f"not applicable on {t.device}: {e}")
    answer = _narrow.DEVICE_ANSWERS.get(case.func)
    if answer is not None:
        want = answer(want, t.executor)
    got = _device_run(case, t)
    if isinstance(got, Outcome):
        return got
    if case.id in _narrow.ILL_CONDITIONED_32:
        return Outcome(NA, f"not applicable on {t.device}: ran, but {_narrow.ILL_CONDITIONED_32[case.id]}")
    got = got[1]
    scale = _compare.scale_of(host, want)
    try:
        compare(case, got, want, scale=scale)
    except Mismatch as e:
        return Outcome(DIFFERS, str(e), got, want, scale)
    return Outcome(OK)


def excuse(case: Case, executor: str, outcome: Outcome) -> Outcome:
    """``outcome``, or a DEVIATION where a per-platform deviation with a tolerance
    (``conformance/deviations.py``) covers the case on the executor's device and its values agree within it."""
    from conformance import deviations

    if outcome.status != DIFFERS or outcome.got is None:
        return outcome
    t = _narrow.target(executor)
    dev = deviations.platform_tolerance(t.platform, case.func, _narrow.input_dtypes(case, t))
    if dev is None:
        return outcome
    try:
        _compare.compare(outcome.got, outcome.want, case.tolerance, outcome.scale, widen=dev.tolerance)
    except Mismatch:
        return outcome
    rtol, atol = dev.tolerance
    return Outcome(DEVIATION, f"{dev.id} (within {rtol} x eps relative, {atol} x eps x scale): {outcome.detail}")


def gap_reason(executor: str, func: str, case_id: str | None, detail: str = "") -> str | None:
    """Why the case ``case_id`` of ``func`` is a gap on ``executor``: gaps.py's executor table, else its
    per-platform table for the executor's device (the dtypes the device holds, and the one the error names)."""
    why = _gaps.reason(executor, func, case_id)
    case = next((c for c in by_function().get(func, []) if c.id == case_id), None)
    if why is not None or case is None or _narrow.plain(executor):
        return why
    t = _narrow.target(executor)
    dtypes = set(_narrow.input_dtypes(case, t)) | set(_gaps.dtypes_named(detail))
    return _gaps.platform_reason(executor, t.platform, func, dtypes)


def cases_for_gap(key: str) -> list[Case]:
    """The cases a gaps.py key covers: one case (a case id) or all of a function's cases."""
    for c in CASES:
        if c.id == key:
            return [c]
    return by_function().get(key, [])


# -- the matrix ----------------------------------------------------------------------------------


def available_executors() -> list[str]:
    return [n for n in _base.registered() if _base.get(n).available()]


def matrix(executors: list[str], funcs: list[str] | None = None, progress=None) -> dict:
    """``{"functions": {func: {ex: status}}, "cases": {case_id: {ex: {status, detail}}}, ...}``."""
    groups = by_function()
    funcs = funcs or list(groups)
    out: dict = {"executors": executors, "functions": {}, "cases": {}, "unlisted_gaps": [], "stale_gaps": []}
    gapped: set[tuple[str, str]] = set()  # (executor, case id) that raised NotImplementedError
    devices = {ex: _narrow.target(ex) for ex in executors if not _narrow.plain(ex)}
    if devices:
        out["devices"] = {ex: t.as_json() for ex, t in devices.items()}
    with _narrow.settings(executors):
        for func in funcs:
            row = {}
            for ex in executors:
                worst = OK
                for case in groups[func]:
                    res = excuse(case, ex, check(case, ex)) if ex in devices else check(case, ex)
                    if res.status != OK:
                        out["cases"].setdefault(case.id, {})[ex] = {"status": res.status, "detail": res.detail}
                    if res.status == GAP:
                        gapped.add((ex, case.id))
                        if gap_reason(ex, func, case.id, res.detail) is None:
                            out["unlisted_gaps"].append(f"{ex}: {case.id}")
                    if _SEVERITY[res.status] > _SEVERITY[worst]:
                        worst = res.status
                row[ex] = worst
            out["functions"][func] = row
            if progress:
                progress(func, row)
    for ex in executors:
        for key in _gaps.GAPS.get(ex, {}):
            ids = [c.id for c in cases_for_gap(key)]
            if ids and ids[0].split("[")[0] in out["functions"] and not any((ex, i) in gapped for i in ids):
                out["stale_gaps"].append(f"{ex}: {key}")
        if ex in devices:
            t = devices[ex]
            for func, by_dtype in _gaps.platform_gaps(ex, t.platform).items():
                ids = [c.id for c in by_function().get(func, [])
                       if func in out["functions"] and set(_narrow.input_dtypes(c, t)) & set(by_dtype)]
                if ids and not any((ex, i) in gapped for i in ids):
                    out["stale_gaps"].append(f"{ex} on {t.platform}: {func} (arrayx/executors/jax/tpu_limits.py)")
    shown = (OK, DIFFERS, GAP, ERROR) + tuple(
        s for s in (NA, DEVIATION) if any(r[ex] == s for r in out["functions"].values() for ex in executors))
    out["summary"] = {
        ex: {s: sum(1 for r in out["functions"].values() if r[ex] == s) for s in shown}
        for ex in executors
    }
    return out


def render(data: dict) -> str:
    exs = data["executors"]
    width = max(len(f) for f in data["functions"]) + 2
    col = max(9, *(len(e) + 2 for e in exs))
    lines = [t["description"] for t in data.get("devices", {}).values()]
    lines += [""] if lines else []
    lines += ["function".ljust(width) + "".join(e.ljust(col) for e in exs), "-" * (width + col * len(exs))]
    for func, row in data["functions"].items():
        cells = []
        for ex in exs:
            s = row[ex]
            if s == GAP:
                listed = all(gap_reason(ex, func, cid, per[ex]["detail"]) is not None
                             for cid, per in data["cases"].items()
                             if cid.split("[")[0] == func and per.get(ex, {}).get("status") == GAP)
                s = "gap" if listed else "GAP!"
            cells.append(_CELL.get(s, s).ljust(col))
        lines.append(func.ljust(width) + "".join(cells))
    lines.append("")
    for ex in exs:
        counts = data["summary"][ex]
        lines.append(f"{ex}: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + f" of {len(data['functions'])} functions")
    if data["cases"]:
        lines += ["", "non-ok cases:"]
        for cid, per in data["cases"].items():
            for ex, r in per.items():
                detail = r["detail"].splitlines()[0] if r["detail"] else ""
                lines.append(f"  {cid} on {ex}: {r['status']}  {detail}")
    if data["unlisted_gaps"]:
        lines += ["", "gaps not listed in conformance/gaps.py: " + ", ".join(data["unlisted_gaps"])]
    if data["stale_gaps"]:
        lines += ["", "listed in gaps.py but working now (remove them): " + ", ".join(data["stale_gaps"])]
    return "\n".join(lines + ["", render_deviations()])


def render_deviations() -> str:
    """The known-deviations table (conformance/deviations.py), one entry per line."""
    from conformance import deviations

    rows = deviations.table()
    lines = [f"known deviations (conformance/deviations.py): {len(rows)}"]
    for r in rows:
        lines += [f"  {r['id']} [{', '.join(r['executors'])}] {', '.join(r['functions'])}: {r['reason']}",
                  f"      e.g. {r['reproducer']}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.report", description=__doc__.splitlines()[0])
    p.add_argument("--executors", default=None, help="comma-separated names (default: every available executor)")
    p.add_argument("--json", default=str(DEFAULT_JSON), help=f"where to write the matrix (default {DEFAULT_JSON})")
    p.add_argument("--only", default=None, help="comma-separated function names (default: all)")
    p.add_argument("-v", "--verbose", action="store_true", help="print each function's row as it finishes")
    p.add_argument("--differential", nargs="?", const=str(DIFFERENTIAL_JSON), default=None, metavar="PATH",
                   help=f"print the differential suite's results (default {DIFFERENTIAL_JSON}) and exit")
    args = p.parse_args(argv)
    if args.differential:
        from conformance.differential.__main__ import render as render_differential

        data = json.loads(pathlib.Path(args.differential).read_text())
        print(render_differential(data))
        return 1 if data["unexplained"] else 0
    exs = args.executors.split(",") if args.executors else available_executors()
    for ex in exs:
        _base.get(ex)  # ValueError listing the registered names
    if REFERENCE not in exs:
        exs = [REFERENCE] + exs
    funcs = args.only.split(",") if args.only else None
    start = time.perf_counter()
    progress = (lambda f, row: print(f, row, flush=True)) if args.verbose else None
    data = matrix(exs, funcs, progress)
    data["duration_s"] = round(time.perf_counter() - start, 1)
    data["cases_run"] = sum(len(by_function()[f]) for f in data["functions"])
    print(render(data))
    path = pathlib.Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"\nwrote {path} ({data['duration_s']} s)")
    bad = any(data["summary"][ex][s] for ex in exs for s in (DIFFERS, ERROR)) or data["unlisted_gaps"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
