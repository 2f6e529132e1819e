"""Bad input raises an error that names the function and the offending value, on every executor.

Each row: the call, the exception type the standard (or Python) leads a user to expect, and
the fragments the message must contain (the function's name first, then the offending
dtype / shape / axis / value).  Arrays are created inside the call, so they live on the
executor under test: an executor must not leak its own library's bare error.  An error about an
executor names the one the caller used, not the NumPy executor some executors build on.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import arrayx as xp


def strict(fn):
    """``fn()`` in strict mode: the default mode takes these (NumPy 2 / JAX habits, tests/api/test_modes.py)."""
    with xp.strict():
        return fn()


def f64(*shape):
    return xp.ones(shape or (2,), dtype=xp.float64)


def i64(*shape):
    return xp.ones(shape or (2,), dtype=xp.int64)


def bools(*shape):
    return xp.ones(shape or (2,), dtype=xp.bool)


def c128(*shape):
    return xp.ones(shape or (2,), dtype=xp.complex128)


# (id, call, exception, fragments the message must contain, in any order)
CASES = [
    # dtypes outside a function's category
    ("sin-bool", lambda: strict(lambda: xp.sin(bools())), TypeError, ["sin", "bool"]),
    ("sin-int", lambda: strict(lambda: xp.sin(i64())), TypeError, ["sin", "int64"]),
    ("exp-bool", lambda: strict(lambda: xp.exp(bools())), TypeError, ["exp", "bool"]),
    ("bitwise_and-float", lambda: xp.bitwise_and(f64(), f64()), TypeError, ["bitwise_and", "float64"]),
    ("bitwise_or-mixed", lambda: xp.bitwise_or(i64(), f64()), TypeError, ["bitwise_or", "float64"]),
    ("bitwise_invert-float", lambda: xp.bitwise_invert(f64()), TypeError, ["bitwise_invert", "float64"]),
    ("bitwise_left_shift-float", lambda: xp.bitwise_left_shift(f64(), 1), TypeError, ["bitwise_left_shift", "float64"]),
    ("logical_and-float", lambda: xp.logical_and(f64(), f64()), TypeError, ["logical_and", "float64"]),
    ("floor-complex", lambda: xp.floor(c128()), TypeError, ["floor", "complex128"]),
    ("maximum-complex", lambda: xp.maximum(c128(), c128()), TypeError, ["maximum", "complex128"]),
    ("sort-complex", lambda: xp.sort(c128()), TypeError, ["sort", "complex128"]),
    ("clip-complex", lambda: xp.clip(c128(), 0, 1), TypeError, ["clip", "complex128"]),
    ("where-float-condition", lambda: xp.where(f64(), f64(), f64()), TypeError, ["where", "float64"]),
    ("pow-bool", lambda: xp.pow(bools(), bools()), TypeError, ["pow", "bool"]),
    ("divide-bool", lambda: strict(lambda: xp.divide(bools(), bools())), TypeError, ["divide", "bool"]),
    ("take-float-indices", lambda: xp.take(f64(), f64()), TypeError, ["take", "float64"]),
    ("cholesky-int", lambda: strict(lambda: xp.linalg.cholesky(xp.eye(2, dtype=xp.int32))), TypeError, ["cholesky", "int32"]),
    ("fft-int", lambda: strict(lambda: xp.fft.fft(i64())), TypeError, ["fft", "int64"]),
    ("rfft-complex", lambda: xp.fft.rfft(c128()), TypeError, ["rfft", "complex128"]),
    ("astype-complex-to-real", lambda: xp.astype(c128(), xp.float64), TypeError, ["astype", "complex128", "float64"]),
    ("iinfo-float", lambda: xp.iinfo(xp.float32), TypeError, ["iinfo", "float32"]),
    ("finfo-int", lambda: xp.finfo(xp.int32), TypeError, ["finfo", "int32"]),
    ("asarray-unknown-dtype", lambda: xp.asarray([1], dtype="float128"), TypeError, ["asarray", "float128"]),
    ("can_cast-not-a-dtype", lambda: xp.can_cast("abc", xp.float32), TypeError, ["can_cast", "abc"]),
    # shapes
    ("add-shapes", lambda: xp.add(f64(3), f64(4)), ValueError, ["add", "(3,)", "(4,)"]),
    ("operator-shapes", lambda: f64(2, 3) * f64(2), ValueError, ["multiply", "(2, 3)", "(2,)"]),
    ("matmul-shapes", lambda: xp.matmul(f64(2, 3), f64(4, 2)), ValueError, ["matmul", "(2, 3)", "(4, 2)"]),
    ("reshape-size", lambda: xp.reshape(f64(2, 3), (4,)), ValueError, ["reshape", "(2, 3)", "(4,)"]),
    ("broadcast_to", lambda: xp.broadcast_to(f64(2, 3), (3, 3)), ValueError, ["broadcast_to", "(2, 3)", "(3, 3)"]),
    ("concat-shapes", lambda: xp.concat([f64(2, 3), f64(2)]), ValueError, ["concat", "(2, 3)", "(2,)"]),
    ("stack-shapes", lambda: xp.stack([f64(2), f64(3)]), ValueError, ["stack", "(2,)", "(3,)"]),
    ("squeeze-non-singleton", lambda: xp.squeeze(f64(2, 3), axis=0), ValueError, ["squeeze", "0", "(2, 3)"]),
    ("vecdot-sizes", lambda: xp.vecdot(f64(3), f64(4)), ValueError, ["vecdot", "3", "4"]),
    ("tensordot-sizes", lambda: xp.tensordot(f64(2, 3), f64(2, 3), axes=1), ValueError, ["tensordot", "(2, 3)"]),
    ("inv-non-square", lambda: xp.linalg.inv(f64(2, 3)), ValueError, ["inv", "(2, 3)"]),
    ("inv-1d", lambda: xp.linalg.inv(f64(2)), ValueError, ["inv", "(2,)"]),
    ("matrix_norm-1d", lambda: xp.linalg.matrix_norm(f64(2)), ValueError, ["matrix_norm", "(2,)"]),
    ("searchsorted-2d", lambda: xp.searchsorted(f64(2, 3), f64()), ValueError, ["searchsorted", "(2, 3)"]),
    ("cumulative_sum-no-axis", lambda: xp.cumulative_sum(f64(2, 3)), ValueError, ["cumulative_sum", "axis"]),
    ("unstack-0d", lambda: xp.unstack(xp.asarray(1.0)), ValueError, ["unstack", "0-d"]),
    ("diff-0d", lambda: xp.diff(xp.asarray(1.0)), ValueError, ["diff", "0-d"]),
    ("zeros-negative", lambda: xp.zeros((-1,)), ValueError, ["zeros", "-1"]),
    ("inplace-shape", lambda: f64(3).__iadd__(f64(2, 3)), ValueError, ["+=", "(2, 3)", "(3,)"]),
    ("T-3d", lambda: f64(2, 2, 2).T, ValueError, ["T", "3"]),
    # axes
    ("sum-axis", lambda: xp.sum(f64(2, 3), axis=2), IndexError, ["sum", "axis", "2"]),
    ("sum-repeated-axes", lambda: xp.sum(f64(2, 3), axis=(0, 0)), ValueError, ["sum", "(0, 0)"]),
    ("argsort-axis", lambda: xp.argsort(f64(2, 3), axis=3), IndexError, ["argsort", "3"]),
    ("expand_dims-axis", lambda: xp.expand_dims(f64(2, 3), axis=5), IndexError, ["expand_dims", "5"]),
    ("roll-axis", lambda: xp.roll(f64(2, 3), 1, axis=4), IndexError, ["roll", "4"]),
    ("flip-axis", lambda: xp.flip(f64(2, 3), axis=2), IndexError, ["flip", "2"]),
    ("moveaxis-axis", lambda: xp.moveaxis(f64(2, 3), 0, 5), IndexError, ["moveaxis", "5"]),
    ("permute_dims-repeated", lambda: xp.permute_dims(f64(2, 3), (0, 0)), ValueError, ["permute_dims", "(0, 0)"]),
    ("mean-axis", lambda: xp.mean(f64(2, 3), axis=-3), IndexError, ["mean", "-3"]),
    # non-array arguments
    ("sin-list", lambda: xp.sin([1.0]), TypeError, ["sin", "list"]),
    ("sqrt-ndarray", lambda: strict(lambda: xp.sqrt(np.ones(2))), TypeError, ["sqrt", "ndarray"]),
    ("add-list", lambda: xp.add([1.0], f64()), TypeError, ["add", "list"]),
    ("add-str", lambda: xp.add(f64(), "a"), TypeError, ["add", "str"]),
    ("add-two-scalars", lambda: strict(lambda: xp.add(1, 2)), TypeError, ["add", "int"]),
    ("zeros-shape-str", lambda: xp.zeros("a"), TypeError, ["zeros", "str"]),
    ("tile-int-repetitions", lambda: xp.tile(f64(2, 3), 2), TypeError, ["tile", "int"]),
    ("getitem-float", lambda: f64(2, 3)[1.5], IndexError, ["__getitem__", "1.5"]),
    # values
    ("getitem-out-of-bounds", lambda: f64(2, 3)[5], IndexError, ["__getitem__", "5", "2"]),
    ("getitem-too-many", lambda: f64(2, 3)[0, 0, 0], IndexError, ["__getitem__", "2 dimension"]),
    ("add-int-overflow", lambda: xp.add(xp.asarray([1], dtype=xp.int8), 1000), OverflowError, ["add", "1000", "int8"]),
    ("setitem-float-into-int", lambda: strict(lambda: i64().__setitem__(0, 1.5)), TypeError, ["__setitem__", "1.5", "int64"]),
    ("inplace-dtype", lambda: i64().__iadd__(1.5), TypeError, ["+=", "float64", "int64"]),
    ("bool-of-many", lambda: bool(f64()), TypeError, ["bool", "(2,)"]),
    ("int-of-nan", lambda: int(xp.asarray(float("nan"))), ValueError, ["int", "nan"]),
    ("index-of-float", lambda: f64(1).__index__(), TypeError, ["__index__", "float64"]),
    ("repeat-negative", lambda: xp.repeat(f64(), -1), ValueError, ["repeat", "-1"]),
    ("arange-step-0", lambda: xp.arange(0, 5, 0), ValueError, ["arange", "step"]),
    ("linspace-negative-num", lambda: xp.linspace(0, 1, -1), ValueError, ["linspace", "-1"]),
    ("fft-norm", lambda: xp.fft.fft(f64(), norm="bad"), ValueError, ["fft", "bad"]),
    ("vector_norm-ord", lambda: xp.linalg.vector_norm(f64(), ord="fro"), (TypeError, ValueError), ["vector_norm", "fro"]),
    ("isdtype-kind", lambda: xp.isdtype(xp.float32, "floaty"), ValueError, ["isdtype", "floaty"]),
    ("result_type-empty", lambda: xp.result_type(), ValueError, ["result_type"]),
    ("namespace-version", lambda: f64().__array_namespace__(api_version="1999.01"), ValueError,
     ["__array_namespace__", "1999.01"]),
]


@pytest.mark.parametrize("call,exc,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_names_function_and_value(call, exc, fragments, executor: str) -> None:
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    missing = [f for f in fragments if f not in msg]
    assert not missing, f"message lacks {missing}: {msg!r}"
    # the function (or operator) is named as a word of its own, not as part of another name
    head = fragments[0]
    assert re.search(rf"(^|\W){re.escape(head)}(\W|$)", msg), msg


# -- errors name the executor the caller used, not the NumPy executor some executors build on ----------
# (issue #40 point 8: errors of other executors said "on the 'numpy' executor")

def test_linspace_too_large_names_the_executor_used(executor):
    with pytest.raises(ValueError) as info:
        xp.linspace(0.0, 1.0, 10**14)
    text = str(info.value)
    assert text.startswith("linspace: shape (100000000000000,) of float64 (100000000000000 elements) needs 728 TiB "
                           f"in host memory (linspace computes the values there for the {executor!r} executor), "
                           "more than one array can have there"), text


def test_a_primitive_without_implementation_names_the_executor_used(executor):
    from arrayx.core.primitives import Primitive, primitives

    name = "test_unimplemented_here"
    prim = Primitive(name)
    try:
        with pytest.raises(NotImplementedError) as info:
            prim.bind(xp.ones(3))
        text = str(info.value)
        assert text.startswith(f"{name} is not implemented by the {executor!r} executor"), text
    finally:
        primitives.pop(name, None)
