"""Staged and eager results agree in shape and dtype, for every function of the standard.

Each case runs eagerly and under ``eval_shape`` (which stages the function with abstract
rules only: no executor runs) and compares the (shape, dtype) of every output leaf.
Python scalars passed as arguments are staged as weakly typed values, so
``x_f32 * s`` stays float32 and ``x_int8 + s`` int8, as eagerly.  Ops whose result size
depends on values raise a DataDependentShapeError under staging, naming the op and the
alternative, and keep working eagerly and under grad.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.api import _dtypes
from arrayx.api import elementwise as ew
from arrayx.core.primitives import DataDependentShapeError
from arrayx.transforms.rules import coverage

DTYPES = (ax.bool, ax.int8, ax.uint8, ax.int64, ax.float32, ax.float64, ax.complex64)
SCALARS = (True, 3, 2.5, 1j)


def arr(dtype, shape=(2, 3), low=1):
    n = int(np.prod(shape))
    values = (np.arange(n) % 3 + low).reshape(shape)
    return ax.asarray(values.astype(dtype))


def avals(tree):
    leaves = ax.pytree.leaves(tree)
    return [(tuple(a.shape), np.dtype(a.dtype)) for a in leaves]


def check(fn, *args):
    """Eager and staged results agree; returns the eager avals (or the eager error type)."""
    try:
        eager = fn(*args)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            ax.eval_shape(fn, *args)
        return type(e)
    staged = ax.eval_shape(fn, *args)
    assert avals(staged) == avals(eager), (fn, args)
    graph = ax.make_graph(fn)(*args)
    assert [(a.shape, a.dtype) for a in graph.out_avals] == avals(eager)
    return avals(eager)


def _in(category):
    return [d for d in DTYPES if d in _dtypes.CATEGORIES[category]]


UNARY = [(name, d) for name, cat in ew.UNARY.items() for d in _in(cat)]
BINARY = [(name, d) for name, cat in list(ew.BINARY.items()) + [("divide", "numeric")] for d in _in(cat)]


@pytest.mark.parametrize("name,dtype", UNARY, ids=[f"{n}-{d}" for n, d in UNARY])
def test_unary(name, dtype):
    assert check(getattr(ax, name), arr(dtype)) not in (TypeError, ValueError)


@pytest.mark.parametrize("name,dtype", BINARY, ids=[f"{n}-{d}" for n, d in BINARY])
def test_binary_with_python_scalar_arguments(name, dtype):
    f = getattr(ax, name)
    x = arr(dtype)
    assert check(f, x, x) not in (TypeError, ValueError)
    for s in SCALARS:
        check(lambda x, s: f(x, s), x, s)  # s is staged as a weakly typed input
        check(lambda s, x: f(s, x), s, x)


MIXED = [(ax.int8, ax.float32), (ax.uint8, ax.int64), (ax.float32, ax.float64), (ax.float32, ax.complex64),
         (ax.bool, ax.int8), (ax.int8, ax.uint8)]


@pytest.mark.parametrize("d1,d2", MIXED, ids=[f"{a}-{b}" for a, b in MIXED])
def test_binary_mixed_dtypes(d1, d2):
    for name in list(ew.BINARY) + ["divide"]:
        check(getattr(ax, name), arr(d1), arr(d2, (3,)))


def test_weak_types_of_the_issue():
    x32, x8 = arr(ax.float32, (3,)), arr(ax.int8, (3,))
    assert ax.make_graph(lambda x, s: x * s)(x32, 2.0).out_avals[0].dtype == ax.float32
    assert ax.make_graph(lambda x, s: x * s)(x8, 3).out_avals[0].dtype == ax.int8
    g = ax.make_graph(lambda s: s * 2)(3)
    assert g.in_avals[0].weak_type and g.out_avals[0].weak_type
    assert ax.make_graph(lambda x, s: x + s)(x32, 1).out_avals[0].weak_type is False


F = arr(ax.float32)
F64 = arr(ax.float64)
I8 = arr(ax.int8)
B = arr(ax.bool)
M = ax.asarray(np.array([[2.0, 1.0], [1.0, 3.0]], dtype=np.float32))
V = arr(ax.float32, (3,))
C = arr(ax.complex64, (4,))

OTHERS = {
    # creation (array inputs, and constants under staging)
    "zeros_like": (lambda x: ax.zeros_like(x), I8), "ones_like": (lambda x: ax.ones_like(x, dtype=ax.float32), I8),
    "empty_like": (lambda x: ax.empty_like(x), F), "full_like": (lambda x, s: ax.full_like(x, s), F, 2),
    "tril": (lambda x: ax.tril(x, k=1), F), "triu": (lambda x: ax.triu(x), I8),
    "meshgrid": (lambda a, b: ax.meshgrid(a, b), V, V), "arange": (lambda: ax.arange(5),),
    "linspace": (lambda: ax.linspace(0, 1, 4),), "eye": (lambda: ax.eye(3, dtype=ax.int8),),
    "asarray": (lambda x: ax.asarray(x), F),
    # data types
    "astype": (lambda x: ax.astype(x, ax.float64), I8), "astype_bool": (lambda x: ax.astype(x, ax.bool), F),
    "clip": (lambda x: ax.clip(x, 0, 2), I8), "clip_float": (lambda x, lo: ax.clip(x, lo, 2.5), F, 0.5),
    # statistical
    "sum": (lambda x: ax.sum(x, axis=0), I8), "sum_bool": (lambda x: ax.sum(x), B),
    "prod": (lambda x: ax.prod(x, axis=1, keepdims=True), F), "max": (lambda x: ax.max(x), I8),
    "min": (lambda x: ax.min(x, axis=(0, 1)), F), "mean": (lambda x: ax.mean(x, axis=1), F),
    "mean_int": (lambda x: ax.mean(x), I8),
    "std": (lambda x: ax.std(x, correction=1), F), "var": (lambda x: ax.var(x, axis=0), F64),
    "cumulative_sum": (lambda x: ax.cumulative_sum(x, axis=1, include_initial=True), I8),
    "cumulative_prod": (lambda x: ax.cumulative_prod(x, axis=0), F),
    # manipulation
    "broadcast_arrays": (lambda a, b: ax.broadcast_arrays(a, b), F, V),
    "broadcast_to": (lambda x: ax.broadcast_to(x, (4, 2, 3)), F), "concat": (lambda a, b: ax.concat([a, b]), F, F),
    "concat_none": (lambda a, b: ax.concat([a, b], axis=None), F, F),
    "expand_dims": (lambda x: ax.expand_dims(x, axis=1), F), "flip": (lambda x: ax.flip(x, axis=0), F),
    "moveaxis": (lambda x: ax.moveaxis(x, 0, -1), F), "permute_dims": (lambda x: ax.permute_dims(x, (1, 0)), F),
    "repeat": (lambda x: ax.repeat(x, 2, axis=1), F), "reshape": (lambda x: ax.reshape(x, (3, -1)), F),
    "roll": (lambda x: ax.roll(x, 1, axis=1), F), "squeeze": (lambda x: ax.squeeze(x[None], axis=0), F),
    "stack": (lambda a, b: ax.stack([a, b], axis=1), F, F), "tile": (lambda x: ax.tile(x, (2, 1, 2)), F),
    "unstack": (lambda x: ax.unstack(x, axis=1), F),
    # searching, sorting, sets, utility
    "argmax": (lambda x: ax.argmax(x, axis=1), F), "argmin": (lambda x: ax.argmin(x, keepdims=True), I8),
    "count_nonzero": (lambda x: ax.count_nonzero(x, axis=0), F),
    "searchsorted": (lambda a, b: ax.searchsorted(a, b), V, F), "searchsorted_scalar": (lambda a, s: ax.searchsorted(a, s), V, 2),
    "where": (lambda c, x, s: ax.where(c, x, s), B, F, 2.0), "where_int": (lambda c, x, s: ax.where(c, x, s), B, I8, 2),
    "sort": (lambda x: ax.sort(x, axis=0, descending=True), F), "argsort": (lambda x: ax.argsort(x), I8),
    "isin": (lambda a, b: ax.isin(a, b), I8, I8),
    "all": (lambda x: ax.all(x, axis=1), F), "any": (lambda x: ax.any(x), B), "diff": (lambda x: ax.diff(x, n=2), F),
    # linear algebra
    "matmul": (lambda a, b: ax.matmul(a, b), F, ax.matrix_transpose(F)), "matmul_vec": (lambda a, b: a @ b, V, V),
    "matrix_transpose": (lambda x: ax.matrix_transpose(x), F), "tensordot": (lambda a, b: ax.tensordot(a, b, axes=1), F, arr(ax.float32, (3, 4))),
    "vecdot": (lambda a, b: ax.vecdot(a, b), F, V),
    "cholesky": (lambda x: ax.linalg.cholesky(x), M), "cross": (lambda a, b: ax.linalg.cross(a, b), V, V),
    "det": (lambda x: ax.linalg.det(x), M), "diagonal": (lambda x: ax.linalg.diagonal(x), F),
    "eig": (lambda x: ax.linalg.eig(x), M), "eigvals": (lambda x: ax.linalg.eigvals(x), M),
    "eigh": (lambda x: ax.linalg.eigh(x), M), "eigvalsh": (lambda x: ax.linalg.eigvalsh(x), M),
    "inv": (lambda x: ax.linalg.inv(x), M), "matrix_norm": (lambda x: ax.linalg.matrix_norm(x), F),
    "matrix_power": (lambda x: ax.linalg.matrix_power(x, 3), M), "matrix_rank": (lambda x: ax.linalg.matrix_rank(x), M),
    "outer": (lambda a, b: ax.linalg.outer(a, b), V, V), "pinv": (lambda x: ax.linalg.pinv(x), F),
    "qr": (lambda x: ax.linalg.qr(x), F), "slogdet": (lambda x: ax.linalg.slogdet(x), M),
    "solve": (lambda a, b: ax.linalg.solve(a, b), M, M), "svd": (lambda x: ax.linalg.svd(x, full_matrices=False), F),
    "svdvals": (lambda x: ax.linalg.svdvals(x), F), "trace": (lambda x: ax.linalg.trace(x), M),
    "vector_norm": (lambda x: ax.linalg.vector_norm(x, axis=1), F),
    # fft
    "fft": (lambda x: ax.fft.fft(x, n=6), C), "ifft": (lambda x: ax.fft.ifft(x), C),
    "fftn": (lambda x: ax.fft.fftn(x, s=(2, 4), axes=(0, 1)), ax.astype(F, ax.complex64)),
    "ifftn": (lambda x: ax.fft.ifftn(x), ax.astype(F, ax.complex64)),
    "rfft": (lambda x: ax.fft.rfft(x), V), "irfft": (lambda x: ax.fft.irfft(x, n=7), C),
    "rfftn": (lambda x: ax.fft.rfftn(x), F), "irfftn": (lambda x: ax.fft.irfftn(x), ax.astype(F, ax.complex64)),
    "hfft": (lambda x: ax.fft.hfft(x), C), "ihfft": (lambda x: ax.fft.ihfft(x), V),
    "fftshift": (lambda x: ax.fft.fftshift(x), F), "ifftshift": (lambda x: ax.fft.ifftshift(x, axes=0), F),
    "fftfreq": (lambda: ax.fft.fftfreq(5),), "rfftfreq": (lambda: ax.fft.rfftfreq(6, d=0.5),),
    # indexing
    "take": (lambda x, i: ax.take(x, i, axis=1), F, ax.asarray([0, 2, 2])),
    "take_along_axis": (lambda x, i: ax.take_along_axis(x, i, axis=1), F, ax.asarray([[0], [2]])),
    "getitem_slices": (lambda x: x[1:, ::2], F), "getitem_int_array": (lambda x, i: x[:, i], F, ax.asarray([0, 2])),
    "getitem_none_ellipsis": (lambda x: x[None, ..., 1], F),
    "getitem_concrete_mask": (lambda x: x[F > 1.5], F), "at_set": (lambda x, s: x.at[0].set(s), F, 2.0),
}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_other_functions(name):
    fn, *args = OTHERS[name]
    assert check(fn, *args) not in (TypeError, ValueError)


DATA_DEPENDENT = {
    "nonzero": lambda x: ax.nonzero(x),
    "unique_values": lambda x: ax.unique_values(x),
    "unique_counts": lambda x: ax.unique_counts(x),
    "unique_inverse": lambda x: ax.unique_inverse(x),
    "unique_all": lambda x: ax.unique_all(x),
    "boolean_mask": lambda x: x[x > 1.5],
}


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_ops_raise_under_staging_and_work_eagerly_and_under_grad(name):
    fn = DATA_DEPENDENT[name]
    x = arr(ax.float64, (5,))
    with pytest.raises(DataDependentShapeError, match=rf"^{name}: the size of its result depends .* eagerly"):
        ax.make_graph(fn)(x)
    eager = fn(x)
    assert avals(eager) == avals(fn(ax.asarray(np.asarray(x))))
    if name == "boolean_mask":  # differentiable: the mask is a primal, computed eagerly under grad
        g = ax.grad(lambda x: ax.sum(fn(x) ** 2))(x)
        expected = np.where(np.asarray(x) > 1.5, 2 * np.asarray(x), 0.0)
        np.testing.assert_allclose(np.asarray(g), expected)
    else:
        g = ax.grad(lambda x: ax.sum(x * ax.asarray(ax.pytree.leaves(fn(x))[0].shape[0] * 1.0)))(x)
        np.testing.assert_allclose(np.asarray(g), np.full(5, float(len(np.unique(np.asarray(x)))
                                                                    if name != "nonzero" else 5)))


def test_every_primitive_has_an_abstract_rule():
    cov = coverage()
    assert cov["abstract_eval"] == []
    assert set(cov["data_dependent"]) == set(DATA_DEPENDENT)
