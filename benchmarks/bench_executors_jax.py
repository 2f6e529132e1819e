"""Eager overhead of arrayx on the JAX executor, against raw ``jax.numpy``, per op.

Run:  python benchmarks/bench_executors_jax.py [--quick]
      (writes benchmarks/results/bench_executors_jax.json)

Both sides run the same operations on the same ``jax.Array`` buffers in one
process, interleaved, best of several repeats, and every result is waited for
(``block_until_ready``: JAX dispatches asynchronously, so an unblocked timing
would measure only the dispatch).  What matters is the ratio arrayx/jax and the
overhead in microseconds per op, not the absolute times (JAX's own eager
dispatch is tens of microseconds per op on CPU).
"""
from __future__ import annotations

import json
import pathlib
import platform
import sys
import timeit

import numpy as np

import arrayx as ax


def _ops(jnp):
    """name -> (arrayx op, jax.numpy op); each takes (x, y, idx) of its own library."""
    def jax_setitem(x, y, idx):
        return x[1:].at[0].set(1.0)

    def ax_setitem(x, y, idx):
        z = x[1:]  # a new array; the assignment rebinds z functionally (x[1:].at[0].set)
        z[0] = 1.0
        return z

    return {
        "add(x, y)": (lambda x, y, i: ax.add(x, y), lambda x, y, i: jnp.add(x, y)),
        "x * 2.0": (lambda x, y, i: x * 2.0, lambda x, y, i: x * 2.0),
        "sin(x)": (lambda x, y, i: ax.sin(x), lambda x, y, i: jnp.sin(x)),
        "exp(x) * y - 1": (lambda x, y, i: ax.exp(x) * y - 1.0, lambda x, y, i: jnp.exp(x) * y - 1.0),
        "sum(x)": (lambda x, y, i: ax.sum(x), lambda x, y, i: jnp.sum(x)),
        "mean(x, axis=0)": (lambda x, y, i: ax.mean(x, axis=0), lambda x, y, i: jnp.mean(x, axis=0)),
        "x[1:]": (lambda x, y, i: x[1:], lambda x, y, i: x[1:]),
        "x[idx]": (lambda x, y, i: x[i], lambda x, y, i: x[i]),
        "z = x[1:]; z[0] = 1": (ax_setitem, jax_setitem),
        "reshape(x, (-1, 1))": (lambda x, y, i: ax.reshape(x, (-1, 1)), lambda x, y, i: jnp.reshape(x, (-1, 1))),
        "where(x > 0, x, y)": (lambda x, y, i: ax.where(x > 0, x, y), lambda x, y, i: jnp.where(x > 0, x, y)),
        "searchsorted(x, y)": (lambda x, y, i: ax.searchsorted(x, y), lambda x, y, i: jnp.searchsorted(x, y)),
        "matmul(x, y)": (lambda x, y, i: ax.matmul(x, y), lambda x, y, i: jnp.matmul(x, y)),
    }


def _block(out):
    buf = out._buf if isinstance(out, ax.Array) else out
    return buf.block_until_ready()


def best(fn, number, repeat) -> float:
    return min(timeit.repeat(lambda: _block(fn()), number=number, repeat=repeat)) / number


def main(quick: bool = False) -> dict:
    with ax.use_executor("jax"):
        import jax
        import jax.numpy as jnp

        n = 64
        host_x = np.sort(np.random.default_rng(0).uniform(-1, 1, n))
        host_y = np.random.default_rng(1).uniform(-1, 1, n)
        ax_x, ax_y = ax.asarray(host_x), ax.asarray(host_y)
        ax_i = ax.asarray(np.arange(0, n, 3))
        j_x, j_y, j_i = ax_x._buf, ax_y._buf, ax_i._buf
        number, repeat = (200, 3) if quick else (2000, 5)
        rows = {}
        print(f"{'op':<22}{'jax.numpy':>12}{'arrayx':>12}{'overhead':>12}{'ratio':>8}")
        for name, (ax_op, jax_op) in _ops(jnp).items():
            args_ax = (ax_x, ax_y, ax_i) if name != "matmul(x, y)" else (ax_x[:, None], ax_y[None, :], ax_i)
            args_j = (j_x, j_y, j_i) if name != "matmul(x, y)" else (j_x[:, None], j_y[None, :], j_i)
            got = np.asarray(ax_op(*args_ax))
            want = np.asarray(jax_op(*args_j))
            assert got.dtype == want.dtype or name == "searchsorted(x, y)", (name, got.dtype, want.dtype)
            np.testing.assert_allclose(got, want)  # the same computation on both sides
            t_j = best(lambda: jax_op(*args_j), number, repeat)
            t_a = best(lambda: ax_op(*args_ax), number, repeat)
            rows[name] = {"jax_us": t_j * 1e6, "arrayx_us": t_a * 1e6,
                          "overhead_us": (t_a - t_j) * 1e6, "ratio": t_a / t_j}
            r = rows[name]
            print(f"{name:<22}{r['jax_us']:>10.1f}us{r['arrayx_us']:>10.1f}us{r['overhead_us']:>10.1f}us{r['ratio']:>8.2f}")
    ratios = sorted(r["ratio"] for r in rows.values())
    overheads = sorted(r["overhead_us"] for r in rows.values())
    summary = {"median_ratio": ratios[len(ratios) // 2], "median_overhead_us": overheads[len(overheads) // 2]}
    print(f"median ratio arrayx/jax: {summary['median_ratio']:.2f}, "
          f"median overhead {summary['median_overhead_us']:.1f} us per op")
    out = pathlib.Path(__file__).parent / "results" / "bench_executors_jax.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "command": "python benchmarks/bench_executors_jax.py" + (" --quick" if quick else ""),
        "jax_version": jax.__version__, "python": platform.python_version(), "array_size": n,
        "note": "ratio = arrayx time / jax.numpy time for the same op on the same buffers, results blocked on",
        "ops": rows, **summary,
    }, indent=2))
    return rows


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
