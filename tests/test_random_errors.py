"""arrayx.random: misuse raises TypeError/ValueError/OverflowError naming the function and the fix, and
sampling leaves the key as it was (split from test_random.py)."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx import random as xr
from tests.test_random import same


def test_non_key_arguments_raise_type_error_naming_the_fix():
    with pytest.raises(TypeError, match=r"split: key must be an arrayx PRNG key.*key\(seed\)"):
        xr.split(123)
    with pytest.raises(TypeError, match="uniform: key must be an arrayx PRNG key"):
        xr.uniform(np.array([0, 0], dtype=np.uint32))
    with pytest.raises(TypeError, match=r"normal: key must be a uint32 array.*arrayx.random.key\(seed\)"):
        xr.normal(xp.asarray([0, 1]))


def test_wrong_key_shapes_raise_value_error():
    with pytest.raises(ValueError, match=r"bits: key must have shape \(2,\)"):
        xr.bits(xp.zeros((3,), dtype=xp.uint32))
    with pytest.raises(ValueError, match=r"fold_in: accepts a single key.*vmap"):
        xr.fold_in(xr.split(xr.key(0), 4), 1)


def test_bad_seeds():
    with pytest.raises(TypeError, match="key: seed must be an integer"):
        xr.key(1.5)
    with pytest.raises(TypeError, match="PRNGKey: seed must have an integer dtype"):
        xr.PRNGKey(xp.asarray(1.5))
    with pytest.raises(TypeError, match="seed must be a scalar"):
        xr.key(xp.asarray([1, 2]))
    with pytest.raises(TypeError, match="seed must be a scalar"):
        xr.key(np.array([1, 2]))
    with pytest.raises(OverflowError, match=r"\[-2\*\*63, 2\*\*63\)"):
        xr.key(2**63)
    with pytest.raises(TypeError, match="seed must be an int"):
        xr.key("7")


def test_bad_num_and_data():
    k = xr.key(0)
    with pytest.raises(ValueError, match="split: num must be non-negative"):
        xr.split(k, -1)
    with pytest.raises(TypeError, match="split: num must be"):
        xr.split(k, 2.0)
    with pytest.raises(OverflowError, match="fold_in: data -1 is out of bounds"):
        xr.fold_in(k, -1)
    with pytest.raises(TypeError, match="fold_in: data must be an int"):
        xr.fold_in(k, 1.5)
    with pytest.raises(TypeError, match="fold_in: data must be a scalar"):
        xr.fold_in(k, xp.asarray([1, 2]))


def test_bad_dtypes_shapes_and_parameters():
    k = xr.key(0)
    with pytest.raises(TypeError, match="uniform: dtype must be a real floating-point dtype"):
        xr.uniform(k, dtype=xp.int32)
    with pytest.raises(TypeError, match="bits: dtype must be an unsigned integer dtype"):
        xr.bits(k, dtype=xp.int32)
    with pytest.raises(TypeError, match="randint: dtype must be an integer dtype"):
        xr.randint(k, (), 0, 3, dtype=xp.float32)
    with pytest.raises(TypeError, match="bernoulli: p must"):
        xr.bernoulli(k, 1)
    with pytest.raises(ValueError, match="uniform: parameter shapes"):
        xr.uniform(k, (3,), minval=xp.zeros(4))
    with pytest.raises(ValueError, match="normal: shape entries must be non-negative"):
        xr.normal(k, (-1,))
    with pytest.raises(ValueError, match="choice: cannot take a larger sample"):
        xr.choice(k, 3, (5,), replace=False)
    with pytest.raises(ValueError, match="gumbel: mode must be"):
        xr.gumbel(k, mode="medium")
    with pytest.raises(NotImplementedError, match="highest"):
        xr.gumbel(k, dtype=xp.float32, mode="highest")
    with pytest.raises(TypeError, match="threefry_partitionable"):
        with xr.threefry_partitionable(1):
            pass


def test_samplers_do_not_change_the_key():
    k = xr.key(5)
    before = np.asarray(k).copy()
    xr.normal(k, (3,))
    xr.split(k)
    np.testing.assert_array_equal(np.asarray(k), before)
    same(xr.uniform(k, (4,)), xr.uniform(k, (4,)))  # same key, same numbers


