"""Data type functions and the dtype objects."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_same


def test_dtypes_are_numpy_dtypes():
    assert xp.float32 == np.dtype("float32")
    assert xp.bool == np.bool_
    assert len({xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16, xp.uint32, xp.uint64,
                xp.float32, xp.float64, xp.complex64, xp.complex128, xp.bool}) == 13


def test_astype(executor):
    x = xp.asarray([1.7, -2.2, 3.0])
    assert_same(xp.astype(x, xp.int32), np.array([1.7, -2.2, 3.0]).astype(np.int32))
    assert_same(xp.astype(x, xp.float32), np.array([1.7, -2.2, 3.0], dtype=np.float32))
    assert xp.astype(x, xp.float64, copy=False) is x
    with pytest.raises(TypeError, match="astype: casting complex"):
        xp.astype(xp.asarray([1j]), xp.float64)


@pytest.mark.parametrize("kind,dtype,want", [
    ("bool", xp.bool, True), ("signed integer", xp.int8, True), ("signed integer", xp.uint8, False),
    ("unsigned integer", xp.uint64, True), ("integral", xp.int32, True), ("real floating", xp.float32, True),
    ("complex floating", xp.complex64, True), ("numeric", xp.bool, False), ("numeric", xp.complex128, True),
    (("bool", "real floating"), xp.float64, True), (xp.int16, xp.int16, True), (xp.int16, xp.int32, False),
])
def test_isdtype(kind, dtype, want):
    assert xp.isdtype(dtype, kind) is want


def test_isdtype_accepts_numpy_types():
    assert xp.isdtype(np.float32, "real floating")
    assert xp.isdtype(np.dtype("int8"), "integral")
    with pytest.raises(ValueError, match="isdtype: unknown kind"):
        xp.isdtype(xp.float32, "floating")


def test_result_type_and_can_cast():
    assert xp.result_type(xp.int8, xp.uint8) == xp.int16
    assert xp.result_type(xp.float32, 1.0) == xp.float32
    assert xp.result_type(xp.asarray([1], dtype=xp.int16), xp.int32) == xp.int32
    assert xp.can_cast(xp.int8, xp.int16)
    assert not xp.can_cast(xp.int16, xp.int8)
    assert not xp.can_cast(xp.int64, xp.float64)
    assert xp.can_cast(xp.float32, xp.complex64)
    assert not xp.can_cast(xp.complex64, xp.float64)


def test_finfo_iinfo():
    f = xp.finfo(xp.float32)
    assert f.bits == 32 and f.eps == float(np.finfo(np.float32).eps) and f.dtype == xp.float32
    assert xp.finfo(xp.complex128).dtype == xp.float64
    i = xp.iinfo(xp.uint8)
    assert (i.min, i.max, i.bits) == (0, 255, 8)
    with pytest.raises(TypeError, match="finfo: expected a floating-point dtype"):
        xp.finfo(xp.int8)


def test_standard_tables_ignore_the_extension_floats():
    # the extension floats (float16, bfloat16) add rows to the tables; the standard's rows stay
    from arrayx.api import _dtypes

    std = _dtypes.all_dtypes
    xp.bfloat16  # registered: its rows are in the tables too
    assert len(std) == 13 and xp.float16 not in std and xp.bfloat16 not in std
    assert all(_dtypes.PROMOTION[a, b] == np.result_type(a, b) for a in std for b in std)
    for a in std:
        for b in std:
            mixed = {a.kind, b.kind}
            undefined = ("b" in mixed and len(mixed) > 1 or bool(mixed & {"i", "u"} and mixed & {"f", "c"})
                         or xp.uint64 in (a, b) and "i" in mixed)
            assert ((a, b) in _dtypes.STANDARD_PROMOTION) is (not undefined), (a, b)
    assert _dtypes.CATEGORIES["real floating"] & set(std) == {xp.float32, xp.float64}
    assert xp.isdtype(xp.float16, "real floating") and not xp.isdtype(xp.float16, "complex floating")
