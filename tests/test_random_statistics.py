"""arrayx.random's samplers: their statistics on fixed seeds (the bits themselves: test_random.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import arrayx as xp
from arrayx import random as xr

FLOATS = [xp.float32, xp.float64]

# -- statistics (fixed seeds) ---------------------------------------------------------------------

N = 200_000


def _chi2_ok(counts, expected) -> bool:
    stats = pytest.importorskip("scipy.stats")

    statistic = float(((counts - expected) ** 2 / expected).sum())
    return statistic < stats.chi2.ppf(0.9999, len(counts) - 1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_statistics(dtype):
    u = np.asarray(xr.uniform(xr.key(101), (N,), dtype))
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(u.var() - 1 / 12) < 0.002
    counts = np.histogram(u, bins=50, range=(0, 1))[0]
    assert _chi2_ok(counts, N / 50)
    v = np.asarray(xr.uniform(xr.key(102), (N,), dtype, -2.0, 5.0))
    assert v.min() >= -2 and v.max() < 5 and abs(v.mean() - 1.5) < 0.03


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_statistics(dtype):
    stats = pytest.importorskip("scipy.stats")

    z = np.asarray(xr.normal(xr.key(103), (N,), dtype)).astype(np.float64)
    assert abs(z.mean()) < 5 / math.sqrt(N)
    assert abs(z.var() - 1) < 0.02
    assert abs(stats.skew(z)) < 0.03 and abs(stats.kurtosis(z)) < 0.06
    assert stats.kstest(z, "norm").pvalue > 1e-4


def test_split_keys_are_independent_streams():
    keys = xr.split(xr.key(0), 4)
    rows = [np.asarray(xr.uniform(keys[i], (50_000,))) for i in range(4)]
    corr = np.corrcoef(np.stack(rows))
    assert np.abs(corr - np.eye(4)).max() < 0.02
    assert not np.array_equal(rows[0], rows[1])


def test_other_sampler_statistics():
    stats = pytest.importorskip("scipy.stats")

    e = np.asarray(xr.exponential(xr.key(104), (N,)))
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.015
    g = np.asarray(xr.gumbel(xr.key(105), (N,)))
    assert abs(g.mean() - np.euler_gamma) < 0.015 and abs(g.var() - math.pi**2 / 6) < 0.05
    t = np.asarray(xr.truncated_normal(xr.key(106), -0.5, 1.5, (N,)))
    assert t.min() > -0.5 and t.max() < 1.5
    assert stats.kstest(t, stats.truncnorm(-0.5, 1.5).cdf).pvalue > 1e-4
    b = np.asarray(xr.bernoulli(xr.key(107), 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.005


def test_randint_statistics():
    r = np.asarray(xr.randint(xr.key(108), (N,), -3, 7))
    assert r.dtype == np.int64 and r.min() == -3 and r.max() == 6
    assert _chi2_ok(np.bincount(r + 3, minlength=10), N / 10)
    full = np.asarray(xr.randint(xr.key(109), (N,), 0, 256, xp.uint8))
    assert full.min() == 0 and full.max() == 255
    assert _chi2_ok(np.bincount(full, minlength=256), N / 256)
    assert (np.asarray(xr.randint(xr.key(0), (10,), 4, 4)) == 4).all()  # empty range returns minval


def test_permutation_choice_categorical_statistics():
    p = np.asarray(xr.permutation(xr.key(110), 1000))
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    assert not np.array_equal(p, np.arange(1000))
    c = np.asarray(xr.choice(xr.key(111), 50, (50,), replace=False))
    assert len(set(c.tolist())) == 50
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    draws = np.asarray(xr.choice(xr.key(112), 4, (N,), p=xp.asarray(probs)))
    assert _chi2_ok(np.bincount(draws, minlength=4), N * probs)
    cat = np.asarray(xr.categorical(xr.key(113), xp.asarray(np.log(probs)), shape=(N,)))
    assert _chi2_ok(np.bincount(cat, minlength=4), N * probs)
