"""Numba reductions of transposed (F-ordered) operands (issue 30: xpx.cov reduces X.T): reduced
through the C-ordered transpose over the mirrored axes, equal to the NumPy executor's values."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from tests.conftest import assert_same


@pytest.mark.parametrize("fname", ["sum", "mean", "max", "min", "var", "std", "prod"])
@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_of_a_transpose_matches_numpy(fname, axis, keepdims, monkeypatch):
    pytest.importorskip("numba")
    from arrayx.core import executor as base

    ex = base.get("numba")
    ex.xp  # noqa: B018 - loads the executor (its thresholds)
    for kind in ex.thresholds:
        monkeypatch.setitem(ex.thresholds, kind, 0)  # the native kernels at this size
    monkeypatch.setattr(ex, "min_team_share", 0)  # whatever share the team took of recent calls
    host = np.random.default_rng(3).uniform(0.5, 1.5, size=(3000, 24))  # big enough for the kernels
    want = getattr(ax, fname)(ax.asarray(host, device="numpy").T, axis=axis, keepdims=keepdims)
    with ax.use_executor("numba"):
        x = ax.asarray(host)
        got = getattr(ax, fname)(x.T, axis=axis, keepdims=keepdims)
    assert got.executor == "numba"
    assert_same(got, np.asarray(want))
