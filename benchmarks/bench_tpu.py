"""arrayx's jax executor against JAX itself on the default JAX device (a TPU on the chip machine),
side by side in one process, with the same dtypes and the same matmul precision on both sides.

Run:  python benchmarks/bench_tpu.py [--quick] [--only TEXT] [--row-timeout S] [--output PATH] [--skip TEXT]
      [--cnn-variants]
      (on the chip: ``bash benchmarks/tpu_check.sh run`` with STEPS=bench; writes
      benchmarks/results/tpu_bench.json, or tpu_bench_quick.json with --quick; docs/benchmarks.rst plots it;
      on a CPU, --quick is the dry run: every row at small sizes, in about a minute)
      --only runs the rows whose name holds TEXT; each row (its first calls, where XLA compiles, the
      agreement check, the timing) gets --row-timeout seconds (120), then is reported as timed out, with
      the phase it was in, and the next row starts.  Rows are written to the output file as they come.

Rows (issue 41, point 7): eager dispatch of a tiny op; eager exp of 16M; 4096^2 matmul in float32 and
bfloat16; jit SELU of 64M; an MLP train step jit(grad) in float32 and bfloat16 (batch 2048,
1024-4096-4096-1024); ten SGD steps under jit(fori_loop); per-example gradients jit(vmap(grad));
a CNN step through lax.conv (batch 64 and 256); an attention block (jit of value_and_grad); and the
same MLP written with each library's defaults (no dtype arguments, weights from NumPy float64 data: arrayx gives the
device's defaults, float32 on a TPU; JAX gives float32 unless x64 is on); and a control row, JAX's float32
step timed against itself (the spread of the timing itself on that host).  "speed vs jax" is JAX's
time / arrayx's time (1.0: the same; the issue's goal is >= 0.97), each call waited for (one host-device
round trip each: ~0.45 ms on the chip for a tiny op); "pipelined speed vs jax" the same with 20 calls queued
before one wait (the time per step of a loop that does not wait on each step).  Both are the best call of
each side; the "median" columns are each side's median over the same interleaved calls, which moves less
between runs on rows where a host-device round trip is most of the time.  Each row checks that both
libraries agree on the result first.

Matmul precision (issue 41, point 5): a 4096^2 float32 product timed at each precision
("default": XLA's choice, bfloat16 passes on a TPU; "highest": float32 accuracy) under
``arrayx.default_matmul_precision``, with its largest relative error against NumPy's float64 product.
"""
from __future__ import annotations

import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # this checkout's arrayx

import numpy as np  # noqa: E402

import arrayx as ax  # noqa: E402

TITLE = "arrayx's jax executor vs JAX on the default JAX device (TPU v5e on the chip machine)"


def _best(fn, rounds: int, repeat: int) -> float:
    fn()
    fn()
    best = float("inf")
    for _ in range(rounds):
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
    return best


def _pair_times(fa, fj, rounds, repeat):
    """(best seconds of each side, median seconds of each side), the sides interleaved round by round
    (``repeat`` calls of one, then of the other): the best is what each side can do; the median,
    over ``rounds * repeat`` calls a side, moves less from run to run where one host-device round
    trip is most of a call (sub-millisecond rows: +-5% between runs for the best, session 25)."""
    fa(), fj()
    ta, tj = [], []  # (the control row times one function on both sides)
    for _ in range(rounds):
        for fn, times in ((fa, ta), (fj, tj)):
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
    return min(ta), min(tj), statistics.median(ta), statistics.median(tj)


#: calls queued before one wait in the pipelined timing
PIPELINE = 20


def _pipelined_pair(qa, wa, qj, wj, rounds):
    """(best, median) seconds per call of each side with :data:`PIPELINE` calls queued (``q*``: a call
    without waiting) before one wait on the last result (``w*``), interleaved round by round: the time
    a training loop that does not wait on each step sees (the device's time per call, when the host
    keeps ahead of it), where the per-call rows also count one host-device round trip each."""
    times = {"a": [], "j": []}
    for _ in range(rounds):
        for side, q, w in (("a", qa, wa), ("j", qj, wj)):
            t0 = time.perf_counter()
            for _ in range(PIPELINE - 1):
                q()
            w(q())
            times[side].append((time.perf_counter() - t0) / PIPELINE)
    return min(times["a"]), min(times["j"]), statistics.median(times["a"]), statistics.median(times["j"])


def _host(v):
    leaves = ax.pytree.leaves(v) if not hasattr(v, "shape") else [v]
    return [np.asarray(x, dtype=np.float32) if str(getattr(x, "dtype", "")) == "bfloat16" else np.asarray(x)
            for x in leaves]


def _agree(a, j, rtol):
    for x, y in zip(_host(a), _host(j)):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        scale = max(np.max(np.abs(y)), 1e-30)
        err = float(np.max(np.abs(x - y)) / scale) if x.size else 0.0
        if not err <= rtol:
            raise AssertionError(f"arrayx and jax differ: {err:.3g} > {rtol}")


def _mlp(lib, sizes_in, dtype, seed=0):
    rng = np.random.default_rng(seed)
    params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), np.zeros(n, dtype))
              for m, n in zip(sizes_in[:-1], sizes_in[1:])]
    return params


def _mlp_loss(lib, relu):
    def loss(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < len(params) - 1:
                h = relu(h)
        return lib.mean((h - y) ** 2)

    return loss


#: SELU's constants (the jit SELU row)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def selu(lib):
    return lambda x: SELU_SCALE * lib.where(x > 0, x, SELU_ALPHA * (lib.exp(x) - 1))


def sgd(value_and_grad, tree_map, loss):
    """One SGD step of ``loss``: (its value, the updated parameters)."""
    def step(p, x, y):
        v, g = value_and_grad(loss)(p, x, y)
        return v, tree_map(lambda w, d: w - 0.01 * d, p, g)
    return step


def sizes(quick: bool) -> dict:
    """The rows' sizes (--quick: small ones, for a dry run on a CPU)."""
    return {"exp": 2**16 if quick else 2**24, "selu": 2**16 if quick else 2**26, "mm": 256 if quick else 4096,
            "mlp": (64, (128, 256, 256, 128)) if quick else (2048, (1024, 4096, 4096, 1024)),
            "per-example": (16 if quick else 128, (784, 512, 512, 10)), "cnn": (16,) if quick else (64, 256),
            "attention": (2, 64, 64, 4) if quick else (8, 1024, 512, 8)}


def attention(lib, softmax, ab, seq, d, heads):
    """softmax(q k^T / sqrt(d)) v over ``heads`` heads, q, k, v = q @ w[0], w[1], w[2]; the mean square."""
    def f(w, q):
        hd = d // heads
        qs, ks, vs = (lib.reshape(q @ w[i], (ab, seq, heads, hd)) for i in range(3))
        qs, ks, vs = (lib.permute_dims(t, (0, 2, 1, 3)) for t in (qs, ks, vs))
        att = softmax((qs @ lib.matrix_transpose(ks)) / np.float32(np.sqrt(hd)), axis=-1)
        return lib.mean((att @ vs) ** 2)
    return f


def cnn_losses():
    """The CNN row's loss in arrayx and in JAX (benchmarks/bench_cnn.py's model)."""
    import jax
    import jax.numpy as jnp

    from benchmarks.bench_cnn import cnn_loss

    jloss = cnn_loss(jnp, jax.lax.conv, lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2),
                                                                     (1, 1, 2, 2), "VALID"),
                     jax.nn.log_softmax, lambda t, n: jax.nn.one_hot(t, n, dtype=jnp.float32))
    aloss = cnn_loss(ax, ax.lax.conv, lambda h: ax.lax.max_pool(h, (2, 2)), ax.nn.log_softmax,
                     lambda t, n: ax.nn.one_hot(t, n, dtype=ax.float32))
    return aloss, jloss


def tpu_rows(quick: bool):
    import jax
    import jax.numpy as jnp

    bf16 = jnp.bfloat16
    size = sizes(quick)
    n_exp, n_selu, mm = size["exp"], size["selu"], size["mm"]
    batch, mlp_sizes = size["mlp"]
    rng = np.random.default_rng(1)

    def tree_j(t, dt=None):
        return jax.tree.map(lambda a: jnp.asarray(a, dtype=dt), t)

    def tree_a(t, dt=None):
        return ax.pytree.map(lambda a: ax.asarray(a, dtype=dt), t)

    rows = {}
    # eager dispatch of a tiny op
    a8, b8 = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    xa, ya, xj, yj = ax.asarray(a8), ax.asarray(b8), jnp.asarray(a8), jnp.asarray(b8)
    rows["eager a + b, 8 float32"] = (_timed(lambda: xa + ya, _block_ax), _timed(lambda: xj + yj, jax_block), 0)
    # eager exp
    e = rng.standard_normal(n_exp).astype(np.float32)
    ea, ej = ax.asarray(e), jnp.asarray(e)
    rows[f"eager exp, {n_exp} float32"] = (_timed(lambda: ax.exp(ea), _block_ax), _timed(lambda: jnp.exp(ej), jax_block), 1e-6)
    # matmul, float32 and bfloat16
    m = rng.standard_normal((mm, mm)).astype(np.float32)
    for name, dt_a, dt_j in (("float32", ax.float32, jnp.float32), ("bfloat16", ax.bfloat16, bf16)):
        ma, mj = ax.asarray(m, dtype=dt_a), jnp.asarray(m, dtype=dt_j)
        rows[f"matmul {mm}^2 {name}"] = (_timed(lambda ma=ma: ma @ ma, _block_ax), _timed(lambda mj=mj: mj @ mj, jax_block),
                                        2e-2 if name == "bfloat16" else 1e-5)
    # jit SELU
    s = rng.standard_normal(n_selu).astype(np.float32)
    sa, sj = ax.asarray(s), jnp.asarray(s)
    fa, fj = ax.jit(selu(ax)), jax.jit(selu(jnp))
    rows[f"jit selu, {n_selu} float32"] = (_timed(lambda: fa(sa), _block_ax), _timed(lambda: fj(sj), jax_block), 1e-6)
    # MLP train step, float32 and bfloat16
    params = _mlp(None, mlp_sizes, np.float32)
    x = rng.standard_normal((batch, mlp_sizes[0])).astype(np.float32)
    y = rng.standard_normal((batch, mlp_sizes[-1])).astype(np.float32)
    la, lj = _mlp_loss(ax, ax.nn.relu), _mlp_loss(jnp, jax.nn.relu)  # each library's relu (derivative 0 at 0)

    step_a = ax.jit(sgd(ax.value_and_grad, ax.pytree.map, la))
    step_j = jax.jit(sgd(jax.value_and_grad, jax.tree.map, lj))
    for name, dt_a, dt_j, tol in (("float32", ax.float32, jnp.float32, 1e-4), ("bfloat16", ax.bfloat16, bf16, 5e-2)):
        pa, pj = tree_a(params, dt_a), tree_j(params, dt_j)
        xa_, xj_ = ax.asarray(x, dtype=dt_a), jnp.asarray(x, dtype=dt_j)
        ya_, yj_ = ax.asarray(y, dtype=dt_a), jnp.asarray(y, dtype=dt_j)
        rows[f"mlp train step jit(value_and_grad) {name}"] = (
            _timed(lambda pa=pa, xa_=xa_, ya_=ya_: step_a(pa, xa_, ya_), _block_ax),
            _timed(lambda pj=pj, xj_=xj_, yj_=yj_: step_j(pj, xj_, yj_), jax_block), tol)
    # a control: JAX's float32 step timed against itself, as the two sides are (its "speed vs jax" is
    # the timing's own spread on this host; session 23's run gave 0.97 and 0.94 for the float32 and
    # default-dtype rows, which run the same arrayx program)
    pj_c, xj_c, yj_c = tree_j(params, jnp.float32), jnp.asarray(x), jnp.asarray(y)
    control = _timed(lambda: step_j(pj_c, xj_c, yj_c), jax_block)
    rows["control: JAX's float32 mlp step against itself"] = (control, _timed(control.queue, jax_block), 0)
    # the same MLP with each library's defaults: weights and data straight from NumPy float64
    params64 = _mlp(None, mlp_sizes, np.float64)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    pa, pj = tree_a(params64), tree_j(params64)
    xa_, xj_, ya_, yj_ = ax.asarray(x64), jnp.asarray(x64), ax.asarray(y64), jnp.asarray(y64)
    rows["mlp train step, each library's default dtypes (from NumPy float64)"] = (
        _timed(lambda: step_a(pa, xa_, ya_), _block_ax), _timed(lambda: step_j(pj, xj_, yj_), jax_block), 1e-3)
    # ten SGD steps under jit(fori_loop)
    pa, pj = tree_a(params, ax.float32), tree_j(params, jnp.float32)
    xa_, xj_, ya_, yj_ = ax.asarray(x), jnp.asarray(x), ax.asarray(y), jnp.asarray(y)
    one_a, one_j = sgd(ax.value_and_grad, ax.pytree.map, la), sgd(jax.value_and_grad, jax.tree.map, lj)
    ten_a = ax.jit(lambda p, x, y: ax.fori_loop(0, 10, lambda i, p: one_a(p, x, y)[1], p))
    ten_j = jax.jit(lambda p, x, y: jax.lax.fori_loop(0, 10, lambda i, p: one_j(p, x, y)[1], p))
    rows["ten sgd steps jit(fori_loop) float32"] = (_timed(lambda: ten_a(pa, xa_, ya_), _block_ax),
                                                    _timed(lambda: ten_j(pj, xj_, yj_), jax_block), 1e-3)
    # per-example gradients
    pe_batch, pe_sizes = size["per-example"]
    pp = _mlp(None, pe_sizes, np.float32)
    px = rng.standard_normal((pe_batch, pe_sizes[0])).astype(np.float32)
    py = rng.standard_normal((pe_batch, pe_sizes[-1])).astype(np.float32)
    pea = ax.jit(ax.vmap(ax.grad(la), in_axes=(None, 0, 0)))
    pej = jax.jit(jax.vmap(jax.grad(lj), in_axes=(None, 0, 0)))
    ppa, ppj = tree_a(pp), tree_j(pp)
    pxa, pxj, pya, pyj = ax.asarray(px), jnp.asarray(px), ax.asarray(py), jnp.asarray(py)
    rows[f"per-example grads jit(vmap(grad)) batch {pe_batch} float32"] = (
        _timed(lambda: pea(ppa, pxa, pya), _block_ax), _timed(lambda: pej(ppj, pxj, pyj), jax_block), 1e-4)
    # CNN step through lax.conv
    from benchmarks.bench_cnn import _data, _step

    # batch 64 too: XLA:TPU compiles JAX's step there in ~40 s of CPU (the kernel gradient's 28x28-window
    # convolution; minutes at 256), so the row has JAX's time within the row timeout
    aloss, jloss = cnn_losses()
    cj = jax.jit(_step(jax.value_and_grad(jloss), jax.tree.map))
    ca = ax.jit(_step(ax.value_and_grad(aloss), ax.pytree.map))
    for cb in size["cnn"]:
        images, labels, cparams = _data(cb)
        cja = (tree_j(cparams), jnp.asarray(images), jnp.asarray(labels.astype(np.int32)))
        caa = (tree_a(cparams), ax.asarray(images), ax.asarray(labels.astype(np.int32)))
        rows[f"cnn train step lax.conv batch {cb} float32"] = (_timed(lambda caa=caa: ca(*caa), _block_ax),
                                                             _timed(lambda cja=cja: cj(*cja), jax_block), 1e-3)
        if CNN_VARIANTS:  # arrayx's step with XLA's convolution for the kernel gradient (JAX's form) on the TPU
            cc = ax.jit(_step(ax.value_and_grad(lambda *a: aloss(*a)), ax.pytree.map))  # its own cache
            rows[f"cnn train step lax.conv batch {cb} float32, arrayx with XLA's convolution for the kernel "
                 f"gradient"] = (_timed(lambda caa=caa, cc=cc: _xla_kernel_gradient(cc, caa), _block_ax),
                                 _timed(lambda cja=cja: cj(*cja), jax_block), 1e-3)
    # attention block: softmax(q k^T / sqrt(d)) v, value_and_grad of its mean square
    ab, seq, d, heads = size["attention"]
    q = rng.standard_normal((ab, seq, d)).astype(np.float32)
    wq = (rng.standard_normal((3, d, d)) / np.sqrt(d)).astype(np.float32)

    att_a = ax.jit(ax.value_and_grad(attention(ax, ax.nn.softmax, ab, seq, d, heads)))
    att_j = jax.jit(jax.value_and_grad(attention(jnp, jax.nn.softmax, ab, seq, d, heads)))
    qa, qj, wa, wj = ax.asarray(q), jnp.asarray(q), ax.asarray(wq), jnp.asarray(wq)
    rows[f"attention block jit(value_and_grad) {ab}x{seq}x{d}, {heads} heads float32"] = (
        _timed(lambda: att_a(wa, qa), _block_ax), _timed(lambda: att_j(wj, qj), jax_block), 1e-3)
    return rows, mm


#: --cnn-variants: also the CNN rows with arrayx's kernel gradient as XLA's convolution (JAX's form; on a
#: TPU arrayx's own program takes products there, executors/jax/lax.py POSITION_PRODUCTS_ON)
CNN_VARIANTS = False


def _xla_kernel_gradient(fn, args):
    """``fn(*args)`` traced and lowered (on its first call) with XLA's convolution on every platform."""
    from arrayx.executors.jax import lax as jax_lax

    kept = jax_lax.POSITION_PRODUCTS_ON
    jax_lax.POSITION_PRODUCTS_ON = ()
    try:
        return fn(*args)
    finally:
        jax_lax.POSITION_PRODUCTS_ON = kept


def _block_ax(v):
    """Wait for ``v`` (an arrayx array or a pytree of them) with ``arrayx.block_until_ready``, as
    ``jax.block_until_ready`` waits on JAX's side (one batched wait for a pytree's buffers; until
    session 23 this walked the tree with arrayx's checked flatten here, ~10-30 us more per call on the
    chip machine's host than JAX's C++ flatten)."""
    return ax.block_until_ready(v)


def precision_rows(mm: int, rounds: int, repeat: int) -> list:
    """A float32 product at each matmul precision: time, and largest error against float64."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((mm, mm)).astype(np.float32) for _ in range(2))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    out = []
    aa, ba, aj, bj = ax.asarray(a), ax.asarray(b), jnp.asarray(a), jnp.asarray(b)
    for precision in ("default", "high", "highest"):
        with ax.default_matmul_precision(precision):
            def fa():
                return _block_ax(aa @ ba)
            got = np.asarray(fa()).astype(np.float64)
            ta = _best(fa, rounds, repeat)
        with jax.default_matmul_precision(precision):
            def fj():
                return jax.block_until_ready(aj @ bj)
            gotj = np.asarray(fj()).astype(np.float64)
            tj = _best(fj, rounds, repeat)
        err = float(np.max(np.abs(got - exact)) / np.max(np.abs(exact)))
        errj = float(np.max(np.abs(gotj - exact)) / np.max(np.abs(exact)))
        out.append({"case": f"matmul {mm}^2 float32 at precision {precision!r}", "arrayx ms": ta * 1e3,
                    "jax ms": tj * 1e3, "speed vs jax": tj / ta, "TFLOP/s (arrayx)": 2 * mm**3 / ta / 1e12,
                    "max error vs float64 / max |exact| (arrayx)": err, "same (jax)": errj})
    return out  # printed and written by main's keep, once each


#: seconds a row may take (its first calls, where XLA compiles, the agreement check and the timing)
#: before it is reported as timed out and the next row starts (--row-timeout, BENCH_TPU_ROW_TIMEOUT)
ROW_TIMEOUT_S = float(os.environ.get("BENCH_TPU_ROW_TIMEOUT", "120"))


def _measure(fa, fj, tol, rounds, repeat, phase: list, row: dict) -> dict:
    """One row, filled into ``row`` as it goes: each side's first call timed (XLA compiles there), the
    agreement check, the timing.  ``phase[0]`` says what is running, for a row that times out."""
    for side, fn in (("arrayx", fa), ("jax", fj)):
        phase[0] = f"{side}'s first call (XLA compiles it)"
        t0 = time.perf_counter()
        fn()
        row[f"{side} first call s"] = time.perf_counter() - t0
    if tol:
        phase[0] = "the agreement check"
        _agree(fa(), fj(), tol)
        row["agree"] = f"within {tol:g}"
    phase[0] = "the timing"
    ta, tj, ma, mj = _pair_times(fa, fj, rounds, repeat)
    row.update({"arrayx ms": ta * 1e3, "jax ms": tj * 1e3, "speed vs jax": tj / ta,
                "arrayx median ms": ma * 1e3, "jax median ms": mj * 1e3, "median speed vs jax": mj / ma})
    queued = getattr(fa, "queue", None), getattr(fj, "queue", None)
    if all(queued):
        phase[0] = "the pipelined timing"
        pa, pj, qa, qj = _pipelined_pair(queued[0], _block_ax, queued[1], jax_block, rounds)
        row.update({"arrayx ms pipelined": pa * 1e3, "jax ms pipelined": pj * 1e3, "pipelined speed vs jax": pj / pa,
                    "pipelined median speed vs jax": qj / qa})
    return row


def jax_block(v):
    import jax

    return jax.block_until_ready(v)


def _timed(call, wait):
    """``call`` then ``wait`` on its result, with ``.queue``: ``call`` alone (the pipelined timing)."""
    def run():
        return wait(call())

    run.queue = call
    return run


def _guarded(work, timeout_s: float, stuck: list) -> dict:
    """``work(phase, row)`` in a thread, waited for ``timeout_s``: its row, or what it had when it failed
    or ran out of time, with the error.  A row past its time is left running (XLA's compile cannot be
    interrupted) and noted in ``stuck``; the next rows still run (the process then ends with os._exit)."""
    import threading

    result, phase = {}, ["setting up"]

    def target():
        try:
            result.update(work(phase, result))
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, the others still run
            result["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        stuck.append(thread)
        return {**dict(result), "error": f"timed out after {timeout_s:.0f} s in {phase[0]} (left running; the "
                                         f"rows after it were timed beside it)"}
    return result


def main(quick: bool = False, output: pathlib.Path | None = None, only: str | None = None,
         row_timeout: float = ROW_TIMEOUT_S, skip: str | None = None) -> dict:
    import jax

    ax.set_executor("jax")
    rounds, repeat = (2, 2) if quick else (15, 10)  # 150 timed calls a side (25 gave +-5% on equal programs)
    load_before = os.getloadavg()
    rows, stuck = [], []
    work, mm = tpu_rows(quick)

    def keep(row):
        rows.append(row)
        print(json.dumps(row), flush=True)
        if output is not None:  # each row written as soon as it is timed: a row that hangs loses only itself
            output.write_text(json.dumps({"rows so far": rows}, indent=1) + "\n")

    def wanted(name):
        return (only is None or only.lower() in name.lower()) and not (skip and skip.lower() in name.lower())

    # the CNN rows last: on the chip the first call at batch 256 did not return within 100 s in two runs
    # (2026-12-06): XLA:TPU's compile of the kernel gradient's 28x28-window convolution, minutes in JAX's
    # own program too; arrayx's TPU program has products there now (executors/jax/lax.py)
    precision_done = False
    for name in sorted(work, key=lambda name: name.startswith("cnn")):
        if name.startswith("cnn") and wanted("matmul precision") and not precision_done:  # once, before the CNN rows
            precision_done = True
            precision = _guarded(lambda phase, row: {"rows": precision_rows(mm, rounds, repeat)}, row_timeout, stuck)
            for row in precision.get("rows") or [{"case": "matmul precision", "error": precision.get("error")}]:
                keep(row)
        if not wanted(name):
            continue
        fa, fj, tol = work[name]
        keep({"case": name, **_guarded(lambda phase, row, fa=fa, fj=fj, tol=tol: _measure(fa, fj, tol, rounds, repeat,
                                                                                          phase, row),
                                       row_timeout, stuck)})
    dev = jax.devices()[0]
    return {"title": TITLE, "command": "python benchmarks/bench_tpu.py" + (" --quick" if quick else "")
            + (f" --only {only!r}" if only else "") + (f" --skip {skip!r}" if skip else "")
            + (" --cnn-variants" if CNN_VARIANTS else ""),
            "device": f"{dev.platform} {getattr(dev, 'device_kind', '')}", "jax": jax.__version__,
            "quick": quick, "rounds": rounds, "repeats per round": repeat, "row timeout s": row_timeout,
            "load average before (1, 5, 15 min)": load_before, "rows": rows,
            "default dtypes (arrayx, this device)": {k: str(v) for k, v in
                                                     ax.__array_namespace_info__().default_dtypes(
                                                         device=ax.__array_namespace_info__().default_device()).items()},
            "rows left running": len(stuck)}


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--output", type=pathlib.Path, default=None)
    p.add_argument("--only", default=None, help="run only the rows whose name holds this text (any case)")
    p.add_argument("--row-timeout", type=float, default=ROW_TIMEOUT_S,
                   help="seconds a row may take before the next starts (default %(default)s)")
    p.add_argument("--skip", default=None, help="leave out the rows whose name holds this text (any case)")
    p.add_argument("--cnn-variants", action="store_true",
                   help="also the CNN rows with arrayx's kernel gradient as XLA's convolution (JAX's form)")
    a = p.parse_args()
    CNN_VARIANTS = a.cnn_variants
    out = a.output or pathlib.Path(__file__).parent / "results" / ("tpu_bench_quick.json" if a.quick else "tpu_bench.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    result = main(a.quick, out, a.only, a.row_timeout, a.skip)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}", flush=True)
    if result["rows left running"]:  # a row still compiling: do not wait for it at exit
        sys.stdout.flush()
        os._exit(0)
