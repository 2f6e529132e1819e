"""The table's derivative examples: compositions of the differentiable functions, each with inputs
where its derivative exists, and their reference derivatives.

The drawn rows of the table (the category modules) compare every transform on every executor with
the same transform on the NumPy executor (``conformance.matrix``); that cannot see a derivative rule
that is wrong everywhere.  These examples pin the derivatives themselves: finite differences
(``check_grads``, order 2, forward and reverse mode) and ``jax.grad`` of the same function written
with ``jax.numpy`` (``tests/transforms/test_ad_functions.py``).

Each entry is written once against a namespace ``m`` (``arrayx`` or ``jax.numpy``, which
both follow the array API standard), with the inputs it needs:

    Case(name, fn, args)   fn(m, *arrays) -> array or tuple of arrays;
                           args: one ArgSpec per array input

The tests scalarize the output with fixed random weights (so every output element matters).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class ArgSpec:
    shape: tuple
    low: float = -2.0
    high: float = 2.0
    kind: str = "float"  # "float", "spd" (symmetric positive definite), "away0" (|x| >= low)


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    args: tuple
    executors: tuple = ()  # executors known to lack the forward function (skipped)
    tol: float = 1e-6
    order: int = 2
    modes: tuple = ("fwd", "rev")
    tags: tuple = field(default_factory=tuple)


def A(*shape, low=-2.0, high=2.0, kind="float") -> ArgSpec:
    return ArgSpec(tuple(shape), low, high, kind)


def POS(*shape, low=0.5, high=2.0) -> ArgSpec:
    return ArgSpec(tuple(shape), low, high)


def AWAY(*shape, low=0.5, high=2.0) -> ArgSpec:
    return ArgSpec(tuple(shape), low, high, "away0")


def SPD(n) -> ArgSpec:
    return ArgSpec((n, n), kind="spd")


def make_inputs(case: Case, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for spec in case.args:
        if spec.kind == "spd":
            n = spec.shape[0]
            a = rng.standard_normal((n, n))
            out.append(a @ a.T + n * np.eye(n))
        elif spec.kind == "away0":
            mag = rng.uniform(spec.low, spec.high, spec.shape)
            out.append(mag * rng.choice([-1.0, 1.0], spec.shape))
        else:
            out.append(rng.uniform(spec.low, spec.high, spec.shape))
    return out


def _sym(m, a):
    return (a + m.matrix_transpose(a)) / 2


def _c(m, x):
    """A complex array from a real one (exercises the complex rules)."""
    return m.astype(x, m.complex128) * (1.0 + 0.5j)


def _parts(m, z):
    """Real and imaginary parts of a complex result, stacked (a real output)."""
    return m.stack([m.real(z), m.imag(z)])


_UNARY = {
    "abs": AWAY(2, 3), "acos": A(2, 3, low=-0.9, high=0.9), "acosh": A(2, 3, low=1.2, high=3.0),
    "asin": A(2, 3, low=-0.9, high=0.9), "asinh": A(2, 3), "atan": A(2, 3),
    "atanh": A(2, 3, low=-0.9, high=0.9), "cos": A(2, 3), "cosh": A(2, 3), "exp": A(2, 3),
    "expm1": A(2, 3), "log": POS(2, 3), "log1p": POS(2, 3), "log2": POS(2, 3), "log10": POS(2, 3),
    "negative": A(2, 3), "positive": A(2, 3), "reciprocal": AWAY(2, 3), "sin": A(2, 3),
    "sinh": A(2, 3), "square": A(2, 3), "sqrt": POS(2, 3), "tan": A(2, 3, low=-1.2, high=1.2),
    "tanh": A(2, 3),
}

_BINARY = {
    "add": (A(2, 3), A(2, 3)), "subtract": (A(2, 3), A(2, 3)), "multiply": (A(2, 3), A(2, 3)),
    "divide": (A(2, 3), AWAY(2, 3)), "atan2": (AWAY(2, 3), AWAY(2, 3)),
    "hypot": (AWAY(2, 3), AWAY(2, 3)), "logaddexp": (A(2, 3), A(2, 3)),
    "maximum": (A(2, 3), A(2, 3)), "minimum": (A(2, 3), A(2, 3)), "pow": (POS(2, 3), A(2, 3)),
    "copysign": (AWAY(2, 3), AWAY(2, 3)), "remainder": (A(2, 3, low=0.1, high=0.9), A(2, 3, low=1.1, high=1.9)),
}


def _unary_case(name, spec):
    return Case(name, lambda m, x, _n=name: getattr(m, _n)(x), (spec,))


def _binary_case(name, specs):
    return Case(name, lambda m, x, y, _n=name: getattr(m, _n)(x, y), specs)


CASES: list[Case] = [_unary_case(n, s) for n, s in _UNARY.items()]
CASES += [_binary_case(n, s) for n, s in _BINARY.items()]
CASES += [
    # elementwise extras: broadcasting, scalars, complex
    Case("add_broadcast", lambda m, x, y: m.add(x, y), (A(2, 3), A(3))),
    Case("multiply_broadcast", lambda m, x, y: x * y, (A(4, 1), A(1, 3))),
    Case("divide_scalar_num", lambda m, x: 2.0 / x, (AWAY(3),)),
    Case("pow_scalar_exponent", lambda m, x: x ** 3, (A(3),)),
    Case("pow_scalar_base", lambda m, x: 2.0 ** x, (A(3),)),
    Case("pow_half", lambda m, x: m.pow(x, 0.5), (POS(3),)),
    Case("clip", lambda m, x: m.clip(x, -0.5, 0.7), (A(2, 5),)),
    Case("clip_array_bounds", lambda m, x, lo, hi: m.clip(x, lo, hi), (A(2, 3), A(3, low=-1.0, high=-0.2), A(3, low=0.2, high=1.0))),
    Case("where", lambda m, x, y: m.where(x > 0, x * y, m.sin(y)), (AWAY(2, 3), A(2, 3))),
    Case("where_scalar", lambda m, x: m.where(x > 0, x, 0.0), (AWAY(5),)),
    Case("complex_abs", lambda m, x: m.abs(_c(m, x) + 0.3), (A(4),)),
    Case("complex_exp", lambda m, x: _parts(m, m.exp(_c(m, x))), (A(4),)),
    Case("complex_mul_conj", lambda m, x, y: _parts(m, _c(m, x) * m.conj(_c(m, y))), (A(4), A(4))),
    Case("complex_real_imag", lambda m, x: m.real(_c(m, x)) * m.imag(_c(m, x)), (A(4),)),
    Case("relu_mlp", lambda m, x, w: m.maximum(x @ w, 0.0), (A(4, 3), AWAY(3, 5))),
    # statistical
    Case("sum", lambda m, x: m.sum(x), (A(3, 4),)),
    Case("sum_axis", lambda m, x: m.sum(x, axis=1, keepdims=True), (A(3, 4),)),
    Case("sum_axes", lambda m, x: m.sum(x, axis=(0, 2)), (A(2, 3, 2),)),
    Case("prod", lambda m, x: m.prod(x, axis=0), (A(3, 4),)),
    Case("prod_all", lambda m, x: m.prod(x), (A(2, 3, low=0.5, high=1.5),)),
    Case("mean", lambda m, x: m.mean(x, axis=-1), (A(3, 4),)),
    Case("var", lambda m, x: m.var(x, axis=0, correction=1), (A(4, 3),)),
    Case("std", lambda m, x: m.std(x), (A(3, 4),)),
    Case("max", lambda m, x: m.max(x, axis=1), (A(3, 4),)),
    Case("min", lambda m, x: m.min(x), (A(3, 4),)),
    Case("cumulative_sum", lambda m, x: m.cumulative_sum(x, axis=1), (A(3, 4),)),
    Case("cumulative_sum_initial", lambda m, x: m.cumulative_sum(x, include_initial=True), (A(5),)),
    Case("cumulative_prod", lambda m, x: m.cumulative_prod(x, axis=0), (A(4, 3),)),
    # manipulation
    Case("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), (A(3, 1),)),
    Case("broadcast_arrays", lambda m, x, y: m.broadcast_arrays(x, y), (A(3, 1), A(4))),
    Case("concat", lambda m, x, y: m.concat([x, y], axis=1), (A(2, 3), A(2, 2))),
    Case("concat_none", lambda m, x, y: m.concat([x, y], axis=None), (A(2, 3), A(4))),
    Case("stack", lambda m, x, y: m.stack([x, y], axis=1), (A(2, 3), A(2, 3))),
    Case("unstack", lambda m, x: m.unstack(x, axis=1), (A(2, 3),)),
    Case("expand_dims", lambda m, x: m.expand_dims(x, axis=1), (A(2, 3),)),
    Case("squeeze", lambda m, x: m.squeeze(x, axis=1), (A(2, 1, 3),)),
    Case("reshape", lambda m, x: m.reshape(x, (3, 2)), (A(2, 3),)),
    Case("flip", lambda m, x: m.flip(x, axis=0), (A(2, 3),)),
    Case("moveaxis", lambda m, x: m.moveaxis(x, 0, 2), (A(2, 3, 4),)),
    Case("permute_dims", lambda m, x: m.permute_dims(x, (2, 0, 1)), (A(2, 3, 4),)),
    Case("roll", lambda m, x: m.roll(x, 2, axis=1), (A(2, 5),)),
    Case("roll_flat", lambda m, x: m.roll(x, -1), (A(2, 3),)),
    Case("repeat", lambda m, x: m.repeat(x, 3, axis=1), (A(2, 3),)),
    Case("repeat_counts", lambda m, x: m.repeat(x, m.asarray([1, 0, 3]), axis=0), (A(3, 2),)),
    Case("tile", lambda m, x: m.tile(x, (2, 1, 3)), (A(2, 3),)),
    Case("matrix_transpose", lambda m, x: m.matrix_transpose(x), (A(2, 3, 4),)),
    # indexing
    Case("getitem_slice", lambda m, x: x[1:, ::2], (A(3, 5),)),
    Case("getitem_int", lambda m, x: x[1] * x[:, 0][0], (A(3, 4),)),
    Case("getitem_newaxis", lambda m, x: x[None, ..., 1], (A(3, 4),)),
    Case("getitem_intarray", lambda m, x: x[m.asarray([2, 0, 2])], (A(4, 3),)),
    Case("getitem_mask", lambda m, x: x[x > 0.3], (AWAY(4, 3),), executors=("dask",), order=1),
    Case("take", lambda m, x: m.take(x, m.asarray([1, 0, 1]), axis=1), (A(2, 3),)),
    Case("take_along_axis", lambda m, x: m.take_along_axis(x, m.argsort(x, axis=1), axis=1), (A(3, 4),)),
    Case("at_set", lambda m, x, v: x.at[1:3].set(v), (A(5), A(2))),
    Case("at_add", lambda m, x, v: x.at[m.asarray([0, 2, 2])].add(v), (A(4), A(3))),
    Case("at_multiply", lambda m, x, v: x.at[1].multiply(v), (A(4), A(low=0.5, high=1.5))),
    Case("at_max", lambda m, x, v: x.at[:2].max(v), (A(4), A(2))),
    # searching, sorting, utility, creation, data types
    Case("sort", lambda m, x: m.sort(x, axis=1), (A(3, 4),)),
    Case("sort_descending", lambda m, x: m.sort(x, axis=0, descending=True), (A(3, 4),)),
    Case("diff", lambda m, x: m.diff(x, axis=1), (A(3, 5),)),
    Case("diff_n2", lambda m, x: m.diff(x, n=2), (A(6),)),
    Case("tril", lambda m, x: m.tril(x, k=-1), (A(3, 4),)),
    Case("triu", lambda m, x: m.triu(x, k=1), (A(4, 3),)),
    Case("astype_f32", lambda m, x: m.astype(m.astype(x, m.float32), m.float64) * x, (A(3),), tol=2e-3, order=1),
    Case("zeros_like_mix", lambda m, x: m.zeros_like(x) + m.ones_like(x) * x, (A(3),)),
    # linear algebra
    Case("matmul", lambda m, x, y: m.matmul(x, y), (A(2, 3), A(3, 4))),
    Case("matmul_vec_right", lambda m, x, y: x @ y, (A(2, 3), A(3))),
    Case("matmul_vec_left", lambda m, x, y: x @ y, (A(3), A(3, 4))),
    Case("matmul_dot", lambda m, x, y: x @ y, (A(3), A(3))),
    Case("matmul_batched", lambda m, x, y: x @ y, (A(2, 2, 3), A(3, 2))),
    Case("matmul_vec_batched", lambda m, x, y: x @ y, (A(3), A(2, 3, 2))),
    Case("tensordot", lambda m, x, y: m.tensordot(x, y, axes=([0, 2], [1, 0])), (A(2, 3, 4), A(4, 2, 5))),
    Case("tensordot_int", lambda m, x, y: m.tensordot(x, y, axes=1), (A(2, 3), A(3, 2))),
    Case("vecdot", lambda m, x, y: m.vecdot(x, y), (A(2, 3), A(2, 3))),
    Case("vecdot_complex", lambda m, x, y: _parts(m, m.vecdot(_c(m, x), _c(m, y) * 1j + _c(m, x))), (A(3), A(3))),
    Case("cross", lambda m, x, y: m.linalg.cross(x, y), (A(2, 3), A(2, 3))),
    Case("outer", lambda m, x, y: m.linalg.outer(x, y), (A(3), A(2))),
    Case("trace", lambda m, x: m.linalg.trace(x, offset=1), (A(3, 4),)),
    Case("diagonal", lambda m, x: m.linalg.diagonal(x, offset=-1), (A(2, 3, 3),)),
    Case("inv", lambda m, x: m.linalg.inv(x), (SPD(3),)),
    Case("det", lambda m, x: m.linalg.det(x), (A(3, 3),)),
    Case("slogdet", lambda m, x: m.linalg.slogdet(x)[1], (A(3, 3),)),
    Case("solve", lambda m, a, b: m.linalg.solve(a, b), (SPD(3), A(3, 2))),
    Case("solve_vector", lambda m, a, b: m.linalg.solve(a, b), (SPD(3), A(3))),
    Case("cholesky", lambda m, x: m.linalg.cholesky(_sym(m, x)), (SPD(3),)),
    Case("cholesky_upper", lambda m, x: m.linalg.cholesky(_sym(m, x), upper=True), (SPD(3),)),
    Case("eigh_values", lambda m, x: m.linalg.eigh(_sym(m, x))[0], (SPD(3),)),
    Case("eigh_vectors", lambda m, x: m.abs(m.linalg.eigh(_sym(m, x))[1]), (SPD(3),)),
    Case("eigvalsh", lambda m, x: m.linalg.eigvalsh(_sym(m, x)), (SPD(3),)),
    Case("qr", lambda m, x: m.linalg.qr(x), (A(4, 3),)),
    Case("svd", lambda m, x: m.abs(m.linalg.svd(x, full_matrices=False)[0]), (A(4, 3),)),
    Case("svd_values", lambda m, x: m.linalg.svd(x, full_matrices=False)[1], (A(3, 4),)),
    Case("svd_vh", lambda m, x: m.abs(m.linalg.svd(x, full_matrices=False)[2]), (A(3, 4),)),
    Case("svdvals", lambda m, x: m.linalg.svdvals(x), (A(3, 4),)),
    Case("vector_norm", lambda m, x: m.linalg.vector_norm(x), (A(3, 4),)),
    Case("vector_norm_axis", lambda m, x: m.linalg.vector_norm(x, axis=1, keepdims=True), (A(3, 4),)),
    Case("vector_norm_1", lambda m, x: m.linalg.vector_norm(x, ord=1, axis=0), (AWAY(3, 4),)),
    Case("vector_norm_inf", lambda m, x: m.linalg.vector_norm(x, ord=math.inf), (AWAY(3, 4),)),
    Case("vector_norm_3", lambda m, x: m.linalg.vector_norm(x, ord=3), (AWAY(5),)),
    Case("matrix_norm_fro", lambda m, x: m.linalg.matrix_norm(x), (A(3, 4),)),
    Case("matrix_norm_nuc", lambda m, x: m.linalg.matrix_norm(x, ord="nuc"), (A(3, 4),)),
    Case("matrix_norm_2", lambda m, x: m.linalg.matrix_norm(x, ord=2), (A(3, 4),)),
    Case("matrix_norm_1", lambda m, x: m.linalg.matrix_norm(x, ord=1), (AWAY(3, 4),)),
    Case("pinv", lambda m, x: m.linalg.pinv(x), (A(4, 3),)),
    Case("matrix_power", lambda m, x: m.linalg.matrix_power(x, 3), (A(3, 3, low=-1.0, high=1.0),)),
    Case("matrix_power_neg", lambda m, x: m.linalg.matrix_power(x, -2), (SPD(3),)),
    # fft
    Case("fft", lambda m, x: _parts(m, m.fft.fft(_c(m, x))), (A(2, 5),)),
    Case("fft_n", lambda m, x: _parts(m, m.fft.fft(_c(m, x), n=7)), (A(5),)),
    Case("fft_trunc", lambda m, x: _parts(m, m.fft.fft(_c(m, x), n=3, norm="ortho")), (A(5),)),
    Case("ifft", lambda m, x: _parts(m, m.fft.ifft(_c(m, x), axis=0)), (A(4, 3),)),
    Case("fftn", lambda m, x: _parts(m, m.fft.fftn(_c(m, x))), (A(3, 4),)),
    Case("ifftn", lambda m, x: _parts(m, m.fft.ifftn(_c(m, x), s=(4, 3), axes=(0, 1), norm="forward")), (A(3, 4),)),
    Case("rfft", lambda m, x: _parts(m, m.fft.rfft(x)), (A(2, 6),)),
    Case("rfft_odd_n", lambda m, x: _parts(m, m.fft.rfft(x, n=7, norm="ortho")), (A(6),)),
    Case("irfft", lambda m, x: m.fft.irfft(_c(m, x)), (A(2, 4),)),
    Case("irfft_n", lambda m, x: m.fft.irfft(_c(m, x), n=7, norm="ortho"), (A(5),)),
    Case("rfftn", lambda m, x: _parts(m, m.fft.rfftn(x)), (A(3, 4),)),
    Case("irfftn", lambda m, x: m.fft.irfftn(_c(m, x), s=(3, 6), axes=(0, 1)), (A(3, 4),)),
    Case("hfft", lambda m, x: m.fft.hfft(_c(m, x)), (A(4),)),
    Case("ihfft", lambda m, x: _parts(m, m.fft.ihfft(x)), (A(6),)),
    Case("fftshift", lambda m, x: m.fft.fftshift(x), (A(3, 4),)),
    Case("ifftshift", lambda m, x: m.fft.ifftshift(x, axes=(1,)), (A(3, 5),)),
]

BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES), "duplicate case names"
