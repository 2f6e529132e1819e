"""The sharding tutorial's programs (conformance/sharding.py, also the sharding rows of ``python -m
conformance``) on every executor give jax.numpy's values and shardings: jax with 8 forced host
devices (in a fresh process: XLA reads its flags once), numpy/numba with 8 virtual devices (in this
process, as ``python -m conformance.sharding numpy`` runs them), dask with 8 virtual devices on a
LocalCluster of 2 workers (``python -m conformance.sharding dask``, in its own process).  Also the
tutorial as it was written with ``mesh_utils.create_device_mesh`` (three programs), against jax
itself: in the same fresh jax process as jax's run of the tutorial's programs."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from arrayx.core import executor as base
from conformance import sharding as programs

_RUNS: dict = {}


def _run(ex: str) -> dict:
    if ex not in _RUNS:
        if ex == "jax":
            _RUNS[ex] = _jax_runs()["conformance"]
        elif ex == "dask":
            _RUNS[ex] = programs.run_in_process(ex)
        else:  # what ``python -m conformance.sharding numpy`` prints, with 8 virtual devices
            with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(io.StringIO()) as printed:
                mp.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
                assert programs.main([ex]) == 0
            _RUNS[ex] = json.loads(printed.getvalue().strip().splitlines()[-1])
        assert "error" not in _RUNS[ex], _RUNS[ex]["error"]
    return _RUNS[ex]


def _available(name):
    ex = base.get(name)
    if not ex.available():
        pytest.skip(f"executor {name!r} unavailable: {ex.unavailable_reason}")


@pytest.fixture(scope="module")
def reference():
    _available("jax")
    return _run("jax")


def test_jax_reference_is_what_the_tutorial_says(reference):
    assert reference["sharded_spec"] == [["x"], ["y"]] and reference["n_devices"] == 8
    assert reference["elementwise_same_sharding"] is True
    assert reference["contract_spec"] == [["y"]]  # the sum over 'x' leaves the result replicated over 'x'
    assert reference["contract2_spec"] == [["x"]]
    assert reference["per_shard_sum"] == [6, 22, 38, 54, 70, 86, 102, 118]
    assert reference["psum"] == 496 and reference["psum_spec"] == []
    np.testing.assert_allclose(reference["layer_auto"], reference["layer"], rtol=1e-6)
    np.testing.assert_allclose(reference["layer_smap"], reference["layer"], rtol=1e-5)
    # eagerly, as under jit
    assert reference["eager_elementwise_same_sharding"] is True and reference["eager_keeps_operand_spec"] is True
    assert reference["eager_contract_spec"] == [["y"]] and reference["eager_sum_kept_axis_spec"] == [["x"]]
    np.testing.assert_allclose(reference["eager_layer"], reference["layer"], rtol=1e-5)


@pytest.mark.parametrize("ex", ["numpy", "numba", "dask"])
def test_tutorial_matches_jax(ex, reference):
    _available(ex)
    got = _run(ex)
    assert set(got) == set(reference)
    assert got["warm_seconds"] > 0 and reference["warm_seconds"] > 0  # timed, not compared (report only)
    assert programs.mismatches(got, reference, sorted(set(reference) - {"warm_seconds"})) == []


# -- the tutorial as written before jax.make_mesh: meshes from mesh_utils.create_device_mesh ----------------
# (JAX's sharded-computation tutorial until 2024-09, docs/sharded-computation.md; issue #42 point 1).
# One program text for both libraries: ``ns`` names the functions of jax or of arrayx.


def _tutorial_with_create_device_mesh(ns) -> dict:
    P = ns.P
    out = {}
    arr = ns.reshape(ns.arange(32.0), (4, 8))
    # program 1: a 2x4 mesh from create_device_mesh, device_put
    devices = ns.mesh_utils.create_device_mesh((2, 4))
    mesh = ns.Mesh(devices, ("x", "y"))
    sharding = ns.NamedSharding(mesh, P("x", "y"))
    arr_sharded = ns.device_put(arr, sharding)
    out["mesh_devices"] = [[ns.position(d) for d in row] for row in devices]
    out["sharded"] = np.asarray(arr_sharded).tolist()
    out["sharded_spec"] = ns.spec(arr_sharded)
    out["sharded_layout"] = ns.layout(arr_sharded)

    # program 2: jit follows the data
    @ns.jit
    def f_elementwise(x):
        return 2 * ns.sin(x) + 1

    r = f_elementwise(arr_sharded)
    out["elementwise"] = np.asarray(r).tolist()
    out["elementwise_same_sharding"] = bool(r.sharding == arr_sharded.sharding)

    @ns.jit
    def f_contract(x):
        return ns.sum(x, axis=0)

    r = f_contract(arr_sharded)
    out["contract"] = np.asarray(r).tolist()
    out["contract_spec"] = ns.spec(r)
    out["contract_layout"] = ns.layout(r)

    # program 3: with_sharding_constraint to a mesh of 8 made inside jit
    @ns.jit
    def f_contract_2(x):
        o = ns.sum(x, axis=0)
        devices = ns.mesh_utils.create_device_mesh(8)
        mesh = ns.Mesh(devices, "x")
        sharding = ns.NamedSharding(mesh, P("x"))
        return ns.with_sharding_constraint(o, sharding)

    r = f_contract_2(arr_sharded)
    out["contract2"] = np.asarray(r).tolist()
    out["contract2_spec"] = ns.spec(r)
    out["contract2_layout"] = ns.layout(r)
    return out


def _namespace(lib: str):
    """The names the tutorial uses, from jax (``lib == "jax-itself"``) or from arrayx."""
    from types import SimpleNamespace

    if lib == "jax-itself":
        import jax
        import jax.numpy as jnp
        from jax.experimental import mesh_utils as jax_mesh_utils

        # JAX 0.10 wants a sequence (create_device_mesh(8): TypeError); it took an int when the tutorial was written
        mesh_utils = SimpleNamespace(create_device_mesh=lambda shape: jax_mesh_utils.create_device_mesh(
            (shape,) if isinstance(shape, int) else shape))
        ns = SimpleNamespace(P=jax.sharding.PartitionSpec, Mesh=jax.sharding.Mesh,
                             NamedSharding=jax.sharding.NamedSharding, mesh_utils=mesh_utils, device_put=jax.device_put, jit=jax.jit, reshape=jnp.reshape,
                             arange=jnp.arange, sin=jnp.sin, sum=jnp.sum,
                             with_sharding_constraint=jax.lax.with_sharding_constraint, position=lambda d: d.id)
    else:
        import arrayx as ax

        devs = ax.sharding.devices()
        ns = SimpleNamespace(P=ax.sharding.P, Mesh=ax.sharding.Mesh, NamedSharding=ax.sharding.NamedSharding,
                             mesh_utils=ax.sharding.mesh_utils, device_put=ax.device_put, jit=ax.jit,
                             reshape=ax.reshape, arange=ax.arange, sin=ax.sin, sum=ax.sum,
                             with_sharding_constraint=ax.lax.with_sharding_constraint, position=devs.index)

    def spec(x):  # one list of mesh axis names per dimension, trailing whole dimensions dropped
        names = [list(e) if isinstance(e, tuple) else ([] if e is None else [e]) for e in x.sharding.spec]
        while names and not names[-1]:
            names.pop()
        return names

    def layout(x):  # each block (its start per dimension) and the devices (positions) that hold it
        where: dict = {}
        for s in x.addressable_shards:
            where.setdefault(str([int(sl.start or 0) for sl in s.index]), []).append(ns.position(s.device))
        return {k: sorted(v) for k, v in sorted(where.items())}

    ns.spec, ns.layout = spec, layout
    return ns


_JAX_RUNS: dict = {}


def _jax_runs() -> dict:
    """In the child process with 8 forced host devices the sharding tests share (tests/sharding/conftest.py):
    ``python -m conformance.sharding jax``'s JSON, then the create_device_mesh tutorial on jax itself and on
    arrayx's jax executor."""
    if not _JAX_RUNS:
        _JAX_RUNS.update(_jax_process())
    return _JAX_RUNS


def _jax_process() -> dict:
    code = ("import contextlib, io, json, arrayx as ax\n"
            "from conformance import sharding\n"
            "with contextlib.redirect_stdout(io.StringIO()) as printed:\n"
            "    assert sharding.main(['jax']) == 0\n"
            "conformance = json.loads(printed.getvalue().strip().splitlines()[-1])\n"
            "from tests.sharding.test_tutorial import _namespace, _tutorial_with_create_device_mesh as run\n"
            "ref = run(_namespace('jax-itself'))\n"
            "with ax.use_executor('jax'):\n"
            "    got = run(_namespace('arrayx'))\n"
            "print(json.dumps({'conformance': conformance, 'jax-itself': ref, 'jax': got}))\n")
    from tests.sharding.conftest import json_from_eight_jax_devices

    return json_from_eight_jax_devices(code)  # the 8-device child the sharding tests share (cwd: the root)


@pytest.fixture(scope="module")
def jax_tutorial():
    _available("jax")
    return _jax_runs()


def test_create_device_mesh_tutorial_on_jax_itself(jax_tutorial):
    ref = jax_tutorial["jax-itself"]
    assert ref["mesh_devices"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert ref["sharded_spec"] == [["x"], ["y"]] and ref["elementwise_same_sharding"] is True
    assert ref["contract_spec"] == [["y"]] and ref["contract_layout"]["[0]"] == [0, 4]  # replicated over 'x'
    assert ref["contract2_spec"] == [["x"]] and len(ref["contract2_layout"]) == 8


@pytest.mark.parametrize("ex", ["numpy", "numba", "dask", "jax"])
def test_create_device_mesh_tutorial_matches_jax(ex, jax_tutorial, monkeypatch):
    _available(ex)
    if ex == "jax":
        got = jax_tutorial["jax"]
    else:
        import arrayx as ax

        monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")
        with ax.use_executor(ex):
            got = _tutorial_with_create_device_mesh(_namespace("arrayx"))
    ref = jax_tutorial["jax-itself"]
    assert set(got) == set(ref)
    for key in ref:
        if key.endswith(("spec", "layout", "devices", "sharding")):
            assert got[key] == ref[key], (key, got[key], ref[key])
        else:  # jax computes in float32
            np.testing.assert_allclose(got[key], ref[key], rtol=2e-6, atol=1e-6, err_msg=key)
