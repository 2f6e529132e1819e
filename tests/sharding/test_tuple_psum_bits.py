"""psum over a tuple of axis names is ONE reduction over the combined group (issue 42): the
members' values added in turn, numbered row-major in the tuple's order, the bits of
``jax.lax.psum`` over the tuple under ``jax.shard_map`` (a reduction per name, as before, rounds
differently).  The data are float32 of magnitudes from 1e-3 to 1e3, where the order of the
additions shows in the bits; every executor (shard_map eager and under jit, nested vmaps with axis
names, pmap(vmap)) against the fold written out here, and JAX (a subprocess with 8 host devices:
jax.lax under jax.shard_map, and arrayx's jax executor) against the same fold."""
from __future__ import annotations


import numpy as np
import pytest

import arrayx as ax
from arrayx.sharding import P, virtual_devices

from tests.sharding.conftest import jax_mesh_json, VIRTUAL  # noqa: F401  (and the vex fixture)

SIZES = {"x": 2, "y": 4}
TUPLES = [("x", "y"), ("y", "x")]
ROWS, COLS = 1, 257  # each member's block of the (8, 257) input


def _data() -> np.ndarray:
    rng = np.random.default_rng(42)
    return (rng.normal(size=(8 * ROWS, COLS)) * 10.0 ** rng.uniform(-3, 3, size=(8 * ROWS, COLS))).astype(np.float32)


def _blocks():
    x = _data()
    return {(m // 4, m % 4): x[ROWS * m:ROWS * (m + 1)] for m in range(8)}  # member (i, j) of the ("x", "y") mesh


def _fold(names) -> np.ndarray:
    """The members' blocks added in turn, row-major in the order of ``names`` (the first slowest)."""
    blocks = _blocks()
    def number(ij):
        pos = 0
        for a in names:
            pos = pos * SIZES[a] + ij[("x", "y").index(a)]
        return pos

    order = sorted(blocks, key=number)
    total = blocks[order[0]].copy()
    for ij in order[1:]:
        total = total + blocks[ij]
    return total


def _per_name(names) -> np.ndarray:
    """A sum per name, the last name first (what arrayx did before): differs from the fold here."""
    blocks = _blocks()
    inner, outer = names[1], names[0]
    out = None
    for o in range(SIZES[outer]):
        part = None
        for i in range(SIZES[inner]):
            b = blocks[(o, i) if outer == "x" else (i, o)]
            part = b.copy() if part is None else part + b
        out = part if out is None else out + part
    return out


def _mesh(ex):
    if ex == "jax":
        return ax.sharding.make_mesh((2, 4), ("x", "y"))
    return ax.sharding.make_mesh((2, 4), ("x", "y"), devices=virtual_devices(ex, 8))


def _shard_map(ex, names, jit=False):
    """Every member's psum (8 blocks stacked, member-major over the mesh)."""
    with ax.use_executor(ex):
        f = ax.shard_map(lambda b: ax.psum(b, names), mesh=_mesh(ex), in_specs=P(("x", "y")),
                         out_specs=P(("x", "y")))
        f = ax.jit(f) if jit else f
        return np.asarray(f(ax.asarray(_data())))


def _nested(ex, names, how):
    with ax.use_executor(ex):
        x = ax.asarray(_data().reshape(2, 4, ROWS, COLS))
        body = lambda b: ax.psum(b, names)  # noqa: E731
        if how == "vmap(vmap)":
            f = ax.vmap(ax.vmap(body, axis_name="y"), axis_name="x")
        else:
            f = ax.pmap(ax.vmap(body, axis_name="y"), axis_name="x")
        return np.asarray(f(x)).reshape(8 * ROWS, COLS)


@pytest.fixture
def eight(monkeypatch):
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")


@pytest.mark.parametrize("names", TUPLES, ids=["xy", "yx"])
def test_the_data_tell_one_reduction_from_one_per_name(names):
    assert not np.array_equal(_fold(names), _per_name(names))
    assert not np.array_equal(_fold(("x", "y")), _fold(("y", "x")))


@pytest.mark.parametrize("names", TUPLES, ids=["xy", "yx"])
def test_psum_over_a_tuple_is_one_fold_on_every_executor(vex, names, eight):
    want = np.concatenate([_fold(names)] * 8)
    for jit in (False, True):
        got = _shard_map(vex, names, jit)
        assert got.dtype == np.float32 and got.shape == want.shape, (vex, jit, got.dtype, got.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"shard_map psum over {names} on {vex}, jit={jit}")
    for how in ("vmap(vmap)", "pmap(vmap)"):
        np.testing.assert_array_equal(_nested(vex, names, how), want, err_msg=f"{how} psum over {names} on {vex}")
    np.testing.assert_array_equal(_shard_map(vex, names), _shard_map("numpy", names))


@pytest.fixture(scope="module")
def jax_psums():
    return jax_mesh_json("""
        from tests.sharding import test_tuple_psum_bits as T
        out = {}
        for names in T.TUPLES:
            f = jax.jit(jax.shard_map(lambda b: jax.lax.psum(b, names), mesh=jm, in_specs=JP(("x", "y")),
                                      out_specs=JP(("x", "y"))))
            hexed = lambda a: np.ascontiguousarray(np.asarray(a, dtype=np.float32)).tobytes().hex()
            out["".join(names)] = {"jax": hexed(f(T._data())), "eager": hexed(T._shard_map("jax", names)),
                                   "jit": hexed(T._shard_map("jax", names, True))}
        print(json.dumps(out))
    """)


@pytest.mark.parametrize("names", TUPLES, ids=["xy", "yx"])
def test_jax_adds_the_members_in_turn_as_arrayx(jax_psums, names):
    want = np.concatenate([_fold(names)] * 8)
    row = jax_psums["".join(names)]
    for how in ("jax", "eager", "jit"):  # jax.lax.psum under jax.shard_map; arrayx's jax executor
        got = np.frombuffer(bytes.fromhex(row[how]), dtype=np.float32).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"psum over {names}: {how}")
