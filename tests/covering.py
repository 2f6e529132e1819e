"""Parameter grids whose costly corner is thinned in the ci profile by a covering design, not dropped.

On the jax executor every new sampler, dtype and shape compiles new XLA programs (the eager
operations, one program each, and the jitted draw): a grid ``sampler x dtype`` there costs seconds
per cell, while the NumPy, Numba and Dask cells cost milliseconds once jax.random's reference is
compiled.  ``rotate`` keeps, in the ci profile, one cell per row of the grid with its dtype taken in
turn (so every sampler and every dtype still runs on that executor, and each dtype on about half of
the samplers); the deep profile (``ARRAYX_TEST_PROFILE=deep``) takes the whole grid.
"""
from __future__ import annotations

import pytest

from conformance import profile
from tests.conftest import ALL_EXECUTORS


def rotate(cases: list, axis: int = -1) -> list:
    """One case per value of the other fields, its ``axis`` field taking the grid's values in turn
    (every value appears once there are as many rows as values); all cases in the deep profile."""
    cases = list(cases)
    if not profile.current().sampled:
        return cases
    axis = axis % len(cases[0]) if cases else 0
    rest = lambda c: c[:axis] + c[axis + 1:]  # noqa: E731
    values = list(dict.fromkeys(c[axis] for c in cases))
    keep = []
    for i, row in enumerate(dict.fromkeys(rest(c) for c in cases)):
        members = [c for c in cases if rest(c) == row]
        wanted = values[i % len(values)]
        keep.append(next((c for c in members if c[axis] == wanted), members[0]))
    return keep


def on_executors(cases: list, rotated: tuple = ("jax",), axis: int = -1, ids=str) -> list:
    """``executor, *case`` parameters (for ``parametrize(..., indirect=["executor"])``): every case on
    every executor, except the executors in ``rotated``, which take ``rotate(cases, axis)`` in the ci
    profile.  ``ids(case field)`` names each field in the test id (``executor-field-field``)."""
    params = []
    for ex in ALL_EXECUTORS:
        for case in (rotate(cases, axis) if ex in rotated else cases):
            params.append(pytest.param(ex, *case, id="-".join([ex, *(ids(v) for v in case)])))
    return params
