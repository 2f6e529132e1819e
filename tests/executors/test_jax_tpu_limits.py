"""What XLA:TPU aborts on is refused before XLA compiles (arrayx/executors/jax/tpu_limits.py).

There is no TPU here: the jax executor's CPU device stands in for one (its buffers and graphs
are reported as living on a TPU), which is what the checks read.  On the chip itself the same
cases run in benchmarks/tpu_check.sh (no process abort in the differential table or the suite).
"""
from __future__ import annotations

import functools
import json
import pathlib

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from tests.executors.conftest import only_on
from tests.executors.platform_tolerances import taken_for_tpu

pytestmark = only_on("jax")

PROBE = pathlib.Path(__file__).parents[2] / "conformance" / "results" / "tpu_probe.json"
#: probe function -> the primitive that runs it (pinv computes through svd)
PRIMITIVE_OF = {"linalg.svd": "svd", "linalg.pinv": "svd"}


@pytest.fixture
def as_tpu(monkeypatch):
    """The jax executor, with its devices taken for TPUs and its eager implementations rebuilt; 64-bit
    data kept as it is there (``tpu_64bit("emulate")``: the setting under which 64-bit types reach a TPU)."""
    with taken_for_tpu(monkeypatch, "emulate") as ex:
        yield ex


@pytest.fixture
def complex128_kept(as_tpu, monkeypatch):
    """``as_tpu`` with complex128 kept under emulate as other 64-bit types are (arrayx refuses it at the
    door on a TPU, api/_device_dtypes.py): the refusals behind the door, for a complex128 buffer that
    gets there anyway, are what these tests check."""
    from arrayx.api import _device_dtypes

    monkeypatch.setattr(_device_dtypes.TPU, "unemulated", {})
    _device_dtypes.clear_caches()
    yield as_tpu
    _device_dtypes.clear_caches()


@pytest.fixture
def on_the_cpu():
    """JAX's default device the CPU for the test (the scaled forms' own values, also on a TPU machine,
    whose chip's products are bfloat16 passes: tests/executors/test_tpu_chip.py runs them there)."""
    import jax

    with jax.default_device(jax.devices("cpu")[0]):
        yield


@pytest.mark.parametrize("name, dtype", [("abs", "complex128"), ("tanh", "complex128"), ("expm1", "complex128"),
                                         ("signbit", "float64")])
def test_listed_unary_refused_eagerly(complex128_kept, name, dtype):
    x = ax.asarray(np.ones((2, 3), dtype=dtype))
    with pytest.raises(NotImplementedError, match=rf"{name}: {dtype} on a TPU.*x.to_device\('jax:cpu:0'\)"):
        getattr(ax, name)(x)


def test_other_dtypes_run(as_tpu):
    x = np.array([[1.5, -2.0], [0.25, 3.0]])
    for dtype in ("complex64", "float32"):
        got = ax.abs(ax.asarray(x.astype(dtype)))
        np.testing.assert_allclose(np.asarray(got), np.abs(x.astype(dtype)))
    np.testing.assert_allclose(np.asarray(ax.divide(ax.asarray(x), ax.asarray(x + 4))), x / (x + 4))


def test_binary_and_astype_refused(complex128_kept):
    a = ax.asarray(np.ones(3, dtype=np.complex128))
    with pytest.raises(NotImplementedError, match="divide: complex128 on a TPU"):
        a / a
    with pytest.raises(NotImplementedError, match="astype: complex128 on a TPU"):
        ax.astype(ax.asarray(np.ones(3, dtype=np.float32)), ax.complex128)
    with pytest.raises(NotImplementedError, match="floor_divide: float64 on a TPU"):
        ax.floor_divide(ax.asarray(np.ones(3)), ax.asarray(np.ones(3)))


def _x64_seen(monkeypatch):
    """Records the calling thread's 64-bit setting each time jax.numpy's svd runs (traced or eager)."""
    import jax
    import jax.numpy as jnp

    seen, real = [], jnp.linalg.svd

    def svd(*args, **kwargs):
        seen.append(bool(jax.config.jax_enable_x64))
        return real(*args, **kwargs)

    monkeypatch.setattr(jnp.linalg, "svd", svd)
    return seen


def test_svd_float32_runs_with_64_bit_types_off(complex128_kept, monkeypatch):
    """JAX's TPU lowering of svd, traced with 64-bit types on, aborted XLA:TPU (float32): 32-bit svd on a
    TPU runs with them off, eagerly and compiled, with the values of the numpy executor; complex128 is
    refused; a compiled function that also holds 64-bit values is refused before compiling."""
    seen = _x64_seen(monkeypatch)
    rng = np.random.default_rng(0)
    m = rng.standard_normal((2, 5, 3))
    for dtype in ("float32", "complex64"):
        a = (m + 1j * m[..., ::-1] if dtype == "complex64" else m).astype(dtype)
        with ax.use_executor("numpy"):
            want = [np.asarray(v) for v in ax.linalg.svd(ax.asarray(a), full_matrices=False)]
        for run in (lambda v: ax.linalg.svd(v, full_matrices=False),
                    ax.jit(lambda v: ax.linalg.svd(v, full_matrices=False))):
            seen.clear()
            u, s, vh = run(ax.asarray(a))
            assert seen and not any(seen), seen  # jax.numpy's svd ran with 64-bit types off
            assert s.dtype == ax.float32 and u.dtype == vh.dtype == getattr(ax, dtype)
            np.testing.assert_allclose(np.asarray(s), want[1], rtol=1e-5)
            recon = (np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh)
            np.testing.assert_allclose(recon, a, rtol=1e-4, atol=1e-5)
    f32 = ax.asarray(m[0].astype(np.float32))
    with ax.default_matmul_precision("highest"):  # (on a real chip pinv's products are bfloat16 passes otherwise)
        np.testing.assert_allclose(np.asarray(ax.linalg.pinv(f32)), np.linalg.pinv(m[0]), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ax.jit(ax.linalg.pinv)(f32)), np.linalg.pinv(m[0]), rtol=1e-4,
                                   atol=1e-5)
    with pytest.raises(NotImplementedError, match="svd: complex128 on a TPU"):
        ax.linalg.svd(ax.asarray(m.astype(np.complex128)))
    with pytest.raises(NotImplementedError, match="holds float64 values"):
        ax.jit(lambda v, w: (ax.linalg.svdvals(v), ax.linalg.svd(v)[1] + 0, w * 2))(f32, ax.asarray(m[0]))
    seen.clear()
    s = ax.linalg.svd(ax.asarray(m))[1]  # float64 (emulated on a chip) keeps 64-bit types on
    assert seen and all(seen) and s.dtype == ax.float64  # (traced once per platform branch: scaled on a TPU)
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(m, compute_uv=False), rtol=1e-12)


def test_compiled_graph_refused_before_compiling(complex128_kept):
    c = ax.asarray(np.ones(3, dtype=np.complex128))
    with pytest.raises(NotImplementedError, match="tanh: complex128 on a TPU \\(in a compiled function\\)"):
        ax.jit(lambda v: ax.tanh(v) + 1)(c)
    with pytest.raises(NotImplementedError, match="abs: complex128"):  # inside a control-flow body too
        ax.jit(lambda v: ax.cond(True, lambda u: ax.abs(u), lambda u: ax.real(u), v))(c)
    out = ax.jit(lambda v: ax.tanh(v) + 1)(ax.asarray(np.ones(3, dtype=np.complex64)))
    np.testing.assert_allclose(np.asarray(out), np.tanh(np.ones(3, dtype=np.complex64)) + 1, rtol=1e-6)


def test_nothing_refused_without_a_tpu():
    ex = base.get("jax")
    with ax.use_executor("jax"):
        x = ax.asarray(np.array([1 + 1j, -2j]))
        np.testing.assert_allclose(np.asarray(ax.abs(x)), np.abs(np.array([1 + 1j, -2j])))
    if not ex._has_tpu:
        assert all(type(fn).__name__ != "Guarded" for fn in ex.impls.values())


def test_table_covers_every_abort_the_probe_saw():
    """Every abort and internal XLA error in the committed probe is listed with its dtype."""
    from arrayx.executors.jax import tpu_limits

    data = json.loads(PROBE.read_text())
    assert data["environment"]["jax"] == tpu_limits.MEASURED_ON["jax"]
    assert data["environment"]["libtpu"] == tpu_limits.MEASURED_ON["libtpu"]
    missing = []
    for r in data["results"]:
        if r["status"] not in ("abort", "xla-internal", "timeout"):
            continue
        name = PRIMITIVE_OF.get(r["func"], r["func"])
        dtypes = [np.dtype(d) for d in r["dtypes"]]
        if name in tpu_limits.LOWER_IN_32_BITS and not any(d.name in ("float64", "complex128", "int64", "uint64") for d in dtypes):
            continue  # the probe lowered it with 64-bit types on; arrayx lowers it with them off
        if name == "astype":
            dtypes = [np.dtype(r["id"].split("->")[1].rstrip("]"))]
        elif any(d.kind in "iu" for d in dtypes) and name in ("signbit", "atan2", "copysign", "nextafter"):
            dtypes = [np.dtype("float64")]  # integers are promoted to the default float before the primitive
        if tpu_limits.reason(name, dtypes) is None:
            missing.append(r["id"])
    assert not missing, f"probe results not in tpu_limits.REFUSED: {missing}"


@functools.cache
def _compiled(fn, **params):
    """``fn`` (a scaled form) with ``params`` as one ``jax.jit`` program, as the executor's eager mode runs
    a primitive (eager.py's ``Jitted``): compiled once per shape and dtype, for every magnitude (op by op,
    each of its steps would compile a program of its own)."""
    import jax

    return jax.jit(functools.partial(fn, **params))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("magnitude", [1e19, 1e-30, 1.0])
def test_svd_scaled_by_a_power_of_two_as_a_tpu_runs_it(dtype, magnitude, on_the_cpu):
    """On a TPU the jax executor's svd and svdvals scale each matrix by a power of two first (XLA:TPU's
    svd overflowed to NaN on entries near 1e19): the scaled forms themselves, run here on the CPU,
    give NumPy's singular values and U, Vh that rebuild the input; zero, empty and non-finite
    matrices pass as they are."""
    from arrayx.executors.jax import executor as jex, linalg as jl

    assert jex.JaxExecutor.overrides["svd"].corrected is jl.scaled_svd
    assert jex.JaxExecutor.overrides["svdvals"].corrected is jl.scaled_svdvals
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 4, 3)) * magnitude
    if dtype is np.complex64:
        a = a + 1j * rng.standard_normal((2, 4, 3)) * magnitude
    a = a.astype(dtype)
    want = np.linalg.svd(a.astype(np.complex128 if dtype is np.complex64 else np.float64), compute_uv=False)
    u, s, vh = _compiled(jl.scaled_svd, full_matrices=False)(a)
    np.testing.assert_allclose(np.asarray(s), want, rtol=2e-6)
    np.testing.assert_allclose(np.asarray(_compiled(jl.scaled_svdvals)(a)), want, rtol=2e-6)
    np.testing.assert_allclose((np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh), a,
                               atol=2e-6 * np.abs(a).max())
    assert np.asarray(_compiled(jl.scaled_svdvals)(np.zeros((3, 2), dtype))).tolist() == [0.0, 0.0]
    assert _compiled(jl.scaled_svdvals)(np.zeros((2, 0, 3), dtype)).shape == (2, 0)
    assert np.isnan(np.asarray(_compiled(jl.scaled_svdvals)(np.array([[np.nan, 1], [0, 1]], dtype)))).all()


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("magnitude", [1e19, 1e-19, 1e-30])
def test_eigh_and_qr_scaled_by_a_power_of_two_as_a_tpu_runs_it(dtype, magnitude, on_the_cpu):
    """On a TPU the jax executor's eigh, eigvalsh and qr scale each matrix by a power of two first
    (XLA:TPU's gave non-finite or 10-80%-off answers at these magnitudes, session 24): the scaled forms,
    run here on the CPU, give NumPy's eigenvalues, eigenvectors that rebuild the input and Q R that
    rebuild it, scaled back exactly (the batch's two matrices at magnitudes 2**20 apart)."""
    from arrayx.executors.jax import executor as jex, linalg as jl

    for name in ("eigh", "eigvalsh", "qr"):
        assert jex.JaxExecutor.overrides[name].corrected is getattr(jl, f"scaled_{name}")
        assert jex.JaxExecutor.overrides[name].raw is getattr(jl, name)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 4, 4))
    if dtype is np.complex64:
        a = a + 1j * rng.standard_normal((2, 4, 4))
    a = (a * magnitude * np.array([1.0, 2.0**-20])[:, None, None]).astype(dtype)
    h = ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dtype)
    wide = np.complex128 if dtype is np.complex64 else np.float64
    want = np.linalg.eigvalsh(h.astype(wide))
    w, v = (np.asarray(t).astype(wide) for t in _compiled(jl.scaled_eigh)(h))
    np.testing.assert_allclose(w, want, rtol=1e-5, atol=0)
    np.testing.assert_allclose(np.asarray(_compiled(jl.scaled_eigvalsh)(h)), w, rtol=1e-6, atol=0)
    for i in range(2):
        np.testing.assert_allclose((v[i] * w[i]) @ np.conj(v[i].T), h[i], atol=1e-5 * np.abs(h[i]).max(), rtol=0)
    for mode, k in (("reduced", 4), ("complete", 4)):
        q, r = (np.asarray(t).astype(wide) for t in _compiled(jl.scaled_qr, mode=mode)(a))
        assert q.shape == (2, 4, k) and r.shape == (2, k, 4)
        for i in range(2):
            np.testing.assert_allclose(q[i] @ r[i], a[i], atol=1e-5 * np.abs(a[i]).max(), rtol=0)
    tall = np.ones((5, 3), dtype) * magnitude  # (into the program as it is: no jax.numpy transfer program)
    q, r = (np.asarray(t) for t in _compiled(jl.scaled_qr)(tall))
    assert q.shape == (5, 3) and r.shape == (3, 3) and q.dtype == r.dtype == dtype
    np.testing.assert_allclose(q.astype(wide) @ r.astype(wide), tall, rtol=1e-5)  # Q R on the host, as above
    assert np.asarray(_compiled(jl.scaled_eigvalsh)(np.zeros((3, 3), dtype))).tolist() == [0.0, 0.0, 0.0]
    assert _compiled(jl.scaled_qr)(np.zeros((2, 0, 3), dtype))[1].shape == (2, 0, 3)


@pytest.mark.parametrize("name", ["scaled_svd", "scaled_svdvals", "scaled_eigh", "scaled_eigvalsh", "scaled_qr"])
def test_scaled_forms_of_64_bit_types_shift_no_64_bit_integers(name, on_the_cpu):
    """On the chip (session 25), ``svd`` of a float64 array raised XLA:TPU's internal "shift-right-arithmetic
    with different element types" error: the power-of-two scaling took ``frexp``/``ldexp`` of float64,
    64-bit integer shifts that XLA:TPU's emulation of 64-bit types cannot compile.  The scaled forms make
    their powers of two in float32 for every dtype, so their float64 and complex128 programs shift no
    64-bit integer, and still give NumPy's values."""
    import re

    import jax

    from arrayx.executors.jax import linalg as jl, x64

    fn = getattr(jl, name)
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.complex128):
        a = rng.standard_normal((2, 4, 4)) * 1e15
        a = (a + 1j * a[..., ::-1] if dtype is np.complex128 else a).astype(dtype)
        if name in ("scaled_eigh", "scaled_eigvalsh"):
            a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
        with ax.use_executor("jax"):
            ax.asarray(0.0)  # the executor loaded: its 64-bit switch set up
        # in arrayx's 64-bit scope, as the executor calls them
        text = x64.call_scoped(lambda: str(jax.make_jaxpr(fn)(a)), (), {})
        got = x64.call_scoped(fn, (a,), {})
        shifts = [line.strip() for line in text.splitlines()
                  if re.search(r"\bshift_\w+", line) and re.search(r"\b[iu]64\[", line)]
        assert not shifts, shifts
        got = got if isinstance(got, tuple) else (got,)
        if name in ("scaled_svd", "scaled_svdvals"):
            s = np.asarray(got[1] if name == "scaled_svd" else got[0])
            np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
        elif name in ("scaled_eigh", "scaled_eigvalsh"):
            np.testing.assert_allclose(np.asarray(got[0]), np.linalg.eigvalsh(a), rtol=1e-12,
                                       atol=1e-12 * np.abs(a).max())
        else:
            q, r = (np.asarray(t) for t in got)
            np.testing.assert_allclose(q @ r, a, rtol=0, atol=1e-12 * np.abs(a).max())
