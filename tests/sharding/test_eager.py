"""Eager ops of sharded arrays keep shardings on numpy/numba/dask virtual devices (the rules jit's
pass uses; jax's own eager results are compared in conformance/sharding.py), the hook costs nothing
once no sharded array is left, and dask results keep one chunk per shard."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from arrayx.sharding import NamedSharding, P, SingleDeviceSharding, _records, virtual_devices
from arrayx.core import primitives as core

from tests.sharding.conftest import VIRTUAL  # noqa: E402,F401  (and the vex fixture)




def _mesh(ex, shape=(2, 4), names=("x", "y")):
    return ax.sharding.make_mesh(shape, names, devices=virtual_devices(ex, int(np.prod(shape))))


# what jax gives for the same ops on a 2x4 mesh (Auto axes) of a (4, 8) array split P('x', 'y')
EXPECTED = [
    ("2 * sin(x) + 1", lambda x: 2 * ax.sin(x) + 1, lambda h: 2 * np.sin(h) + 1, P("x", "y")),
    ("x + unsharded", lambda x: x + ax.ones((4, 8)), lambda h: h + 1, P("x", "y")),
    ("x + row (broadcast)", lambda x: x + ax.arange(8.0), lambda h: h + np.arange(8.0), P("x", "y")),
    ("sum axis 0", lambda x: ax.sum(x, axis=0), lambda h: h.sum(axis=0), P("y")),
    ("max axis 1", lambda x: ax.max(x, axis=1), lambda h: h.max(axis=1), P("x")),
    ("sum", lambda x: ax.sum(x), lambda h: h.sum(), P()),
    ("mean keepdims", lambda x: ax.mean(x, axis=1, keepdims=True), lambda h: h.mean(axis=1, keepdims=True),
     P("x")),
    ("x.T", lambda x: x.T, lambda h: h.T, P("y", "x")),
    ("reshape (32,)", lambda x: ax.reshape(x, (32,)), lambda h: h.reshape(32), P("x")),
    ("x @ w", lambda x: x @ ax.ones((8, 3)), lambda h: h @ np.ones((8, 3)), P("x")),
    ("sort axis 0", lambda x: ax.sort(x, axis=0), lambda h: np.sort(h, axis=0), P("x", "y")),
]


@pytest.mark.parametrize("name", [e[0] for e in EXPECTED])
def test_eager_op_keeps_sharding(vex, name):
    _, op, ref, spec = next(e for e in EXPECTED if e[0] == name)
    mesh = _mesh(vex)
    host = np.arange(32.0).reshape(4, 8)
    x = ax.device_put(ax.asarray(host), NamedSharding(mesh, P("x", "y")))
    r = op(x)
    assert r.sharding == NamedSharding(mesh, spec), (r.sharding, spec)
    np.testing.assert_allclose(np.asarray(r), ref(host))
    if vex == "dask":  # one chunk per shard
        from arrayx.sharding._dask import chunks_of

        assert tuple(r._buf.chunks) == chunks_of(r.sharding, tuple(r.shape))


def test_elementwise_keeps_the_operand_spec_and_unsharded_stays_unsharded(vex):
    mesh = _mesh(vex)
    s = NamedSharding(mesh, P("x", None))
    x = ax.device_put(ax.reshape(ax.arange(32.0), (4, 8)), s)
    assert (x * 3).sharding == s and (x * 3).sharding.spec == P("x", None)  # as XLA: the operand's own spec
    u = ax.arange(4.0)
    assert isinstance((u + 1).sharding, SingleDeviceSharding)
    one = virtual_devices(vex, 3)[2]
    v = ax.device_put(u, one)
    assert (v * 2).sharding == SingleDeviceSharding(one)


def test_records_die_with_their_buffers_and_the_hook_goes_with_the_last(vex):
    mesh = _mesh(vex, (2,), ("x",))
    x = ax.device_put(ax.arange(8.0), NamedSharding(mesh, P("x")))
    y = x + 1
    keys = {id(x._buf), id(y._buf)}
    assert keys <= set(_records._RECORDS) and core.eager_hook is not None
    del x, y
    gc.collect()
    assert not keys & set(_records._RECORDS)
    if not _records._RECORDS:  # no other test's sharded array still alive
        assert core.eager_hook is None


def test_a_process_with_sharded_arrays_exits_without_errors_from_their_callbacks():
    # the callback that forgets a sharded buffer ran at interpreter exit and imported a module:
    # "ImportError: sys.meta_path is None" on stderr
    import os
    import pathlib
    import subprocess
    import sys

    code = (
        "import arrayx as xp\n"
        "from arrayx.sharding import NamedSharding, P\n"
        "mesh = xp.sharding.make_mesh((2,), ('x',))\n"
        "a = xp.device_put(xp.ones((8, 4)), NamedSharding(mesh, P('x')))\n"
        "s = xp.shard_map(lambda b: xp.lax.psum(xp.sum(b), 'x'), mesh=mesh, in_specs=P('x'), out_specs=P())(a)\n"
        "print(float(s))\n"
    )
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {**os.environ, "ARRAYX_VIRTUAL_DEVICES": "2", "ARRAYX_EXECUTOR": "numpy",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "32.0", out.stderr
    assert "Exception ignored" not in out.stderr and "Error" not in out.stderr, out.stderr
