"""Which of the jax executor's linear algebra XLA:TPU compiles in float64 and complex128, without a chip.

    PYTHONPATH=LIBTPU_DIR python -m conformance.tpu_aot_linalg [--dtypes float64,complex128] [--json PATH]

Each function (the JAX code the jax executor runs on a TPU: the power-of-two scaled forms of
executors/jax/linalg.py for eigh, eigvalsh, qr, svdvals; JAX's own for the others) is compiled ahead
of time for a TPU v5e on this CPU (libtpu's compiler, ``pip install --target DIR libtpu==0.0.42.1``,
the chip machine's version), on a 4 x 4 operand, each in a child process: XLA:TPU's compiler ends a
process on some of them (SIGABRT), and says UNIMPLEMENTED on others.  Nothing runs, so what fails
only at run time (session 26's ``det`` of complex128 on the chip halted the TPU core) is for
``conformance.tpu_probe`` on a chip.  The results feed ``arrayx/executors/jax/tpu_limits.py``'s table
(``conformance/results/tpu_aot_linalg.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent
FUNCTIONS = ("cholesky", "det", "slogdet", "inv", "solve", "eigh", "eigvalsh", "qr", "svdvals", "pinv", "matmul")
#: what libtpu asks of the machine when no chip is there to ask (as benchmarks/tpu_aot.py)
TPU_ENV = {"TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": "v5litepod-1", "TPU_WORKER_HOSTNAMES": "localhost",
           "TPU_WORKER_ID": "0", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}
_XLA_LINE = re.compile(r"\] (.*)$")


def _function(name: str):
    import jax.numpy as jnp

    from arrayx.executors.jax import linalg as L

    table = {"eigh": L.scaled_eigh, "eigvalsh": L.scaled_eigvalsh, "qr": L.scaled_qr, "svdvals": L.scaled_svdvals,
             "solve": lambda a: jnp.linalg.solve(a, a[..., :1]), "matmul": lambda a: a @ a}
    return table.get(name) or getattr(jnp.linalg, name)


def child(name: str, dtype: str) -> None:
    sys.path.insert(0, str(ROOT))
    import jax
    import numpy as np
    from jax.experimental import topologies

    jax.config.update("jax_enable_x64", True)  # (the jax executor's programs trace with 64-bit types on)
    device = topologies.get_topology_desc("v5e:1x1", "tpu", chips_per_host_bounds=[1, 1, 1]).devices[0]
    aval = jax.ShapeDtypeStruct((4, 4), np.dtype(dtype), sharding=jax.sharding.SingleDeviceSharding(device))
    jax.jit(_function(name)).trace(aval).lower().compile()
    print(json.dumps({"function": f"linalg.{name}", "dtype": dtype, "status": "compiles"}))


def _one(name: str, dtype: str, timeout: float) -> dict:
    row = {"function": f"linalg.{name}", "dtype": dtype}
    try:
        done = subprocess.run([sys.executable, "-m", "conformance.tpu_aot_linalg", "--child", name, dtype],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT, env={**os.environ, **TPU_ENV})
    except subprocess.TimeoutExpired:
        return {**row, "status": "timeout", "detail": f"still compiling after {timeout:.0f} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode == 0 and lines:
        return json.loads(lines[-1])
    err = done.stderr.strip().splitlines()
    fatal = [m.group(1) for ln in err if ln.startswith("F") and (m := _XLA_LINE.search(ln))]
    raised = [ln for ln in err if "Error:" in ln and not ln.startswith(" ")]
    status = "abort" if done.returncode < 0 else "error"
    detail = (fatal or raised or err[-1:] or ["no output"])[-1]
    return {**row, "status": status, "returncode": done.returncode, "detail": re.sub(r"\s+@\s+0x.*", "", detail)[:300]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.tpu_aot_linalg", description=__doc__.splitlines()[0])
    p.add_argument("--dtypes", default="float64,complex128")
    p.add_argument("--functions", default=",".join(FUNCTIONS))
    p.add_argument("--json", type=pathlib.Path, default=None)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per compile")
    p.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(*a.child)
        return 0
    import importlib.util

    if importlib.util.find_spec("libtpu") is None:
        p.error("libtpu is not importable: pip install --target DIR libtpu==0.0.42.1, then PYTHONPATH=DIR")
    import jax
    from importlib.metadata import version

    rows = []
    for name in a.functions.split(","):
        for dtype in a.dtypes.split(","):
            rows.append(_one(name, dtype, a.timeout))
            print(json.dumps(rows[-1]), flush=True)
    out = {"title": "XLA:TPU's ahead-of-time compile of the jax executor's linalg (TPU v5e, on a CPU)",
           "command": "python -m conformance.tpu_aot_linalg" + (f" --dtypes {a.dtypes}" if a.dtypes else ""),
           "environment": {"jax": jax.__version__, "libtpu": version("libtpu"), "target": "v5e:1x1"}, "rows": rows}
    if a.json is not None:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
