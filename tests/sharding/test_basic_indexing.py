"""Basic indexing (ints, slices, None, Ellipsis) of a sharded array keeps the sharding jax.numpy gives
its result on every executor (issue #42 point 3): a dimension taken whole keeps its split, a sliced
or reversed one is replicated, an int drops its dimension, None adds a replicated one.  JAX's
shardings come from a subprocess with 8 forced host devices (XLA reads its flags once); numpy,
numba and dask run with 8 virtual devices."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from tests.sharding.conftest import json_from_eight_jax_devices

ROOT = pathlib.Path(__file__).resolve().parents[2]

# keys as Python source (the subprocess evaluates the same text)
KEYS = ["2:6", ":, 0", "0", "::2", ":, 1:5", "None", "..., 0", ":4", "1:, ::-1", "1, 2", "4:", ":, :4", "-1",
        "None, :, 3", "..., 2:4", "3, ...", ":, None, :"]


def _key(text):
    return eval(f"np.s_[{text}]", {"np": np})  # noqa: S307 (our own constant keys)


def _spec(s) -> list:
    names = [list(e) if isinstance(e, tuple) else ([] if e is None else [e]) for e in s.spec]
    while names and not names[-1]:
        names.pop()
    return names


_JAX = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import arrayx as ax
from tests.sharding.test_basic_indexing import KEYS, _key, _spec
mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
x = jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P("x", "y")))
out = {"jax-itself": {k: _spec(x[_key(k)].sharding) for k in KEYS}}
with ax.use_executor("jax"):
    amesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
    ax_x = ax.device_put(ax.reshape(ax.arange(64.0), (8, 8)), ax.sharding.NamedSharding(amesh, ax.sharding.P("x", "y")))
    out["jax"] = {k: _spec(ax_x[_key(k)].sharding) for k in KEYS}
print(json.dumps(out))
"""


def jax_child(script: str) -> dict:
    """``script`` run by a fresh Python with 8 CPU devices for JAX (skipped without the jax executor):
    the JSON it prints last (test_jit_indexing.py runs its own script the same way)."""
    if not base.get("jax").available():
        pytest.skip("executor 'jax' unavailable")
    return json_from_eight_jax_devices(script, argv=(ROOT,))


@pytest.fixture(scope="module")
def jax_specs():
    return jax_child(_JAX)


def test_jax_reference(jax_specs):
    ref = jax_specs["jax-itself"]
    assert ref["2:6"] == [[], ["y"]] and ref[":, 0"] == [["x"]] and ref["0"] == [["y"]]
    assert ref["None"] == [[], ["x"], ["y"]] and ref["1:, ::-1"] == []
    assert jax_specs["jax"] == ref


@pytest.mark.parametrize("ex", ["numpy", "numba", "dask"])
def test_basic_indexing_keeps_jax_shardings(ex, jax_specs, monkeypatch):
    if not base.get(ex).available():
        pytest.skip(f"executor {ex!r} unavailable: {base.get(ex).unavailable_reason}")
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
    host = np.arange(64.0).reshape(8, 8)
    with ax.use_executor(ex):
        mesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
        x = ax.device_put(ax.asarray(host), ax.sharding.NamedSharding(mesh, ax.sharding.P("x", "y")))
        got = {}
        for k in KEYS:
            r = x[_key(k)]
            np.testing.assert_array_equal(np.asarray(r), host[_key(k)], err_msg=k)
            got[k] = _spec(r.sharding)
            if ex == "dask" and r.ndim:  # one chunk per block, as device_put lays it out
                from arrayx.sharding._dask import chunks_of

                assert tuple(r._buf.chunks) == chunks_of(r.sharding, tuple(r.shape)), k
    assert got == jax_specs["jax-itself"]
