"""Does the jax executor's linear algebra keep LAPACK's float32 accuracy at extreme magnitudes?

    python -m conformance.tpu_linalg_accuracy [--json PATH] [--dtypes float32,complex64,float64,complex128]

XLA:TPU's decompositions do not scale their operand as LAPACK does: float32 matrices with entries
near 1e19 (squares past float32's 3.4e38) or near 1e-19 and 1e-30 (products below the normal range,
which a TPU flushes to zero) gave NaN singular values (session 23) and eigenvalues or Q R 10-80%
off with no error (session 24).  This command measures each function of the linalg extension on
float32 and complex64 matrices of normal entries times 1, 1e15, 1e19, 1e-19 and 1e-30, on the jax
executor's default device (the chip on a TPU machine) and on the NumPy executor (LAPACK, same
dtype), each against NumPy in float64/complex128 of the same input: the largest error over the
largest magnitude of the exact result.  A row is ``worse`` when the jax error passes both 100 times
LAPACK's and 1e-4 (a matrix product at XLA:TPU's default precision alone gives ~3e-3, so run it with
``ARRAYX_MATMUL_PRECISION=highest``, as benchmarks/tpu_check.sh's ``linalg`` step does).  Exit
status 1 when a row is worse.

``--dtypes float64,complex128`` measures the 64-bit types as well (on a TPU only with
``ARRAYX_TPU_64BIT=emulate``: XLA:TPU emulates them with float32's exponent range, so the same
magnitudes stress the same scaling), each against LAPACK in its own dtype, a row being ``worse``
past 100 times LAPACK's error and 1e-10.  Session 25 found float64 ``svd`` raising an internal XLA
error on the chip there, a path that neither the official suite (run without 64-bit types on the
chip) nor the 32-bit rows reached.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

MAGNITUDES = (1.0, 1e15, 1e19, 1e-19, 1e-30)
DTYPES = ("float32", "complex64")
#: the error below which a row is never ``worse``, per dtype (a bfloat16 pass gives ~3e-3)
FLOORS = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10}
N = 6


def _operands(np, dtype: str, magnitude: float):
    """(general, Hermitian, positive-definite) N x N matrices of the dtype, entries near ``magnitude``."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((N, N))
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal((N, N))
    h = (a + a.conj().T) / 2
    p = a @ a.conj().T + N * np.eye(N)
    return [(m * magnitude).astype(dtype) for m in (a, h, p)]


def _measures(xp, np):
    """name -> (operand index, f(xp, x) -> NumPy result compared with the exact one)."""
    def recon_qr(x):
        q, r = xp.linalg.qr(x)
        return np.asarray(q) @ np.asarray(r)

    def recon_eigh(x):
        w, v = (np.asarray(t) for t in xp.linalg.eigh(x))
        return (v * w) @ v.conj().T

    def recon_svd(x):
        u, s, vh = (np.asarray(t) for t in xp.linalg.svd(x, full_matrices=False))
        return (u * s) @ vh

    return {
        "qr: Q R": (0, recon_qr, lambda a: a),
        "eigh: V diag(w) V^H": (1, recon_eigh, lambda a: a),
        "eigvalsh": (1, lambda x: np.asarray(xp.linalg.eigvalsh(x)), lambda a: np.linalg.eigvalsh(a)),
        "svd: U diag(S) Vh": (0, recon_svd, lambda a: a),
        "svdvals": (0, lambda x: np.asarray(xp.linalg.svdvals(x)), lambda a: np.linalg.svd(a, compute_uv=False)),
        "cholesky": (2, lambda x: np.asarray(xp.linalg.cholesky(x)), np.linalg.cholesky),
        "inv": (0, lambda x: np.asarray(xp.linalg.inv(x)), np.linalg.inv),
        "solve": (0, lambda x: np.asarray(xp.linalg.solve(x, x[:, :1])), lambda a: np.linalg.solve(a, a[:, :1])),
        "slogdet: logabsdet": (0, lambda x: np.asarray(xp.linalg.slogdet(x)[1]), lambda a: np.linalg.slogdet(a)[1]),
        "pinv": (0, lambda x: np.asarray(xp.linalg.pinv(x)), np.linalg.pinv),
        "matrix_norm 2": (0, lambda x: np.asarray(xp.linalg.matrix_norm(x, ord=2)), lambda a: np.linalg.norm(a, 2)),
        "matrix_norm nuc": (0, lambda x: np.asarray(xp.linalg.matrix_norm(x, ord="nuc")),
                            lambda a: np.linalg.norm(a, "nuc")),
    }


def _error(np, got, exact) -> float | str:
    got = np.asarray(got, dtype=np.complex128)
    if not np.all(np.isfinite(got)):
        return "non-finite"
    scale = float(np.max(np.abs(exact))) if np.size(exact) else 0.0
    return float(np.max(np.abs(got - exact)) / scale) if scale else float(np.max(np.abs(got), initial=0.0))


def run(dtypes=None) -> dict:
    import numpy as np

    import arrayx as ax

    rows = []
    for dtype in dtypes or DTYPES:
        for magnitude in MAGNITUDES:
            operands = _operands(np, dtype, magnitude)
            wide = [m.astype(np.complex128 if dtype.startswith("complex") else np.float64) for m in operands]
            for name, (which, f, exact_of) in _measures(ax, np).items():
                exact = np.asarray(exact_of(wide[which]), dtype=np.complex128)
                row = {"function": name, "dtype": dtype, "magnitude": magnitude}
                for executor in ("jax", "numpy"):
                    with ax.use_executor(executor):
                        try:
                            row[executor] = _error(np, f(ax.asarray(operands[which])), exact)
                        except Exception as e:  # noqa: BLE001 - a refusal is data here
                            row[executor] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
                j, n = row["jax"], row["numpy"]
                if isinstance(n, float) and (j == "non-finite" or (isinstance(j, float) and j > max(100 * n, FLOORS[dtype]))):
                    row["worse"] = True
                rows.append(row)
    import jax

    dev = jax.devices()[0]
    return {"title": "the jax executor's linalg against LAPACK at extreme magnitudes",
            "command": "python -m conformance.tpu_linalg_accuracy" + ("" if dtypes is None else f" --dtypes {','.join(dtypes)}"),
            "device": f"{dev.platform} {getattr(dev, 'device_kind', '')}", "jax": jax.__version__,
            "worse": sum(bool(r.get("worse")) for r in rows), "rows": rows}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", type=pathlib.Path, default=None, help="where to write the rows (JSON)")
    p.add_argument("--dtypes", default=None, help=f"comma-separated, of {', '.join(FLOORS)} (default: {','.join(DTYPES)})")
    args = p.parse_args(argv)
    dtypes = None if args.dtypes is None else tuple(args.dtypes.split(","))
    if dtypes is not None and not set(dtypes) <= set(FLOORS):
        p.error(f"--dtypes: {args.dtypes!r} names a dtype other than {', '.join(FLOORS)}")
    out = run(dtypes)
    for r in out["rows"]:
        if r.get("worse") or r["magnitude"] == 1.0:
            print(json.dumps(r))
    print(f"{out['device']}: {out['worse']} of {len(out['rows'])} rows worse than LAPACK in the same dtype")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 1 if out["worse"] else 0


if __name__ == "__main__":
    sys.exit(main())
