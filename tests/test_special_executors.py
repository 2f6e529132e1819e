"""``arrayx.special`` (SciPy's ufuncs on arrayx arrays) and NumPy ufuncs computed on NumPy copies
refuse operands of two executors with the TypeError ``x + y`` raises (issue #40 point 8)."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_same


def _other(executor: str) -> str:
    return "numba" if executor == "numpy" else "numpy"


def _pair(executor):
    from arrayx.core import executor as base

    other = _other(executor)
    if not base.get(other).available():
        pytest.skip(f"executor {other!r} unavailable: {base.get(other).unavailable_reason}")
    x = xp.asarray([1.0, 2.0, 3.0], device=executor)
    y = xp.asarray([2.0, 0.5, 4.0], device=other)
    return x, y, other


def _message(fn, *args) -> str:
    with pytest.raises(TypeError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("name", ["beta", "binom"])
def test_special_refuses_operands_of_two_executors_as_add_does(executor, name):
    pytest.importorskip("scipy.special")
    x, y, other = _pair(executor)
    want = _message(lambda a, b: a + b, x, y)
    assert want.startswith("add: arrays live on different executors")
    for a, b, order in ((x, y, (executor, other)), (y, x, (other, executor))):
        got = _message(getattr(xp.special, name), a, b)
        assert got == f"{name}: arrays live on different executors ({order[0]!r} and {order[1]!r}); " \
                      f"move one with x.to_device(...) or arrayx.asarray(x, device=...) first"
    # a NumPy ufunc without an arrayx counterpart takes the same path (NumPy on copies)
    assert _message(np.gcd, xp.astype(x, xp.int64), xp.astype(y, xp.int64)).startswith(
        f"gcd: arrays live on different executors ({executor!r} and {other!r})")


def test_special_on_one_executor_is_the_numpy_executors(executor):
    sc = pytest.importorskip("scipy.special")
    x = xp.asarray([1.0, 2.0, 3.0])
    y = xp.asarray([2.0, 0.5, 4.0])
    got = xp.special.beta(x, y)
    assert got.executor == executor
    assert_same(got, sc.beta(np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.5, 4.0])))
    # NumPy operands and scalars join the arrayx operand's executor
    assert_same(xp.special.beta(x, np.array([2.0, 0.5, 4.0])), sc.beta(np.array([1.0, 2.0, 3.0]),
                                                                        np.array([2.0, 0.5, 4.0])))
