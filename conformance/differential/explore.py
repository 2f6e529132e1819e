"""Drawing many examples of one function and collecting every disagreement (no shrinking).

The quick profile (``test_differential.py``) lets hypothesis shrink a failing example; the deep
profile wants all disagreements of a run, grouped into classes, so it records instead of raising
and keeps the smallest example of each class as the reproducer.
"""
from __future__ import annotations

import time
import zlib

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as _seed

from conformance import deviations as _deviations
from conformance.differential import functions as F
from conformance.differential.runner import REFERENCE, Disagreement, outcome, reference


def explore(fn: F.Fn, executors: list[str], max_examples: int, seed: int | None = None) -> dict:
    """``{"examples": n, "pairs": n * executors, "disagreements": [Disagreement], "seconds": t}``."""
    found: list[Disagreement] = []
    count = [0]
    others = [e for e in executors if e != REFERENCE]

    @settings(max_examples=max_examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(F.examples(fn))
    def probe(example):
        args, kwargs = example
        count[0] += 1
        ref = reference(fn, args, kwargs)
        for ex in others:
            d = outcome(fn, args, kwargs, ex, ref)
            if d is not None:
                found.append(d)

    probe = _seed(zlib.crc32(fn.name.encode()) ^ (seed or 0))(probe)  # repeatable, and distinct per function
    start = time.perf_counter()
    probe()
    return {"examples": count[0], "pairs": count[0] * len(others), "disagreements": found,
            "seconds": time.perf_counter() - start}


def classes(disagreements: list[Disagreement]) -> list[dict]:
    """One entry per class (function, executor, kind of difference, deviation or none): count, smallest reproducer.

    Each disagreement is classified on its own, so a deviation never hides another member of a class.
    """
    groups: dict[tuple, list[Disagreement]] = {}
    for d in disagreements:
        dev = _deviations.classify(d)
        entry = d.call[0].name if d.call else d.function
        groups.setdefault((d.signature, dev.id if dev else "", entry), []).append(d)
    out = []
    for (sig, dev, entry), members in sorted(groups.items()):
        smallest = min(members, key=lambda d: (d.size, len(d.example)))
        out.append({
            "class": sig, "function": smallest.function, "entry": entry, "executor": smallest.executor,
            "kind": smallest.kind,
            "count": len(members), "detail": smallest.detail, "reproducer": smallest.example,
            "deviation": dev or None,
        })
    return out
