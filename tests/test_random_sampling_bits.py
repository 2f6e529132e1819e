"""arrayx.random's draws from a set (arrayx/_random_sampling.py) at sizes where the details show:
``choice`` with probabilities (XLA:CPU's tiled cumulative sum, jax.numpy.searchsorted's halvings,
the eager Numba kernel), ``choice`` without replacement and ``categorical`` (the k largest, the log of
``p``) and ``permutation``: bit for bit with jax.random, and each executor equal to the NumPy
executor, with the eager kernels on and off (``arrayx.random.KERNELS``, what runs without Numba).

Speed is measured in benchmarks/bench_random.py, not here.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx import _random_sampling
from arrayx import random as xr
from conformance import profile

try:
    import jax
    import jax.numpy as jnp
    import jax.random as jr
except ImportError:  # pragma: no cover - depends on the environment
    jax = jnp = jr = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed: jax.random is the bit-exact reference")
FLOATS = [xp.float32, xp.float64]


@pytest.fixture
def x64():
    """jax with 64-bit types and the partitionable threefry layout (JAX 0.10's default)."""
    with jax.enable_x64(True), jax.threefry_partitionable(True):
        yield


@pytest.fixture(params=[True, False], ids=["kernels", "no-kernels"])
def kernels(request, monkeypatch):
    """The eager Numba kernels on, or off (the arrayx operations: what runs without Numba)."""
    monkeypatch.setattr(xr, "KERNELS", request.param)
    return request.param


def same(actual, expected, what: str) -> None:
    """Identical dtype, shape and values (float bit patterns)."""
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.dtype == e.dtype and a.shape == e.shape, f"{what}: {a.dtype}{a.shape} != {e.dtype}{e.shape}"
    if a.dtype.kind == "f":
        a, e = a.view(f"u{a.dtype.itemsize}"), e.view(f"u{e.dtype.itemsize}")
    bad = np.flatnonzero(a.reshape(-1) != e.reshape(-1))
    assert bad.size == 0, f"{what}: {bad.size} of {a.size} values differ, first at flat index {bad[:5]}"


def _probabilities(n: int, dtype, seed: int = 0) -> np.ndarray:
    p = np.random.default_rng(seed).random(n)
    return (p / p.sum()).astype(dtype)


# -- the pieces: XLA's cumulative sum, searchsorted, the k largest, log ----------------------------------

@needs_jax
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 16, 17, 100, 1000, 40_000])
def test_cumulative_sum_is_xlas(x64, n, dtype):
    # XLA:CPU sums tiles of 16 and then their totals (recursively): a running sum differs from index ~18 on
    x = np.random.default_rng(n).random(n).astype(dtype)
    same(_random_sampling._xla_cumsum(xp.asarray(x)), jnp.cumsum(jnp.asarray(x)), f"cumsum n={n} {dtype}")


@needs_jax
@pytest.mark.parametrize("dtype", FLOATS)
def test_search_is_jaxs_for_sorted_unsorted_and_nan(x64, dtype):
    rng = np.random.default_rng(3)
    sorted_ = np.cumsum(rng.random(37)).astype(dtype)
    unsorted = rng.standard_normal(37).astype(dtype)
    with_nan = sorted_.copy()
    with_nan[[5, 30]] = np.nan
    queries = np.concatenate([rng.random(500) * 40 - 2, [np.nan, np.inf, -np.inf, 0.0, -0.0]]).astype(dtype)
    queries = np.concatenate([queries, sorted_])  # exact hits: the left side
    for name, table in (("sorted", sorted_), ("unsorted", unsorted), ("nan", with_nan)):
        got = _random_sampling._search(xp.asarray(table), xp.asarray(queries), xp.int64)
        want = jnp.searchsorted(jnp.asarray(table), jnp.asarray(queries)).astype(jnp.int64)
        same(got, want, f"searchsorted {name} {dtype}")


@needs_jax
@pytest.mark.parametrize("dtype", FLOATS)
def test_top_k_is_lax_top_k(x64, dtype):
    rng = np.random.default_rng(4)
    values = rng.integers(-20, 20, 3000).astype(dtype)  # many ties
    values[:7] = [np.inf, -np.inf, 0.0, 0.5, 0.0, -0.5, np.inf]
    for k in (1, 5, 40, 2999):
        want = jax.lax.top_k(jnp.asarray(values), k)[1].astype(jnp.int64)
        fast = _random_sampling._top_k_indices(xp.asarray(values), k)  # partition + sort of the candidates
        same(fast, want, f"top_k k={k} {dtype}")
    # -0.0 and 0.0 tie (lax.top_k puts 0.0 first: a known difference, as before the fast path) and NaN
    # (the full sort) give the same indices on both routes
    signed = values.copy()
    signed[rng.integers(0, 3000, 50)] = -0.0
    with_nan = values.copy()
    with_nan[[10, 2000]] = np.nan
    assert _random_sampling._top_k_host(with_nan, 3) is None
    for v in (signed, with_nan):
        for k in (3, 1500):
            slow = xp.argsort(xp.asarray(v), descending=True, stable=True)[:k]  # what other executors run
            same(_random_sampling._top_k_indices(xp.asarray(v), k), slow, f"top_k k={k} {dtype} vs argsort")
    same(_random_sampling._top_k_indices(xp.asarray(with_nan), 3),
         jax.lax.top_k(jnp.asarray(with_nan), 3)[1].astype(jnp.int64), f"top_k NaN {dtype}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_log_kernel_matches_the_arrayx_operations(monkeypatch, dtype):
    info = np.finfo(dtype)
    x = np.concatenate([np.random.default_rng(5).random(3000) * 10,
                        [0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, info.tiny, -1.0,
                         np.inf, -np.inf, np.nan, info.max]]).astype(dtype)
    monkeypatch.setattr(xr, "KERNELS", True)
    fast = _random_sampling._xla_log_daz(xr, xp.asarray(x))
    monkeypatch.setattr(xr, "KERNELS", False)
    same(fast, _random_sampling._xla_log_daz(xr, xp.asarray(x)), f"log {dtype}")
    assert np.isneginf(np.asarray(fast)[3000:3003]).all()  # zeros and positive subnormals read as zero


# -- the public draws, against jax.random and the NumPy executor ----------------------------------------

def _draws(dtype) -> dict:
    """name -> (arrayx draw of a key, (fn, arrays): jax.random's draw is ``fn(jax.random, key, *arrays)``)."""
    p, p_all = _probabilities(300, dtype, 1), _probabilities(3000, dtype, 2)
    signed = (np.random.default_rng(6).standard_normal(300) * 0.01).astype(dtype)  # an unsorted cumsum
    logits = np.random.default_rng(7).standard_normal((30, 200)).astype(dtype)

    def both(fn, *arrays):
        return (lambda k: fn(xr, k, *(xp.asarray(a) for a in arrays)), (fn, arrays))

    return {
        "choice-p": both(lambda r, k, p: r.choice(k, 300, (4000,), p=p), p),
        "choice-p-2d": both(lambda r, k, p: r.choice(k, 300, (50, 40), p=p), p),
        "choice-p-array": both(lambda r, k, p, a: r.choice(k, a, (7, 3), p=p, axis=1),
                               p, np.arange(600, dtype=dtype).reshape(2, 300)),
        "choice-p-signed": both(lambda r, k, p: r.choice(k, 300, (2000,), p=p), signed),
        "choice-p-no-replace": both(lambda r, k, p: r.choice(k, 3000, (200,), replace=False, p=p), p_all),
        "choice-p-no-replace-high": both(lambda r, k, p: r.choice(k, 3000, (20,), replace=False, p=p, mode="high"),
                                         p_all),
        "categorical": both(lambda r, k, lg: r.categorical(k, lg), logits),
        "categorical-no-replace": both(lambda r, k, lg: r.categorical(k, lg[0], shape=(60,), replace=False), logits),
        "choice": both(lambda r, k: r.choice(k, 1000, (5000,))),
        "choice-no-replace": both(lambda r, k: r.choice(k, 5000, (500,), replace=False)),
        "permutation": both(lambda r, k: r.permutation(k, 4000)),
    }


#: jax.random's draws, computed once per case for the items that share them (the kernels on and off)
_JAX_WANTS: dict = {}


def _jax_wants(case, jdraws: dict, keys) -> dict:
    """name -> [fn(jax.random, key, *arrays) for key in keys] as NumPy arrays (``jdraws``: name -> (fn,
    arrays)), from one jitted program per ``case`` with the arrays as its arguments (not constants XLA
    could fold): the same bits as the eager jax.random calls (each a jit program or eager jnp operations;
    checked bit for bit when this was written), one program instead of one per operation and size."""
    if case not in _JAX_WANTS:
        program = jax.jit(lambda k, ops: {name: fn(jr, k, *ops[name]) for name, (fn, _) in jdraws.items()})
        ops = {name: [jnp.asarray(a) for a in arrays] for name, (_, arrays) in jdraws.items()}
        outs = [program(k, ops) for k in keys]
        _JAX_WANTS[case] = {name: [np.asarray(out[name]) for out in outs] for name in jdraws}
    return _JAX_WANTS[case]


@needs_jax
@pytest.mark.parametrize("dtype", FLOATS)
def test_draws_match_jax(x64, kernels, dtype):
    draws, seeds = _draws(dtype), (0, 7)
    wants = _jax_wants(("draws", np.dtype(dtype).name), {name: jdraw for name, (_, jdraw) in draws.items()},
                       [jr.PRNGKey(seed) for seed in seeds])
    for name, (draw, _) in draws.items():
        for seed, want in zip(seeds, wants[name]):
            if name == "categorical-no-replace":  # jax: lax.top_k's int32 indices; arrayx: the default int64
                want = want.astype(np.int64)
            same(draw(xr.key(seed)), want, f"{name} {np.dtype(dtype).name} seed {seed} "
                 f"(numpy executor, kernels {'on' if kernels else 'off'})")


@pytest.mark.parametrize("dtype", FLOATS)
def test_each_executor_matches_numpy(executor, dtype):
    if jax is None:  # the draws are written for both libraries; jax's half is not called here
        pytest.skip("jax is not installed (the draw table builds jax arrays)")
    draws = _draws(dtype)
    jitted = set()
    if executor == "jax" and profile.current().sampled:
        # new XLA programs per draw and dtype there: the ci profile takes each draw in one dtype,
        # float32 and float64 in turn, and every other draw of each dtype under jit (one program
        # where the eager draw compiles one per operation and size); all eagerly, both dtypes in deep
        draws = {name: d for i, (name, d) in enumerate(draws.items()) if FLOATS[i % 2] == dtype}
        jitted = set(list(draws)[1::2])
    with xp.use_executor("numpy"):
        want = {name: np.asarray(draw(xr.key(3))) for name, (draw, _) in draws.items()}
    for name, (draw, _) in draws.items():
        how = "under jit" if name in jitted else "eagerly"
        got = xp.jit(draw)(xr.key(3)) if name in jitted else draw(xr.key(3))
        same(got, want[name], f"{name} {np.dtype(dtype).name} on {executor} {how} vs numpy")


@needs_jax
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("bounds", [(0, 1), (0, 2), (3, 1000), (0, 2**31 + 3), (2**40, 2**40 + 2**32 - 1),
                                    (7, 7 + 2**32), (0, 2**63 - 1)])
def test_randint64_spans(x64, kernels, dtype, bounds):
    # choice of ints draws randint's 64-bit values: spans below and above 2**32
    lo, hi = bounds
    got = xr.randint(xr.key(11), (3000,), lo, hi, getattr(xp, dtype))
    same(got, jr.randint(jr.PRNGKey(11), (3000,), lo, hi, getattr(jnp, dtype)), f"randint {dtype} [{lo}, {hi})")
    with xp.use_executor("numpy"):
        neg = xr.randint(xr.key(12), (3000,), -2**31 - 5, 2**31, xp.int64)  # a span just above 2**32
    same(neg, jr.randint(jr.PRNGKey(12), (3000,), -2**31 - 5, 2**31, jnp.int64), "randint int64 negative lo")


@needs_jax
@pytest.mark.parametrize("dtype", FLOATS)
def test_jit_and_vmap_draws_match_jax(x64, dtype):
    # staged: the arrayx operations (XLA's cumsum tiles, the halvings, the argsorts), not the kernels
    p = _probabilities(300, dtype, 8)
    px, pj = xp.asarray(p), jnp.asarray(p)
    want = jax.jit(lambda pj: (  # jax.random's four draws as one program (p an argument, not a constant)
        jr.choice(jr.PRNGKey(2), 300, (500,), p=pj), jr.choice(jr.PRNGKey(2), 300, (50,), replace=False, p=pj),
        jax.vmap(lambda k: jr.choice(k, 300, (200,), p=pj))(jr.split(jr.PRNGKey(1), 3)),
        jr.permutation(jr.PRNGKey(5), 5000)))(pj)
    same(xp.jit(lambda k: xr.choice(k, 300, (500,), p=px))(xr.key(2)), want[0], f"jit choice-p {np.dtype(dtype).name}")
    same(xp.jit(lambda k: xr.choice(k, 300, (50,), replace=False, p=px))(xr.key(2)),
         want[1], f"jit choice-p-no-replace {np.dtype(dtype).name}")
    same(xp.vmap(lambda k: xr.choice(k, 300, (200,), p=px))(xr.split(xr.key(1), 3)),
         want[2], f"vmap choice-p {np.dtype(dtype).name}")
    same(xp.jit(lambda k: xr.permutation(k, 5000))(xr.key(5)), want[3], "jit permutation")


@needs_jax
@pytest.mark.parametrize("dtype", FLOATS)
def test_choice_p_guide_buckets_match_jax(x64, kernels, dtype):
    # the kernel's guide (random_kernels.choice_guide): zeros (ties in cumsum), skewed p (full
    # buckets), equal p, sizes below and above its 64-entry minimum
    # (the ci profile: each guide in one dtype, float32 and float64 in turn, since each n compiles
    # jax.random.choice again; every guide in both dtypes in the deep profile)
    rng = np.random.default_rng(9)
    cases = {}
    for trial, (n, power, zeros) in enumerate([(10, 1, 0.0), (64, 1, 0.3), (300, 30, 0.2), (1000, 8, 0.0),
                                                (2500, 1, 0.5), (700, 0, 0.0)]):
        p = rng.random(n) ** power
        p[rng.random(n) < zeros] = 0.0
        p = (p / p.sum()).astype(dtype)
        if profile.current().sampled and FLOATS[trial % 2] != dtype:
            continue
        cases[f"choice-p n={n} power={power} zeros={zeros}"] = (trial, n, p)
    # jax.random.choice of every guide in one jitted program (each its own key), shared by both kernels items
    wants = _jax_wants(("guides", np.dtype(dtype).name, profile.current().sampled), {
        what: (lambda r, _, p, trial=trial, n=n: r.choice(r.PRNGKey(trial), n, (3000,), p=p), [p])
        for what, (trial, n, p) in cases.items()}, [jr.PRNGKey(0)])
    for what, (trial, n, p) in cases.items():
        same(xr.choice(xr.key(trial), n, (3000,), p=xp.asarray(p)), wants[what][0], what)
