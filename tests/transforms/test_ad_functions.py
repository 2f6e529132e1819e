"""Gradients of the table's derivative examples (``conformance/differential/table/derivatives.py``):

- against finite differences (``check_grads``, order 2, forward and reverse mode);
- against ``jax.grad`` of the same function written with ``jax.numpy`` (skipped without JAX);
- on every executor, against the NumPy executor.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx import pytree
from conformance import profile
from conformance.differential.table.derivatives import CASES, make_inputs
from tests.conftest import ALL_EXECUTORS

IDS = [c.name for c in CASES]

# The executor sweep covers every category in the ci profile; the deep profile (ARRAYX_TEST_PROFILE=deep)
# runs every case on every executor (minutes: the JAX executor compiles each primitive on first use).
_EXECUTOR_SUBSET = {
    "sin", "log1p", "tanh", "divide", "pow", "maximum", "clip_array_bounds", "where", "complex_abs",
    "relu_mlp", "sum_axis", "prod", "var", "max", "cumulative_sum", "broadcast_to", "concat", "stack",
    "reshape", "permute_dims", "repeat", "tile", "getitem_slice", "getitem_intarray", "take_along_axis",
    "at_set", "at_add", "sort", "diff", "triu", "matmul", "matmul_vec_left", "tensordot", "vecdot",
    "inv", "solve", "cholesky", "eigh_values", "svdvals", "vector_norm_axis", "fft", "rfft", "irfft",
}
FULL = not profile.current().sampled
EXECUTOR_CASES = [c for c in CASES if FULL or c.name in _EXECUTOR_SUBSET]
#: executors that take every other case of the subset in the ci profile, in turn along it: eagerly on
#: the jax executor each operation of the forward and backward pass compiles an XLA program (shape,
#: dtype), about 80% of this test's CPU time; the derivative rules run on every case of the subset on
#: the other executors (and against finite differences and jax.grad above)
ROTATED = ("jax",)
#: (numpy, the reference, has no item)
EXECUTOR_PARAMS = [pytest.param(ex, c, id=f"{ex}-{c.name}") for ex in ALL_EXECUTORS if ex != "numpy"
                   for i, c in enumerate(EXECUTOR_CASES) if FULL or ex not in ROTATED or i % 2 == 0]


def _weights(out, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.shape(np.asarray(o))) for o in pytree.leaves(out)]


def _loss(m, case, weights, leaves_of):
    def loss(*args):
        out = case.fn(m, *args)
        total = 0.0
        for o, w in zip(leaves_of(out), weights):
            total = total + m.sum(o * m.asarray(w))
        return total

    return loss


def _ax_loss(case, weights):
    return _loss(ax, case, weights, pytree.leaves)


def _numpy_reference(case):
    with ax.use_executor("numpy"):
        xs = [ax.asarray(x) for x in make_inputs(case)]
        out = case.fn(ax, *xs)
        weights = _weights(out)
        grads = ax.grad(_ax_loss(case, weights), argnums=tuple(range(len(xs))))(*xs)
        return xs, weights, [np.asarray(g) for g in grads]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_check_grads(case):
    with ax.use_executor("numpy"):
        xs = [ax.asarray(x) for x in make_inputs(case)]
        tol = None if case.tol == 1e-6 else case.tol  # None: check_grads' defaults for the dtype
        ax.check_grads(lambda *a: case.fn(ax, *a), xs, order=case.order, modes=case.modes, atol=tol, rtol=tol)


_JAX_GRADS: dict = {}


def _jax_grads() -> dict:
    """{case name: jax.grad of its loss written with jax.numpy (float64), as NumPy arrays, or the
    reason JAX cannot differentiate it}: ONE jax.jit program whose outputs are every case's
    gradients (each output reads its own inputs only: the values of a program per case, in about
    two thirds of the CPU time), computed once per module; a case whose jax.grad fails to trace is
    left out of it, and if the whole program fails, each case is compiled on its own."""
    if _JAX_GRADS:
        return _JAX_GRADS
    import jax
    import jax.numpy as jnp

    cases = []
    for case in CASES:
        xs, weights, _ = _numpy_reference(case)
        cases.append((case, jax.grad(_loss(jnp, case, weights, jax.tree.leaves), argnums=tuple(range(len(xs)))),
                      [np.asarray(x) for x in xs]))
    failed = {}

    def every_case(argss):
        out = {}
        for (case, grad, _), args in zip(cases, argss):
            try:
                out[case.name] = grad(*args)
            except Exception as e:  # a function JAX cannot differentiate this way
                failed[case.name] = f"jax.grad fails on {case.name}: {type(e).__name__}"
        return out

    with jax.enable_x64(True):
        argss = [[jnp.asarray(x) for x in xs] for _, _, xs in cases]
        try:
            got = jax.jit(every_case)(argss)
        except Exception:  # one case that traces but does not compile: each on its own
            failed.clear()
            got = {}
            for (case, grad, _), args in zip(cases, argss):
                try:
                    got[case.name] = jax.jit(grad)(*args)
                except Exception as e:
                    failed[case.name] = f"jax.grad fails on {case.name}: {type(e).__name__}"
        _JAX_GRADS.update({name: [np.asarray(g) for g in gs] for name, gs in got.items()})
    _JAX_GRADS.update(failed)
    return _JAX_GRADS


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_jax(case):
    pytest.importorskip("jax")
    _, _, grads = _numpy_reference(case)
    expected = _jax_grads()[case.name]
    if isinstance(expected, str):
        pytest.skip(expected)
    assert len(expected) == len(grads), case.name
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8, err_msg=case.name)


@pytest.mark.parametrize("executor, case", EXECUTOR_PARAMS, indirect=["executor"])
def test_executor_matches_numpy(executor, case):
    if executor in case.executors:
        pytest.skip(f"{case.name} is not supported by {executor}")
    xs_np, weights, expected = _numpy_reference(case)
    xs = [ax.asarray(np.asarray(x)) for x in xs_np]
    loss = _ax_loss(case, weights)
    try:
        loss(*xs)
    except (NotImplementedError, TypeError) as e:
        pytest.skip(f"{executor} cannot run {case.name} forward: {e}")
    grads = ax.grad(loss, argnums=tuple(range(len(xs))))(*xs)
    for g, e in zip(grads, expected):
        assert g.executor == executor
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-6, atol=1e-9, err_msg=case.name)


def test_every_differentiable_function_of_the_table_has_a_derivative_example():
    """Each primitive of a table function with a (nonzero) derivative rule is staged by some derivative
    example, so its rule meets finite differences and jax.grad."""
    from arrayx.core.primitives import DataDependentShapeError, primitives
    from conformance.differential import functions as F

    staged = set()
    for case in CASES:
        xs = [ax.asarray(x) for x in make_inputs(case)]
        try:
            staged |= {e.prim.name for e in ax.make_graph(lambda *a, c=case: c.fn(ax, *a))(*xs).equations}
        except DataDependentShapeError:  # a boolean mask: staged by its other examples
            pass
    names = {F.standard_name(f).split(".")[-1] for f in F.TABLE}
    differentiable = {n for n, p in primitives.items()
                      if n in names and p.jvp is not None and not p.jvp.__name__.endswith("_jvp_zero")}
    assert differentiable - staged == set(), sorted(differentiable - staged)


# -- vector_norm where the sum of powers underflows or overflows ---------------------------------------

@pytest.mark.parametrize("ord", [2, 3, 1.5])
def test_norm_gradient_where_the_sum_of_powers_underflows(executor, ord):
    # NumPy's 2-norm of [-4.57e-162] is 4.45e-162 (x**2 is subnormal): |x| / ||x|| was 1.027, not 1
    tiny = ax.asarray(np.asarray(-4.565061582088917e-162))
    assert float(ax.grad(lambda v: ax.linalg.vector_norm(v, ord=ord))(tiny)) == -1.0
    v = np.asarray([3e-170, -4e-170])
    g = np.asarray(ax.grad(lambda u: ax.linalg.vector_norm(u, ord=ord))(ax.asarray(v)))
    want = np.sign(v) * (np.abs(v) / np.linalg.norm(v / 1e-170, ord) / 1e-170) ** (ord - 1)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    huge = np.asarray([3e200, 4e200])  # the squares overflow: the forward is inf, the gradient still exists
    g = np.asarray(ax.grad(lambda u: ax.linalg.vector_norm(u))(ax.asarray(huge)))
    np.testing.assert_allclose(g, [0.6, 0.8], rtol=1e-12)
    z = ax.grad(lambda u: ax.linalg.vector_norm(u, ord=ord))(ax.zeros(3))
    np.testing.assert_array_equal(np.asarray(z), np.zeros(3))  # 0 at 0, as before
