"""The Numba executor's eager reductions (sum, prod, max, min, mean, var, std): the array viewed as
(outer, reduced, inner), folded into partial results by kernels that run on the team of threads
(``numba.team``), and the thresholds by layout that decide when the kernel runs at all ("short
rows", "columns": see ``executor.DEFAULT_THRESHOLDS``).
"""
from __future__ import annotations

import math

import numpy as np

#: rows of at most this many elements are "short rows" (see executor.DEFAULT_THRESHOLDS)
SHORT_ROW = 1024

_MINMAX = ("max", "min")
_INT64 = np.dtype(np.int64)
_UINT64 = np.dtype(np.uint64)
_FLOAT64 = np.dtype(np.float64)


def _reduce_axes(axis, ndim: int):
    """``axis`` as a sorted tuple of distinct non-negative axes, or None when NumPy should decide
    (invalid axes: NumPy raises its own error)."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, tuple):
        axis = (axis,)
    out = []
    for a in axis:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool) or not -ndim <= a < ndim:
            return None
        out.append(int(a) % ndim)
    return tuple(sorted(out)) if len(set(out)) == len(out) else None


def _as_3d(x: np.ndarray, axes: tuple):
    """(x viewed or copied as C-contiguous (outer, red, inner), kept shape, keepdims shape)."""
    shape = x.shape
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    keep = tuple(1 if i in axes else d for i, d in enumerate(shape))
    red = math.prod(shape[i] for i in axes)
    first, last = axes[0], axes[-1]
    if last - first + 1 == len(axes):  # one block of axes: a view of a C-contiguous array
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        x3 = x.reshape(math.prod(shape[:first]), red, math.prod(shape[last + 1:]))
    else:  # reduced axes moved last (a copy)
        order = [i for i in range(x.ndim) if i not in axes] + list(axes)
        x3 = np.ascontiguousarray(x.transpose(order)).reshape(math.prod(kept), red, 1)
    return x3, kept, keep


def _splits(ex, outer: int, red: int, inner: int) -> tuple[int, int]:
    """(step, nsplit): the reduced axis is cut into nsplit pieces of step rows when there are
    too few output rows to keep every thread busy."""
    if not ex.parallel:
        return red, 1
    target = 4 * ex.threads()  # (starts Numba's threads: the layer set first)
    if outer >= target:
        return red, 1
    nsplit = max(1, min(-(-target // outer), (red * inner) // 16384, red))
    step = -(-red // nsplit)
    return step, -(-red // step)


def _sum_dtype(x_dtype: np.dtype, dtype) -> np.dtype | None:
    """Result dtype of sum/prod (NumPy's defaults), or None when the kernel does not do it."""
    out = np.dtype(dtype) if dtype is not None else (
        _INT64 if x_dtype.kind in "bi" else _UINT64 if x_dtype.kind == "u" else x_dtype)
    if out.kind == "f" or (out.kind in "iu" and x_dtype.kind in "biu"):
        return out
    return None


def _acc_dtype(out: np.dtype) -> np.dtype:
    return _FLOAT64 if out.kind == "f" else _INT64 if out.kind == "i" else _UINT64


def _build_reduction(ex, name: str, fallback):
    from arrayx.executors.numba import kernels as K

    kind, dtypes = ex.native[name]
    thresholds = ex.thresholds
    kernels: dict = {}

    def fold(op, x3, dt, acc, step, nsplit, mean=None):
        """``op`` over axis 1 of x3 as (outer, inner) results, with the sums of |x| for a float
        sum (else None); None when the kernel cannot run."""
        outer, _, inner = x3.shape
        part = np.empty((outer, nsplit, inner), acc)
        pabs = np.empty_like(part) if op == "sum" and acc.kind == "f" else None
        group, chunks = K.reduction_group(outer, nsplit, step, inner)  # (on the team: numba.team)
        if op == "sqdev":
            ran = ex._call(name, dt, kernels, (dt, acc), K.sqdev_kernel, x3, mean, step, group, part, chunks=chunks)
        elif pabs is not None:
            ran = ex._call(name, dt, kernels, (op, dt, acc), K.reduction_kernel, x3, step, group, part, pabs,
                           chunks=chunks)
        else:
            ran = ex._call(name, dt, kernels, (op, dt, acc), K.reduction_kernel, x3, step, group, part,
                           chunks=chunks)
        if not ran:
            return None
        if nsplit == 1:
            return part.reshape(outer, inner), None if pabs is None else pabs.reshape(outer, inner)
        if op in ("sum", "sqdev"):
            res = part.sum(axis=1)
        elif op == "prod":
            res = part.prod(axis=1)
        else:
            res = (np.maximum if op == "max" else np.minimum).reduce(part, axis=1)
        return res, None if pabs is None else pabs.sum(axis=1)

    def run(x, /, **params):
        if x.size < thresholds[kind] and x.size < thresholds["short rows"] and x.size < thresholds["columns"]:
            return fallback(x, **params)
        return native(x, params)

    def native(x, params):
        # the primitives' params: axis (None or sorted axes), keepdims, dtype (sum/prod), correction
        axis = params.get("axis")
        dtype = params.get("dtype")
        correction = params.get("correction", 0.0)
        dt = x.dtype
        if (type(x) is not np.ndarray or dt not in dtypes or x.size == 0
                or not set(params) <= _REDUCTION_PARAMS[name]):
            return fallback(x, **params)  # (empty reductions: NumPy's identities, NaNs and errors)
        axes = _reduce_axes(axis, x.ndim)
        if axes and x.size < thresholds[_reduction_kind(kind, name, x, axes)]:
            return fallback(x, **params)
        if axes and x.ndim > 1 and not x.flags.c_contiguous and x.flags.f_contiguous:
            # a transposed operand (xpx.cov's X.T): reduce its C-ordered transpose over the mirrored
            # axes and transpose the result back, rather than copying it into C order first
            # (mean over axis 1 of a 64 x 120000 F-ordered array: 84 -> ~8 ms)
            return native(x.T, {**params, "axis": tuple(sorted(x.ndim - 1 - a for a in axes))}).T
        out_dt = _sum_dtype(dt, dtype) if name in ("sum", "prod") else dt
        if not axes or out_dt is None or (
                name in ("var", "std") and not math.prod(x.shape[i] for i in axes) - correction > 0):
            return fallback(x, **params)
        res = _reduce(ex, name, fold, x, axes, dt, out_dt, correction)
        if res is None:
            return fallback(x, **params)
        return res[1] if params.get("keepdims") else res[0]

    return run


#: reductions that NumPy does as one memory-bound pass when they add whole rows (``_adds_rows``),
#: adding each row into the result with its SIMD loop, where the kernel also sums |x| (its overflow
#: check) and pays a parallel launch: StandardScaler's and PCA's ``mean(X, axis=0)`` of 100000 x 64
#: ran at 0.46-0.68x NumPy on one thread (xpx.cov's mean over axis 1 of X.T alike).  They go native
#: from the "columns" threshold only.
_ROW_ADDS = frozenset({"sum", "mean"})


def _reduction_kind(kind: str, name: str, x: np.ndarray, axes: tuple) -> str:
    """The threshold that applies to reduction ``name`` (of ``kind``) over ``axes`` of ``x``:
    "columns" where it adds whole rows, "short rows" over the last axis of rows of at most
    ``SHORT_ROW`` elements (F order: mirrored), else ``kind``."""
    if x.ndim < 2:
        return kind
    if _adds_rows(x, axes):
        return "columns" if name in _ROW_ADDS else kind
    if x.flags.c_contiguous:
        if axes == (x.ndim - 1,) and x.shape[-1] <= SHORT_ROW:
            return "short rows"
    elif x.flags.f_contiguous and axes == (0,) and x.shape[0] <= SHORT_ROW:
        return "short rows"
    return kind


def _adds_rows(x: np.ndarray, axes: tuple) -> bool:
    """Whether reducing ``axes`` of ``x`` adds rows of more than one element in memory order: the
    reduced block is not the innermost (C order) or not the outermost (F order, e.g. ``X.T``)."""
    if x.ndim < 2:
        return False
    if x.flags.c_contiguous:
        return math.prod(x.shape[axes[-1] + 1:]) > 1
    if x.flags.f_contiguous:
        return math.prod(x.shape[:axes[0]]) > 1
    return False


#: the params each reduction primitive may be bound with (others go to NumPy)
_REDUCTION_PARAMS = {
    **dict.fromkeys(("sum", "prod"), {"axis", "keepdims", "dtype"}),
    **dict.fromkeys(("var", "std"), {"axis", "keepdims", "correction"}),
    **dict.fromkeys(("mean", "max", "min"), {"axis", "keepdims"}),
}


def _reduce(ex, name, fold, x, axes, dt, out_dt, correction):
    """(result, result with keepdims) of reduction ``name``, or None where NumPy must decide.

    The kernels add and multiply in another order than NumPy, which changes more than rounding
    only when something overflows (or a product meets inf * 0 or underflows): float sums whose
    absolute values add up past half the dtype's range, and products that come out inf, NaN or
    0, are left to NumPy so that special values match it exactly.
    """
    x3, kept, keep = _as_3d(x, axes)
    outer, red, inner = x3.shape
    step, nsplit = _splits(ex, outer, red, inner)
    limit = np.finfo(out_dt).max / 2 if out_dt.kind == "f" else None
    if name in _MINMAX:
        folded = fold(name, x3, dt, dt, step, nsplit)
        res = None if folded is None else folded[0]
    elif name in ("sum", "prod"):
        acc = out_dt if name == "prod" and out_dt.kind == "f" else _acc_dtype(out_dt)
        folded = fold(name, x3, dt, acc, step, nsplit)
        if folded is None:
            return None
        res, sum_abs = folded
        if sum_abs is not None and (sum_abs > limit).any():
            return None
        if name == "prod" and out_dt.kind == "f" and not (np.isfinite(res).all() and res.all()):
            return None
    else:  # mean, var, std: the sum, then the sum of squared deviations from the mean
        folded = fold("sum", x3, dt, _FLOAT64, step, nsplit)
        if folded is None or (folded[1] > limit).any():
            return None
        res = folded[0] / red
        if name in ("var", "std"):
            folded = fold("sqdev", x3, dt, _FLOAT64, step, nsplit, np.ascontiguousarray(res))
            if folded is None or (folded[0] > limit).any():
                return None
            res = folded[0] / (red - correction)
            if name == "std":
                res = np.sqrt(res)
    if res is None:
        return None
    res = res.astype(out_dt, copy=False)
    return res.reshape(kept), res.reshape(keep)
