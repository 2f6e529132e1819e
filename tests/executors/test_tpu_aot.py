"""XLA:TPU's own compiler on this CPU: arrayx's programs compiled ahead of time for a TPU v5e.

No chip is needed, only libtpu (the TPU's compiler, a PyPI wheel: ``pip install --target DIR
libtpu==0.0.42.1``, then ``PYTHONPATH=DIR``); JAX builds a compile-only v5e topology from it and
nothing runs.  Skipped where libtpu is absent (CI).  Each compile runs in a child process: an abort
of XLA:TPU's compiler (SIGABRT) is then a result, not the end of the test run.

What it pins down (issue 41, "never a process abort"): float32 ``linalg.svd`` aborted the process on
the chip (``conformance/results/tpu_probe.json``).  The cause is the 64-bit setting at lowering time:
JAX traces its TPU lowering of ``svd`` when XLA lowers the program, and with 64-bit types on that
lowering holds 64-bit integers the compiler aborts on.  arrayx lowers it with them off
(``arrayx/executors/jax/tpu_limits.py``, ``LOWER_IN_32_BITS``).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

from tests.executors.conftest import only_on

pytestmark = [*only_on("jax"), pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                                                 reason="libtpu (XLA:TPU's compiler) is not installed")]

#: what libtpu asks of the machine when no chip is there to ask (one host, one chip, no metadata server)
TPU_ENV = {"TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": "v5litepod-1", "TPU_WORKER_HOSTNAMES": "localhost",
           "TPU_WORKER_ID": "0", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}

CHILD = textwrap.dedent("""
    import sys
    import numpy as np, jax
    from jax.experimental import topologies
    import arrayx as ax
    from arrayx.core import executor as base
    from arrayx.executors.jax import tpu_limits

    func, bits = sys.argv[1], sys.argv[2]
    chip = topologies.get_topology_desc("v5e:1x1", "tpu", chips_per_host_bounds=[1, 1, 1]).devices[0]
    on_chip = jax.sharding.SingleDeviceSharding(chip)
    ax.set_executor("jax")
    ex = base.get("jax")
    fn = {"svd": lambda a: ax.linalg.svd(a, full_matrices=False), "svd-full": ax.linalg.svd,
          "pinv": ax.linalg.pinv}[func]
    graph = ax.jit(fn).lower(ax.asarray(np.ones((2, 5, 3), np.float32))).graph
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=on_chip) for a in graph.in_avals]
    build = lambda: jax.jit(ex.lower(graph)).trace(*avals).lower().compile()
    compiled = tpu_limits.in_32_bits(build, (), {}) if bits == "32" else ex.scoped(build)()
    print("compiled", func, bits, "bit setting:", compiled.cost_analysis() is not None)
""")


def _compile(func: str, bits: str) -> subprocess.CompletedProcess:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, **TPU_ENV, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    env.pop("JAX_PLATFORMS", None)
    return subprocess.run([sys.executable, "-c", CHILD, func, bits], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.mark.parametrize("func", ["svd", "svd-full", "pinv"])
def test_float32_svd_compiles_for_a_tpu_as_arrayx_lowers_it(func):
    done = _compile(func, "32")
    assert done.returncode == 0 and f"compiled {func} 32" in done.stdout, done.stderr[-2000:]


def test_the_same_program_lowered_with_64_bit_types_on_aborts_the_compiler():
    """The measured cause (JAX 0.10.2, libtpu 0.0.42.1): if a newer libtpu compiles it, the entry in
    ``LOWER_IN_32_BITS`` may go (rerun the chip's probe)."""
    done = _compile("svd", "64")
    assert done.returncode == -6 and "Check failed: buffer != nullptr" in done.stderr, (done.returncode,
                                                                                       done.stderr[-2000:])
