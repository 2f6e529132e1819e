"""The one comparator (``conformance.compare``): its tolerance rule, and that it can fail."""
from __future__ import annotations

import numpy as np
import pytest

from conformance import compare as C


@pytest.mark.parametrize("got,want", [
    (np.zeros(3, np.float32), np.zeros(3, np.float64)),             # dtype
    (np.zeros((3, 1)), np.zeros(3)),                                 # shape
    (np.array([1.0, 2.0, 3.0 + 1e-9]), np.array([1.0, 2.0, 3.0])),   # beyond 4096 eps of float64
    (np.array([1.0, 1.001], np.float32), np.array([1.0, 1.0], np.float32)),  # beyond 4096 eps of float32
    (np.array([1, 2, 3]), np.array([1, 2, 4])),                      # integers are exact
    (np.array([np.nan, 1.0]), np.array([0.0, 1.0])),                 # NaN where a number is expected
    (np.array([np.inf]), np.array([1e308])),                         # an infinity
])
def test_composite_class_detects_differences(got, want) -> None:
    with pytest.raises(C.Mismatch):
        C.compare(("array", got), ("array", want))
    with pytest.raises(AssertionError):
        C.assert_same(got, want)


def test_composite_class_accepts_rounding_and_special_values() -> None:
    want = np.array([1.0, np.nan, np.inf, -0.0, 5e-324])
    C.compare(("array", want * (1 + 1e-13)), ("array", np.where(want == 5e-324, 0.0, want)))  # flush allowed
    C.assert_same([np.float32(1) + np.float32(1e-4) * np.ones(2, np.float32)], [np.ones(2, np.float32)])
    C.compare(("tuple", (("value", 3), ("array", want))), ("tuple", (("value", 3), ("array", want))))
    with pytest.raises(C.Mismatch):
        C.compare(("value", 3), ("value", 3.0))  # int vs float is a difference


def test_the_rule_is_in_epsilons_of_the_result_dtype_and_scales_with_magnitude() -> None:
    assert C.bounds(np.float64, "elementwise") == (8 * 2.0**-52, 4 * 2.0**-52)
    assert C.bounds(np.complex64, "linalg", scale=10.0) == (2048 * 2.0**-23, 2048 * 2.0**-23 * 10.0)
    assert C.bounds(np.int8, "composite") == (0.0, 0.0)
    big = np.array([1e6, 1.0])  # 1.0 differs by 1e-11: within atol scaled by the largest magnitude
    C.compare(("array", big + np.array([0, 1e-11])), ("array", big), "composite", C.scale_of(big))
    with pytest.raises(C.Mismatch):
        C.compare(("array", big + np.array([0, 1e-11])), ("array", big), "composite", 1.0)


def test_strict_classes_compare_signed_zeros_and_subnormals() -> None:
    with pytest.raises(C.Mismatch, match="sign of a zero"):
        C.compare(("array", np.array([0.0])), ("array", np.array([-0.0])), "elementwise")
    C.compare(("array", np.array([0.0])), ("array", np.array([-0.0])), "reduction")
    with pytest.raises(C.Mismatch, match="subnormal"):
        C.compare(("array", np.array([0.0], np.float32)), ("array", np.array([1e-40], np.float32)), "reduction")
