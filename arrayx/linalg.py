"""The standard's ``linalg`` extension (``arrayx.linalg``); definitions live in ``arrayx.api.linalg``.

``matmul``, ``matrix_transpose``, ``tensordot`` and ``vecdot`` are the main
namespace's functions (``arrayx.linalg.matmul is arrayx.matmul``).
"""
from arrayx.api.linalg import (  # noqa: F401
    EXTENSION_ALL,
    EigResult,
    EighResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    cross,
    det,
    diagonal,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    matmul,
    matrix_norm,
    matrix_power,
    matrix_rank,
    matrix_transpose,
    outer,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    tensordot,
    trace,
    vecdot,
    vector_norm,
)

__all__ = list(EXTENSION_ALL)
del EXTENSION_ALL
