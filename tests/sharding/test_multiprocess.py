"""Many processes on the jax executor (JAX's own runtime, ``arrayx.distributed.initialize``).

Slow tier: ``multiprocess_program.py`` (a global mesh, arrays from each process's rows, jit with
in/out shardings, shard_map with psum, training steps) as 2 processes x 4 CPU devices through
``python -m arrayx.sharding.launch``, against 1 process x 8 devices: bit for bit the values and the
same shardings as 1 process under the same runtime (``launch -n 1``: JAX's CPU collectives are
then Gloo's in both), and the same shardings and values to float32 rounding as the plain
single-process program (XLA's in-process all-reduce adds in another order than Gloo's).  Skipped
where JAX is missing or sockets on localhost are refused.

Default tier: the launcher (environment, exit status), one process (``process_count() == 1``,
the constructors of global arrays on every executor against the NumPy executor, ``process_allgather``)
and the errors (another executor asked for many processes, ``initialize`` after JAX started).
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from arrayx.sharding import NamedSharding, P, launch, virtual_devices

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROGRAM = HERE / "multiprocess_program.py"
EXECUTORS = ["numpy", "numba", "jax", "dask"]


def _available(name):
    if not base.get(name).available():
        pytest.skip(f"executor {name!r} unavailable")


def _mesh(executor):
    """A one-axis mesh: 4 virtual devices, or every JAX device of this process."""
    if executor == "jax":
        devs = ax.sharding.devices("jax")
        return ax.sharding.make_mesh((len(devs),), ("x",), devices=devs)
    return ax.sharding.make_mesh((4,), ("x",), devices=virtual_devices(executor, 4))


# -- one process ------------------------------------------------------------------------------------


@pytest.mark.parametrize("executor", EXECUTORS)
def test_one_process(executor):
    _available(executor)
    assert ax.sharding.process_index(executor) == 0 and ax.sharding.process_count(executor) == 1
    assert ax.sharding.local_devices(executor) == ax.sharding.devices(executor)
    assert ax.sharding.local_device_count(executor) == len(ax.sharding.devices(executor))
    s = NamedSharding(_mesh(executor), P("x"))
    assert s.addressable_devices == s.device_set and s.is_fully_addressable
    assert s.addressable_devices_indices_map((8,)) == s.devices_indices_map((8,))
    with ax.use_executor(executor):
        assert ax.sharding.process_count() == 1 and ax.sharding.process_index() == 0
    assert not ax.distributed.is_initialized()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_make_array_from_process_local_data(executor):
    _available(executor)
    s = NamedSharding(_mesh(executor), P("x"))
    host = np.arange(24, dtype=np.float64).reshape(8, 3) * 0.25
    want = ax.sharding.make_array_from_process_local_data(NamedSharding(_mesh("numpy"), P("x")), host)
    for made in (ax.sharding.make_array_from_process_local_data(s, host),
                 ax.sharding.make_array_from_process_local_data(s, host, (8, 3)),
                 ax.sharding.make_array_from_process_local_data(s, ax.asarray(host), (8, 3))):
        assert made.device.executor == executor and made.dtype == ax.float64
        assert made.sharding == s
        np.testing.assert_array_equal(np.asarray(made), np.asarray(want))
        np.testing.assert_array_equal(np.asarray(made), host)
        for sh in made.addressable_shards:
            np.testing.assert_array_equal(np.asarray(sh.data), host[sh.index])


@pytest.mark.parametrize("executor", ["numpy", "numba", "dask"])
def test_local_data_of_another_shape_is_refused_in_one_process(executor):
    _available(executor)
    s = NamedSharding(_mesh(executor), P("x"))
    with pytest.raises(ValueError, match=rf"make_array_from_process_local_data: .*'{executor}' executor.*global_shape "
                                         r"\(16,\).*'jax' executor.*dask\.connect"):
        ax.sharding.make_array_from_process_local_data(s, np.arange(8.0), (16,))


@pytest.mark.parametrize("executor", EXECUTORS)
def test_make_array_from_single_device_arrays_and_callback(executor):
    _available(executor)
    s = NamedSharding(_mesh(executor), P("x"))
    n = 2 * len(s.device_set)
    host = np.arange(n * 2, dtype=np.float32).reshape(n, 2) - 3.5
    x = ax.device_put(host, s)
    again = ax.sharding.make_array_from_single_device_arrays((n, 2), s, [sh.data for sh in x.addressable_shards])
    assert again.sharding == s and again.dtype == ax.float32
    np.testing.assert_array_equal(np.asarray(again), host)
    seen = []

    def block(idx):
        seen.append(idx)
        return host[idx]

    made = ax.sharding.make_array_from_callback((n, 2), s, block)
    assert made.sharding == s and len(seen) >= 1
    np.testing.assert_array_equal(np.asarray(made), host)
    if executor != "jax":
        with pytest.raises(ValueError, match="has 4 devices in this process but 3 arrays"):
            ax.sharding.make_array_from_single_device_arrays((n, 2), s, [sh.data for sh in x.addressable_shards][:3])


def test_single_device_arrays_on_jax_must_be_jax_arrays():
    _available("jax")
    s = NamedSharding(_mesh("jax"), P("x"))
    n = len(s.device_set)
    with pytest.raises(TypeError, match=r"make_array_from_single_device_arrays: arrays\[0\] must be a concrete array "
                                        r"of the 'jax' executor.*'numpy'"):
        ax.sharding.make_array_from_single_device_arrays((n,), s, [ax.asarray(np.zeros(1), device=base.get(
            "numpy").default_device())] * n)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_process_allgather_in_one_process(executor):
    _available(executor)
    s = NamedSharding(_mesh(executor), P("x"))
    host = np.arange(len(s.device_set) * 2, dtype=np.int32)
    x = ax.device_put(host, s)
    tree = ax.sharding.process_allgather({"a": x, "b": host}, tiled=True)
    assert isinstance(tree["a"], np.ndarray)
    np.testing.assert_array_equal(tree["a"], host)
    np.testing.assert_array_equal(tree["b"], host)
    stacked = ax.sharding.process_allgather(x)  # one process: a leading axis of 1
    assert stacked.shape == (1,) + host.shape
    np.testing.assert_array_equal(stacked[0], host)


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("executor", ["numpy", "numba", "dask"])
def test_initialize_on_another_executor_names_its_way(executor):
    with pytest.raises(ValueError, match=rf"arrayx.distributed.initialize: executor '{executor}'") as e:
        ax.distributed.initialize("localhost:1234", 2, 0, executor=executor)
    assert "arrayx.executors.dask.connect" in str(e.value) and "dask.distributed" in str(e.value)


def test_initialize_after_jax_started_is_refused():
    _available("jax")
    ax.sharding.devices("jax")  # starts JAX's devices in this process
    with pytest.raises(RuntimeError, match=r"arrayx.distributed.initialize: JAX has already started its devices.*"
                                           r"call arrayx.distributed.initialize\(\.\.\.\) first"):
        ax.distributed.initialize("localhost:1234", 2, 0)
    assert not ax.distributed.is_initialized()


def test_bad_process_count_variable(monkeypatch):
    from arrayx.sharding import _distributed

    monkeypatch.setenv("JAX_NUM_PROCESSES", "two")
    with pytest.raises(ValueError, match="initialize: JAX_NUM_PROCESSES='two' is not an integer; set it to a number"):
        _distributed._env_int("JAX_NUM_PROCESSES", "initialize")
    monkeypatch.setenv("JAX_NUM_PROCESSES", " 2 ")
    assert _distributed._env_int("JAX_NUM_PROCESSES", "initialize") == 2
    monkeypatch.delenv("JAX_NUM_PROCESSES")
    assert _distributed._env_int("JAX_NUM_PROCESSES", "initialize") is None


def test_not_addressable_error_names_the_two_ways():
    class Buf:  # what the error reads of a jax.Array held partly by other processes
        shape, dtype = (16, 4), np.dtype("float32")
        addressable_shards = [0] * 4

        class sharding:
            device_set = set(range(8))

    _available("jax")
    msg = str(ax.sharding._distributed.not_addressable_error(Buf()))
    assert "(16, 4)" in msg and "'jax' executor" in msg and "4 of its 8 device blocks" in msg
    assert "x.addressable_shards" in msg and "process_allgather(x, tiled=True)" in msg


# -- the launcher ------------------------------------------------------------------------------------


def test_launcher_environment():
    env = launch.process_env(1, 2, "localhost:5555", 4, base={"XLA_FLAGS": "--xla_cpu_foo=1 "
                             "--xla_force_host_platform_device_count=9", "ARRAYX_VIRTUAL_DEVICES": "8"})
    assert env["JAX_COORDINATOR_ADDRESS"] == "localhost:5555" and env["JAX_NUM_PROCESSES"] == "2"
    assert env["JAX_PROCESS_ID"] == "1" and env["JAX_PLATFORMS"] == "cpu"
    assert env["XLA_FLAGS"] == "--xla_cpu_foo=1 --xla_force_host_platform_device_count=4"
    assert "ARRAYX_VIRTUAL_DEVICES" not in env
    assert "JAX_PLATFORMS" not in launch.process_env(0, 1, "h:1", None, base={})


# Every process prints its line; with an argument (a file's path) process 1 then fails, once process 0
# has printed (process 0 makes the file after its line): the launcher stops the others at the first
# failure, so without this a process 0 slow to start under load (15 on 2 cores) was stopped before
# its line and the test failed now and then
_HELLO = """import os, pathlib, sys, time
i = int(os.environ['JAX_PROCESS_ID'])
print('hello', i, os.environ['JAX_NUM_PROCESSES'], flush=True)
if len(sys.argv) > 1:
    printed = pathlib.Path(sys.argv[1])
    if i == 0:
        printed.touch()
    elif i == 1:
        deadline = time.monotonic() + 240
        while not printed.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        sys.exit(3)
"""


def test_launcher_forwards_output_and_returns_the_failure(tmp_path):
    script = tmp_path / "p.py"
    script.write_text(_HELLO)
    out = io.StringIO()
    assert launch.launch([str(script)], 3, port=1, out=out, timeout=300) == 0
    lines = out.getvalue().splitlines()
    assert sorted(lines) == ["[0] hello 0 3", "[1] hello 1 3", "[2] hello 2 3"]
    out = io.StringIO()
    assert launch.launch([str(script), str(tmp_path / "printed-a")], 2, port=1, out=out, timeout=300) == 3
    assert "process 1 exited with status 3" in out.getvalue()
    assert "[0] hello 0 2" in out.getvalue().splitlines() and "[1] hello 1 2" in out.getvalue().splitlines()
    proc = subprocess.run([sys.executable, "-m", "arrayx.sharding.launch", "-n", "2", "--no-prefix", "--timeout", "300",
                           str(script), str(tmp_path / "printed-b")],
                          capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=400)
    assert proc.returncode == 3, (proc.stdout + proc.stderr)[-3000:]
    assert "hello 0 2" in proc.stdout.splitlines() and "hello 1 2" in proc.stdout.splitlines(), proc.stdout


def test_the_launcher_forwards_a_stopped_process_output_to_its_last_line(tmp_path):
    # a process stopped after a failure: what it printed before comes through whole (the launcher
    # reads its pipe to the end after stopping it)
    script = tmp_path / "p.py"
    script.write_text("import os, sys, time\ni = os.environ['JAX_PROCESS_ID']\n"
                      "print('\\n'.join(f'{i} line {k}' for k in range(2000)), flush=True)\n"
                      "if i == '1':\n    sys.exit(4)\ntime.sleep(600)\n")
    out = io.StringIO()
    assert launch.launch([str(script)], 2, port=1, out=out, timeout=300) == 4
    lines = out.getvalue().splitlines()
    assert [ln for ln in lines if ln.startswith("[1] ")] == [f"[1] 1 line {k}" for k in range(2000)]


def test_launcher_leaves_the_programs_options_alone(monkeypatch):
    calls = []
    monkeypatch.setattr(launch, "launch", lambda program, n, **kw: calls.append((program, n, kw)) or 0)
    assert launch.main(["-n", "2", "-m", "pkg.train", "--epochs", "3", "-n", "5"]) == 0
    assert launch.main(["-n", "3", "--port=7", "--devices-per-process", "4", "t.py", "--no-prefix"]) == 0
    assert launch.main(["-n", "2", "--no-prefix", "--", "t.py"]) == 0
    assert [c[:2] for c in calls] == [(["-m", "pkg.train", "--epochs", "3", "-n", "5"], 2), (["t.py", "--no-prefix"], 3),
                                      (["t.py"], 2)]
    assert calls[1][2]["port"] == 7 and calls[1][2]["devices_per_process"] == 4 and calls[1][2]["prefix"]
    assert calls[2][2]["prefix"] is False
    with pytest.raises(SystemExit):
        launch.main(["-n", "2"])


def test_launcher_stops_the_others_on_failure(tmp_path):
    script = tmp_path / "p.py"
    script.write_text("import os, sys, time\nif os.environ['JAX_PROCESS_ID'] == '0':\n    sys.exit(2)\n"
                      "time.sleep(600)\n")
    out = io.StringIO()
    assert launch.launch([str(script)], 2, port=1, out=out, timeout=120) == 2


# -- two processes x 4 devices against one process x 8 (slow) ----------------------------------------------


def _env(**extra):
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("ARRAYX_VIRTUAL_DEVICES", None)
    env.pop("ARRAYX_EXECUTOR", None)
    return env


def _localhost_refused() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind(("localhost", 0))
            server.listen(1)
            with socket.create_connection(server.getsockname()[:2], timeout=5):
                pass
    except OSError as e:
        return f"sockets on localhost are refused here ({e})"
    return None


def _results(stdout: str) -> list:
    out = []
    for line in stdout.splitlines():
        i = line.find("RESULT ")
        if i >= 0:
            out.append(json.loads(line[i + len("RESULT "):]))
    return sorted(out, key=lambda r: r["process"])


def _launch(n, per_process):
    cmd = [sys.executable, "-m", "arrayx.sharding.launch", "-n", str(n), "--devices-per-process", str(per_process),
           "--timeout", "400", str(PROGRAM)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=500)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    results = _results(proc.stdout)
    assert [r["process"] for r in results] == list(range(n)), proc.stdout[-3000:]
    return results


def _host_values(result, key):
    v = result["values"][key]
    return np.frombuffer(bytes.fromhex(v["hex"]), dtype=v["dtype"]).reshape(v["shape"])


@pytest.mark.slow
def test_two_processes_give_what_one_process_gives():
    pytest.importorskip("jax")
    refused = _localhost_refused()
    if refused:
        pytest.skip(refused)
    two = _launch(2, 4)
    one = _launch(1, 8)  # the same runtime in one process: the same collectives (Gloo's on CPU)
    plain = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, cwd=ROOT, timeout=500,
                           env=_env(XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu"))
    assert plain.returncode == 0, plain.stderr[-4000:]
    (alone,) = _results(plain.stdout)
    ref = one[0]
    assert ref["processes"] == 1 and alone["processes"] == 1 and ref["local_devices"] == 8
    for r in two:
        assert r["processes"] == 2 and r["local_devices"] == 4
        assert r["values"] == ref["values"]  # bit for bit, every result, on both processes
        assert r["shardings"] == ref["shardings"] == alone["shardings"]
        assert r["loss_read"] == ref["loss_read"] and r["total_read"] == ref["total_read"]
        # each process holds its own rows: process p the "data" blocks of its devices
        assert r["addressable"] == 4 and r["fully_addressable"] is False and r["x_device_is_local"] is True
        assert r["my_x_blocks"] == [[[a, a + 16], [None, None]] for a in (32 * r["process"],) * 2 +
                                    (32 * r["process"] + 16,) * 2]
        assert "x.addressable_shards" in r["read_error"] and "process_allgather" in r["read_error"]
        assert f"process {r['process']} of 2 holds 4 of its 8 device blocks" in r["read_error"]
    assert ref["read_error"] is None and ref["fully_addressable"] is True
    assert sorted(two[0]["my_x_blocks"] + two[1]["my_x_blocks"]) == ref["my_x_blocks"]
    expected_specs = {"x": "P('data', None)", "h": "P('data', 'model')", "sse": "P()", "jit_w1": "P(None, 'model')",
                      "jit_b1": "P('model',)", "dp_w1": "P()", "loss_0": "P()"}
    assert {k: ref["shardings"][k]["spec"] for k in expected_specs} == expected_specs
    # the plain program (no distributed runtime): XLA's in-process all-reduce sums in another order
    for key in ref["values"]:
        a, b = _host_values(ref, key), _host_values(alone, key)
        if key in ("x", "y", "z", "loss_0"):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-5 * max(1.0, float(np.max(np.abs(b)))))
