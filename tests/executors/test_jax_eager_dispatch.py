"""The jax executor's eager dispatch (arrayx/executors/jax/eager.py): small operations on plain
buffers take the direct path (the compiled program of their params, in arrayx's 64-bit scope) and
give the NumPy executor's values; params select programs exactly (signed zeros, bools against ints);
what the direct path must not take (deferred buffers, large operands of recorded operations, a named
matmul precision, a trace that needs values) takes the general one."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_matches_numpy, assert_same, on_numpy
from tests.executors.conftest import only_on

pytestmark = only_on("jax")


def _modules():
    from arrayx.executors.jax import eager, fused, recycle

    return eager, fused, recycle


@pytest.fixture
def general_calls(monkeypatch):
    """How many calls went through the general path's programs (``recycle.Recycling.__call__``)."""
    _, _, recycle = _modules()
    calls = [0]
    original = recycle.Recycling.__call__

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(recycle.Recycling, "__call__", counted)
    return calls


OPS = {
    "x + y": lambda x, y, m: x + y,
    "add": lambda x, y, m: xp.add(x, y),
    "exp": lambda x, y, m: xp.exp(x),
    "sum": lambda x, y, m: xp.sum(x),
    "sum axis keepdims": lambda x, y, m: xp.sum(m, axis=1, keepdims=True),
    "matmul": lambda x, y, m: xp.matmul(m, m),
    "reshape": lambda x, y, m: xp.reshape(x, (2, 4)),
    "x * 2.0": lambda x, y, m: x * 2.0,
    "where": lambda x, y, m: xp.where(x > y, x, y),
    "maximum": lambda x, y, m: xp.maximum(x, y),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_small_operations_take_the_direct_path_with_the_numpy_executors_values(name, dtype, general_calls):
    x = xp.asarray(np.linspace(-2, 2, 8), dtype=getattr(xp, dtype))
    y = xp.asarray(np.arange(8.0)[::-1] / 3, dtype=getattr(xp, dtype))
    m = xp.reshape(xp.asarray(np.arange(16.0) / 7, dtype=getattr(xp, dtype)), (4, 4))
    op = OPS[name]
    first = assert_matches_numpy(op, x, y, m)  # the first call makes the programs (general path)
    before = general_calls[0]
    again = op(x, y, m)
    assert general_calls[0] == before, f"{name}: the second call went through the general path"
    assert_same(again, first)
    assert_same(again, on_numpy(op, x, y, m))


def test_64_bit_results_on_the_direct_path_leave_the_users_jax_at_its_setting():
    import jax
    import jax.numpy as jnp

    before = jax.config.jax_enable_x64
    x = xp.asarray(np.arange(8.0))
    for _ in range(2):
        assert (x + x).dtype == xp.float64 and xp.sum(x).dtype == xp.float64
        assert (x + x)._buf.dtype == np.float64
    assert jax.config.jax_enable_x64 == before  # never set process-wide
    if not jax.config.jax_enable_x64:  # the user's own code keeps JAX's 32-bit default
        assert jnp.asarray(np.float64(1.5)).dtype == jnp.float32
    with jax.enable_x64(False):  # a caller's own 32-bit scope: 64 bits inside arrayx, the caller's after
        assert_same(x * 2.0, np.arange(8.0) * 2.0)
        assert jnp.asarray(np.float64(1.5)).dtype == jnp.float32


def test_params_select_programs_exactly():
    eager, _, _ = _modules()
    key = eager.params_key
    assert key({"a": 0.0}) != key({"a": -0.0})
    assert key({"a": True}) != key({"a": 1}) and key({"a": 1}) != key({"a": 1.0})
    assert key({"a": (1, 2)}) != key({"a": (True, 2)}) and key({"a": (0.0,)}) != key({"a": (-0.0,)})
    assert key({"a": np.dtype("float32")}) != key({"a": "float32"})
    assert key({"a": 1, "b": None}) != key({"b": 1, "a": None})
    assert key({"axis": (0, 1), "dtype": np.dtype("float64"), "keepdims": False}) == \
        key({"axis": (0, 1), "dtype": np.dtype("float64"), "keepdims": False})


def test_a_signed_zero_fill_gets_its_own_program():
    for first, second in ((0.0, -0.0), (-0.0, 0.0)):
        a, b = xp.full((3,), first), xp.full((3,), second)
        assert np.all(np.signbit(np.asarray(a)) == np.signbit(first))
        assert np.all(np.signbit(np.asarray(b)) == np.signbit(second))


def test_a_named_matmul_precision_takes_the_general_path(general_calls):
    m = xp.reshape(xp.asarray(np.arange(16.0, dtype=np.float32) / 7), (4, 4))
    want = on_numpy(xp.matmul, m, m)
    xp.matmul(m, m)
    before = general_calls[0]
    with xp.default_matmul_precision("highest"):
        got = xp.matmul(m, m)
    assert general_calls[0] == before + 1
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_large_operands_are_still_recorded_and_large_results_still_pooled():
    _, fused, recycle = _modules()
    if not (fused.ENABLED and recycle.ENABLED):
        pytest.skip("recording and the pool are on only for a single CPU device")
    big = xp.asarray(np.random.default_rng(0).normal(size=(512, 512)))  # 2 MiB of float64
    s = big + big
    assert s._buf.__class__ is fused.Pending  # recorded (fused.py), not run by the direct path
    assert_same(s, on_numpy(lambda a: a + a, big))
    kept = recycle.stats()["kept"]
    e = xp.exp(big)  # not recorded: the direct path runs it, the pool keeps the large result
    e2 = xp.exp(big)
    assert recycle.stats()["kept"] >= kept + 1
    assert_same(e, on_numpy(xp.exp, big))
    assert_same(e2, e)


def test_a_trace_that_needs_values_falls_back_to_op_by_op_for_good():
    import jax.numpy as jnp

    eager, _, _ = _modules()
    calls = []

    def needs_a_value(x):
        calls.append(1)
        return x * int(x[0])

    jitted = eager.Jitted(needs_a_value)
    run = eager.direct(jitted, jitted, gated=False)
    a = jnp.asarray(np.array([3.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(run(a)), [9.0, 3.0])
    assert jitted.eager and not jitted.fast
    np.testing.assert_array_equal(np.asarray(run(a)), [9.0, 3.0])
    assert run.general is jitted and run.jitted is jitted


def test_programs_per_primitive_are_bounded(monkeypatch):
    eager, _, _ = _modules()
    monkeypatch.setattr(eager, "MAX_PROGRAMS", 4)
    x = xp.asarray(np.arange(24.0))
    shapes = [(2, 12), (3, 8), (4, 6), (6, 4), (8, 3), (12, 2), (24, 1), (1, 24)]
    for _ in range(2):
        for shape in shapes:
            assert_same(xp.reshape(x, shape), np.arange(24.0).reshape(shape))
    ex = x._ex
    (run,) = [f for p, f in ex.impls.items() if p.name == "reshape"]
    assert len(run.jitted.programs) <= 4 and len(run.jitted.fast) <= 4


def test_small_calls_stay_direct_after_a_large_result_of_the_same_primitive(general_calls):
    _, _, recycle = _modules()
    if not recycle.ENABLED:
        pytest.skip("the pool is on only for a single CPU device")
    big = xp.asarray(np.random.default_rng(1).normal(size=(512, 512)))
    small = xp.asarray(np.linspace(-1, 1, 8))
    for _ in range(2):
        assert_same(xp.tanh(big), on_numpy(xp.tanh, big))  # the pool decides these calls from now on
    xp.tanh(small)
    before = general_calls[0]
    got = xp.tanh(small)
    assert general_calls[0] == before
    assert_same(got, on_numpy(xp.tanh, small))
    assert_same(xp.tanh(big), on_numpy(xp.tanh, big))
