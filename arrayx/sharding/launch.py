"""Start one program as N processes of a multi-process JAX program on this machine.

    python -m arrayx.sharding.launch -n 2 --devices-per-process 4 script.py [args...]
    python -m arrayx.sharding.launch -n 2 --devices-per-process 4 -m package.module [args...]

Each process gets ``JAX_COORDINATOR_ADDRESS=localhost:<port>`` (a free port, or ``--port``),
``JAX_NUM_PROCESSES=N`` and ``JAX_PROCESS_ID=i``, which ``arrayx.distributed.initialize()`` reads
when called with no arguments; with ``--devices-per-process K`` also ``JAX_PLATFORMS=cpu`` and
``XLA_FLAGS=--xla_force_host_platform_device_count=K`` (K CPU devices each, the way to try a
multi-host program on one machine).  Their output comes through line by line, each line prefixed
with ``[i]`` (``--no-prefix``: as it is).  When a process fails the others are stopped; the exit
status is 0 when all succeed, else the first failure's status (1 for a signal or a timeout).

On several hosts, run the program once per host instead, each with the same
``JAX_COORDINATOR_ADDRESS`` (process 0's host and a port open between the hosts),
``JAX_NUM_PROCESSES`` and its own ``JAX_PROCESS_ID`` (or under SLURM / Open MPI / Cloud TPU, where
JAX finds them itself).
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time

__all__ = ["free_port", "process_env", "launch", "main"]

_DEVICE_FLAG = re.compile(r"--xla_force_host_platform_device_count=\S*")


def free_port(host: str = "localhost") -> int:
    """A TCP port on ``host`` that nothing listens on now (the system's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def process_env(index: int, count: int, address: str, devices_per_process: int | None = None,
                base: dict | None = None) -> dict:
    """The environment of process ``index`` of ``count`` (see the module doc)."""
    env = dict(os.environ if base is None else base)
    env.update(JAX_COORDINATOR_ADDRESS=address, JAX_NUM_PROCESSES=str(count), JAX_PROCESS_ID=str(index))
    if devices_per_process is not None:
        flags = _DEVICE_FLAG.sub("", env.get("XLA_FLAGS", "")).split()
        env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={devices_per_process}"])
        env["JAX_PLATFORMS"] = "cpu"
    env.pop("ARRAYX_VIRTUAL_DEVICES", None)  # the jax executor's devices are JAX's
    return env


def _forward(stream, prefix: str, out) -> None:
    for line in iter(stream.readline, ""):
        out.write(prefix + line if prefix else line)
        out.flush()
    stream.close()


def launch(argv: list[str], count: int, *, devices_per_process: int | None = None, port: int | None = None,
           host: str = "localhost", timeout: float | None = None, prefix: bool = True, out=None) -> int:
    """Run ``[sys.executable, *argv]`` as ``count`` processes (see the module doc); their exit status."""
    if count < 1:
        raise ValueError(f"launch: the number of processes must be at least 1, got {count}")
    if devices_per_process is not None and devices_per_process < 1:
        raise ValueError(f"launch: --devices-per-process must be at least 1, got {devices_per_process}")
    out = sys.stdout if out is None else out
    address = f"{host}:{port if port is not None else free_port(host)}"
    procs, threads = [], []
    try:
        for i in range(count):
            p = subprocess.Popen([sys.executable, *argv], env=process_env(i, count, address, devices_per_process),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
            procs.append(p)
            t = threading.Thread(target=_forward, args=(p.stdout, f"[{i}] " if prefix else "", out), daemon=True)
            t.start()
            threads.append(t)
        return _wait(procs, timeout, out)
    finally:
        for p in procs:  # a failure or an interrupt stops the rest (they would wait for the missing one)
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for t in threads:  # every process has ended: each pipe ends too, so its output comes through whole
            t.join(timeout=60)  # (a bound only for a grandchild that holds a pipe open)


def _wait(procs, timeout, out) -> int:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        codes = [p.poll() for p in procs]
        failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            i, c = failed[0]
            out.write(f"arrayx.sharding.launch: process {i} exited with status {c}; stopping the others\n")
            return c if c > 0 else 1
        if all(c == 0 for c in codes):
            return 0
        if deadline is not None and time.monotonic() > deadline:
            out.write(f"arrayx.sharding.launch: timed out; processes still running: "
                      f"{[i for i, c in enumerate(codes) if c is None]}\n")
            return 1
        time.sleep(0.05)


_TAKES_VALUE = {"-n", "--processes", "--devices-per-process", "--port", "--host", "--timeout"}


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The launcher's options, and the program from its script (or ``-m module``) on, whose own
    options are left alone."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv[:i], argv[i + 1:]
        if a == "-m" or not a.startswith("-"):
            return argv[:i], argv[i:]
        i += 2 if a in _TAKES_VALUE else 1
    return argv, []


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m arrayx.sharding.launch", description=__doc__.splitlines()[0],
                                usage="%(prog)s -n N [options] (script.py | -m module) [args...]",
                                epilog="Example: python -m arrayx.sharding.launch -n 2 --devices-per-process 4 "
                                       "train.py --epochs 3")
    p.add_argument("-n", "--processes", type=int, required=True, help="how many processes to start")
    p.add_argument("--devices-per-process", type=int, default=None,
                   help="K CPU devices per process (JAX_PLATFORMS=cpu, "
                        "XLA_FLAGS=--xla_force_host_platform_device_count=K)")
    p.add_argument("--port", type=int, default=None, help="the coordinator's port (default: a free one)")
    p.add_argument("--host", default="localhost", help="the coordinator's host (default localhost)")
    p.add_argument("--timeout", type=float, default=None, help="stop every process after this many seconds")
    p.add_argument("--no-prefix", action="store_true", help="forward output lines without the [i] prefix")
    own, program = _split(sys.argv[1:] if argv is None else list(argv))
    args = p.parse_args(own)
    if not program or program == ["-m"]:
        p.error("give a script (script.py [args]) or -m module [args]")
    return launch(program, args.processes, devices_per_process=args.devices_per_process, port=args.port,
                  host=args.host, timeout=args.timeout, prefix=not args.no_prefix)


if __name__ == "__main__":
    sys.exit(main())
