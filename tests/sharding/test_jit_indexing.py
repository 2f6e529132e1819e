"""Basic indexing of a sharded array under ``jit`` gives the shardings ``jax.jit`` gives (issue #42
point 3).  Under jit XLA's propagation decides, not JAX's eager rule: a dimension cut by a slice
keeps the leading mesh axes of its split whose product divides the result's size there (``x[2:6]``
of ``P('x', 'y')`` on a (2, 4) mesh stays ``P('x', 'y')``; eager gives ``P(None, 'y')``).  The
references come from a subprocess with 8 forced host devices (XLA reads its flags once): jax.jit
itself (one program per layout, every key's slice an output of it), and arrayx's jax executor under
``ax.jit`` (one program per key); numpy, numba and dask run with 8 virtual
devices and must give the same specs, the same values as the NumPy executor, and on dask one chunk
per block."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from tests.sharding.test_basic_indexing import KEYS, _key, _spec, jax_child


# the eager test's keys, and slices whose sizes a split divides or not
JIT_KEYS = KEYS + ["3:5", "2:3", "::3", ":, 1:7", ":, ::-2", "5:1:-1", ":, 4:8", "0:6", "2:6, 2:6",
                   "None, 2:6, None", "0:2", ":, 1:3"]
# the specs of the (8, 8) operand on a (2, 4) mesh of axes ("x", "y")
LAYOUTS = {"x,y": ("x", "y"), "xy": (("x", "y"),), "y,x": ("y", "x")}

_JAX = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import arrayx as ax
from tests.sharding.test_jit_indexing import JIT_KEYS, LAYOUTS
from tests.sharding.test_basic_indexing import _key, _spec
mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
out = {"jax-itself": {}, "jax": {}}
with ax.use_executor("jax"):
    amesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
# one jax.jit program for every layout, each key's slice of each layout's operand one of its outputs (XLA
# propagates each output's sharding from its own operand alone: the same specs as a program per layout
# and key, a fraction of the compile time); arrayx's jax executor the same way under ax.jit
xs = [jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P(*spec))) for spec in LAYOUTS.values()]
outs = jax.jit(lambda vs: [[v[_key(k)] for k in JIT_KEYS] for v in vs])(xs)
with ax.use_executor("jax"):
    as_ = [ax.device_put(ax.reshape(ax.arange(64.0), (8, 8)), ax.sharding.NamedSharding(amesh, ax.sharding.P(*spec)))
           for spec in LAYOUTS.values()]
    aouts = ax.jit(lambda vs: [[v[_key(k)] for k in JIT_KEYS] for v in vs])(as_)
for name, o, a in zip(LAYOUTS, outs, aouts):
    out["jax-itself"][name] = {k: _spec(r.sharding) for k, r in zip(JIT_KEYS, o)}
    out["jax"][name] = {k: _spec(r.sharding) for k, r in zip(JIT_KEYS, a)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def jax_jit_specs():
    return jax_child(_JAX)


def test_jax_jit_reference(jax_jit_specs):
    ref = jax_jit_specs["jax-itself"]["x,y"]
    # where jit differs from eager (tests/sharding/test_basic_indexing.py): slices keep their split
    assert ref["2:6"] == [["x"], ["y"]] and ref["1:, ::-1"] == [[], ["y"]] and ref[":, 1:7"] == [["x"]]
    assert jax_jit_specs["jax-itself"]["xy"]["2:6"] == [["x"]]  # the leading axis that divides 4
    assert jax_jit_specs["jax"] == jax_jit_specs["jax-itself"]


def _run(ex, spec):
    host = np.arange(64.0).reshape(8, 8)
    got, values, chunks = {}, {}, {}
    with ax.use_executor(ex):
        mesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
        x = ax.device_put(ax.asarray(host), ax.sharding.NamedSharding(mesh, ax.sharding.P(*spec)))
        for k in JIT_KEYS:
            r = ax.jit(lambda v, k=k: v[_key(k)] * 2.0)(x)
            got[k] = _spec(r.sharding)
            values[k] = np.asarray(r)
            if ex == "dask" and r.ndim:
                from arrayx.sharding._dask import chunks_of

                chunks[k] = (tuple(r._buf.chunks), chunks_of(r.sharding, tuple(r.shape)))
    return got, values, chunks


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("ex", ["numpy", "numba", "dask"])
def test_jit_basic_indexing_keeps_jax_jit_shardings(ex, layout, jax_jit_specs, monkeypatch):
    if not base.get(ex).available():
        pytest.skip(f"executor {ex!r} unavailable: {base.get(ex).unavailable_reason}")
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
    got, values, chunks = _run(ex, LAYOUTS[layout])
    _, want_values, _ = _run("numpy", LAYOUTS[layout]) if ex != "numpy" else (None, values, None)
    host = np.arange(64.0).reshape(8, 8)
    for k in JIT_KEYS:
        np.testing.assert_array_equal(values[k], host[_key(k)] * 2.0, err_msg=k)
        np.testing.assert_array_equal(values[k], want_values[k], err_msg=k)
    for k, (have, want) in chunks.items():  # one chunk per block, as device_put lays it out
        assert have == want, (k, have, want)
    want = jax_jit_specs["jax-itself"][layout]
    assert {k: v for k, v in got.items() if v != want[k]} == {}, {k: want[k] for k in got if got[k] != want[k]}


@pytest.mark.parametrize("ex", ["numpy", "dask"])
def test_eager_basic_indexing_keeps_the_eager_rule(ex, monkeypatch):
    """Outside jit the eager rule stays (JAX's eager x[2:6] of P('x', 'y') is P(None, 'y'))."""
    if not base.get(ex).available():
        pytest.skip(f"executor {ex!r} unavailable: {base.get(ex).unavailable_reason}")
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
    with ax.use_executor(ex):
        mesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
        x = ax.device_put(ax.asarray(np.arange(64.0).reshape(8, 8)),
                          ax.sharding.NamedSharding(mesh, ax.sharding.P("x", "y")))
        assert _spec(x[2:6].sharding) == [[], ["y"]]
        assert _spec(ax.jit(lambda v: v[2:6])(x).sharding) == [["x"], ["y"]]
