"""Errors name the executor the caller used, not the NumPy executor some executors build on
(issue #40 point 8: errors of other executors said "on the 'numpy' executor")."""
from __future__ import annotations

import pytest

import arrayx as xp


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
