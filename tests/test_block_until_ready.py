"""``arrayx.block_until_ready`` (as ``jax.block_until_ready``): waits for every array of a pytree and
gives the pytree back, on every executor; the jax executor's buffers in one batched wait."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax


class Box:
    """A node registered with arrayx alone (JAX's flatten sees it as a leaf)."""

    def __init__(self, inner):
        self.inner = inner


ax.pytree.register_node(Box, lambda b: ((b.inner,), None), lambda _, children: Box(children[0]))


def test_gives_the_tree_back_with_its_values(executor):
    tree = {"w": ax.arange(4.0), "parts": [ax.ones((2, 2)) * 3.0, None, 1.5], "box": Box(ax.zeros(3))}
    assert ax.block_until_ready(tree) is tree
    np.testing.assert_array_equal(np.asarray(tree["w"]), np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(tree["parts"][0]), np.full((2, 2), 3.0))
    x = ax.exp(ax.asarray([0.0, 1.0]))
    assert ax.block_until_ready(x) is x
    np.testing.assert_allclose(np.asarray(x), np.exp([0.0, 1.0]), rtol=1e-15)


def test_jax_buffers_are_waited_for_in_one_call_every_array_is_reached(monkeypatch):
    jax = pytest.importorskip("jax")
    waited = []
    monkeypatch.setattr(jax, "block_until_ready", lambda xs: waited.append(list(xs)) or xs)
    with ax.use_executor("jax"):
        a, b, c = ax.ones(3), ax.arange(2.0), ax.zeros(4)
        inside = ax.full(2, 5.0)
        ax.block_until_ready([(a, b), {"c": c}, Box(inside), "not an array"])
    assert len(waited) == 1  # one batched wait, through arrayx's flatten (the Box is arrayx's node)
    assert [id(buf) for buf in waited[0]] == [id(a._buf), id(b._buf), id(c._buf), id(inside._buf)]
    waited.clear()
    from arrayx.sharding import _api

    batched = []
    monkeypatch.setattr(_api, "_BATCHED", [lambda xs: batched.append(list(xs))])
    with ax.use_executor("jax"):
        tree = {"p": [a, b], "q": c}
        assert ax.block_until_ready(tree) is tree  # JAX's own flatten reaches every array: jaxlib's wait
    assert waited == [] and len(batched) == 1
    assert [id(buf) for buf in batched[0]] == [id(a._buf), id(b._buf), id(c._buf)]


def test_the_batched_wait_is_jaxlibs_own_and_waits():
    """The wait for several jax buffers is the one ``jax.block_until_ready`` ends in (found once), and
    the values it waited for are the computed ones; a tree of one array waits on that buffer."""
    jax = pytest.importorskip("jax")
    from arrayx.sharding import _api

    found = _api._find_batched_wait()
    assert found is not jax.block_until_ready  # jaxlib's (this JAX has it), not the public wait again
    f = ax.jit(lambda p, x: (ax.sum(x * p["w"]), {"w": p["w"] - 0.5 * x}))
    with ax.use_executor("jax"):
        p, x = {"w": ax.arange(4.0)}, ax.ones(4)
        out = ax.block_until_ready(f(p, x))
        one = ax.block_until_ready([ax.exp(ax.zeros(2))])
    assert float(out[0]) == 6.0
    np.testing.assert_array_equal(np.asarray(out[1]["w"]), np.arange(4.0) - 0.5)
    np.testing.assert_array_equal(np.asarray(one[0]), np.ones(2))
    assert _api._BATCHED[0] in (None, found)


def test_a_deferred_transpose_is_waited_for_through_its_operand(monkeypatch):
    jax = pytest.importorskip("jax")
    from arrayx.executors.jax.permuted import Permuted

    host = np.arange(600 * 300, dtype=np.float64).reshape(600, 300)  # above permuted.MIN_BYTES: deferred
    with ax.use_executor("jax"):
        m = ax.asarray(host)
        t = m.T
        assert t._buf.__class__ is Permuted
        waited = []
        monkeypatch.setattr(jax, "block_until_ready", lambda xs: waited.append(list(xs)) or xs)
        ax.block_until_ready([t, m])
    assert [id(b) for b in waited[0]] == [id(t._buf.base), id(m._buf)]
    np.testing.assert_array_equal(np.asarray(t), host.T)
