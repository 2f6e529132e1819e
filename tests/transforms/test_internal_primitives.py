"""The internal primitives (broadcast_in_dim, convert_element_type, select, iota) and the creation
functions as primitives: values equal the NumPy executor's on every executor, eagerly, staged, under
jit, grad and vmap; creation functions stage as equations, not as captured constants."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.api import _internal as it


def _host(x):
    return np.asarray(x)


def _on_numpy(fn):
    with ax.use_executor("numpy"):
        return _host(fn())


def test_broadcast_in_dim_values_and_errors(executor):
    x = ax.asarray(np.arange(6.0).reshape(3, 2))
    got = it.broadcast_in_dim(x, (4, 3, 5, 2), (1, 3))
    want = np.broadcast_to(np.arange(6.0).reshape(1, 3, 1, 2), (4, 3, 5, 2))
    assert got.shape == (4, 3, 5, 2) and np.array_equal(_host(got), want)
    stretched = it.broadcast_in_dim(ax.ones((1, 2)), (3, 2), (0, 1))
    assert np.array_equal(_host(stretched), np.ones((3, 2)))
    with pytest.raises(ValueError, match="broadcast_in_dim: broadcast_dimensions"):
        it.broadcast_in_dim(x, (3, 2), (1, 0))
    with pytest.raises(ValueError, match="cannot become result axis"):
        it.broadcast_in_dim(x, (4, 2), (0, 1))


def test_broadcast_in_dim_transforms(executor):
    x = ax.asarray(np.array([[1.0, 2.0]]))  # (1, 2): stretched axis 0, new axes 1 and 3

    def f(x):
        return ax.sum(it.broadcast_in_dim(x, (3, 4, 2, 5), (0, 2)) * ax.arange(5.0))

    g = ax.grad(f)(x)
    assert np.array_equal(_host(g), np.full((1, 2), 3 * 4 * 10.0))
    assert float(ax.jit(f)(x)) == float(f(x)) == 3 * 4 * 10.0 * 3.0
    v = ax.vmap(lambda r: it.broadcast_in_dim(r, (3, 2), (1,)))(ax.asarray(np.arange(8.0).reshape(4, 2)))
    assert np.array_equal(_host(v), np.broadcast_to(np.arange(8.0).reshape(4, 1, 2), (4, 3, 2)))


@pytest.mark.parametrize("dtype", ["float32", "int8", "complex64"])
def test_convert_element_type_matches_astype(executor, dtype):
    x = ax.asarray(np.array([-1e10, -2.5, 0.0, 3.7, 1e10, np.nan]))
    dt = getattr(ax, dtype)
    got = it.convert_element_type(x, dt)
    want = _on_numpy(lambda: ax.astype(ax.asarray(np.array([-1e10, -2.5, 0.0, 3.7, 1e10, np.nan])), dt))
    assert got.dtype == dt
    np.testing.assert_array_equal(_host(got), want)  # the float -> int rule (NumPy on x86-64) included


def test_convert_element_type_weak_type_is_staged():
    x32 = ax.asarray(np.ones(3, np.float32))
    graph = ax.make_graph(lambda s: it.convert_element_type(s, ax.float64, weak_type=True))(ax.asarray(2.0))
    assert graph.out_avals[0].weak_type
    # a weak value takes the other operand's dtype, as a Python scalar would
    out = ax.eval_shape(lambda x, s: x * it.convert_element_type(s, ax.float64, weak_type=True), x32, ax.asarray(2.0))
    assert out.dtype == ax.float32
    grad = ax.grad(lambda x: ax.sum(it.convert_element_type(x, ax.float32) * 3.0))(ax.asarray([1.0, 2.0]))
    assert grad.dtype == ax.float64 and np.array_equal(_host(grad), [3.0, 3.0])
    assert ax.grad(lambda x: ax.sum(ax.astype(it.convert_element_type(x, ax.int32), ax.float64)))(
        ax.asarray([1.5])).__array__().tolist() == [0.0]


def test_select(executor):
    x = ax.asarray(np.array([-2.0, 0.5, 3.0]))
    assert np.array_equal(_host(it.select(x > 0, x, -x)), [2.0, 0.5, 3.0])
    g = ax.grad(lambda x: ax.sum(it.select(x > 0, x * x, 3.0 * x)))(x)
    assert np.array_equal(_host(g), [3.0, 1.0, 6.0])
    assert np.array_equal(_host(ax.jit(lambda x: it.select(x > 0, x, x * 0))(x)), [0.0, 0.5, 3.0])
    with pytest.raises(TypeError, match="select: pred must be a bool array"):
        it.select(x, x, x)
    with pytest.raises(ValueError, match="select: shapes must be equal"):
        it.select(x > 0, x, ax.ones(2))


def test_iota(executor):
    got = it.iota(ax.int32, (2, 3, 4), 1)
    assert got.dtype == ax.int32
    assert np.array_equal(_host(got), np.broadcast_to(np.arange(3).reshape(1, 3, 1), (2, 3, 4)))
    assert np.array_equal(_host(ax.jit(lambda x: x + it.iota(ax.float64, (3,), 0))(ax.ones(3))), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="iota: dimension 2 is not an axis"):
        it.iota(ax.int32, (2, 3), 2)
    with pytest.raises(TypeError, match="iota: dtype must be"):
        it.iota(ax.bool, (2,), 0)


CREATIONS = {
    "zeros": lambda: ax.zeros((2, 3), dtype=ax.float32),
    "ones": lambda: ax.ones((2,), dtype=ax.bool),
    "full": lambda: ax.full((2, 2), 7, dtype=ax.int16),
    "arange_int": lambda: ax.arange(2, 11, 3),
    "arange_float": lambda: ax.arange(0.0, 1.0, 0.125),
    "eye": lambda: ax.eye(3, 4, k=1),
    "linspace": lambda: ax.linspace(0.0, 1.0, 5, endpoint=False),
    "linspace_complex": lambda: ax.linspace(0j, 1 + 2j, 3),
}


@pytest.mark.parametrize("name", sorted(CREATIONS))
def test_creation_functions_stage_as_ops(executor, name):
    make = CREATIONS[name]
    want = _on_numpy(make)
    eager = make()
    graph = ax.make_graph(lambda x: (make(), x))(ax.asarray(0.0))
    assert not graph.consts, f"{name} was captured as a constant"
    assert len(graph.equations) == 1
    staged = ax.jit(lambda x: make())(ax.asarray(0.0))
    for got in (eager, staged):
        assert got.dtype == eager.dtype and got.device == eager.device
        np.testing.assert_array_equal(_host(got), want)


def test_creation_under_grad_stays_known():
    # linearize keeps primal values concrete: a creation function is computed, not recorded
    def f(x):
        w = ax.arange(3.0)
        assert float(w[2]) == 2.0  # would raise if w were staged
        return ax.sum(x * w)

    assert _host(ax.grad(f)(ax.ones(3))).tolist() == [0.0, 1.0, 2.0]


def test_creation_with_explicit_device_under_jit(executor):
    dev = ax.ones(1).device
    out = ax.jit(lambda x: x + ax.zeros(3, device=dev))(ax.ones(3))
    assert out.device == dev and _host(out).tolist() == [1.0, 1.0, 1.0]
