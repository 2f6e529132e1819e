"""Executor tests.  ``PARITY`` is one call of every function of the standard (and its linalg/fft
extensions); each executor's test module runs every case on that executor and compares the
result with the NumPy executor (exact for integers and bools, dtype-aware tolerance for floats).

A case is ``(name, fn, inputs)``: ``inputs`` are NumPy arrays (moved to the executor under test)
or plain Python values, and ``fn`` receives them as arrayx arrays.
"""
from __future__ import annotations

import numpy as np

import arrayx as xp

_RNG = np.random.default_rng(1234)


def rand(shape, dtype="float64", low=-2.0, high=2.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return _RNG.random(shape) > 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -9
        return _RNG.integers(lo, 10, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (_RNG.uniform(low, high, shape) + 1j * _RNG.uniform(low, high, shape)).astype(dtype)
    return _RNG.uniform(low, high, shape).astype(dtype)


def spd(n, batch=()):
    a = rand(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


F = rand((3, 4))
F32 = rand((3, 4), "float32")
POS = rand((3, 4), low=0.2, high=1.8)
UNIT = rand((3, 4), low=-0.9, high=0.9)
C = rand((3, 4), "complex128")
I = rand((3, 4), "int64")
I8 = rand((3, 4), "int8")
U = rand((3, 4), "uint8")
B = rand((3, 4), "bool")
V = rand((5,))
SORTED = np.sort(rand((8,)))
DUP = np.array([3, 1, 2, 3, 1, 7, 2, 3], dtype=np.int64)
SQ = rand((3, 3)) + 3 * np.eye(3)
SQB = rand((2, 3, 3)) + 3 * np.eye(3)
SPD = spd(3)
SYM = SPD - 1.0
RECT = rand((4, 3))
SIG = rand((8,))
CSIG = rand((8,), "complex128")
VEC3 = rand((4, 3))


UNARY_FLOAT = ["acos", "asin", "atanh"]  # need |x| < 1
UNARY_POS = ["acosh", "log", "log1p", "log2", "log10", "sqrt", "reciprocal"]
UNARY_ANY = ["abs", "asinh", "atan", "ceil", "conj", "cos", "cosh", "exp", "expm1", "floor", "imag",
             "isfinite", "isinf", "isnan", "negative", "positive", "real", "round", "sign", "signbit",
             "sin", "sinh", "square", "tan", "tanh", "trunc"]
BINARY_FLOAT = ["add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal",
                "hypot", "less", "less_equal", "logaddexp", "maximum", "minimum", "multiply", "nextafter",
                "not_equal", "remainder", "subtract"]
BINARY_INT = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
BINARY_BOOL = ["logical_and", "logical_or", "logical_xor"]


def _unary(name):
    return lambda x: getattr(xp, name)(x)


def _binary(name):
    return lambda a, b: getattr(xp, name)(a, b)


def _cases():
    for n in UNARY_FLOAT:
        yield n, _unary(n), (UNIT,)
    for n in UNARY_POS:
        yield n, _unary(n), (POS + 1.0 if n == "acosh" else POS,)
    for n in UNARY_ANY:
        yield n, _unary(n), (F,)
    yield "bitwise_invert", _unary("bitwise_invert"), (I8,)
    yield "logical_not", _unary("logical_not"), (B,)
    for n in BINARY_FLOAT:
        yield n, _binary(n), (F, np.flip(F, 1) + 0.1)
    for n in BINARY_INT:
        yield n, _binary(n), (np.abs(I), np.abs(I) % 7 if "shift" in n else np.flip(I, 0))
    for n in BINARY_BOOL:
        yield n, _binary(n), (B, np.flip(B, 1))
    yield "pow", lambda a, b: xp.pow(a, b), (POS, F)
    yield "clip", lambda a: xp.clip(a, -0.5, 0.7), (F,)
    yield "complex arithmetic", lambda a: xp.exp(a) * a - xp.sqrt(a) / (a + 1), (C,)
    yield "mixed promotion", lambda a, b, c: a + b * c, (I8, U, F32)
    yield "scalar operands", lambda a: (2 * a - 1.5) ** 2 // 3 % 2, (F32,)
    yield "int64 precision", lambda a: a * 1_000_000_007 + (2**62), (I,)
    yield "float64 precision", lambda a: (a + 1e-12) - a, (F,)
    # creation (on the executor: its device comes from the input)
    yield "arange", lambda a: xp.arange(1, 10, 2, device=a.device), (F,)
    yield "asarray", lambda a: xp.asarray([[1, 2], [3, 4]], dtype=xp.int16, device=a.device), (F,)
    yield "empty", lambda a: xp.empty((2, 3), device=a.device).shape == (2, 3), (F,)
    yield "empty_like", lambda a: xp.empty_like(a).shape == a.shape, (F,)
    yield "eye", lambda a: xp.eye(3, 4, k=1, device=a.device), (F,)
    yield "from_dlpack", lambda a: xp.from_dlpack(a), (F,)
    yield "full", lambda a: xp.full((2, 2), 7, dtype=xp.uint8, device=a.device), (F,)
    yield "full_like", lambda a: xp.full_like(a, 2.5), (F,)
    yield "linspace", lambda a: xp.linspace(0, 1, 7, device=a.device), (F,)
    yield "meshgrid", lambda a, b: xp.meshgrid(a, b, indexing="ij"), (V, SIG)
    yield "ones", lambda a: xp.ones((2, 3), dtype=xp.int32, device=a.device), (F,)
    yield "ones_like", lambda a: xp.ones_like(a), (I,)
    yield "tril", lambda a: xp.tril(a, k=-1), (F,)
    yield "triu", lambda a: xp.triu(a, k=1), (F,)
    yield "zeros", lambda a: xp.zeros((3,), dtype=xp.complex64, device=a.device), (F,)
    yield "zeros_like", lambda a: xp.zeros_like(a, dtype=xp.float32), (I,)
    # data types
    yield "astype", lambda a: xp.astype(a, xp.int16), (F * 10,)
    yield "can_cast", lambda a: xp.can_cast(a, xp.float32), (I8,)
    yield "finfo", lambda a: xp.finfo(a).eps, (F32,)
    yield "iinfo", lambda a: xp.iinfo(a).max, (I8,)
    yield "isdtype", lambda a: xp.isdtype(a.dtype, "real floating"), (F,)
    yield "result_type", lambda a, b: xp.result_type(a, b), (I8, U)
    # indexing
    yield "getitem basic", lambda a: a[1:, ::-2][..., None], (F,)
    yield "getitem int array", lambda a, i: a[i], (F, np.array([2, 0, 2]))
    yield "getitem int arrays", lambda a, i, j: a[i, j], (F, np.array([2, 0, 1]), np.array([3, 3, 0]))
    yield "getitem mask", lambda a: a[a > 0], (F,)
    yield "take", lambda a, i: xp.take(a, i, axis=1), (F, np.array([3, 0, 0]))
    yield "take_along_axis", lambda a: xp.take_along_axis(a, xp.argsort(a, axis=1), axis=1), (F,)
    # manipulation
    yield "broadcast_arrays", lambda a, b: xp.broadcast_arrays(a, b), (V[:, None], V)
    yield "broadcast_shapes", lambda a: xp.broadcast_shapes(a.shape, (2, 1, 4)), (F,)
    yield "broadcast_to", lambda a: xp.broadcast_to(a, (2, 3, 4)), (F,)
    yield "concat", lambda a, b: xp.concat([a, b], axis=0), (F, F32)
    yield "expand_dims", lambda a: xp.expand_dims(a, axis=1), (F,)
    yield "flip", lambda a: xp.flip(a, axis=0), (F,)
    yield "moveaxis", lambda a: xp.moveaxis(a, 0, -1), (F,)
    yield "permute_dims", lambda a: xp.permute_dims(a, (1, 0)), (F,)
    yield "repeat", lambda a: xp.repeat(a, 2, axis=1), (F,)
    yield "reshape", lambda a: xp.reshape(a, (2, -1)), (F,)
    yield "roll", lambda a: xp.roll(a, 1, axis=1), (F,)
    yield "squeeze", lambda a: xp.squeeze(a[:, :1], axis=1), (F,)
    yield "stack", lambda a, b: xp.stack([a, b], axis=1), (F, F)
    yield "tile", lambda a: xp.tile(a, (2, 1)), (F,)
    yield "unstack", lambda a: xp.unstack(a, axis=1), (F,)
    # searching
    yield "argmax", lambda a: xp.argmax(a, axis=1), (F,)
    yield "argmin", lambda a: xp.argmin(a), (F,)
    yield "count_nonzero", lambda a: xp.count_nonzero(a, axis=0), (I,)
    yield "nonzero", lambda a: xp.nonzero(a), (I,)
    yield "searchsorted", lambda s, v: xp.searchsorted(s, v, side="right"), (SORTED, V)
    yield "where", lambda c, a, b: xp.where(c, a, b), (B, F, 0.5)
    # sets
    yield "isin", lambda a, b: xp.isin(a, b), (DUP, np.array([1, 7]))
    yield "unique_all", lambda a: xp.unique_all(a), (DUP,)
    yield "unique_counts", lambda a: xp.unique_counts(a), (DUP,)
    yield "unique_inverse", lambda a: xp.unique_inverse(a), (DUP,)
    yield "unique_values", lambda a: xp.unique_values(a), (DUP,)
    # sorting
    yield "argsort", lambda a: xp.argsort(a, axis=0, descending=True, stable=True), (DUP.reshape(2, 4),)
    yield "sort", lambda a: xp.sort(a, axis=1), (F,)
    # statistical
    yield "cumulative_prod", lambda a: xp.cumulative_prod(a, axis=1), (F,)
    yield "cumulative_sum", lambda a: xp.cumulative_sum(a, axis=0, include_initial=True), (I,)
    yield "max", lambda a: xp.max(a, axis=1, keepdims=True), (F,)
    yield "mean", lambda a: xp.mean(a, axis=0), (F32,)
    yield "min", lambda a: xp.min(a), (I,)
    yield "prod", lambda a: xp.prod(a, axis=1), (I8,)
    yield "std", lambda a: xp.std(a, correction=1), (F,)
    yield "sum", lambda a: xp.sum(a, axis=(0, 1)), (U,)
    yield "var", lambda a: xp.var(a, axis=1), (F,)
    # utility
    yield "all", lambda a: xp.all(a, axis=1), (B,)
    yield "any", lambda a: xp.any(a), (B,)
    yield "diff", lambda a: xp.diff(a, axis=1, n=2), (I,)
    # linear algebra (main namespace)
    yield "matmul", lambda a, b: xp.matmul(a, b), (F, RECT)
    yield "matrix_transpose", lambda a: xp.matrix_transpose(a), (SQB,)
    yield "tensordot", lambda a, b: xp.tensordot(a, b, axes=1), (F, RECT)
    yield "vecdot", lambda a, b: xp.vecdot(a, b), (C, F)
    # linalg extension
    la = xp.linalg
    yield "linalg.cholesky", lambda a: la.cholesky(a), (SPD,)
    yield "linalg.cross", lambda a, b: la.cross(a, b), (VEC3, np.flip(VEC3, 0))
    yield "linalg.det", lambda a: la.det(a), (SQB,)
    yield "linalg.diagonal", lambda a: la.diagonal(a, offset=1), (F,)
    yield "linalg.eigh", lambda a: la.eigh(a).eigenvalues, (SYM,)
    yield "linalg.eigvalsh", lambda a: la.eigvalsh(a), (SYM,)
    yield "linalg.eig", lambda a: xp.sort(xp.real(la.eig(a).eigenvalues)), (SYM,)
    yield "linalg.eigvals", lambda a: xp.sort(xp.real(la.eigvals(a))), (SYM,)
    yield "linalg.inv", lambda a: la.inv(a), (SQB,)
    yield "linalg.matmul", lambda a, b: la.matmul(a, b), (SQ, SQB)
    yield "linalg.matrix_norm", lambda a: la.matrix_norm(a, ord="fro"), (SQB,)
    yield "linalg.matrix_power", lambda a: la.matrix_power(a, 3), (SQ,)
    yield "linalg.matrix_rank", lambda a: la.matrix_rank(a), (RECT,)
    yield "linalg.matrix_transpose", lambda a: la.matrix_transpose(a), (F,)
    yield "linalg.outer", lambda a, b: la.outer(a, b), (V, SIG)
    yield "linalg.pinv", lambda a: la.pinv(a), (RECT,)
    yield "linalg.qr", lambda a: xp.abs(la.qr(a).R), (RECT,)
    yield "linalg.slogdet", lambda a: la.slogdet(a), (SQB,)
    yield "linalg.solve", lambda a, b: la.solve(a, b), (SQB, rand((2, 3, 2)))
    yield "linalg.svd", lambda a: la.svd(a, full_matrices=False).S, (RECT,)
    yield "linalg.svdvals", lambda a: la.svdvals(a), (SQB,)
    yield "linalg.tensordot", lambda a, b: la.tensordot(a, b, axes=([1], [0])), (F, RECT)
    yield "linalg.trace", lambda a: la.trace(a), (SQB,)
    yield "linalg.vecdot", lambda a, b: la.vecdot(a, b, axis=0), (F, F)
    yield "linalg.vector_norm", lambda a: la.vector_norm(a, axis=1, ord=3), (F,)
    # fft extension
    ft = xp.fft
    yield "fft.fft", lambda a: ft.fft(a), (CSIG,)
    yield "fft.ifft", lambda a: ft.ifft(a, n=10), (CSIG,)
    yield "fft.fftn", lambda a: ft.fftn(a), (C,)
    yield "fft.ifftn", lambda a: ft.ifftn(a, axes=(0,)), (C,)
    yield "fft.rfft", lambda a: ft.rfft(a), (SIG,)
    yield "fft.irfft", lambda a: ft.irfft(a), (CSIG,)
    yield "fft.rfftn", lambda a: ft.rfftn(a), (F,)
    yield "fft.irfftn", lambda a: ft.irfftn(a, s=(3, 6), axes=(0, 1)), (C,)
    yield "fft.hfft", lambda a: ft.hfft(a), (CSIG,)
    yield "fft.ihfft", lambda a: ft.ihfft(a), (SIG,)
    yield "fft.fftfreq", lambda a: ft.fftfreq(8, d=0.5, device=a.device), (F,)
    yield "fft.rfftfreq", lambda a: ft.rfftfreq(8, device=a.device), (F,)
    yield "fft.fftshift", lambda a: ft.fftshift(a), (F,)
    yield "fft.ifftshift", lambda a: ft.ifftshift(a, axes=1), (F,)


PARITY = list(_cases())
PARITY_IDS = [c[0] for c in PARITY]


def run_parity(case, executor: str):
    """Run ``case`` on ``executor`` and on the NumPy executor; assert the results agree."""
    from tests.conftest import assert_same

    name, fn, inputs = case

    def call(ex):
        args = [xp.asarray(v, device=ex) if isinstance(v, np.ndarray) else v for v in inputs]
        return fn(*args)

    got, want = call(executor), call("numpy")
    _compare(name, got, want, executor, assert_same)


def _compare(name, got, want, executor, assert_same):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), name
        for g, w in zip(got, want):
            _compare(name, g, w, executor, assert_same)
    elif isinstance(want, xp.Array):
        assert isinstance(got, xp.Array), f"{name}: got {type(got).__name__}"
        assert got.executor == executor, f"{name}: result on {got.executor!r}, expected {executor!r}"
        assert type(got._buf) is got._ex.array_type, f"{name}: buffer {type(got._buf)} on {executor}"
        assert_same(got, want)
    else:
        assert got == want, f"{name}: {got!r} != {want!r}"


def spec_function_names() -> list[str]:
    """Every function the 2025.12 standard defines (``linalg.x``/``fft.x`` for the extensions),
    from the snapshot committed in the repository (tests read no file outside it)."""
    from conformance import spec

    return [n for n in spec.all_functions(spec.load_snapshot()) if n != "__array_namespace_info__"]
