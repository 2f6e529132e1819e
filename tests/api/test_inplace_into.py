"""In-place operators (``x op= y``): the out-of-place result, on every executor; on the NumPy executor
written straight into x's buffer by NumPy's ufunc (no temporary the size of x: ``Array._inplace``)."""
from __future__ import annotations

import operator
import tracemalloc

import numpy as np
import pytest

import arrayx
from tests.conftest import assert_same

_RNG = np.random.default_rng(30)
_FLOAT_OPS = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
              "**=": operator.ipow, "//=": operator.ifloordiv, "%=": operator.imod}
_OUT_OF_PLACE = {"+=": operator.add, "-=": operator.sub, "*=": operator.mul, "/=": operator.truediv,
                 "**=": operator.pow, "//=": operator.floordiv, "%=": operator.mod, "&=": operator.and_,
                 "|=": operator.or_, "^=": operator.xor, "<<=": operator.lshift, ">>=": operator.rshift}
_INT_OPS = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "//=": operator.ifloordiv,
            "%=": operator.imod, "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
            "<<=": operator.ilshift, ">>=": operator.irshift}


def _run(op, fn, a, b):
    x = arrayx.asarray(a, copy=True)  # the NumPy executor would share a's memory (and write into it)
    y = arrayx.asarray(b) if isinstance(b, np.ndarray) else b
    want = _OUT_OF_PLACE[op](x, y)  # the out-of-place result on the same executor
    fn(x, y)
    return x, want


@pytest.mark.parametrize("other", ["same shape", "broadcast row", "python float", "python int"])
@pytest.mark.parametrize("op", list(_FLOAT_OPS))
def test_float_inplace_equals_out_of_place_and_numpy_executor(executor, op, other):
    a = _RNG.uniform(0.5, 2.0, size=(5, 4))
    b = {"same shape": _RNG.uniform(0.5, 2.0, size=(5, 4)), "broadcast row": _RNG.uniform(0.5, 2.0, size=4),
         "python float": 1.5, "python int": 3}[other]
    x, want = _run(op, _FLOAT_OPS[op], a, b)
    assert_same(x, want)
    with arrayx.use_executor("numpy"):
        ref, _ = _run(op, _FLOAT_OPS[op], a, b)
    assert_same(x, np.asarray(ref))


@pytest.mark.parametrize("op", list(_INT_OPS))
def test_integer_inplace_equals_out_of_place(executor, op):
    a = _RNG.integers(-50, 50, size=(3, 6))
    b = _RNG.integers(1, 5, size=(3, 6))
    x, want = _run(op, _INT_OPS[op], a, b)
    assert_same(x, want)
    assert_same(x, _OUT_OF_PLACE[op](a, b))


def test_views_see_the_write_and_overlap_is_safe(executor):
    a = _RNG.normal(size=(6, 6))
    x = arrayx.asarray(a, copy=True)
    row = x[2]
    x += x.T  # operands overlapping the output: as if the right side were copied first
    assert_same(x, a + a.T)
    if arrayx.get_executor().mutable:  # a view shares the memory on mutable executors, as in NumPy
        assert_same(row, (a + a.T)[2])


def test_errors_unchanged():
    with arrayx.use_executor("numpy"):
        i = arrayx.asarray(np.arange(6).reshape(2, 3))
        with pytest.raises(TypeError, match="in-place operators cannot change an array's dtype"):
            i /= arrayx.asarray(np.ones((2, 3), dtype=np.int64))
        f = arrayx.asarray(np.ones(3))
        with pytest.raises(ValueError, match="cannot change an array's shape"):
            f += arrayx.asarray(np.ones((2, 3)))
        c = arrayx.asarray(np.array([1 + 1j, 2 - 1j]))
        c /= arrayx.asarray(np.array([1j, 2 + 0j]))  # complex division keeps arrayx's own rule
        assert_same(c, np.array([1 - 1j, 1 - 0.5j]))


@pytest.mark.parametrize("op", ["-=", "*=", "/=", "**="])
def test_numpy_executor_writes_into_the_buffer_without_a_temporary(op):
    with arrayx.use_executor("numpy"):
        x = arrayx.asarray(np.ones((500, 500)))  # 2 MB: below the buffer pool's sizes, so a temporary is malloc'd
        m = arrayx.asarray(np.full(500, 2.0))
        buf = x._buf
        _FLOAT_OPS[op](x, m)  # warm
        tracemalloc.start()
        try:
            _FLOAT_OPS[op](x, m)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert x._buf is buf
        assert peak < 500_000, f"x {op} m allocated {peak} bytes: a temporary the size of x"
