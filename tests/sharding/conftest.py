"""Fixtures shared by the sharding tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import arrayx as ax
from arrayx.core import executor as base

#: the executors whose devices are virtual (ARRAYX_VIRTUAL_DEVICES): every sharding runs there
VIRTUAL = ["numpy", "numba", "dask"]


@pytest.fixture(params=VIRTUAL)
def vex(request):
    """Each executor of virtual devices in turn (skipped where unavailable), as the current one."""
    if not base.get(request.param).available():
        pytest.skip(f"executor {request.param!r} unavailable")
    with ax.use_executor(request.param):
        yield request.param


def json_from_eight_jax_devices(code: str, argv: tuple = ()):
    """What ``code`` (a Python program printing one JSON line last) prints, run in a child process
    whose JAX has 8 CPU devices (the references of JAX's own collectives; this process keeps its own).
    The programs of one test process share one such child (:class:`_EightDevices`: each program in a
    fresh namespace, ``sys.argv[1:]`` its ``argv``): JAX, arrayx and XLA's 8-device client are made
    once per test process instead of once per program (about 2 s of CPU each)."""
    return _EightDevices.shared().run(code, argv)


class _EightDevices:
    """One child Python whose JAX has 8 CPU devices, running the programs sent to it one after the
    other: a program is a line of JSON on its stdin (the code and its ``sys.argv[1:]``), run by
    ``exec`` in a new ``__main__`` namespace with its printed output captured, and answered by a line
    of JSON on its stdout (the output, or the traceback of what the program raised); the environment
    variables, the warning filters and arrayx's process default executor are restored after each.  Its stderr goes to a
    temporary file, read back when it dies."""

    _shared = None
    _SERVER = textwrap.dedent("""
        import contextlib, io, json, os, sys, traceback, warnings
        answers, environment = sys.stdout, dict(os.environ)
        for line in sys.stdin:
            request = json.loads(line)
            printed = io.StringIO()
            sys.argv = ["-c", *request["argv"]]
            try:
                with contextlib.redirect_stdout(printed), warnings.catch_warnings():  # (its filters go with it)
                    exec(compile(request["code"], "<program>", "exec"), {"__name__": "__main__"})
                answer = {"stdout": printed.getvalue()}
            except BaseException:  # reported to the test that sent the program; the next one still runs
                answer = {"stdout": printed.getvalue(), "error": traceback.format_exc()}
            # what a program set for the whole process goes with it: its environment variables and
            # arrayx's process-wide default executor (set_executor)
            os.environ.clear()
            os.environ.update(environment)
            if "arrayx.core.executor" in sys.modules:
                sys.modules["arrayx.core.executor"].set_executor(None)
            answers.write(json.dumps(answer) + "\\n")
            answers.flush()
    """)

    @classmethod
    def shared(cls) -> "_EightDevices":
        if cls._shared is None or cls._shared.proc.poll() is not None:
            cls._shared = cls()
        return cls._shared

    def __init__(self):
        import atexit
        import tempfile

        env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
        env.pop("ARRAYX_VIRTUAL_DEVICES", None)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, "-c", self._SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env, cwd=root)
        atexit.register(self.close)

    def run(self, code: str, argv: tuple = (), timeout: float = 600):
        import select

        self.proc.stdin.write(json.dumps({"code": code, "argv": [str(a) for a in argv]}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            self.stderr.seek(0)
            raise AssertionError(f"the 8-device child {'timed out after ' + str(timeout) + ' s' if not ready else 'died'}:\n"
                                 f"{self.stderr.read()[-3000:]}")
        answer = json.loads(line)
        assert "error" not in answer, answer["error"][-3000:]
        return json.loads(answer["stdout"].strip().splitlines()[-1])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


#: the start of every program of :func:`jax_mesh_json`: JAX's 8 devices as a 2 x 4 mesh ``jm`` over the
#: axes ("x", "y"), ``JP`` for its partition specs, arrayx as ``ax``, ``json`` and NumPy
MESH_2X4 = textwrap.dedent("""
    import json
    import numpy as np, jax
    import arrayx as ax
    jm = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    JP = jax.sharding.PartitionSpec
""")


def jax_mesh_json(body: str):
    """:func:`json_from_eight_jax_devices` of ``body`` after :data:`MESH_2X4` (skipped where the jax
    executor is unavailable)."""
    if not base.get("jax").available():
        pytest.skip("executor 'jax' unavailable")
    return json_from_eight_jax_devices(MESH_2X4 + textwrap.dedent(body))
