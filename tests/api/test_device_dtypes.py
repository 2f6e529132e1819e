"""Default dtypes per device (issue #41 point 1) and the setting for 64-bit data on a TPU.

There is no TPU here: the ``tpu_jax`` fixture has the jax executor report its CPU devices as the
"tpu" platform, so they take the table's TPU row (32-bit defaults, no native 64-bit types) through
the same lookup a real TPU goes through (``Executor.platform_of`` -> ``_device_dtypes.PLATFORMS``).
Values are compared with the NumPy executor's, cast to the 32-bit dtypes; the other executors keep
the standard's 64-bit defaults with the fixture on.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayx as ax
from arrayx.api import _device_dtypes
from arrayx.core import config as _config
from arrayx.core import executor as base
from tests.executors.platform_tolerances import dtypes_of_a_tpu

_jax = base.get("jax")
needs_jax = pytest.mark.skipif(not _jax.available(), reason=f"executor 'jax' unavailable: {_jax.unavailable_reason}")

_32 = {"real floating": ax.float32, "complex floating": ax.complex64, "integral": ax.int32, "indexing": ax.int32}
_64 = {"real floating": ax.float64, "complex floating": ax.complex128, "integral": ax.int64, "indexing": ax.int64}


@pytest.fixture
def tpu_jax(monkeypatch):
    """The jax executor's devices count as TPUs (the table's "tpu" row); new arrays go there."""
    with dtypes_of_a_tpu(monkeypatch) as device:
        yield device


def _host(x) -> np.ndarray:
    return np.asarray(x)


# -- inspection -------------------------------------------------------------------------------------

@needs_jax
def test_info_answers_for_a_tpu(tpu_jax):
    info = ax.__array_namespace_info__()
    assert info.default_dtypes() == _32
    assert info.default_dtypes(device=tpu_jax) == _32
    assert list(info.dtypes(device=tpu_jax)) == ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32",
                                                  "float32", "complex64"]
    assert list(info.dtypes(device=tpu_jax, kind="real floating")) == ["float32"]
    assert list(info.dtypes(device=tpu_jax, kind="integral")) == ["int8", "int16", "int32", "uint8", "uint16",
                                                                  "uint32"]
    assert list(info.dtypes(device=tpu_jax, kind=("bool", "complex floating"))) == ["bool", "complex64"]
    # every other device keeps the standard's answers
    for name in ("numpy", "numba", "dask"):
        if base.get(name).available():
            assert info.default_dtypes(device=name) == _64
            assert "float64" in info.dtypes(device=name) and "uint64" in info.dtypes(device=name)


def test_info_answers_on_cpu(executor):
    info = ax.__array_namespace_info__()
    assert info.default_dtypes() == _64
    for d in base.get(executor).devices():
        assert info.default_dtypes(device=d) == _64
        assert len(info.dtypes(device=d)) == 13


def test_table_is_data():
    assert _device_dtypes.PLATFORMS["tpu"].answer() == _32
    assert _device_dtypes.STANDARD.answer() == _64
    assert _device_dtypes.for_device(base.get("numpy")) is _device_dtypes.STANDARD


# -- creation without dtype ------------------------------------------------------------------------

@needs_jax
def test_creation_defaults_on_a_tpu(tpu_jax):
    cases = {
        "zeros": (ax.zeros((2, 3)), ax.float32, np.zeros((2, 3))),
        "ones": (ax.ones(3), ax.float32, np.ones(3)),
        "empty": (ax.empty(2), ax.float32, None),
        "eye": (ax.eye(3, k=1), ax.float32, np.eye(3, k=1)),
        "full int": (ax.full(2, 7), ax.int32, np.full(2, 7)),
        "full float": (ax.full(2, 0.1), ax.float32, np.full(2, 0.1)),
        "full complex": (ax.full(2, 1 + 2j), ax.complex64, np.full(2, 1 + 2j)),
        "full bool": (ax.full(2, True), ax.bool, np.full(2, True)),
        "arange int": (ax.arange(5), ax.int32, np.arange(5)),
        "arange float": (ax.arange(0.0, 1.0, 0.25), ax.float32, np.arange(0.0, 1.0, 0.25)),
        "linspace": (ax.linspace(0, 1, 5), ax.float32, np.linspace(0, 1, 5)),
        "linspace complex": (ax.linspace(0, 1j, 3), ax.complex64, np.linspace(0, 1j, 3)),
        "asarray float": (ax.asarray(1.5), ax.float32, np.asarray(1.5)),
        "asarray int": (ax.asarray(3), ax.int32, np.asarray(3)),
        "asarray complex": (ax.asarray(2j), ax.complex64, np.asarray(2j)),
        "asarray bool": (ax.asarray(True), ax.bool, np.asarray(True)),
        "asarray list": (ax.asarray([[1.0, 2.5], [3.0, 4.0]]), ax.float32, np.array([[1.0, 2.5], [3.0, 4.0]])),
        "asarray int list": (ax.asarray([1, -2, 3]), ax.int32, np.array([1, -2, 3])),
        "asarray complex list": (ax.asarray([1j, 2]), ax.complex64, np.array([1j, 2])),
    }
    for name, (got, dt, want) in cases.items():
        assert got.dtype == dt, name
        assert got.device == tpu_jax, name
        if want is not None:
            np.testing.assert_array_equal(_host(got), want.astype(dt), err_msg=name)


@needs_jax
def test_python_data_takes_the_defaults_without_a_warning(tpu_jax):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for mode in _device_dtypes.MODES:
            with ax.tpu_64bit(mode):
                assert ax.asarray([0.1, 0.2]).dtype == ax.float32
                assert ax.asarray(2).dtype == ax.int32
                assert ax.arange(3).dtype == ax.int32


@needs_jax
def test_python_ints_beyond_int32_raise(tpu_jax):
    with pytest.raises(OverflowError, match="out of range for int32"):
        ax.asarray([1, 2 ** 40])
    with pytest.raises(OverflowError, match="out of range for int32"):
        ax.asarray(2 ** 40)
    with pytest.raises(OverflowError, match="out of range for int32"):
        ax.full(2, 2 ** 40)


# -- 64-bit data arriving: downcast (default), emulate, refuse ---------------------------------------

@needs_jax
def test_downcast_converts_and_warns_once(tpu_jax):
    data = {np.float64: np.array([0.1, -2.5, 3e38]), np.int64: np.array([1, -7, 2 ** 31 - 1]),
            np.uint64: np.array([0, 5, 2 ** 32 - 1], dtype=np.uint64), np.complex128: np.array([1 + 2j, -0.5j])}
    want = {np.float64: ax.float32, np.int64: ax.int32, np.uint64: ax.uint32, np.complex128: ax.complex64}
    with pytest.warns(_device_dtypes.DowncastWarning) as record:
        got = {k: ax.asarray(v.astype(k)) for k, v in data.items()}
        moved = ax.asarray(np.ones(2), device="numpy").to_device(tpu_jax)
    assert len(record) == 1  # once per process, whatever converts afterwards
    text = str(record[0].message)
    for part in ("asarray", "float64", "float32", str(tpu_jax), "ARRAYX_TPU_64BIT=emulate", "tpu_64bit"):
        assert part in text, part
    assert record[0].filename == __file__  # the user's line
    for k, x in got.items():
        assert x.dtype == want[k] and x.device == tpu_jax
        np.testing.assert_array_equal(_host(x), data[k].astype(want[k]))
    assert moved.dtype == ax.float32 and moved.device == tpu_jax
    np.testing.assert_array_equal(_host(moved), np.ones(2, np.float32))
    # 32-bit data is left alone
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ax.asarray(np.arange(3, dtype=np.int16)).dtype == ax.int16


@needs_jax
@pytest.mark.parametrize("call", [
    ("zeros", lambda: ax.zeros(2, dtype=ax.float64)),
    ("ones", lambda: ax.ones(2, dtype=ax.complex128)),
    ("full", lambda: ax.full(2, 1, dtype=ax.int64)),
    ("arange", lambda: ax.arange(3, dtype=ax.int64)),
    ("linspace", lambda: ax.linspace(0, 1, 3, dtype=ax.float64)),
    ("eye", lambda: ax.eye(2, dtype=ax.float64)),
    ("asarray", lambda: ax.asarray(np.ones(2, np.float32), dtype=ax.float64)),
    ("asarray", lambda: ax.asarray([1, 2], dtype=ax.uint64)),
    ("astype", lambda: ax.astype(ax.ones(2), ax.float64)),
    ("astype", lambda: ax.ones(2).astype(np.float64)),  # NumPy's method: the user's request too
    ("sum", lambda: ax.sum(ax.ones(2), dtype=ax.float64)),
    ("cumulative_sum", lambda: ax.cumulative_sum(ax.arange(3), dtype=ax.int64)),
    ("full_like", lambda: ax.zeros_like(ax.ones(2), dtype=ax.float64)),
], ids=lambda c: c[0] if isinstance(c, tuple) else None)
@pytest.mark.parametrize("mode", ["downcast", "refuse"])
def test_an_explicit_64bit_dtype_raises(tpu_jax, call, mode):
    fname, fn = call
    with ax.tpu_64bit(mode), pytest.raises(TypeError) as info:
        fn()
    text = str(info.value)
    assert text.startswith(f"{fname}: dtype="), text
    for part in (str(tpu_jax), "no native 64-bit types", "emulate"):
        assert part in text, part


@needs_jax
def test_emulate_keeps_64bit(tpu_jax):
    with ax.tpu_64bit("emulate"), warnings.catch_warnings():
        warnings.simplefilter("error")
        x = ax.asarray(np.array([0.1, 0.2]))
        assert x.dtype == ax.float64
        np.testing.assert_array_equal(_host(x), [0.1, 0.2])
        assert ax.zeros(2, dtype=ax.float64).dtype == ax.float64
        assert ax.astype(ax.arange(3), ax.int64).dtype == ax.int64
        assert ax.asarray(np.arange(3), device="numpy").to_device(tpu_jax).dtype == ax.int64
        assert ax.zeros(2).dtype == ax.float32  # the defaults stay 32-bit


@needs_jax
def test_refuse_raises_on_64bit_data(tpu_jax):
    with ax.tpu_64bit("refuse"):
        with pytest.raises(TypeError, match=r"asarray: float64 data on .*'refuse'.*astype\(float32\)"):
            ax.asarray(np.ones(2))
        with pytest.raises(TypeError, match="asarray: int64 data on"):
            ax.asarray(np.arange(2), device="numpy").to_device(tpu_jax)
        assert ax.asarray(np.ones(2, np.float32)).dtype == ax.float32
        assert ax.asarray(1.5).dtype == ax.float32


def test_the_setting_is_checked():
    with pytest.raises(ValueError, match="tpu_64bit: mode must be one of"):
        with ax.tpu_64bit("truncate"):
            pass
    assert _device_dtypes.mode() == "downcast"
    with ax.tpu_64bit("emulate"):
        with ax.tpu_64bit("refuse"):
            assert _device_dtypes.mode() == "refuse"
        assert _device_dtypes.mode() == "emulate"


def test_the_environment_variable_is_checked(monkeypatch):
    monkeypatch.setenv("ARRAYX_TPU_64BIT", "emulate")
    assert _config.get("ARRAYX_TPU_64BIT") == "emulate"
    monkeypatch.setenv("ARRAYX_TPU_64BIT", "truncate")
    with pytest.raises(_config.ConfigError, match="ARRAYX_TPU_64BIT='truncate'.*downcast, emulate or refuse"):
        _config.get("ARRAYX_TPU_64BIT")


# -- what the standard derives from the defaults ---------------------------------------------------

@needs_jax
def test_reductions_accumulate_in_the_device_integer(tpu_jax):
    host = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int8)
    x = ax.asarray(host)
    u = ax.asarray(host.astype(np.uint8))
    b = ax.asarray(host > 0)
    checks = [
        (ax.sum(x), ax.int32, host.sum(dtype=np.int64)),
        (ax.sum(x, axis=0), ax.int32, host.sum(axis=0)),
        (ax.prod(x, axis=1), ax.int32, host.prod(axis=1, dtype=np.int64)),
        (ax.cumulative_sum(x, axis=1), ax.int32, np.cumsum(host, axis=1)),
        (ax.sum(u), ax.uint32, host.astype(np.uint8).sum(dtype=np.uint64)),
        (ax.sum(b), ax.int32, (host > 0).sum()),
        (ax.mean(x), ax.float32, host.mean()),
        (ax.linalg.trace(ax.reshape(ax.arange(9, dtype=ax.int8), (3, 3))), ax.int32, 12),
        (ax.sum(ax.astype(x, ax.int32)), ax.int32, host.sum()),
    ]
    for got, dt, want in checks:
        assert got.dtype == dt
        np.testing.assert_allclose(_host(got), np.asarray(want).astype(dt), rtol=1e-6)


_INDEX_FUNCTIONS = {
    "argmax": lambda x: ax.argmax(x, axis=1),
    "argmin": lambda x: ax.argmin(x),
    "argsort": lambda x: ax.argsort(x, axis=-1),
    "count_nonzero": lambda x: ax.count_nonzero(x, axis=0),
    "searchsorted": lambda x: ax.searchsorted(ax.sort(ax.reshape(x, (-1,))), x),
}


@needs_jax
@pytest.mark.parametrize("name", sorted(_INDEX_FUNCTIONS))
def test_index_results_eager_jit_vmap(tpu_jax, name):
    fn = _INDEX_FUNCTIONS[name]
    host = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 0.0]], dtype=np.float32)
    with ax.use_executor("numpy"):
        want = _host(fn(ax.asarray(host)))
    x = ax.asarray(host)
    eager = fn(x)
    assert eager.dtype == ax.int32
    np.testing.assert_array_equal(_host(eager), want)
    staged = ax.jit(fn)(x)
    assert staged.dtype == ax.int32
    np.testing.assert_array_equal(_host(staged), want)
    graph = ax.make_graph(fn)(x)
    assert [a.dtype for a in graph.out_avals] == [ax.int32]  # staging gives eager's dtype, no executor asked
    batched = ax.vmap(fn)(ax.stack([x, x]))
    assert batched.dtype == ax.int32
    np.testing.assert_array_equal(_host(batched), np.stack([want, want]))


@needs_jax
def test_data_dependent_index_results(tpu_jax):
    host = np.array([2.0, 0.0, 2.0, 7.0], dtype=np.float32)
    x = ax.asarray(host)
    (nz,) = ax.nonzero(x)
    assert nz.dtype == ax.int32
    np.testing.assert_array_equal(_host(nz), np.nonzero(host)[0])
    values, indices, inverse, counts = ax.unique_all(x)
    assert (indices.dtype, inverse.dtype, counts.dtype) == (ax.int32,) * 3 and values.dtype == ax.float32
    _, w_indices, w_inverse, w_counts = np.unique(host, return_index=True, return_inverse=True, return_counts=True)
    for got, want in ((indices, w_indices), (inverse, w_inverse), (counts, w_counts)):
        np.testing.assert_array_equal(_host(got), want)
    assert ax.unique_counts(x).counts.dtype == ax.int32
    assert ax.unique_inverse(x).inverse_indices.dtype == ax.int32
    assert x[ax.asarray([0, 3])].dtype == ax.float32  # an index key (arrayx's own int64) still works
    np.testing.assert_array_equal(_host(x[[3, 0]]), host[[3, 0]])


@needs_jax
def test_sort_derivative_and_grad_under_the_device_index(tpu_jax):
    x = ax.asarray(np.array([3.0, 1.0, 2.0], np.float32))
    g = ax.grad(lambda v: ax.sum(ax.sort(v) * ax.arange(3.0)))(x)
    assert g.dtype == ax.float32
    np.testing.assert_array_equal(_host(g), [2.0, 0.0, 1.0])


@needs_jax
def test_random_defaults_follow_the_key(tpu_jax):
    key = ax.random.key(0)
    assert ax.random.normal(key, (4,)).dtype == ax.float32
    assert ax.random.uniform(key, (4,)).dtype == ax.float32
    assert ax.random.exponential(key, (2,)).dtype == ax.float32
    r = ax.random.randint(key, (50,), 0, 7)
    assert r.dtype == ax.int32 and 0 <= int(ax.min(r)) and int(ax.max(r)) < 7
    assert ax.random.choice(key, 5, (3,)).dtype == ax.int32
    with ax.use_executor("numpy"):
        want = _host(ax.random.uniform(ax.random.key(0), (4,), dtype=ax.float32))
    np.testing.assert_array_equal(_host(ax.random.uniform(key, (4,))), want)


@needs_jax
def test_other_executors_are_unchanged(tpu_jax):
    for name in ("numpy", "numba", "dask"):
        if not base.get(name).available():
            continue
        with ax.use_executor(name), warnings.catch_warnings():
            warnings.simplefilter("error")
            x = ax.asarray(np.array([3.0, 1.0, 2.0]))
            assert x.dtype == ax.float64
            assert (ax.zeros(2).dtype, ax.arange(2).dtype, ax.asarray(1).dtype) == (ax.float64, ax.int64, ax.int64)
            assert ax.argmax(x).dtype == ax.int64 and ax.argsort(x).dtype == ax.int64
            assert ax.sum(ax.asarray(np.int8([1, 2]))).dtype == ax.int64
            assert ax.zeros(2, dtype=ax.float64).dtype == ax.float64


def test_cpu_graphs_carry_no_index_param(executor):
    # 64-bit devices: the index primitives' params are what they were (graphs, caches, results unchanged)
    x = ax.asarray(np.array([3.0, 1.0, 2.0]))
    graph = ax.make_graph(lambda v: (ax.argmax(v), ax.argsort(v), ax.searchsorted(v, v)))(x)
    for eqn in graph.equations:
        assert "index_dtype" not in eqn.params
    assert ax.argmax(x).dtype == ax.int64


@needs_jax
def test_tpu_graphs_carry_the_index_dtype(tpu_jax):
    x = ax.asarray(np.array([3.0, 1.0, 2.0], np.float32))
    graph = ax.make_graph(lambda v: ax.argmax(v))(x)
    (eqn,) = [e for e in graph.equations if e.prim.name == "argmax"]
    assert eqn.params["index_dtype"] == ax.int32
