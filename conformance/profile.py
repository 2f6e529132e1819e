"""How much the every-function sweeps sample: one knob, ``ARRAYX_TEST_PROFILE``.

``ci`` (the default: ``python -m pytest``) draws a few examples per function, executor and
transform and a seeded sample of each large parameter product; ``deep`` (``python -m conformance``,
and ``ARRAYX_TEST_PROFILE=deep python -m pytest -m slow``) draws many and takes every product in full.

Parameter products are sampled as JAX's test suite samples them (``JAX_NUM_GENERATED_CASES``):
``sample(name, cases, k)`` keeps ``k`` of the cases in the ci profile, chosen by a seed derived from
``name`` (the same on every machine and run, so a failure reproduces), and all of them in the deep one.
"""
from __future__ import annotations

import os
import random
import zlib
from dataclasses import dataclass

VARIABLE = "ARRAYX_TEST_PROFILE"


@dataclass(frozen=True)
class Profile:
    name: str
    examples: int            # drawn calls per function and executor (the eager differential sweep)
    transform_examples: int  # drawn calls per function, transform and executor (jit, vmap, grad)
    sampled: bool            # whether large parameter products are sampled (else taken in full)


PROFILES = {
    "ci": Profile("ci", examples=3, transform_examples=1, sampled=True),
    "deep": Profile("deep", examples=25, transform_examples=10, sampled=False),
}


def current() -> Profile:
    """The profile ``ARRAYX_TEST_PROFILE`` names (``ci`` when unset or empty); any other value raises."""
    raw = os.environ.get(VARIABLE, "").strip()
    if not raw:
        return PROFILES["ci"]
    try:
        return PROFILES[raw.lower()]
    except KeyError:
        raise ValueError(f"{VARIABLE}={raw!r}: not a test profile; accepted: {', '.join(PROFILES)} "
                         f"(default ci); correct or unset it") from None


def sample(name: str, cases: list, k: int) -> list:
    """``k`` of ``cases`` (in their order) in a sampled profile, chosen by a seed of ``name``; all of them otherwise."""
    cases = list(cases)
    if not current().sampled or len(cases) <= k:
        return cases
    keep = sorted(random.Random(zlib.crc32(name.encode())).sample(range(len(cases)), k))
    return [cases[i] for i in keep]
