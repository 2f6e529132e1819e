"""The kernel's gradient of a convolution whose window is large (the cotangent's spatial size) and whose
output positions are few (the kernel's taps): the host path (``executors/numpy/lax.py``) takes one GEMM
per input feature and sums them (``_by_feature``).  Its values against ``jax.grad`` on every executor,
against the NumPy executor's under jit, and against the one-GEMM path it replaced (``_by_output_position``),
in blocks of features and with groups, strides and dilations."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.executors.numpy import lax as host
from conformance import profile
from tests.conftest import ALL_EXECUTORS, to_numpy

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield


# name -> (lhs shape, rhs shape, keyword arguments of conv_general_dilated); every kernel gradient here
# takes the per-feature path (``host.per_feature``: a window of 256 taps or more, or of 64 or more with
# a small product), "dilated" by its window (336 taps), the others by their product
CASES = {
    "cnn_first_layer": ((4, 1, 12, 12), (5, 1, 3, 3), dict(window_strides=(1, 1), padding="SAME")),
    "features_valid": ((3, 4, 10, 9), (6, 4, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    "groups_strided": ((2, 4, 17, 16), (6, 2, 3, 3), dict(window_strides=(2, 2), padding="SAME",
                                                          feature_group_count=2)),
    "dilated": ((2, 3, 14, 13), (2, 3, 3, 2), dict(window_strides=(1, 1), padding=((1, 2), (0, 1)),
                                                   lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    "nhwc": ((2, 11, 12, 3), (3, 3, 3, 4), dict(window_strides=(1, 1), padding="SAME",
                                                dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "conv1d": ((3, 2, 80), (4, 2, 5), dict(window_strides=(1,), padding="VALID")),
}


def _operands(case, dtype="float64"):
    lshape, rshape, kw = CASES[case]
    rng = np.random.default_rng(7)
    return rng.normal(size=lshape).astype(dtype), rng.normal(size=rshape).astype(dtype), kw


def _loss(conv, square_sum, kw):
    return lambda a, b: square_sum(conv(a, b, **kw))


_JAX_GRADS: dict = {}


def _jax_grads(case):
    """``jax.grad`` of every case's loss, from one ``jax.jit`` program for all of them (made once per
    module; the same derivatives as one eager ``jax.grad`` per case and executor, one compile)."""
    if not _JAX_GRADS:
        names = sorted(CASES)
        operands = [_operands(c)[:2] for c in names]

        def every_case(ops):
            return [jax.grad(_loss(jax.lax.conv_general_dilated, lambda v: jnp.sum(jnp.sin(v) ** 2), CASES[c][2]),
                             argnums=(0, 1))(jnp.asarray(x), jnp.asarray(w)) for c, (x, w) in zip(names, ops)]

        grads = jax.jit(every_case)(operands)
        _JAX_GRADS.update({c: tuple(np.asarray(g) for g in gs) for c, gs in zip(names, grads)})
    return _JAX_GRADS[case]


def _on_executors(cases: list) -> list:
    """``executor, case`` parameters: every case on every executor, except the jax executor in the ci
    profile, which takes every other case (cnn_first_layer, dilated, groups_strided): there the kernel's
    gradient is XLA's convolution, not the host path this file is about (about a dozen new XLA
    programs per case; test_lax checks the jax executor's conv gradients too), where numpy, numba and
    dask run every case through the per-feature GEMMs; all cases everywhere in the deep profile."""
    params = []
    for ex in ALL_EXECUTORS:
        own = cases[::2] if ex == "jax" and profile.current().sampled else cases
        params.extend(pytest.param(ex, c, id=f"{ex}-{c}") for c in own)
    return params


@pytest.mark.parametrize("executor, case", _on_executors(sorted(CASES)), indirect=["executor"])
def test_kernel_gradient_matches_jax(executor, case):
    x, w, kw = _operands(case)
    got = ax.grad(_loss(ax.lax.conv_general_dilated, lambda v: ax.sum(ax.sin(v) ** 2), kw), argnums=(0, 1))(
        ax.asarray(x), ax.asarray(w))
    want = _jax_grads(case)
    for g, h in zip(got, want):
        np.testing.assert_allclose(to_numpy(g), np.asarray(h), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", ["cnn_first_layer", "groups_strided"])
def test_kernel_gradient_under_jit_matches_the_numpy_executor(executor, case):
    x, w, kw = _operands(case, "float32")
    grad = ax.jit(ax.grad(_loss(ax.lax.conv_general_dilated, lambda v: ax.sum(ax.maximum(v, 0.0) ** 2), kw),
                          argnums=1))
    got = grad(ax.asarray(x), ax.asarray(w))
    with ax.use_executor("numpy"):
        want = grad(ax.asarray(x), ax.asarray(w))
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=2e-5, atol=2e-5)


def _kernel_gradient_conv(case, dtype):
    """The kernel's gradient of ``case`` for a random cotangent: lax/_conv.py's rule (the input correlated
    with the cotangent, one ``conv``) run eagerly on the NumPy executor."""
    from arrayx.lax import _conv

    x, w, kw = _operands(case, dtype)
    dn = tuple(_conv.conv_dimension_numbers(x.shape, w.shape, kw.get("dimension_numbers")))
    params = _params(x, w, kw, _conv.ConvDimensionNumbers(*dn))
    out = host.conv(x, w, dimension_numbers=dn, **params)
    ct = np.random.default_rng(8).normal(size=out.shape).astype(dtype)
    with ax.use_executor("numpy"):
        dw = _conv._rhs_transpose(ax.asarray(ct), ax.asarray(x), ax.asarray(w), dimension_numbers=dn, **params)
    return to_numpy(dw)


def _params(x, w, kw, dn):
    from arrayx.lax import _conv

    d = x.ndim - 2
    strides = tuple(kw["window_strides"])
    rd = tuple(kw.get("rhs_dilation", (1,) * d))
    window = tuple((k - 1) * r + 1 for k, r in zip(_conv._take(w.shape, dn.rhs_spec)[2:], rd))
    pads = _conv.padding_pairs("test", kw["padding"], _conv._take(x.shape, dn.lhs_spec)[2:], window, strides)
    return dict(strides=strides, padding=pads, lhs_dilation=tuple(kw.get("lhs_dilation", (1,) * d)),
                rhs_dilation=rd, groups=kw.get("feature_group_count", 1))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("budget", ["whole", "one_feature"])
def test_per_feature_path_matches_the_one_gemm_path(case, dtype, budget, monkeypatch):
    """The per-feature GEMMs (all features in one block, or one feature per block: the im2col budget
    lowered) against the single GEMM over features x window, for every case."""
    if budget == "one_feature":
        monkeypatch.setattr(host, "COLUMN_BYTES", 1)
    got = _kernel_gradient_conv(case, dtype)
    monkeypatch.setattr(host, "per_feature", lambda *_: False)  # every kernel gradient by output position
    want = _kernel_gradient_conv(case, dtype)
    tol = dict(rtol=2e-5, atol=2e-4) if dtype == "float32" else dict(rtol=1e-12, atol=1e-11)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_case_takes_the_per_feature_path(case, monkeypatch):
    calls = []
    real = host._by_feature
    monkeypatch.setattr(host, "_by_feature", lambda *a: calls.append(1) or real(*a))
    _kernel_gradient_conv(case, "float64")
    assert calls


def test_which_kernel_gradients_go_by_feature():
    assert host.per_feature(784, 9, 16)  # bench_cnn's first layer
    assert host.per_feature(256, 4096, 512)  # a large window, whatever the product
    assert host.per_feature(64, 32, 32) and not host.per_feature(64, 64, 32)  # a mid window: small products
    assert not host.per_feature(196, 144, 32) and not host.per_feature(9, 1, 1)


def test_the_cnn_kernel_gradient_takes_the_per_feature_path(monkeypatch):
    """bench_cnn.py's first layer (64 images, 16 kernels of 3x3 over 28x28): its kernel gradient's window
    is the 28x28 cotangent, so the per-feature GEMMs run, one per image (the features of the correlation)."""
    calls = []
    real = host._by_feature

    def spy(m, as_strided, x, rhs, *args):
        calls.append((tuple(x.shape), tuple(rhs.shape)))
        return real(m, as_strided, x, rhs, *args)

    monkeypatch.setattr(host, "_by_feature", spy)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 1, 28, 28)).astype(np.float32)
    w = rng.normal(size=(16, 1, 3, 3)).astype(np.float32)
    with ax.use_executor("numpy"):
        dw = ax.grad(lambda w: ax.sum(ax.lax.conv(ax.asarray(x), w, (1, 1), "SAME") ** 2))(ax.asarray(w))
    assert calls == [((1, 64, 30, 30), (16, 64, 28, 28))]
    # w goes in as the host array (jnp.asarray of it would compile a program of its own)
    want = jax.jit(jax.grad(lambda w: jnp.sum(jax.lax.conv(jnp.asarray(x), w, (1, 1), "SAME") ** 2)))(w)
    np.testing.assert_allclose(to_numpy(dw), np.asarray(want), rtol=1e-4, atol=1e-2)
