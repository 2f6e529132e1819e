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
