"""Derivatives of ``linalg.eig`` and ``linalg.eigvals`` (general, non-symmetric matrices).

The results are complex, even for real input, and each eigenvector's phase is a
convention (LAPACK makes its largest entry real), so most cases reduce them to real
quantities that do not depend on it: real/imaginary parts of eigenvalues, their
product, ``|v|`` (unit-norm columns) and ``v / v[k]`` for a fixed row ``k``.
Inputs have well-separated eigenvalues: a random matrix plus a diagonal with distinct
entries (real spectrum), or plus rotation blocks (complex-conjugate pairs).

Each case is checked against finite differences (order 2, forward and reverse), against
``jax.grad`` of the same function, and on every executor against the NumPy executor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import arrayx as ax


# -- inputs -------------------------------------------------------------------------------------------------


def _real_spectrum(seed, n=4, batch=()):
    rng = np.random.default_rng(seed)
    return 0.3 * rng.standard_normal(batch + (n, n)) + np.diag(np.arange(1.0, n + 1.0))


def _complex_pairs(seed, n=4, batch=()):
    """Eigenvalues near 1 +- 2i, 3 +- 1i (conjugate pairs of a real matrix)."""
    rng = np.random.default_rng(seed)
    base = np.zeros((n, n))
    for k, (re, im) in enumerate([(1.0, 2.0), (3.0, 1.0)][: n // 2]):
        base[2 * k: 2 * k + 2, 2 * k: 2 * k + 2] = [[re, -im], [im, re]]
    return 0.3 * rng.standard_normal(batch + (n, n)) + base


def _to_complex(m, x):
    """A complex matrix with a complex spectrum, made from a real one (the inputs stay real)."""
    return m.astype(x, m.complex128) + 0.5j * m.astype(m.matrix_transpose(x), m.complex128)


# -- functions -------------------------------------------------------------------------------------------------


def _eig(m, x):
    """(eigenvalues, eigenvectors); on JAX through the lax function that can differentiate eigenvectors."""
    if m is ax:
        return tuple(ax.linalg.eig(x))
    import jax

    w, v = jax.lax.linalg.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


def _parts(m, z):
    return m.stack([m.real(z), m.imag(z)])


def _ratio(m, v, row=0):
    """v / v[row] per column: independent of each column's scale and phase."""
    return v / v[..., row: row + 1, :]


@dataclass(frozen=True)
class EigCase:
    name: str
    fn: Callable  # fn(m, x) -> real array, m = arrayx or jax.numpy
    make: Callable  # make() -> the real input
    needs_eigvecs: bool = False  # JAX needs lax.linalg.eig(enable_eigvec_derivs=True)


CASES = [
    EigCase("eigvals_real_squared", lambda m, x: m.sum(m.real(m.linalg.eigvals(x)) ** 2),
            lambda: _real_spectrum(0)),
    EigCase("eigvals_parts", lambda m, x: _parts(m, m.linalg.eigvals(x)), lambda: _complex_pairs(1)),
    EigCase("eigvals_product", lambda m, x: m.real(m.prod(m.linalg.eigvals(x))), lambda: _complex_pairs(2)),
    EigCase("eigvals_imag_squared", lambda m, x: m.sum(m.imag(m.linalg.eigvals(x)) ** 2),
            lambda: _complex_pairs(3)),
    EigCase("eigvals_batched", lambda m, x: _parts(m, m.linalg.eigvals(x)), lambda: _complex_pairs(4, batch=(2,))),
    EigCase("eigvals_complex_input", lambda m, x: _parts(m, m.linalg.eigvals(_to_complex(m, x))),
            lambda: _real_spectrum(5, n=3)),
    EigCase("eig_values", lambda m, x: _parts(m, _eig(m, x)[0]), lambda: _complex_pairs(6), True),
    EigCase("eig_vectors_abs_real_spectrum", lambda m, x: m.abs(_eig(m, x)[1]), lambda: _real_spectrum(7), True),
    EigCase("eig_vectors_abs", lambda m, x: m.abs(_eig(m, x)[1]), lambda: _complex_pairs(8), True),
    EigCase("eig_vectors_ratio", lambda m, x: _parts(m, _ratio(m, _eig(m, x)[1])), lambda: _complex_pairs(9), True),
    EigCase("eig_vectors_batched", lambda m, x: m.abs(_eig(m, x)[1]), lambda: _complex_pairs(10, batch=(2,)), True),
    EigCase("eig_complex_input", lambda m, x: _parts(m, _ratio(m, _eig(m, _to_complex(m, x))[1], row=1)),
            lambda: _real_spectrum(11, n=3), True),
    EigCase("eig_complex_input_abs", lambda m, x: m.abs(_eig(m, _to_complex(m, x))[1]),
            lambda: _real_spectrum(12, n=3), True),
]
IDS = [c.name for c in CASES]
EXECUTOR_CASES = [c for c in CASES if c.name in ("eigvals_parts", "eig_vectors_abs", "eig_complex_input")]


def _weights(out, seed=1):
    return np.random.default_rng(seed).standard_normal(np.shape(np.asarray(out)))


def _loss(m, case, weights):
    return lambda x: m.sum(case.fn(m, x) * m.asarray(weights))


def _numpy_reference(case):
    with ax.use_executor("numpy"):
        x = ax.asarray(case.make())
        weights = _weights(case.fn(ax, x))
        return x, weights, np.asarray(ax.grad(_loss(ax, case, weights))(x))


# -- tests ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_check_grads(case):
    with ax.use_executor("numpy"):
        ax.check_grads(lambda x: case.fn(ax, x), (ax.asarray(case.make()),), order=2, modes=("fwd", "rev"))


_JAX_GRADS: dict = {}


def _jax_grads() -> dict:
    """{case name: jax.grad of its loss (float64), or why JAX cannot differentiate it}: ONE jax.jit
    program whose outputs are every case's gradient (each reads its own input only: the values of a
    program per case), once per module; a case whose jax.grad fails to trace is left out of it (older
    JAX: no eigenvector derivatives), and if the whole program fails each case is compiled alone."""
    if _JAX_GRADS:
        return _JAX_GRADS
    import jax
    import jax.numpy as jnp

    grads = {case.name: jax.grad(_loss(jnp, case, _numpy_reference(case)[1])) for case in CASES}
    failed = {}

    def every_case(xs):
        out = {}
        for name, x in xs.items():
            try:
                out[name] = grads[name](x)
            except (NotImplementedError, TypeError) as e:
                failed[name] = f"jax.grad cannot differentiate {name}: {type(e).__name__}: {e}"
        return out

    with jax.enable_x64(True):
        xs = {case.name: jnp.asarray(np.asarray(case.make())) for case in CASES}
        try:
            got = jax.jit(every_case)(xs)
        except Exception:  # each on its own
            failed.clear()
            got = {}
            for name, x in xs.items():
                try:
                    got[name] = jax.jit(grads[name])(x)
                except (NotImplementedError, TypeError) as e:
                    failed[name] = f"jax.grad cannot differentiate {name}: {type(e).__name__}: {e}"
        _JAX_GRADS.update({name: np.asarray(g) for name, g in got.items()})
    _JAX_GRADS.update(failed)
    return _JAX_GRADS


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_jax(case):
    pytest.importorskip("jax")
    _, _, grad = _numpy_reference(case)
    expected = _jax_grads()[case.name]
    if isinstance(expected, str):
        pytest.skip(expected)
    np.testing.assert_allclose(grad, expected, rtol=1e-8, atol=1e-10, err_msg=case.name)


@pytest.mark.parametrize("complex_input", [False, True], ids=["real", "complex"])
def test_eigenvector_tangent_follows_lapack_phase(complex_input):
    """The raw tangent of V (not phase-invariant) matches finite differences of NumPy's eig."""
    rng = np.random.default_rng(20)
    a, da = _complex_pairs(21), rng.standard_normal((4, 4))
    if complex_input:
        a, da = a + 0.3j * rng.standard_normal((4, 4)), da + 1j * rng.standard_normal((4, 4))
    with ax.use_executor("numpy"):
        (w, v), (tw, tv) = ax.jvp(lambda x: tuple(ax.linalg.eig(x)), (ax.asarray(a),), (ax.asarray(da),))
    eps = 1e-6
    plus, minus = np.linalg.eig(a + eps * da), np.linalg.eig(a - eps * da)
    np.testing.assert_allclose(np.asarray(tw), (plus[0] - minus[0]) / (2 * eps), atol=1e-7)
    np.testing.assert_allclose(np.asarray(tv), (plus[1] - minus[1]) / (2 * eps), atol=1e-7)
    # unit-norm columns: Re(v_i^H dv_i) = 0
    v, tv = np.asarray(v), np.asarray(tv)
    np.testing.assert_allclose(np.real(np.sum(np.conj(v) * tv, axis=0)), 0.0, atol=1e-12)


def test_gradient_dtypes():
    """Real input -> real gradient (the complex tangent's real part); complex input -> complex gradient."""
    a = _complex_pairs(30)
    with ax.use_executor("numpy"):
        real_grad = ax.grad(lambda x: ax.sum(ax.abs(ax.linalg.eig(x)[1])))(ax.asarray(a))
        complex_grad = ax.grad(lambda z: ax.sum(ax.real(ax.linalg.eigvals(z))))(ax.asarray(a + 0.5j * a.T))
    assert real_grad.dtype == ax.float64
    assert complex_grad.dtype == ax.complex128
    # d sum(eigenvalues) = d trace: the identity (conjugated by the complex convention: still real)
    np.testing.assert_allclose(np.asarray(complex_grad), np.eye(4), atol=1e-10)


@pytest.mark.parametrize("case", EXECUTOR_CASES, ids=[c.name for c in EXECUTOR_CASES])
def test_executor_matches_numpy(case, executor):
    if executor == "numpy":
        pytest.skip("the reference")
    x_np, weights, expected = _numpy_reference(case)
    x = ax.asarray(np.asarray(x_np))
    loss = _loss(ax, case, weights)
    try:
        loss(x)
    except (NotImplementedError, TypeError) as e:
        pytest.skip(f"{executor} cannot run {case.name} forward: {e}")
    grad = ax.grad(loss)(x)
    assert grad.executor == executor
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-8, atol=1e-10, err_msg=case.name)
