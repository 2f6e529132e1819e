"""Eager draws on the jax executor run as one compiled program each (arrayx/_random_programs.py), with
the bits of the arrayx operations run one by one (``PROGRAMS = False``, the route before); Python
number parameters are program inputs (a sweep compiles once), argument errors come before any
compile, and the other executors and traced draws are untouched.

Compiles are counted with JAX's monitoring event for XLA compilations (a program loaded from the
persistent cache the test session shares counts too).  Speed: benchmarks/bench_random_eager.py.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import arrayx as xp
from arrayx import _random_programs
from arrayx import random as xr
from arrayx.core import executor as base
from conformance import profile
from tests.test_random import same

jax = pytest.importorskip("jax")

FLOATS = [xp.float16, xp.bfloat16, xp.float32, xp.float64]
SHAPE = (3, 5)


@pytest.fixture
def on_jax():
    ex = base.get("jax")
    if not ex.available():
        pytest.skip(f"executor 'jax' unavailable: {ex.unavailable_reason}")
    with xp.use_executor("jax"):
        # jnp.asarray of a bfloat16 NumPy scalar (a bound entering a program) compiles a conversion of
        # JAX's own once per process: made here, so that the counts below are the draws' programs
        xp.asarray(np.asarray(xp.bfloat16.type(1.0)))
        yield


@contextlib.contextmanager
def compiles():
    """A list that counts the XLA compilations made in the block (one entry each)."""
    from jax._src import dispatch

    seen: list = []

    def listener(event, duration, **kwargs):
        if event == dispatch.BACKEND_COMPILE_EVENT:
            seen.append(kwargs.get("fun_name"))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def _complex_of(dt):
    return {np.dtype(xp.float32): xp.complex64, np.dtype(xp.float64): xp.complex128}.get(np.dtype(dt))


#: every float sampler (and the float parameters of the others) in the dtype ``dt``
FLOAT_DRAWS = {
    "uniform": lambda k, dt: xr.uniform(k, SHAPE, dt),
    "uniform-bounds": lambda k, dt: xr.uniform(k, SHAPE, dt, minval=-1.5, maxval=2.25),
    "uniform-pow2": lambda k, dt: xr.uniform(k, SHAPE, dt, minval=3.0, maxval=7.0),
    "uniform-negative-zero": lambda k, dt: xr.uniform(k, SHAPE, dt, minval=-0.0, maxval=1.0),
    "uniform-0d-bounds": lambda k, dt: xr.uniform(k, SHAPE, dt, minval=xp.asarray(-0.1, dtype=dt),
                                                  maxval=xp.asarray(0.3, dtype=dt)),
    "uniform-array-bounds": lambda k, dt: xr.uniform(k, SHAPE, dt, minval=xp.full(SHAPE[1:], -2.0, dtype=dt),
                                                     maxval=0.7),
    "normal": lambda k, dt: xr.normal(k, SHAPE, dt),
    "normal-complex": lambda k, dt: xr.normal(k, SHAPE, _complex_of(dt)),
    "exponential": lambda k, dt: xr.exponential(k, SHAPE, dt),
    "gumbel": lambda k, dt: xr.gumbel(k, SHAPE, dt),
    "gumbel-high": lambda k, dt: xr.gumbel(k, SHAPE, dt, mode="high"),
    "truncated_normal": lambda k, dt: xr.truncated_normal(k, -1.5, 2.0, SHAPE, dt),
    "truncated_normal-inf": lambda k, dt: xr.truncated_normal(k, -np.inf, 0.5, SHAPE, dt),
    "truncated_normal-array": lambda k, dt: xr.truncated_normal(k, xp.full(SHAPE, -0.5, dtype=dt), 1.0, None, dt),
    "bernoulli": lambda k, dt: xr.bernoulli(k, np.dtype(dt).type(0.3), SHAPE),
    "bernoulli-array": lambda k, dt: xr.bernoulli(k, xp.full(SHAPE, 0.7, dtype=dt)),
    "bernoulli-high": lambda k, dt: xr.bernoulli(k, np.dtype(dt).type(0.3), SHAPE, mode="high"),
    "categorical": lambda k, dt: xr.categorical(k, xp.asarray(np.linspace(-2, 1, 12).reshape(3, 4), dtype=dt)),
    "categorical-no-replace": lambda k, dt: xr.categorical(
        k, xp.asarray(np.linspace(-2, 1, 12).reshape(3, 4), dtype=dt), axis=0, shape=(2, 4), replace=False),
    "choice-p": lambda k, dt: xr.choice(k, 6, (7,), p=xp.asarray([0.1, 0.2, 0.05, 0.3, 0.25, 0.1], dtype=dt)),
    "choice-p-no-replace": lambda k, dt: xr.choice(
        k, xp.arange(12.0, dtype=dt), (4,), replace=False, p=xp.asarray(np.full(12, 1 / 12), dtype=dt)),
}
#: the draws without a float dtype
OTHER_DRAWS = {
    "bits8": lambda k: xr.bits(k, SHAPE, xp.uint8),
    "bits16": lambda k: xr.bits(k, SHAPE, xp.uint16),
    "bits32": lambda k: xr.bits(k, SHAPE, xp.uint32),
    "bits64": lambda k: xr.bits(k, SHAPE),
    "randint": lambda k: xr.randint(k, SHAPE, -7, 1000),
    "randint8": lambda k: xr.randint(k, SHAPE, -5, 100, xp.int8),
    "randint-u32-full": lambda k: xr.randint(k, SHAPE, 0, 2**32, xp.uint32),
    "randint-array-bounds": lambda k: xr.randint(k, SHAPE, xp.arange(5), 50, xp.int32),
    "split": lambda k: xr.split(k),
    "split-tuple": lambda k: xr.split(k, (2, 3)),
    "fold_in": lambda k: xr.fold_in(k, 2**32 - 3),
    "fold_in-array": lambda k: xr.fold_in(k, xp.asarray(-3, dtype=xp.int64)),
    "permutation": lambda k: xr.permutation(k, 9),
    "permutation-array": lambda k: xr.permutation(k, xp.arange(12.0).reshape(3, 4), axis=1),
    "permutation-independent": lambda k: xr.permutation(k, xp.arange(12).reshape(3, 4), independent=True),
    "choice": lambda k: xr.choice(k, 10, SHAPE),
    "choice-array-no-replace": lambda k: xr.choice(k, xp.arange(20).reshape(5, 4), (3,), replace=False, axis=0),
}


def _both_routes(monkeypatch, draw):
    """(the draw as one program, its compiles, the draw as arrayx operations one by one).  The latter
    runs first, so that what the test makes for the draw (its array parameters) is compiled already."""
    with monkeypatch.context() as m:
        m.setattr(_random_programs, "PROGRAMS", False)
        want = draw()
    with compiles() as seen:
        got = draw()
        np.asarray(got)
    return got, seen, want


#: where the arrayx operations one by one are not jax.random's bits and the program is: float32 Gumbel
#: values of a small draw (XLA:CPU's float32 log in a program of its own: 1 ulp off in 1 or 3 of these
#: 15 values; compiled with the rest of the draw, as jax.random compiles it, it gives JAX's)
OFF_ONE_BY_ONE = {("gumbel", np.dtype(xp.float32))}


def _cases(names, dtypes=(None,)) -> list:
    """(name, dtype, partitionable) of each draw: every combination in the deep profile; in the ci profile
    (each one by one a few dozen new XLA programs) about half of the names, the dtypes and layouts in turn."""
    names = sorted(names)
    if not profile.current().sampled:
        chosen = [(n, d, p) for n in names for d in dict.fromkeys(dtypes) for p in (True, False)]
    else:  # (and about half of the names: tests/test_random*.py compare every sampler with jax.random)
        chosen = [(n, dtypes[i % len(dtypes)], (i // len(dtypes)) % 2 == 0) for i, n in enumerate(names)]
        chosen = profile.sample(f"random programs {names[0]}", chosen, (len(chosen) + 1) // 2)
    return [pytest.param(*c, id="-".join(filter(None, (c[0], _id(c[1]), _id(c[2]))))) for c in chosen]


def _id(v) -> str:
    if isinstance(v, bool):
        return "partitionable" if v else "original"
    return "" if v is None else np.dtype(v).name


@pytest.mark.parametrize("name, dtype, partitionable", _cases(FLOAT_DRAWS, FLOATS))
def test_float_draws_are_one_program_with_the_bits_of_the_operations(on_jax, monkeypatch, name, dtype, partitionable):
    if name == "normal-complex" and _complex_of(dtype) is None:
        pytest.skip("complex normals are complex64 or complex128")
    key = xr.key(2**40 + 11)
    with xr.threefry_partitionable(partitionable):
        got, seen, want = _both_routes(monkeypatch, lambda: FLOAT_DRAWS[name](key, dtype))
    assert len(seen) <= 1, seen
    assert got.device == want.device
    if (name, np.dtype(dtype)) in OFF_ONE_BY_ONE:
        want = _jax_random(name, key, dtype, partitionable)
    same(got, want)


def _jax_random(name: str, key, dtype, partitionable: bool) -> np.ndarray:
    """jax.random's draw of FLOAT_DRAWS[name] (64-bit types on; JAX's own layout flag)."""
    with jax.enable_x64(True), jax.threefry_partitionable(partitionable):
        jax_key = jax.random.wrap_key_data(jax.numpy.asarray(np.asarray(key)), impl="threefry2x32")
        return np.asarray(getattr(jax.random, name)(jax_key, SHAPE, dtype))


@pytest.mark.parametrize("name, dtype, partitionable", _cases(OTHER_DRAWS, (None, None)))
def test_other_draws_are_one_program_with_the_bits_of_the_operations(on_jax, monkeypatch, name, dtype, partitionable):
    key = xr.key(5)
    with xr.threefry_partitionable(partitionable):
        got, seen, want = _both_routes(monkeypatch, lambda: OTHER_DRAWS[name](key))
    assert len(seen) <= 1, seen
    same(got, want)


def _fresh_draws(n: int, dt) -> dict:
    """The draws of FLOAT_DRAWS and OTHER_DRAWS in shapes no other test uses (``n``), their arrays made here."""
    s = (n, 3)
    t = np.dtype(dt)

    def host(values, dtype=dt):
        return xp.asarray(np.asarray(values).astype(dtype))  # (a transfer: no program)

    lower, ends = host(np.full(s, -0.5)), host(np.full(s[1:], -2.0))
    zero_d, p = (host(-0.1), host(0.3)), host(np.full(s, 0.7))
    logits, weights = host(np.linspace(-2, 1, 3 * n).reshape(3, n)), host(np.full(n, 1 / n))
    ints, small = host(np.arange(4 * n).reshape(4, n), np.int64), host(np.arange(3), np.int32)
    floats = host(np.arange(4 * n).reshape(4, n), np.float64)
    draws = {
        "uniform": lambda k: xr.uniform(k, s, dt), "uniform-bounds": lambda k: xr.uniform(k, s, dt, -1.5, 2.25),
        "uniform-0d-bounds": lambda k: xr.uniform(k, s, dt, *zero_d),
        "uniform-array-bounds": lambda k: xr.uniform(k, s, dt, ends, 0.7),
        "normal": lambda k: xr.normal(k, s, dt), "exponential": lambda k: xr.exponential(k, s, dt),
        "gumbel": lambda k: xr.gumbel(k, s, dt), "gumbel-high": lambda k: xr.gumbel(k, s, dt, mode="high"),
        "truncated_normal": lambda k: xr.truncated_normal(k, -1.5, 2.0, s, dt),
        "truncated_normal-array": lambda k: xr.truncated_normal(k, lower, 1.0, None, dt),
        "bernoulli": lambda k: xr.bernoulli(k, t.type(0.3), s), "bernoulli-array": lambda k: xr.bernoulli(k, p),
        "bernoulli-high": lambda k: xr.bernoulli(k, t.type(0.3), s, mode="high"),
        "categorical": lambda k: xr.categorical(k, logits),
        "categorical-no-replace": lambda k: xr.categorical(k, logits, axis=0, shape=(2, n), replace=False),
        "choice-p": lambda k: xr.choice(k, n, (7,), p=weights),
        "choice-p-no-replace": lambda k: xr.choice(k, n, (4,), replace=False, p=weights),
    }
    if _complex_of(dt) is not None:
        draws["normal-complex"] = lambda k: xr.normal(k, s, _complex_of(dt))
    if t == np.dtype(xp.float64):  # the others once
        draws.update({
            "bits8": lambda k: xr.bits(k, s, xp.uint8), "bits64": lambda k: xr.bits(k, s),
            "randint": lambda k: xr.randint(k, s, -7, 1000), "randint8": lambda k: xr.randint(k, s, -5, 100, xp.int8),
            "randint-u32-full": lambda k: xr.randint(k, s, 0, 2**32, xp.uint32),
            "randint-array-bounds": lambda k: xr.randint(k, s, small, 50, xp.int32),
            "split": lambda k: xr.split(k, n), "split-tuple": lambda k: xr.split(k, (2, n)),
            "permutation": lambda k: xr.permutation(k, n),
            "permutation-array": lambda k: xr.permutation(k, floats, axis=1),
            "permutation-independent": lambda k: xr.permutation(k, ints, independent=True),
            "choice": lambda k: xr.choice(k, n, s),
            "choice-array-no-replace": lambda k: xr.choice(k, ints, (3,), replace=False, axis=1),
        })
    return draws


class _Staged(Exception):
    """Raised instead of compiling a staged program (the test below stages only)."""


@pytest.mark.parametrize("dtype, partitionable", [
    pytest.param(d, p, id=f"{_id(d)}-{_id(p)}") for i, d in enumerate(FLOATS) for p in (True, False)
    if not profile.current().sampled or p == (i % 2 == 1)])  # (ci: each dtype in one layout, in turn)
def test_staging_a_draw_runs_nothing_eagerly(on_jax, monkeypatch, dtype, partitionable):
    # an operation of concrete values only, while a draw is staged, runs eagerly: a constant operand
    # broadcast to the draw's shape is one, a program of its own for each new shape.  The draws are
    # staged only (their programs are not compiled: that takes seconds for some), in shapes new here.
    from arrayx.transforms import jitting

    def refuse(*args, **kwargs):
        raise _Staged

    key = xr.key(3)
    draws = _fresh_draws(37 + 2 * FLOATS.index(dtype) + partitionable, dtype)
    monkeypatch.setattr(jitting, "compiled_for", refuse)
    with xr.threefry_partitionable(partitionable):
        for name, draw in draws.items():
            _random_programs.clear()  # (a program staged before: not staged again)
            with compiles() as seen:
                try:
                    draw(key)
                except _Staged:
                    pass
                else:
                    raise AssertionError(f"{name}: no program was staged")
            assert seen == [], (name, seen)


#: draws whose Python number parameters take many values: one program for all of them
SWEEPS = {
    "uniform": lambda k, v: xr.uniform(k, (6,), minval=v, maxval=v + 2.5),
    "uniform-float32": lambda k, v: xr.uniform(k, (6,), xp.float32, minval=-v, maxval=1.0),
    "truncated_normal": lambda k, v: xr.truncated_normal(k, -v, v, (6,)),
    "bernoulli": lambda k, v: xr.bernoulli(k, v / 4, (6,)),
    "randint": lambda k, v: xr.randint(k, (6,), int(v), int(10 * v) + 1),
    "fold_in": lambda k, v: xr.fold_in(k, int(v * 1000)),
}


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_sweeping_a_python_number_parameter_compiles_once(on_jax, monkeypatch, name):
    key = xr.key(9)
    with compiles() as first:
        np.asarray(SWEEPS[name](key, 0.25))  # the program, compiled (or found)
    assert len(first) <= 1 and set(first) <= {"jit(compiled)"}, first
    values = [0.5, 1.0, 1.75, 3.0]
    with compiles() as seen:
        got = [np.asarray(SWEEPS[name](key, v)) for v in values]
    assert seen == []
    monkeypatch.setattr(_random_programs, "PROGRAMS", False)
    for v, g in zip(values, got):
        same(g, SWEEPS[name](key, v))


#: misuse on the jax executor: (draw of a key and arrays made before it, the exception); the same
#: message as on the NumPy executor
MISUSE = {
    "shape": (lambda k, a: xr.uniform(k, (2,), minval=a["zeros"]), ValueError),
    "dtype": (lambda k, a: xr.normal(k, (2,), xp.int32), TypeError),
    "key": (lambda k, a: xr.exponential(a["bad key"], (2,)), ValueError),
    "p": (lambda k, a: xr.bernoulli(k, 1, (2,)), TypeError),
    "randint dtype": (lambda k, a: xr.randint(k, (2,), 0, 5, xp.float32), TypeError),
    "gumbel highest float32": (lambda k, a: xr.gumbel(k, (2,), xp.float32, mode="highest"), NotImplementedError),
    "choice too many": (lambda k, a: xr.choice(k, 3, (5,), replace=False), ValueError),
    "choice mode": (lambda k, a: xr.choice(k, 3, (2,), replace=False, p=a["p"], mode="x"), ValueError),
    "categorical too many": (lambda k, a: xr.categorical(k, a["logits"], shape=(4, 2), replace=False), ValueError),
    "fold_in data": (lambda k, a: xr.fold_in(k, 2**32), OverflowError),
}


def _misuse_arrays() -> dict:
    return {"zeros": xp.asarray(np.zeros(3)), "bad key": xp.asarray(np.zeros(3, np.uint32)),
            "p": xp.asarray(np.full(3, 1 / 3)), "logits": xp.asarray(np.zeros((2, 3)))}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_argument_errors_come_before_any_compile_with_the_same_message(on_jax, case):
    draw, error = MISUSE[case]
    with xp.use_executor("numpy"):
        with pytest.raises(error) as on_numpy:
            draw(xr.key(0), _misuse_arrays())
    key, arrays = xr.key(0), _misuse_arrays()
    with compiles() as seen, pytest.raises(error) as on_jax_executor:
        draw(key, arrays)
    assert str(on_jax_executor.value) == str(on_numpy.value)
    assert seen == []


def test_traced_draws_make_no_program_of_their_own(on_jax, monkeypatch):
    made = []
    original = _random_programs._program
    monkeypatch.setattr(_random_programs, "_program", lambda *a: made.append(a[0]) or original(*a))
    key = xr.key(4)
    eager = xr.normal(key, (5,))
    keys = xr.split(key, 3)
    each = xp.stack([xr.uniform(keys[i], (2,)) for i in range(3)])
    made.clear()
    traced = xp.jit(lambda k: xr.normal(k, (5,)) * 1.0)(key)
    batched = xp.vmap(lambda k: xr.uniform(k, (2,)))(keys)
    assert made == []
    same(traced, eager)
    same(batched, each)


def test_the_other_executors_keep_their_routes(executor, monkeypatch):
    if executor == "jax":
        pytest.skip("the jax executor is the one that compiles its draws")

    def refuse(*args):
        raise AssertionError("a program was made off the jax executor")

    monkeypatch.setattr(_random_programs, "_program", refuse)
    key = xr.key(8)
    assert not _random_programs.route(key)
    draws = [xr.normal(key, (4,)), xr.uniform(key, (4,), minval=-1.0), xr.randint(key, (4,), 0, 5), xr.split(key),
             xr.fold_in(key, 3), xr.permutation(key, 6), xr.bernoulli(key, 0.3, (4,))]
    with xp.use_executor("numpy"):
        host_key = xr.key(8)
        wants = [xr.normal(host_key, (4,)), xr.uniform(host_key, (4,), minval=-1.0), xr.randint(host_key, (4,), 0, 5),
                 xr.split(host_key), xr.fold_in(host_key, 3), xr.permutation(host_key, 6),
                 xr.bernoulli(host_key, 0.3, (4,))]
    for got, want in zip(draws, wants):
        same(got, want)


def test_programs_and_constants_are_kept_within_their_bounds(on_jax, monkeypatch):
    monkeypatch.setattr(_random_programs, "_MAX_PROGRAMS", 2)
    monkeypatch.setattr(_random_programs, "_MAX_CONSTANTS", 3)
    key = xr.key(1)
    for n in (2, 3, 4):
        xr.uniform(key, (n,), minval=float(n))
    assert len(_random_programs._programs) <= 2 and len(_random_programs._constants) <= 3
    _random_programs.clear()
    assert not _random_programs._programs and not _random_programs._constants
