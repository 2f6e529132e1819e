"""``__array_namespace_info__()``: the standard's inspection object."""
from __future__ import annotations

import pytest

import arrayx as xp
from arrayx.core import executor as base


def test_capabilities(executor):
    caps = xp.__array_namespace_info__().capabilities()
    # exactly the standard's keys: array-api-extra compares the whole dict
    assert set(caps) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert isinstance(caps, dict)
    assert isinstance(caps["boolean indexing"], bool)
    assert isinstance(caps["data-dependent shapes"], bool)
    assert caps["max dimensions"] is None or isinstance(caps["max dimensions"], int)
    assert caps == base.get(executor).capabilities()


def test_executor_info_holds_the_rest(executor):
    info = xp.__array_namespace_info__()
    extra = info.executor_info()
    assert isinstance(extra, dict) and extra == base.get(executor).executor_info()
    assert not set(extra) & set(info.capabilities())
    if executor == "numba":
        assert {"native", "native size thresholds", "threading layer", "kernel cache"} <= set(extra)
        assert info.executor_info(device="numba") == extra
    else:
        assert extra == {}


def test_default_device_follows_selection(executor):
    info = xp.__array_namespace_info__()
    dev = info.default_device()
    assert dev == base.get(executor).default_device()
    assert xp.zeros(1).device == dev


def test_devices_list_every_available_executor():
    devices = xp.__array_namespace_info__().devices()
    assert isinstance(devices, tuple)  # the standard's type since 2025.12 (the official suite checks it)
    # clients written for 2024.12, when it was a list, concatenate lists: SciPy's fixture
    assert devices + [None] == [*devices, None] and [None] + devices == [None, *devices]
    assert devices + (None,) == (*devices, None)
    assert devices + [None]  # noqa: B015
    assert {d.executor for d in devices} == set(xp.executors())
    for d in devices:
        assert xp.zeros(2, device=d).device == d  # each is a valid device= argument


def test_return_types_are_the_standards():
    info = xp.__array_namespace_info__()
    assert type(info.capabilities()) is dict and isinstance(info.devices(), tuple)
    assert type(info.default_dtypes()) is dict and type(info.dtypes()) is dict
    assert isinstance(info.default_device(), type(info.devices()[0]))


def test_default_dtypes():
    info = xp.__array_namespace_info__()
    expected = {"real floating": xp.float64, "complex floating": xp.complex128,
                "integral": xp.int64, "indexing": xp.int64}
    assert info.default_dtypes() == expected
    for d in info.devices():
        assert info.default_dtypes(device=d) == expected


def test_default_dtypes_and_dtypes_follow_the_device_table(monkeypatch):
    # the answers come from the platform table (api/_device_dtypes.py): a platform marked as a TPU's
    # answers 32-bit defaults and the 8/16/32-bit dtypes; the others are untouched
    from arrayx.api import _device_dtypes

    monkeypatch.setitem(_device_dtypes.PLATFORMS, "cpu", _device_dtypes.TPU)
    _device_dtypes.clear_caches()
    try:
        info = xp.__array_namespace_info__()
        assert info.default_dtypes(device="numpy") == {
            "real floating": xp.float32, "complex floating": xp.complex64, "integral": xp.int32, "indexing": xp.int32}
        assert list(info.dtypes(device="numpy", kind="numeric")) == [
            "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32", "complex64"]
        assert list(info.dtypes(device="numpy", kind="real floating")) == ["float32"]
    finally:
        monkeypatch.undo()
        _device_dtypes.clear_caches()
    assert xp.__array_namespace_info__().default_dtypes(device="numpy")["real floating"] == xp.float64
    assert "float64" in xp.__array_namespace_info__().dtypes(device="numpy")


@pytest.mark.parametrize("kind, names", [
    (None, ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64", "complex64", "complex128"]),
    ("bool", ["bool"]),
    ("signed integer", ["int8", "int16", "int32", "int64"]),
    ("unsigned integer", ["uint8", "uint16", "uint32", "uint64"]),
    ("integral", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]),
    ("real floating", ["float32", "float64"]),
    ("complex floating", ["complex64", "complex128"]),
    ("numeric", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64", "complex64", "complex128"]),
    (("bool", "real floating"), ["bool", "float32", "float64"]),
])
def test_dtypes(kind, names):
    info = xp.__array_namespace_info__()
    out = info.dtypes(kind=kind)
    assert list(out) == names
    for name, dt in out.items():
        assert dt == getattr(xp, name)
    for d in info.devices():
        assert info.dtypes(kind=kind, device=d) == out


def test_errors():
    info = xp.__array_namespace_info__()
    with pytest.raises(ValueError, match="dtypes: unknown kind 'float'"):
        info.dtypes(kind="float")
    with pytest.raises(ValueError, match="unknown executor 'nope'"):
        info.dtypes(device="nope")
    with pytest.raises(TypeError, match="default_dtypes: device must be"):
        info.default_dtypes(device=3)


def test_namespace_attribute():
    x = xp.asarray([1.0])
    ns = x.__array_namespace__()
    assert ns.__array_namespace_info__().default_dtypes()["indexing"] == xp.int64


# -- arrays on a non-default device with what a client creates without device= (issue 31 item 2:
# SciPy's device tests, xp.asarray(popmean) and scipy.special results beside inputs on numba:cpu) --

def _other_host_executor(default: str) -> str | None:
    for name in ("numba", "numpy"):
        if name != default and base.get(name).available():
            return name
    return None


def test_a_0d_default_array_joins_arrays_on_another_executor(executor):
    other = _other_host_executor(executor) if executor in ("numpy", "numba") else "numpy"
    if other is None or not base.get(other).available():
        pytest.skip("needs a second executor")
    x = xp.asarray([1.0, 2.0, 4.0], device=other)
    scalar = xp.asarray(0.5)  # no device=: the default executor's
    if executor not in ("numpy", "numba", "dask"):  # only 0-d arrays the host holds are moved
        with pytest.raises(TypeError, match="different executors"):
            x - scalar
        return
    for got in (x - scalar, scalar - x, xp.where(xp.asarray(True), x, scalar), xp.mean(x) - scalar):
        assert got.device == x.device
    with xp.use_executor("numpy"):
        want = xp.asarray([1.0, 2.0, 4.0]) - 0.5
    import numpy as np

    assert np.array_equal(np.asarray(x - scalar), np.asarray(want))
    one = xp.asarray([0.5])  # one element, not 0-d: never moved
    with pytest.raises(TypeError, match="different executors"):
        x - one
    with pytest.raises(TypeError, match="different executors"):  # a 0-d array of a non-default executor stays
        xp.asarray(1.0, device=other) + xp.asarray([1.0], device=executor)


def test_special_serves_scipys_ufuncs_on_the_operands_device(executor):
    sc = pytest.importorskip("scipy.special")
    import numpy as np

    host = np.linspace(0.1, 0.9, 5)
    x = xp.asarray(host, device=executor)
    got = xp.special.entr(x)
    assert got.device == x.device
    assert np.allclose(np.asarray(got), sc.entr(host))
    assert np.allclose(np.asarray(xp.special.betainc(2.0, 3.0, x)), sc.betainc(2.0, 3.0, host))
    for name in ("rel_entr", "xlogy", "no_such_function", "factorial"):  # composed by SciPy, absent, not a ufunc
        assert not hasattr(xp.special, name)
