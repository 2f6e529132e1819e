"""The one comparator: a result against the NumPy executor's, with one dtype-aware tolerance rule.

Every test and report that compares with the reference uses it: the differential and transform
sweeps (``differential.runner``, ``matrix``), the report (``report``) and the tests' ``assert_same``
(``tests/conftest.py``).  Results are compared *materialised* (``report.materialise``):
``("array", ndarray)``, ``("tuple"|"list", items)``, ``("named", fields, items)``,
``("dict", ((key, item), ...))`` or ``("value", python_value)``.

The rule: the same structure, dtype and shape; integers and bools exactly; for floating (and
complex, part by part) results the NaN positions and the infinities exactly, and every other value
within ``rtol * |want| + atol * scale``, where ``(rtol, atol)`` are the tolerance class's
multiples of the result dtype's epsilon (``TOLERANCES``) and ``scale`` is the largest finite
magnitude among the inputs and the reference result (at least 1).  The strict classes
(``exact``, ``elementwise``) also require the sign of every zero, and every class but
``composite`` requires subnormals not to be flushed to zero.  ``widen=(rtol, atol)`` (in the same
units) raises a class's bounds to those of a per-platform deviation (``deviations.PlatformDeviation.
tolerance``): only the report's check of a device that entry names passes it.
"""
from __future__ import annotations

import numpy as np

#: tolerance class -> (rtol, atol) in units of the result dtype's epsilon, or None (dtype and shape only)
TOLERANCES = {
    "exact": (0, 0),
    "unique": (0, 0),            # exact, but which zero stands for +0 and -0 is the implementation's
    "meta": None,                # dtype and shape only (empty, empty_like)
    "elementwise": (8, 4),       # one correctly rounded operation, or nearly (libm differences)
    "reduction": (64, 64),       # sums in another order
    "fft": (64, 64),
    "linalg": (2048, 2048),      # another LAPACK
    "composite": (4096, 512),    # a whole computation (fused kernels, chunked sums, several functions)
}
#: classes that also compare the sign of zeros
SIGNED_ZEROS = frozenset({"exact", "elementwise"})
#: classes that accept a subnormal flushed to zero (whole computations: JAX flushes, see deviations.py)
FLUSH_OK = frozenset({"composite"})
#: classes from strictest to loosest (a transform of a call takes at least its function's class)
ORDER = ("exact", "unique", "elementwise", "reduction", "fft", "linalg", "composite")


class Mismatch(AssertionError):
    """A result differs from the reference (the message says where and how)."""


def bounds(dtype, cls: str, scale: float = 1.0, widen: tuple | None = None) -> tuple[float, float]:
    """``(rtol, atol)`` of class ``cls`` for a result of ``dtype`` (0, 0 for integers and bools), each at
    least ``widen``'s where given."""
    dtype = np.dtype(dtype)
    tol = TOLERANCES[cls]
    if tol is None or dtype.kind not in "fc":
        return 0.0, 0.0
    if widen is not None:
        tol = (max(tol[0], widen[0]), max(tol[1], widen[1]))
    eps = float(np.finfo(dtype).eps)
    return tol[0] * eps, tol[1] * eps * scale


def scale_of(*trees) -> float:
    """The largest finite magnitude among the arrays of ``trees`` (at least 1)."""
    scale = 1.0
    for v in _arrays(trees):
        if v.dtype.kind in "fciu" and v.size:
            a = np.abs(v.astype(np.complex128 if v.dtype.kind == "c" else np.float64))
            a = a[np.isfinite(a)]
            if a.size:
                scale = max(scale, float(a.max()))
    return scale


def _arrays(tree):
    if isinstance(tree, np.ndarray):
        yield tree
    elif hasattr(tree, "values") and isinstance(getattr(tree, "values"), np.ndarray):  # differential Input
        yield tree.values
    elif isinstance(tree, (tuple, list)):
        for t in tree:
            yield from _arrays(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            yield from _arrays(t)


def compare(got, want, cls: str = "composite", scale: float = 1.0, path: str = "result",
            widen: tuple | None = None) -> None:
    """Raise Mismatch unless the materialised ``got`` equals ``want`` under tolerance class ``cls``
    (its bounds raised to ``widen``'s where given)."""
    if got[0] != want[0]:
        raise Mismatch(f"{path}: got a {got[0]}, expected a {want[0]}")
    kind = want[0]
    if kind == "array":
        return compare_arrays(got[1], want[1], cls, scale, path, widen)
    if kind == "named":
        if got[1] != want[1]:
            raise Mismatch(f"{path}: fields {got[1]} != {want[1]}")
        for f, g, w in zip(want[1], got[2], want[2]):
            compare(g, w, cls, scale, f"{path}.{f}", widen)
        return
    if kind in ("tuple", "list", "dict"):
        if len(got[1]) != len(want[1]):
            raise Mismatch(f"{path}: {len(got[1])} items, expected {len(want[1])}")
        for i, (g, w) in enumerate(zip(got[1], want[1])):
            if kind == "dict":
                if g[0] != w[0]:
                    raise Mismatch(f"{path}: key {g[0]!r} != {w[0]!r}")
                g, w = g[1], w[1]
            compare(g, w, cls, scale, f"{path}[{i}]", widen)
        return
    g, w = got[1], want[1]
    if type(g) is not type(w):
        raise Mismatch(f"{path}: {g!r} ({type(g).__name__}) != {w!r} ({type(w).__name__})")
    if isinstance(w, (float, complex)):
        compare_arrays(np.asarray(g), np.asarray(w), cls, scale, path, widen)
    elif g != w:
        raise Mismatch(f"{path}: {g!r} != {w!r}")


def _parts(a: np.ndarray):
    return (a.real, a.imag) if a.dtype.kind == "c" else (a,)


def compare_arrays(g: np.ndarray, w: np.ndarray, cls: str = "composite", scale: float = 1.0,
                   path: str = "result", widen: tuple | None = None) -> None:
    """Raise Mismatch unless host array ``g`` equals ``w`` (dtype, shape, values) under class ``cls``."""
    if g.dtype != w.dtype:
        raise Mismatch(f"{path}: dtype {g.dtype} != {w.dtype}")
    if g.shape != w.shape:
        raise Mismatch(f"{path}: shape {g.shape} != {w.shape}")
    if TOLERANCES[cls] is None:
        return
    if w.dtype.kind not in "fc":
        if not np.array_equal(g, w):
            raise Mismatch(f"{path}: {where_differs(g != w, g, w)}")
        return
    rtol, atol = bounds(w.dtype, cls, scale, widen)
    tiny = float(np.finfo(w.dtype).smallest_normal)
    for gp, wp in zip(_parts(g), _parts(w)):
        checks = [
            ("NaN where the reference has none or a number where it has NaN", np.isnan(gp) != np.isnan(wp)),
            ("an infinity differs", (np.isinf(gp) | np.isinf(wp)) & (gp != wp) & ~np.isnan(wp)),
        ]
        if cls not in FLUSH_OK:
            checks.append(("a subnormal flushed to zero", (gp == 0) & (wp != 0) & (np.abs(wp) < tiny)))
        if cls in SIGNED_ZEROS:
            checks.append(("the sign of a zero differs", (gp == 0) & (wp == 0) & (np.signbit(gp) != np.signbit(wp))))
        for what, bad in checks:
            if bad.any():
                raise Mismatch(f"{path}: {what}: {where_differs(bad, g, w)}")
        finite = np.isfinite(gp) & np.isfinite(wp)
        with np.errstate(over="ignore", invalid="ignore"):
            err = np.abs(gp.astype(np.float64) - wp.astype(np.float64))
            bound = atol + rtol * np.abs(wp.astype(np.float64))
        bad = finite & (err > bound) if rtol or atol else finite & (gp != wp)
        if bad.any():
            raise Mismatch(f"{path}: values differ beyond rtol={rtol:.3g}, atol={atol:.3g}: {where_differs(bad, g, w)}")


def where_differs(bad: np.ndarray, g: np.ndarray, w: np.ndarray) -> str:
    if bad.ndim == 0:
        return f"{g!r} != {w!r}"
    idx = tuple(int(i[0]) for i in np.nonzero(bad))
    return f"{int(np.count_nonzero(bad))} of {w.size} differ, first at {idx}: {g[idx]!r} != {w[idx]!r}"


def assert_same(actual, expected, cls: str = "composite") -> None:
    """``actual`` equals ``expected`` (arrays of any library NumPy can read, or sequences of them):
    dtype, shape and values under class ``cls`` (scaled by ``expected``'s largest magnitude)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), \
            f"{type(actual).__name__} of {len(actual) if hasattr(actual, '__len__') else '?'} items, expected {len(expected)}"
        for a, e in zip(actual, expected):
            assert_same(a, e, cls)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    compare_arrays(a, e, cls, scale_of(e))
