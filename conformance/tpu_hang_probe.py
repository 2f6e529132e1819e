"""Which linear-algebra calls never return on an accelerator: each call in a child process with a
time limit, so that a hang (or an abort) is data, not the end of the run.

    python -m conformance.tpu_hang_probe [--json PATH] [--limit SECONDS] [--only qr,eigh,...]

Found on a TPU v5e (JAX 0.10.2): the official suite's ``test_qr`` at 20 examples per test never
returned.  The cases here are the inputs the suite's strategies draw that the table's hand-picked
examples do not: NaN, infinities, float32's largest values, subnormals, all zeros, empty matrices
and stacks, in float32 and complex64 (what a TPU holds).  One child runs the cases in order and
writes ``B i`` before case ``i`` and ``E i outcome`` after it; when a case passes the limit the
child is killed, the case is recorded as ``hang``, and a new child goes on from the next one.
Each outcome: ``ok`` (returned finite-shaped results), ``ERROR <first line>`` (a Python exception)
``hang`` or ``abort`` (the child died).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import queue
import subprocess
import sys
import tempfile
import threading
import time

FUNCS = ("qr", "qr-complete", "eigh", "eigvalsh", "cholesky", "inv", "det", "slogdet", "solve", "svd",
         "svdvals", "pinv", "matrix_rank", "matrix_norm")
FILLS = ("normal", "zeros", "nan", "inf", "huge", "subnormal", "nan-all")
SHAPES = ((3, 3), (4, 2), (2, 4), (0, 3), (0, 0), (2, 0, 3), (2, 3, 3))
DTYPES = ("float32", "complex64")


def cases(funcs) -> list:
    out = []
    for f in funcs:
        square = f not in ("qr", "qr-complete", "svd", "svdvals", "pinv", "matrix_rank", "matrix_norm")
        for dt in DTYPES:
            for shape in SHAPES:
                if square and shape[-1] != shape[-2]:
                    continue
                for fill in FILLS:
                    if 0 in shape and fill != "normal":
                        continue
                    out.append((f, dt, shape, fill))
    return out


def _operand(np, dt, shape, fill):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    if x.size:
        flat = x.reshape(-1)
        if fill == "zeros":
            x[...] = 0
        elif fill == "nan":
            flat[0] = np.nan
        elif fill == "nan-all":
            x[...] = np.nan
        elif fill == "inf":
            flat[0], flat[-1] = np.inf, -np.inf
        elif fill == "huge":
            x *= np.float32(3.0e38)
        elif fill == "subnormal":
            x *= np.float32(1e-40)
    return x.astype(dt) + (1j * x).astype(dt) if dt == "complex64" else x.astype(dt)


def child(funcs, start: int) -> None:
    import numpy as np

    import arrayx as ax

    stall = int(os.environ.get("ARRAYX_PROBE_HANG_CASE", "-1"))
    ax.set_executor("jax")
    print("D", ax.asarray(0.0).device, flush=True)
    la = ax.linalg
    calls = {"qr": la.qr, "qr-complete": lambda a: la.qr(a, mode="complete"), "eigh": la.eigh,
             "eigvalsh": la.eigvalsh, "cholesky": la.cholesky, "inv": la.inv, "det": la.det,
             "slogdet": la.slogdet, "solve": lambda a: la.solve(a, a), "svd": la.svd, "svdvals": la.svdvals,
             "pinv": la.pinv, "matrix_rank": la.matrix_rank, "matrix_norm": la.matrix_norm}
    for i, (f, dt, shape, fill) in enumerate(cases(funcs)):
        if i < start:
            continue
        print("B", i, flush=True)
        if i == stall:  # the test's stand-in for a call that never returns
            time.sleep(3600)
        try:
            res = calls[f](ax.asarray(_operand(np, dt, shape, fill)))
            for leaf in ax.pytree.leaves(tuple(res) if isinstance(res, tuple) else res):
                np.asarray(leaf)  # waits for the device
            outcome = "ok"
        except Exception as e:  # noqa: BLE001 - every exception is a result here
            outcome = f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        print("E", i, outcome, flush=True)


def supervise(funcs, limit: float, budget: float) -> dict:
    todo = cases(funcs)
    results, start, t_end, device = {}, 0, time.monotonic() + budget, None
    while start < len(todo) and time.monotonic() < t_end:
        err = tempfile.TemporaryFile(mode="w+")  # (a pipe could fill and block the child)
        proc = subprocess.Popen([sys.executable, "-m", "conformance.tpu_hang_probe", "--child", str(start),
                                 "--only", ",".join(funcs)], stdout=subprocess.PIPE, stderr=err,
                                text=True, cwd=pathlib.Path(__file__).resolve().parents[1])
        begun, began_at = None, time.monotonic()
        lines: queue.Queue = queue.Queue()  # a reader thread: lines already in a buffer are not missed
        threading.Thread(target=lambda out=proc.stdout: [lines.put(ln) for ln in out] + [lines.put("")],
                         daemon=True).start()
        while True:
            wait = (began_at + limit - time.monotonic()) if begun is not None else 120
            try:
                line = lines.get(timeout=max(wait, 0.01))
            except queue.Empty:
                proc.kill()
                proc.wait()
                results[begun] = "hang" if begun is not None else "child never started"
                print(begun, todo[begun] if begun is not None else "", results.get(begun), flush=True)
                start = (begun + 1) if begun is not None else len(todo)
                break
            if not line:  # the child ended
                rc = proc.wait()
                if begun is not None:
                    err.seek(0)
                    results[begun] = f"abort (exit {rc}): {err.read()[-300:]}"
                    print(begun, todo[begun], results[begun], flush=True)
                    start = begun + 1
                else:
                    start = len(todo)
                break
            word, *rest = line.split(" ", 2)
            if word not in ("D", "B", "E") or not rest:
                continue  # anything else a library printed
            i = rest.pop(0)
            if word == "D":
                device = " ".join([i, *rest]).strip()
            elif word == "B":
                begun, began_at = int(i), time.monotonic()
            elif word == "E":
                results[int(i)] = rest[0].strip() if rest else ""
                if results[int(i)] != "ok":
                    print(i, todo[int(i)], results[int(i)], flush=True)
                begun = None
    rows = [{"function": f, "dtype": dt, "shape": list(shape), "fill": fill, "outcome": results.get(i, "not run")}
            for i, (f, dt, shape, fill) in enumerate(todo)]
    counts: dict = {}
    for r in rows:
        key = r["outcome"].split(" ")[0]
        counts[key] = counts.get(key, 0) + 1
    return {"device": device, "limit_s": limit, "counts": counts, "cases": rows}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(FUNCS))
    p.add_argument("--limit", type=float, default=20.0, help="seconds one case may take (%(default)s)")
    p.add_argument("--budget", type=float, default=240.0)
    p.add_argument("--json", default=None)
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    funcs = tuple(a.only.split(","))
    if a.child is not None:
        child(funcs, a.child)
        return 0
    import jax  # (not its devices: the children hold the chip, one program at a time)

    data = {"jax": jax.__version__, **supervise(funcs, a.limit, a.budget)}
    print(json.dumps(data["counts"]), flush=True)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
