"""The namespace is the 2025.12 standard: every name, every signature, dtypes, version, round trip.

Names and signatures come from the official stubs when they are importable, else from the
snapshot ``conformance/spec_2025_12.json`` (see ``conformance/spec.py``).
"""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import arrayx as xp
from conformance import spec

SPEC = spec.load()


def _namespace(ext: str):
    return xp if ext == "main" else getattr(xp, ext)


SIGNATURES = sorted(SPEC["signatures"].items())


# -- names --------------------------------------------------------------------------------


@pytest.mark.parametrize("ext", ["main", "linalg", "fft"])
def test_every_name_of_the_standard_exists(ext: str) -> None:
    ns = _namespace(ext)
    missing = [n for n in SPEC["namespaces"][ext] if not hasattr(ns, n)]
    assert not missing, f"arrayx{'' if ext == 'main' else '.' + ext} lacks {missing}"


@pytest.mark.parametrize("ext", ["linalg", "fft"])
def test_extension_all_lists_the_standard(ext: str) -> None:
    ns = _namespace(ext)
    assert set(SPEC["namespaces"][ext]) <= set(ns.__all__)


def test_linalg_shares_the_main_namespace_functions() -> None:
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(xp.linalg, name) is getattr(xp, name), name


def test_constants() -> None:
    assert xp.e == math.e and xp.pi == math.pi and xp.inf == math.inf
    assert isinstance(xp.nan, float) and math.isnan(xp.nan)
    assert xp.newaxis is None


def test_api_version() -> None:
    assert xp.__array_api_version__ == "2025.12" == SPEC["version"]


def test_special_is_scipys_ufuncs_only() -> None:
    # SciPy routes to ``xp.special`` when a namespace has one: arrayx.special serves exactly
    # scipy.special's ufuncs (run through __array_ufunc__, results on the operands' device), and
    # nothing SciPy composes itself or that is not a ufunc (issue 31 item 2)
    sc = pytest.importorskip("scipy.special")
    import numpy as np

    assert getattr(xp.special, "entr") is getattr(sc.entr, "__wrapped__", sc.entr)
    assert isinstance(xp.special.ndtr, np.ufunc)
    assert not hasattr(xp.special, "xlogy") and not hasattr(xp.special, "softmax")


# -- signatures ----------------------------------------------------------------------------


@pytest.mark.parametrize("name,expected", SIGNATURES, ids=[n for n, _ in SIGNATURES])
def test_signature_matches_the_standard(name: str, expected: list) -> None:
    ns, _, fname = name.rpartition(".")
    fn = getattr(_namespace(ns or "main"), fname)
    got = spec.signature_of(fn)
    assert [p[0] for p in got] == [p[0] for p in expected], f"{name}: parameter names"
    assert [p[1] for p in got] == [p[1] for p in expected], f"{name}: parameter kinds {got} != {expected}"
    assert [p[2] for p in got] == [p[2] for p in expected], f"{name}: defaults {got} != {expected}"


@pytest.mark.parametrize("name", sorted(SPEC["info"]))
def test_inspection_methods_match_the_standard(name: str) -> None:
    info = xp.__array_namespace_info__()
    assert spec.signature_of(getattr(info, name)) == SPEC["info"][name]


@pytest.mark.parametrize("name", sorted(SPEC["array"]))
def test_array_members_match_the_standard(name: str) -> None:
    expected = SPEC["array"][name]
    member = inspect.getattr_static(xp.Array, name)
    if expected == "property":
        assert isinstance(member, property), f"Array.{name} must be a property"
    else:
        assert callable(member), f"Array.{name} must be a method"
        assert spec.signature_of(member) == expected, f"Array.{name}"


# -- dtypes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", spec.DTYPE_NAMES)
def test_dtypes_are_numpy_dtypes(name: str) -> None:
    dt = getattr(xp, name)
    assert isinstance(dt, np.dtype)
    assert dt == np.dtype(name)
    assert xp.asarray([0], dtype=dt).dtype == dt
    assert xp.__array_namespace_info__().dtypes()[name] == dt


def test_dtype_equality_follows_the_standard() -> None:
    assert xp.float32 != xp.float64 and xp.int64 != xp.uint64 and xp.bool != xp.int8
    assert xp.float32 == np.float32 and xp.int8 == np.dtype("int8")


@pytest.mark.parametrize(
    "dtype,kind,expected",
    [
        (np.dtype("float32"), "real floating", True),
        (np.float64, "real floating", True),
        (np.int8, "signed integer", True),
        (np.uint16, "unsigned integer", True),
        (np.uint16, "signed integer", False),
        (np.complex64, "complex floating", True),
        (np.complex64, "real floating", False),
        (np.bool_, "bool", True),
        (np.bool_, "integral", False),
        (np.int64, ("bool", "integral"), True),
        (np.float32, np.float32, True),
        (np.dtype("int32"), xp.int32, True),
        (xp.int32, np.int64, False),
        (xp.float64, "numeric", True),
    ],
)
def test_isdtype_accepts_numpy_dtypes_and_scalar_types(dtype, kind, expected) -> None:
    assert xp.isdtype(dtype, kind) is expected


def test_isdtype_rejects_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="isdtype"):
        xp.isdtype(xp.float32, "floating")


# -- the namespace round trip ---------------------------------------------------------------------


def test_array_namespace_round_trip(executor: str) -> None:
    x = xp.asarray([1.0, 2.0])
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2025.12") is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")


def test_array_api_compat_finds_arrayx(executor: str) -> None:
    array_api_compat = pytest.importorskip("array_api_compat")
    x = xp.ones(3)
    assert array_api_compat.array_namespace(x) is xp
    assert array_api_compat.is_array_api_obj(x)
    assert array_api_compat.device(x) == x.device


def test_info_defaults() -> None:
    info = xp.__array_namespace_info__()
    assert info.default_dtypes() == {
        "real floating": xp.float64, "complex floating": xp.complex128,
        "integral": xp.int64, "indexing": xp.int64,
    }
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64",
                                                 "uint8", "uint16", "uint32", "uint64"}
    assert {"boolean indexing", "data-dependent shapes", "max dimensions"} <= set(info.capabilities())
    assert info.default_device() in info.devices()
