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


def interleaved_best(fns: dict, rounds: int, repeat: int) -> dict:
    """Best seconds per call of each label: ``rounds`` rounds, each label timed ``repeat`` times per
    round, the order rotating every round so each label follows each other label (on a shared
    machine load hits all alike, and one library's idle worker threads never tax only its successor)."""
    import time

    for fn in fns.values():
        fn()  # warm up: compile, fill caches
    labels = list(fns)
    best = {k: float("inf") for k in labels}
    for r in range(rounds):
        for k in labels[r % len(labels):] + labels[: r % len(labels)]:
            for _ in range(repeat):
                t0 = time.perf_counter()
                fns[k]()
                best[k] = min(best[k], time.perf_counter() - t0)
    return best
