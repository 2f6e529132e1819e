"""The ``fft`` extension against NumPy's transforms, with the standard's dtype rules."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_same, to_numpy

COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}
REAL_OF = {v: k for k, v in COMPLEX_OF.items()}


def rand(shape, dtype=np.float64, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        out = out + 1j * rng.standard_normal(shape)
    return out.astype(dtype)


def close(actual, expected, dtype):
    """Values agree within the precision of ``dtype`` (reference computed in double precision)."""
    eps = np.finfo(dtype).eps
    e = np.asarray(expected)
    np.testing.assert_allclose(to_numpy(actual), e, rtol=200 * eps, atol=200 * eps * max(1.0, np.abs(e).max(initial=0)))


def _rotated_on_jax(cases: list) -> list:
    """``executor, *case`` parameters: every case on every executor, except on jax (a new XLA program per
    transform, shape and dtype), where the ci profile takes each row in one dtype, the dtypes in turn
    (the last field; tests/covering.py: every row and every dtype still runs on jax); all in the deep
    profile."""
    from tests import covering

    return covering.on_executors(cases, ids=lambda v: np.dtype(v).name if isinstance(v, type) else str(v))


def _wide(a):
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


# -- one-dimensional ----------------------------------------------------------------------


@pytest.mark.parametrize("executor, fname, n, axis, norm, dtype", _rotated_on_jax(
    [(f, *c, d) for d in [np.complex64, np.complex128, np.float32, np.float64] for f in ["fft", "ifft"]
     for c in [(None, -1, "backward"), (None, 0, "ortho"), (5, 1, "forward"), (12, -1, "ortho"), (1, 0, "backward")]]),
    indirect=["executor"])
def test_complex_transforms(executor, fname, dtype, n, axis, norm):
    a = rand((4, 8), dtype)
    out = getattr(xp.fft, fname)(xp.asarray(a), n=n, axis=axis, norm=norm)
    expected_dtype = COMPLEX_OF.get(np.dtype(dtype), np.dtype(dtype))
    assert out.dtype == expected_dtype
    ref = getattr(np.fft, fname)(_wide(a), n=n, axis=axis, norm=norm)
    assert out.shape == ref.shape
    close(out, ref, expected_dtype)


@pytest.mark.parametrize("executor, n, axis, norm, dtype", _rotated_on_jax(
    [(*c, d) for d in [np.float32, np.float64]
     for c in [(None, -1, "backward"), (None, 0, "ortho"), (7, 1, "forward"), (12, -1, "ortho")]]),
    indirect=["executor"])
def test_rfft_ihfft(executor, dtype, n, axis, norm):
    a = rand((4, 8), dtype)
    for fname in ("rfft", "ihfft"):
        out = getattr(xp.fft, fname)(xp.asarray(a), n=n, axis=axis, norm=norm)
        assert out.dtype == COMPLEX_OF[np.dtype(dtype)]
        ref = getattr(np.fft, fname)(_wide(a), n=n, axis=axis, norm=norm)
        assert out.shape == ref.shape
        close(out, ref, out.dtype)


@pytest.mark.parametrize("executor, n, axis, norm, dtype", _rotated_on_jax(
    [(*c, d) for d in [np.complex64, np.complex128, np.float32]
     for c in [(None, -1, "backward"), (None, 0, "forward"), (7, 1, "ortho"), (12, -1, "forward")]]),
    indirect=["executor"])
def test_irfft_hfft(executor, dtype, n, axis, norm):
    a = rand((4, 8), dtype)
    real = REAL_OF.get(np.dtype(dtype), np.dtype(dtype))
    for fname in ("irfft", "hfft"):
        out = getattr(xp.fft, fname)(xp.asarray(a), n=n, axis=axis, norm=norm)
        assert out.dtype == real
        ref = getattr(np.fft, fname)(_wide(a), n=n, axis=axis, norm=norm)
        assert out.shape == ref.shape
        close(out, ref, real)


def test_round_trips(executor):
    c = rand((3, 10), np.complex128)
    r = rand((3, 10))
    assert_same(xp.fft.ifft(xp.fft.fft(xp.asarray(c))), c)
    np.testing.assert_allclose(to_numpy(xp.fft.irfft(xp.fft.rfft(xp.asarray(r)), n=10)), r, atol=1e-12)
    np.testing.assert_allclose(to_numpy(xp.fft.ifftn(xp.fft.fftn(xp.asarray(c), norm="ortho"), norm="ortho")), c, atol=1e-12)
    np.testing.assert_allclose(to_numpy(xp.fft.irfftn(xp.fft.rfftn(xp.asarray(r)), s=(3, 10), axes=(0, 1))), r, atol=1e-12)


# -- n-dimensional ------------------------------------------------------------------------


@pytest.mark.parametrize("fname", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize(
    "s, axes, norm",
    [(None, None, "backward"), (None, (0,), "ortho"), (None, [2, 0], "forward"), ((3, 5), (1, 2), "backward"),
     ((6, -1), (0, 2), "ortho"), ((4,), (-1,), "forward"), ((2, 2, 2), (0, 1, 2), "backward")],
)
def test_n_dimensional(executor, fname, s, axes, norm):
    real_input = fname == "rfftn"
    dtype = np.float32 if real_input else np.complex64
    a = rand((4, 3, 6), dtype)
    out = getattr(xp.fft, fname)(xp.asarray(a), s=s, axes=axes, norm=norm)
    np_s = s
    if s is not None:  # -1 means "the input's size" (2*(m-1) on irfftn's last axis)
        np_axes = [ax % 3 for ax in axes]
        np_s = [a.shape[ax] if v == -1 else v for v, ax in zip(s, np_axes)]
        if fname == "irfftn" and s[-1] == -1:
            np_s[-1] = 2 * (a.shape[np_axes[-1]] - 1)
    ref = getattr(np.fft, fname)(_wide(a), s=np_s, axes=axes, norm=norm)
    expected_dtype = np.float32 if fname == "irfftn" else np.complex64
    assert out.dtype == expected_dtype and out.shape == ref.shape
    close(out, ref, expected_dtype)


# -- errors --------------------------------------------------------------------------------


def test_argument_errors(executor):
    c = xp.asarray(rand((4, 4), np.complex128))
    r = xp.asarray(rand((4, 4)))
    with xp.strict(), pytest.raises(TypeError, match="fft: x must have a floating-point dtype, got int64; cast it"):
        xp.fft.fft(xp.asarray([1, 2, 3]))  # the default mode computes it in complex128 (tests/api/test_scalars_and_ints.py)
    with pytest.raises(TypeError, match="rfft: x must have a real floating-point dtype, got complex128"):
        xp.fft.rfft(c)
    with pytest.raises(TypeError, match="ihfft: x must have a real floating-point dtype"):
        xp.fft.ihfft(c)
    with pytest.raises(ValueError, match="fft: n must be a positive number of points, got 0"):
        xp.fft.fft(c, n=0)
    with pytest.raises(TypeError, match="fft: n must be an int"):
        xp.fft.fft(c, n=2.0)
    with pytest.raises(ValueError, match="norm must be one of"):
        xp.fft.fft(c, norm="none")
    with pytest.raises(IndexError, match="axis=2 is out of bounds"):
        xp.fft.fft(c, axis=2)
    with pytest.raises(ValueError, match="0-d"):
        xp.fft.fft(xp.asarray(1.0 + 0j))
    with pytest.raises(ValueError, match="fftn: s was given without axes"):
        xp.fft.fftn(c, s=(2, 2))
    with pytest.raises(ValueError, match="s has 1 entries but axes has 2"):
        xp.fft.fftn(c, s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="irfft: n must be a positive number of points, got 0"):
        xp.fft.irfft(xp.asarray(rand((4, 1), np.complex128)))  # default n = 2*(1-1)
    with xp.strict(), pytest.raises(TypeError, match="arrayx array"):
        xp.fft.fft(np.ones(4))
    with pytest.raises(ValueError, match="at least one axis"):
        xp.fft.rfftn(r, axes=())


# -- frequencies and shifts -----------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 7, 8])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
@pytest.mark.parametrize("dtype", [None, np.float32, np.float64])
def test_frequencies(executor, n, d, dtype):
    for fname in ("fftfreq", "rfftfreq"):
        out = getattr(xp.fft, fname)(n, d=d, dtype=dtype)
        assert out.executor == executor
        expected = getattr(np.fft, fname)(n, d).astype(dtype or np.float64)
        assert_same(out, expected)


def test_frequencies_device_and_errors(executor):
    out = xp.fft.fftfreq(4, device="numpy")
    assert out.executor == "numpy"
    with pytest.raises(TypeError, match="fftfreq: dtype must be a real floating-point dtype, got complex128"):
        xp.fft.fftfreq(4, dtype=xp.complex128)
    with pytest.raises(ValueError, match="rfftfreq: n must be a positive number of points, got 0"):
        xp.fft.rfftfreq(0)
    with pytest.raises(ValueError, match="d must not be zero"):
        xp.fft.fftfreq(4, d=0.0)


_SHIFT_AXES = [None, 0, -1, [1, 0], (2,)]


@pytest.mark.parametrize("executor, axes_case, dtype", _rotated_on_jax(
    [(f"axes{i}", d) for d in [np.float32, np.complex128, np.int64] for i in range(len(_SHIFT_AXES))]),
    indirect=["executor"])
def test_shifts(executor, axes_case, dtype):
    axes = _SHIFT_AXES[int(axes_case[4:])]
    a = (rand((3, 4, 5)) * 10).astype(dtype)
    for fname in ("fftshift", "ifftshift"):
        out = getattr(xp.fft, fname)(xp.asarray(a), axes=axes)
        assert_same(out, getattr(np.fft, fname)(a, axes=axes))
    back = xp.fft.ifftshift(xp.fft.fftshift(xp.asarray(a), axes=axes), axes=axes)
    assert_same(back, a)


def test_shift_errors(executor):
    with pytest.raises(IndexError, match="fftshift: axes=3 is out of bounds"):
        xp.fft.fftshift(xp.asarray(rand((2, 2))), axes=3)
    with pytest.raises(TypeError, match="axes must be a sequence of ints"):
        xp.fft.ifftshift(xp.asarray(rand((2, 2))), axes="0")


def test_numpy_scalars_as_static_arguments(executor):
    out = xp.fft.fft(xp.asarray(np.ones(4, np.complex128)), n=np.int32(6), axis=np.int64(0))
    assert out.shape == (6,)
    assert_same(xp.fft.fftfreq(np.int64(4), d=np.float32(0.5)), np.fft.fftfreq(4, 0.5))


@pytest.mark.parametrize(
    "fname, shape, kw",
    [("irfft", (0,), {"n": 4}), ("irfft", (3, 0), {"n": 5}), ("hfft", (0, 2), {"n": 6, "axis": 0}),
     ("irfftn", (2, 0), {"s": (2, 6), "axes": (0, 1)}), ("irfftn", (0, 0), {"s": (3, 4), "axes": (0, 1)}),
     ("fft", (0,), {"n": 3}), ("rfftn", (0, 3), {"s": (2, 3), "axes": (0, 1)})],
)
def test_empty_axis_padded_by_n_gives_zeros(executor, fname, shape, kw):
    """An empty input axis padded by n/s is a transform of zeros (NumPy itself reads uninitialised memory)."""
    dtype = np.float64 if fname == "rfftn" else np.complex128
    out = getattr(xp.fft, fname)(xp.zeros(shape, dtype=dtype), **kw)
    want_dtype = np.complex128 if fname in ("fft", "rfftn") else np.float64
    want_shape = list(shape)
    axes = kw.get("axes", (kw.get("axis", -1),))
    sizes = kw.get("s", (kw.get("n"),))
    for a, n in zip(axes, sizes):
        want_shape[a] = n // 2 + 1 if fname == "rfftn" and a == axes[-1] else n
    assert_same(out, np.zeros(want_shape, want_dtype))


@pytest.mark.parametrize("fname", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.int32])
def test_shift_of_no_axes_is_identity(executor, fname, dtype):
    """A 0-d array has no axis to shift (nor has ``axes=()``): the result is a new array equal to x."""
    x = xp.asarray(np.asarray(3, dtype))
    out = getattr(xp.fft, fname)(x)
    assert_same(out, np.asarray(3, dtype))
    assert out is not x
    a = rand((2, 3)).astype(dtype)
    assert_same(getattr(xp.fft, fname)(xp.asarray(a), axes=()), a)
