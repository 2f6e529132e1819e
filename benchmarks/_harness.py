"""What bench files share with the runner (``python -m benchmarks``): peer detection and waiting for results."""
from __future__ import annotations

import importlib


def installed(name: str) -> bool:
    """Whether the peer library ``name`` imports here (a peer that does not is left out)."""
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - ImportError, or a broken install: not a peer here
        return False
    return True


def block(out):
    """``out`` once its values exist: JAX dispatches asynchronously and Dask is lazy."""
    import arrayx

    for leaf in arrayx.pytree.leaves(out):
        buf = leaf._buf if isinstance(leaf, arrayx.Array) else leaf
        if hasattr(buf, "block_until_ready"):
            buf.block_until_ready()
        elif hasattr(buf, "dask") and hasattr(buf, "compute"):
            buf.compute()
    return out


def interleaved_best(fns: dict, rounds: int, repeat: int, pause_s: float = 0.1) -> dict:
    """Best seconds per call of each label: ``rounds`` rounds, each label timed ``repeat`` times per
    round, in a shuffled order per round (seeded) so no label always follows the same one, with a
    pause between labels so the previous library's spinning worker threads (BLAS, Numba, XLA) go
    idle before the next is timed; on a shared machine load hits all alike."""
    import random
    import time

    for fn in fns.values():
        fn()  # warm up: compile, fill caches
    labels = list(fns)
    best = {k: float("inf") for k in labels}
    order = random.Random(0)
    for r in range(rounds):
        this_round = labels[r % len(labels):] + labels[: r % len(labels)]  # each label opens a round
        rest = this_round[1:]
        order.shuffle(rest)
        for k in this_round[:1] + rest:
            time.sleep(pause_s)
            for _ in range(repeat):
                t0 = time.perf_counter()
                fns[k]()
                best[k] = min(best[k], time.perf_counter() - t0)
    return best


def run_record(quick: bool, rounds: int, repeat: int, load_before: tuple, rows: list, **extra) -> dict:
    """A bench file's JSON: the machine, the settings, the load average before and after, the rows."""
    import os
    import platform
    import sys

    return {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "python": sys.version.split()[0], **extra, "quick": quick, "rounds": rounds,
            "repeats per round": repeat, "load average before (1, 5, 15 min)": load_before,
            "load average after (1, 5, 15 min)": os.getloadavg(), "rows": rows}


def write_results(stem: str, quick: bool, result: dict):
    """``benchmarks/results/<stem>.json`` (``<stem>_quick.json`` for a quick run); returns the path."""
    import json
    import pathlib

    out = pathlib.Path(__file__).parent / "results" / (f"{stem}_quick.json" if quick else f"{stem}.json")
    return write_json(out, result)


def write_json(path, result: dict, indent: int = 1):
    """``result`` as JSON at ``path`` (its folder made if missing), said on stdout; returns the path."""
    import json
    import pathlib

    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=indent) + "\n")
    print(f"wrote {out}")
    return out


def profile_lines(prof, top: int) -> list[str]:
    """cProfile's ``top`` entries by own time, as text lines that name no folder of this machine: the
    repository's files relative to it, an installed package's from its package folder (``<site>/``)."""
    import io
    import pathlib
    import pstats
    import re
    import sys

    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    root = str(pathlib.Path(__file__).resolve().parents[1]) + "/"
    sites = sorted({p.rstrip("/") + "/" for p in sys.path if p.endswith(("site-packages", "dist-packages"))}, key=len,
                   reverse=True)
    lines = []
    for ln in text.getvalue().splitlines():
        if not ln.strip():
            continue
        for site in sites:
            ln = ln.replace(site, "<site>/")
        ln = ln.replace(root, "")
        lines.append(re.sub(r"(?<![\w.<])/\S*/((?:jax|jaxlib|numpy|optree)/)", r"<site>/\1", ln))
    return lines[-(top + 2):]
