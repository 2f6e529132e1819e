"""arrayx.nn against jax.nn / jax.scipy.special on every executor: values, dtypes, gradients."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import arrayx as ax
from tests import covering
from tests.conftest import to_numpy

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy
jss = pytest.importorskip("jax.scipy.special")

TOL = {np.dtype("float32"): dict(rtol=3e-6, atol=3e-7), np.dtype("float64"): dict(rtol=1e-10, atol=1e-13)}

# name -> (arrayx function, jax function, input domain)
UNARY = {
    "sigmoid": (lambda x: ax.nn.sigmoid(x), jax.nn.sigmoid, "real"),
    "expit": (lambda x: ax.nn.expit(x), jss.expit, "real"),
    "log_sigmoid": (lambda x: ax.nn.log_sigmoid(x), jax.nn.log_sigmoid, "real"),
    "softplus": (lambda x: ax.nn.softplus(x), jax.nn.softplus, "real"),
    "relu": (lambda x: ax.nn.relu(x), jax.nn.relu, "real"),
    "gelu_tanh": (lambda x: ax.nn.gelu(x), lambda x: jax.nn.gelu(x, approximate=True), "real"),
    "gelu_erf": (lambda x: ax.nn.gelu(x, approximate=False), lambda x: jax.nn.gelu(x, approximate=False), "real"),
    "silu": (lambda x: ax.nn.silu(x), jax.nn.silu, "real"),
    "elu": (lambda x: ax.nn.elu(x, alpha=0.7), lambda x: jax.nn.elu(x, alpha=0.7), "real"),
    "erf": (lambda x: ax.nn.erf(x), jss.erf, "real"),
    "erfc": (lambda x: ax.nn.erfc(x), jss.erfc, "real"),
    "erfinv": (lambda x: ax.nn.erfinv(x), jss.erfinv, "unit"),
    "softmax": (lambda x: ax.nn.softmax(x, axis=-1), lambda x: jax.nn.softmax(x, axis=-1), "real"),
    "softmax0": (lambda x: ax.nn.softmax(x, axis=0), lambda x: jax.nn.softmax(x, axis=0), "real"),
    "log_softmax": (lambda x: ax.nn.log_softmax(x), jax.nn.log_softmax, "real"),
    "logsumexp": (lambda x: ax.nn.logsumexp(x), jax.nn.logsumexp, "real"),
    "logsumexp_axis": (lambda x: ax.nn.logsumexp(x, axis=1, keepdims=True),
                       lambda x: jax.nn.logsumexp(x, axis=1, keepdims=True), "real"),
}


def _jitted(fn, *operands):
    """``jax.jit(fn)(*operands)`` as NumPy arrays: one XLA program (eagerly, each operation of a
    composite compiles on its own), the operands passed as the host arrays they are (``jnp.asarray``
    of a host array compiles a program of its own per shape and dtype)."""
    return jax.tree_util.tree_map(np.asarray, jax.jit(fn)(*operands))


#: JAX's side of each check is made once per module (functools.cache: every executor's item reuses
#: it), all the cases of a test in one jax.jit program


def _input(domain, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if domain == "unit":
        return rng.uniform(-0.95, 0.95, size=(3, 5)).astype(dtype)
    x = rng.normal(scale=2.0, size=(3, 5)).astype(dtype)
    x[0, 0] = 0.3  # away from relu's kink for the finite differences
    return x


#: every function in both dtypes on every executor; on the jax executor (new XLA programs per function
#: and dtype) the ci profile takes each function in one dtype, in turn (tests/covering.py)
@pytest.mark.parametrize("executor, dtype, name", covering.on_executors(
    [(d, n) for d in ["float32", "float64"] for n in sorted(UNARY)], axis=0), indirect=["executor"])
def test_values_and_dtypes_match_jax(executor, name, dtype):
    fn, ref, domain = UNARY[name]
    x = _input(domain, dtype)
    got = fn(ax.asarray(x))
    want = _values_references()[f"{name}/{dtype}"]
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got), want, **TOL[np.dtype(dtype)])


@functools.cache
def _values_references():
    """JAX's value of every function of UNARY on its input in both dtypes, by "name/dtype"."""
    operands = {f"{n}/{d}": _input(UNARY[n][2], d) for n in UNARY for d in ("float32", "float64")}
    return _jitted(lambda xs: {k: UNARY[k.split("/")[0]][1](x) for k, x in xs.items()}, operands)


@functools.cache
def _gradients_references():
    """JAX's gradient of sum(f(v) * sin(v)) of every function of UNARY at its float64 input (seed 1), by name."""
    operands = {n: _input(UNARY[n][2], "float64", seed=1) for n in UNARY}

    def every_function(xs):
        return {n: jax.grad(lambda v, f=UNARY[n][1]: jnp.sum(f(v) * jnp.sin(v)))(x) for n, x in xs.items()}

    return _jitted(every_function, operands)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_gradients_match_jax_and_pass_check_grads(executor, name):
    fn, ref, domain = UNARY[name]
    x = _input(domain, "float64", seed=1)
    xa = ax.asarray(x)
    got = ax.grad(lambda v: ax.sum(fn(v) * ax.sin(v)))(xa)
    want = _gradients_references()[name]
    np.testing.assert_allclose(to_numpy(got), np.asarray(want), rtol=1e-9, atol=1e-12)
    ax.check_grads(fn, (xa,), order=2)


def test_stable_for_large_inputs_without_warnings(executor):
    big = ax.asarray([-800.0, -30.0, 0.0, 30.0, 800.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning would fail the test
        s = to_numpy(ax.nn.sigmoid(big))
        ls = to_numpy(ax.nn.log_sigmoid(big))
        sp = to_numpy(ax.nn.softplus(big))
        # five values each, as big (one shape: the jax executor compiles each operation once per shape)
        lse = to_numpy(ax.nn.logsumexp(ax.asarray([1e4, -1e4, 1e4, -1e4, -1e4])))
        lse_neg = to_numpy(ax.nn.logsumexp(ax.asarray([-1e4, -1e4, -1e5, -1e5, -1e5])))
        g = to_numpy(ax.grad(lambda v: ax.sum(ax.nn.sigmoid(v) + ax.nn.softplus(v)))(big))
        sm = to_numpy(ax.nn.softmax(ax.asarray([1e4, 0.0, -1e4, 0.0, -1e4])))
    np.testing.assert_allclose(s, [0.0, 9.357622968840175e-14, 0.5, 1 - 9.357622968840175e-14, 1.0], rtol=1e-12)
    np.testing.assert_allclose(ls, [-800.0, -30.000000000000092, -np.log(2), -9.357622968839736e-14, 0.0],
                               rtol=1e-12)
    np.testing.assert_allclose(sp, [0.0, 9.357622968839736e-14, np.log(2), 30.000000000000092, 800.0], rtol=1e-12)
    np.testing.assert_allclose(lse, 1e4 + np.log(2), rtol=1e-15)
    np.testing.assert_allclose(lse_neg, -1e4 + np.log(2), rtol=1e-15)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(sm, [1.0, 0.0, 0.0, 0.0, 0.0])


def _logsumexp_b_operands():
    return np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]]), np.array([[1.0, -2.0, 0.5], [2.0, 1.0, 0.25]])


@functools.cache
def _logsumexp_b_references():
    """JAX's logsumexp of a weighted by b along axis 1 with its sign, and the gradient of the sum of
    logsumexp along axis 0 weighted by |b|."""
    return _jitted(lambda u, c: (jax.nn.logsumexp(u, axis=1, b=c, return_sign=True),
                                 jax.grad(lambda v: jnp.sum(jax.nn.logsumexp(v, axis=0, b=jnp.abs(c))))(u)),
                   *_logsumexp_b_operands())


def test_logsumexp_b_and_return_sign(executor):
    a, b = _logsumexp_b_operands()
    val, sign = ax.nn.logsumexp(ax.asarray(a), axis=1, b=ax.asarray(b), return_sign=True)
    (jval, jsign), jg = _logsumexp_b_references()
    np.testing.assert_allclose(to_numpy(val), np.asarray(jval), rtol=1e-12)
    np.testing.assert_array_equal(to_numpy(sign), np.asarray(jsign))
    plain = to_numpy(ax.nn.logsumexp(ax.asarray(a), axis=1, b=ax.asarray(b)))
    assert np.isnan(plain[0]) and np.isclose(plain[1], np.asarray(jval)[1])
    g = ax.grad(lambda v: ax.sum(ax.nn.logsumexp(v, axis=0, b=ax.asarray(np.abs(b)))))(ax.asarray(a))
    np.testing.assert_allclose(to_numpy(g), np.asarray(jg), rtol=1e-12)
    empty = ax.nn.logsumexp(ax.zeros((2, 0)), axis=1)
    np.testing.assert_array_equal(to_numpy(empty), [-np.inf, -np.inf])


def _softmax_where_operands():
    return (np.random.default_rng(3).normal(size=(2, 4)),
            np.array([[True, False, True, True], [False, True, True, False]]))


@functools.cache
def _softmax_where_references():
    """JAX's softmax and log_softmax of x over the elements where the mask is true."""
    return _jitted(lambda v, m: (jax.nn.softmax(v, where=m), jax.nn.log_softmax(v, where=m)),
                   *_softmax_where_operands())


def test_softmax_where_matches_jax(executor):
    x, mask = _softmax_where_operands()
    want, want_log = _softmax_where_references()
    got = ax.nn.softmax(ax.asarray(x), where=ax.asarray(mask))
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-12, atol=1e-15)
    got = ax.nn.log_softmax(ax.asarray(x), where=ax.asarray(mask))
    np.testing.assert_allclose(to_numpy(got), want_log, rtol=1e-12)


ONE_HOT_AXES = (-1, 0, 1)


@functools.cache
def _one_hot_references():
    """JAX's one_hot of 4 classes of [[0, 2], [5, -1]] along each of ONE_HOT_AXES (two out of range)."""
    x = np.array([[0, 2], [5, -1]])
    return x, _jitted(lambda v: [jax.nn.one_hot(v, 4, axis=a) for a in ONE_HOT_AXES], x)


def test_one_hot_matches_jax(executor):
    x, wants = _one_hot_references()
    for axis, want in zip(ONE_HOT_AXES, wants):
        got = ax.nn.one_hot(ax.asarray(x), 4, axis=axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(to_numpy(got), want)
    assert ax.nn.one_hot(ax.asarray([1]), 3, dtype=ax.float32).dtype == ax.float32
    with pytest.raises(TypeError, match="one_hot"):
        ax.nn.one_hot(ax.asarray([1.5]), 3)


@functools.cache
def _relu_gradient_reference():
    """JAX's gradient of sum(relu(v)) at [-1, 0, 2] (0 at the kink)."""
    return _jitted(jax.grad(lambda v: jnp.sum(jax.nn.relu(v))), np.array([-1.0, 0.0, 2.0]))


def test_relu_keeps_integers_and_has_zero_derivative_at_zero(executor):
    assert ax.nn.relu(ax.asarray([-2, 0, 3])).dtype == ax.int64
    np.testing.assert_array_equal(to_numpy(ax.nn.relu(ax.asarray([-2, 0, 3]))), [0, 0, 3])
    g = ax.grad(lambda v: ax.sum(ax.nn.relu(v)))(ax.asarray([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(to_numpy(g), _relu_gradient_reference())


@functools.cache
def _erfinv_reference():
    """JAX's erfinv of linspace(-0.9, 0.9, 6) as 2x3."""
    return _jitted(jss.erfinv, np.linspace(-0.9, 0.9, 6).reshape(2, 3))


def test_erf_family_edges_and_jit_vmap(executor):
    x = ax.asarray([-np.inf, -6.0, 0.0, 6.0, np.inf])
    np.testing.assert_allclose(to_numpy(ax.nn.erf(x)), [-1, -1, 0, 1, 1])
    np.testing.assert_allclose(to_numpy(ax.nn.erfc(ax.asarray([10.0]))), [2.088487583762545e-45], rtol=1e-10)
    inv = to_numpy(ax.nn.erfinv(ax.asarray([-1.0, 1.0, 1.5])))
    assert inv[0] == -np.inf and inv[1] == np.inf and np.isnan(inv[2])
    assert ax.nn.erf(ax.asarray([1, 2])).dtype == ax.float64  # integers promote, as in JAX
    v = ax.asarray(np.linspace(-0.9, 0.9, 6).reshape(2, 3))
    np.testing.assert_allclose(to_numpy(ax.jit(ax.nn.erfinv)(v)), _erfinv_reference(), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(ax.vmap(ax.nn.erf)(v)), to_numpy(ax.nn.erf(v)), rtol=1e-15)
    with pytest.raises(TypeError, match="erf"):
        ax.nn.erf(ax.asarray([1j]))



def test_rules_cover_the_new_primitives():
    from arrayx.transforms.rules import coverage

    c = coverage()
    for name in ("erf", "erfc", "erfinv"):
        assert name not in c["jvp"] and name not in c["abstract_eval"] and name not in c["batch_loop"]
