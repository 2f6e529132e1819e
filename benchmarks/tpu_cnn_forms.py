"""The CNN row of bench_tpu.py taken apart on the chip: how much of arrayx's gap to JAX is the host's
time per call and how much the device's, for each form of the kernel's gradient arrayx can take.

Run:  python benchmarks/tpu_cnn_forms.py [--batch 64 [256]] [--forms diagonal xla-conv stacked rows]
      [--steps K] [--rounds R] [--output PATH] [--cpu]
      (on the chip; writes benchmarks/results/tpu_cnn_forms.json; ``--cpu``: a dry run on this machine, the
      TPU's forms chosen on the CPU too, batch 8)
      PYTHONPATH=<libtpu dir> python benchmarks/tpu_cnn_forms.py --aot [--batch 64 256] [--hlo-dir DIR]
      (no chip: each form compiled ahead of time for a v5e, as tpu_aot_rows.py does; writes
      benchmarks/results/tpu_aot_cnn_forms.json)

Why (issue 41, point 7): bench_tpu.py's pipelined CNN times were the same at batch 64 and 256 on both
sides (JAX 0.221 / 0.222 ms, arrayx 0.257 / 0.276; the cost model puts the step's device time at 0.10 /
0.20 ms), and arrayx with XLA's convolution for the kernel gradient (its program then kernel for kernel
JAX's, tpu_aot_rows.py) was as far behind (0.83 / 0.85): the pipelined row is bound by the host's time
per call there, not by the device.  So per side and form this measures

- ``dispatch ms``: the host's time to issue one call (20 calls issued, the time until the last returns,
  nothing waited for; the wait comes after, untimed), the part of the pipelined time the host sets;
- ``pipelined ms``: 20 calls queued and the last waited for, per call (bench_tpu.py's pipelined time);
- ``waited ms``: one call and its wait;
- ``device ms per step``: the device's time per training step, from ``--steps`` K steps run inside one
  program (fori_loop) against one step, both waited for: (T_K - T_1) / (K - 1), the host's and the
  round trip's time cancelled.

Forms of the kernel gradient (arrayx/executors/jax/lax.py, on a TPU): ``diagonal`` (the library's: one
product of 3 row slices of the input with the cotangent, and a diagonal sum), ``xla-conv`` (XLA's
convolution, JAX's own form: about 20 s of compile at batch 64, 90 s or more at 256 on the chip's host),
``stacked`` (one window slice of the input per kernel element, 9 stacked, one product: XLA makes it a
1x1-output convolution), ``rows`` (the 3 row slices stacked along the batch axis and XLA's convolution
for the rest; defined here, not in the library).  Where the cotangent comes from select-and-scatter,
XLA:TPU takes the kernel gradient's 28x28 window in one tile (kernel_window_bounds 28x28, one iteration)
and its code generation is the compile time: 24 s of CPU for that convolution alone at batch 64 with 3x3
outputs, 6 s with 1x3 (``rows``), 2 s with 1x1 (``stacked``); from an elementwise product of parameters
it tiles the window (14x14, 14x28) and compiles the same 3x3 convolution in 1-2 s.  Hence the library's
products there.

Compiled ahead of time for a v5e on the development machine (``--aot``, results/tpu_aot_cnn_forms.json,
load 5-8; batch 64 | 256: compile CPU s, cost model ms, kernels):

    diagonal   2.9  0.1032  28 |   6.3  0.2014  28
    xla-conv  21.4  0.1023  19 | 157.0  0.2024  19
    stacked    2.9  0.1203  23 |   4.0  0.2383  23   (the 9 slices padded to the TPU's tiles)
    rows       5.7  0.1059  21 |  29.8  0.2094  21
    JAX       27.7  0.0988  20 | 159.7  0.1952  20
"""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # this checkout's arrayx

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402

FORMS = ("diagonal", "xla-conv", "stacked", "rows")
QUEUED = 20


def _row_conv(lhs, rhs, *, strides, padding, lhs_dilation, rhs_dilation, groups, dimension_numbers):
    """The ``rows`` form: the input's window slices over the spatial axes but the last (one per output
    position there) stacked along the batch axis, then XLA's convolution, one output position wide on
    those axes (its compile grows with the output positions: 3 here, against JAX's 3x3)."""
    import itertools

    import jax

    from arrayx.executors.jax import lax as jl

    lhs_spec, _, out_spec = dimension_numbers
    spatial = lhs_spec[2:]
    xp, window, out = jl._geometry(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers)
    extent = (out[-1] - 1) * strides[-1] + (window[-1] - 1) * rhs_dilation[-1] + 1
    positions = list(itertools.product(*(range(n) for n in out[2:-1])))
    pieces = jl._slices(xp, spatial[:-1], positions, strides, window, rhs_dilation, (spatial[-1], extent))
    dilation = (1,) * (len(spatial) - 1) + tuple(rhs_dilation[-1:])  # the slices took the others' (a stride)
    res = jl._xla_conv(jax.lax.concatenate(pieces, lhs_spec[0]), rhs, strides=strides,
                       padding=((0, 0),) * len(spatial), lhs_dilation=lhs_dilation, rhs_dilation=dilation,
                       groups=groups, dimension_numbers=dimension_numbers)
    res = jax.lax.transpose(res, tuple(out_spec))  # canonical (positions x N, O, 1, ..., 1, last axis)
    res = jax.lax.reshape(res, (*out[2:-1], out[0], out[1], out[-1]))
    nsp = len(out) - 3
    res = jax.lax.transpose(res, (nsp, nsp + 1, *range(nsp), nsp + 2))  # canonical (N, O, *spatial)
    return jax.lax.transpose(res, tuple(int(i) for i in np.argsort(out_spec)))


@contextlib.contextmanager
def form(name: str, cpu: bool):
    """arrayx's jax executor lowering the kernel gradient in form ``name`` (while XLA lowers: the first call)."""
    from arrayx.executors.jax import lax as jl

    if name not in FORMS:
        raise ValueError(f"tpu_cnn_forms: unknown form {name!r}; the forms are {FORMS}")
    kept = {k: getattr(jl, k) for k in ("POSITION_PRODUCTS_ON", "SELECT_AND_SCATTER_ON", "_DIAGONAL_BYTES",
                                        "_position_products")}
    platforms = ("tpu", "cpu") if cpu else ("tpu",)
    jl.POSITION_PRODUCTS_ON, jl.SELECT_AND_SCATTER_ON = platforms, platforms
    if name == "xla-conv":
        jl.POSITION_PRODUCTS_ON = ()
    elif name == "stacked":
        jl._DIAGONAL_BYTES = -1
    elif name == "rows":
        jl._position_products = _row_conv
    try:
        yield
    finally:
        for k, v in kept.items():
            setattr(jl, k, v)


def _command(prefix: str) -> str:
    """This run's command line for the results file, the folders in it named by role (no machine paths)."""
    args, out = sys.argv[1:], []
    for i, arg in enumerate(args):
        out.append({"--hlo-dir": "<hlo dir>", "--output": "<output.json>"}.get(args[i - 1], arg) if i else arg)
    return " ".join([prefix, "benchmarks/tpu_cnn_forms.py", *out])


def _best(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _measure(call, wait, loop, rounds: int, steps: int) -> dict:
    """dispatch / pipelined / waited ms per call, and the device's ms per step from the K-step program."""
    dispatch = pipelined = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        outs = [call() for _ in range(QUEUED)]
        t1 = time.perf_counter()
        wait(outs[-1])
        t2 = time.perf_counter()
        dispatch, pipelined = min(dispatch, (t1 - t0) / QUEUED), min(pipelined, (t2 - t0) / QUEUED)
        del outs
    one = _best(lambda: wait(call()), rounds)
    many = _best(lambda: wait(loop()), rounds)
    return {"dispatch ms": dispatch * 1e3, "pipelined ms": pipelined * 1e3, "waited ms": one * 1e3,
            f"waited ms, {steps} steps in one program": many * 1e3,
            "device ms per step": (many - one) / (steps - 1) * 1e3}


def run(batch: int, forms, steps: int, rounds: int, cpu: bool) -> list:
    import jax
    import jax.numpy as jnp

    from benchmarks.bench_cnn import _data, _step
    from benchmarks.bench_tpu import _block_ax, cnn_losses, jax_block

    aloss, jloss = cnn_losses()
    images, labels, params = _data(batch)
    labels = labels.astype(np.int32)
    rows = []
    jstep = _step(jax.value_and_grad(jloss), jax.tree.map)
    jargs = (jax.tree.map(jnp.asarray, params), jnp.asarray(images), jnp.asarray(labels))
    jone = jax.jit(jstep)
    jloop = jax.jit(lambda p, x, y: jax.lax.fori_loop(0, steps, lambda i, q: jstep(q, x, y)[1], p))
    t0 = time.perf_counter()
    want = float(jax_block(jone(*jargs))[0])
    t1 = time.perf_counter()
    jax_block(jloop(*jargs))
    row = {"batch": batch, "side": "jax", "first call s": t1 - t0, "loop first call s": time.perf_counter() - t1}
    row.update(_measure(lambda: jone(*jargs), jax_block, lambda: jloop(*jargs), rounds, steps))
    rows.append(row)
    print(json.dumps(row), flush=True)
    with ax.use_executor("jax"):
        aargs = (ax.pytree.map(ax.asarray, params), ax.asarray(images), ax.asarray(labels))
    for name in forms:
        astep = _step(ax.value_and_grad(lambda *a: aloss(*a)), ax.pytree.map)  # a fresh function: its own cache
        aone = ax.jit(astep)
        aloop = ax.jit(lambda p, x, y, astep=astep: ax.fori_loop(0, steps, lambda i, q: astep(q, x, y)[1], p))
        with form(name, cpu):  # the programs compile here, in this form
            t0 = time.perf_counter()
            got = float(np.asarray(_block_ax(aone(*aargs))[0]))
            t1 = time.perf_counter()
            _block_ax(aloop(*aargs))
            row = {"batch": batch, "side": f"arrayx {name}", "first call s": t1 - t0,
                   "loop first call s": time.perf_counter() - t1}
        row["loss agrees with jax"] = bool(abs(got - want) <= 1e-3 * max(1.0, abs(want)))
        row.update(_measure(lambda: aone(*aargs), _block_ax, lambda: aloop(*aargs), rounds, steps))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(batches, forms, steps: int, rounds: int, output: pathlib.Path | None, cpu: bool) -> dict:
    import jax

    if cpu:
        jax.config.update("jax_platforms", "cpu")
    ax.set_executor("jax")
    result = {"title": "the CNN step's host and device time per call, per form of arrayx's kernel gradient",
              "command": _command("python"), "jax": jax.__version__,
              "device": str(jax.devices()[0].device_kind), "load average before": os.getloadavg(), "rows": []}
    for batch in batches:
        result["rows"] += run(batch, forms, steps, rounds, cpu)
        if output is not None:
            output.write_text(json.dumps(result, indent=1) + "\n")
    by = {(r["batch"], r["side"]): r for r in result["rows"]}
    for (batch, side), r in by.items():  # JAX's time over arrayx's, per measure (>= 0.97: the goal)
        j = by.get((batch, "jax"))
        if j is not None and side != "jax":
            r["jax / arrayx"] = {k: j[k] / r[k] for k in ("dispatch ms", "pipelined ms", "waited ms",
                                                         "device ms per step") if r[k] > 0 and j[k] > 0}
    result["load average after"] = os.getloadavg()
    if output is not None:
        output.write_text(json.dumps(result, indent=1) + "\n")
    return result


def aot(batches, forms, timeout: float, output: pathlib.Path | None, hlo_dir: str | None) -> dict:
    """Each form's program (and JAX's) compiled ahead of time for a v5e on this CPU (libtpu on
    PYTHONPATH, as tpu_aot_rows.py): compile CPU s, XLA:TPU's cost model, the kernels it launches."""
    from benchmarks.tpu_aot import run_child

    keep = ("compile CPU s", "cost model ms", "bytes accessed", "kernel count", "kernels", "fusion kinds", "error")
    import importlib.metadata

    import jax

    try:
        libtpu = importlib.metadata.version("libtpu")
    except importlib.metadata.PackageNotFoundError:
        libtpu = None
    result = {"title": "the CNN step compiled ahead of time for a TPU v5e per form of arrayx's kernel gradient",
              "command": _command("PYTHONPATH=<libtpu dir> python"), "jax": jax.__version__, "libtpu": libtpu,
              "load average before": os.getloadavg(), "rows": []}
    for batch in batches:
        for side in [*(f"arrayx {f}" for f in forms), "jax"]:
            row = run_child(__file__, [f"cnn b{batch}", side] + ([hlo_dir] if hlo_dir else []),
                            {"batch": batch, "side": side}, timeout)
            row = {"batch": batch, "side": side, **{k: row[k] for k in keep if k in row}}
            result["rows"].append(row)
            print(json.dumps(row), flush=True)
            if output is not None:
                output.write_text(json.dumps(result, indent=1) + "\n")
    result["load average after"] = os.getloadavg()
    if output is not None:
        output.write_text(json.dumps(result, indent=1) + "\n")
    return result


def _child(row: str, side: str, hlo_dir: str | None) -> dict:
    from benchmarks.tpu_aot_rows import _one

    if side == "jax":
        return _one(row, "jax", hlo_dir)
    name = side.split(" ", 1)[1]
    with form(name, cpu=False):
        out = _one(row, "arrayx", hlo_dir and str(pathlib.Path(hlo_dir) / name))
    return {**out, "side": side}


if __name__ == "__main__":
    import argparse

    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_child(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)), flush=True)
        sys.exit(0)

    root = pathlib.Path(__file__).resolve().parents[1]
    p = argparse.ArgumentParser(description="the CNN step's host and device time, per form of the kernel gradient")
    p.add_argument("--batch", type=int, nargs="+", default=None, help="batches (default 64; --cpu: 8)")
    p.add_argument("--forms", nargs="+", default=list(FORMS), choices=FORMS)
    p.add_argument("--steps", type=int, default=20, help="steps in the one-program loop (the device's time)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--output", type=pathlib.Path, default=None,
                   help="default benchmarks/results/tpu_cnn_forms.json (--cpu: tpu_cnn_forms_cpu.json)")
    p.add_argument("--cpu", action="store_true", help="a dry run on this machine's CPU (the TPU's forms on it)")
    p.add_argument("--aot", action="store_true",
                   help="no chip: each form compiled ahead of time for a v5e here (libtpu on PYTHONPATH); writes "
                        "tpu_aot_cnn_forms.json")
    p.add_argument("--timeout", type=float, default=600, help="--aot: seconds per compile")
    p.add_argument("--hlo-dir", default=None, help="--aot: keep each optimized HLO here")
    a = p.parse_args()
    if a.aot:
        aot(a.batch or [64, 256], a.forms, a.timeout,
            a.output or root / "benchmarks" / "results" / "tpu_aot_cnn_forms.json", a.hlo_dir)
        sys.exit(0)
    out = a.output or root / "benchmarks" / "results" / ("tpu_cnn_forms_cpu.json" if a.cpu else "tpu_cnn_forms.json")
    main(a.batch or ([8] if a.cpu else [64]), a.forms, a.steps, a.rounds, out, a.cpu)
