"""Running one example on an executor and on NumPy, comparing, and grouping disagreements into classes.

``outcome(fn, args, kwargs, executor)`` runs the call on the NumPy executor and on
``executor`` (inside ``small_pieces``: numba's kernel thresholds at 1 element, Dask chunks of
2 elements per axis, so that numba's own kernels and Dask's multi-chunk paths compute) and
returns None when they agree, else a ``Disagreement``.  Agreement is: the same exception
class when NumPy raises; otherwise the same structure, dtypes and shapes, integers and bools
exactly, NaN positions (of the real and imaginary parts) exactly, infinities exactly, zeros
with the same sign for elementwise functions, subnormals not flushed, and the other values
within the entry's tolerance class (TOLERANCES, in units of the dtype's epsilon).
"""
from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

import arrayx
from arrayx.core import executor as _base
from conformance import gaps as _gaps
from conformance.differential import functions as F
from conformance.differential.strategies import Input, build
from conformance.report import materialise, own_kernels

REFERENCE = "numpy"
#: Dask chunk size inside the suite: every axis longer than 2 spans several chunks
DASK_CHUNKS = 2

#: tolerance class -> (rtol, atol) in units of the result dtype's epsilon; atol is scaled by
#: the largest finite magnitude among the inputs and the reference result (see ``_scale``)
TOLERANCES = {
    "exact": (0, 0),
    "unique": (0, 0),             # exact, but which zero stands for +0 and -0 is the implementation's
    "meta": None,                 # dtype and shape only (empty, empty_like)
    "elementwise": (8, 4),
    "reduction": (64, 64),
    "fft": (64, 64),
    "linalg": (2048, 2048),
}


@contextlib.contextmanager
def small_pieces(executor: str):
    """Numba's own kernels for every size and Dask arrays in chunks of ``DASK_CHUNKS`` elements."""
    if executor == "dask":
        from arrayx.executors import dask as xd

        saved = xd.get_chunks()
        xd.set_chunks(DASK_CHUNKS)
        try:
            with own_kernels(executor):
                yield
        finally:
            xd.set_chunks(saved)
        return
    with own_kernels(executor):
        yield


def keep_jax_programs_on_disk() -> str | None:
    """Keep XLA's compiled programs in a disk cache: a deep run is many processes (shards, rounds)
    drawing from the same few shapes and dtypes, and each eager JAX op on a new one compiles
    (~60 ms, 60% of an example's time with warm Numba kernels).  The folder is
    ``ARRAYX_JAX_CACHE_DIR``, else ``$ARRAYX_CACHE_DIR/jax``, else ``~/.cache/arrayx/jax``;
    returns it (None when JAX is not installed)."""
    try:
        import jax
    except ImportError:
        return None
    folder = os.environ.get("ARRAYX_JAX_CACHE_DIR") or os.path.join(
        os.environ.get("ARRAYX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "arrayx"), "jax")
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # every op: each is small
    return folder


def _build_all(value, executor):
    if isinstance(value, tuple):
        return tuple(_build_all(v, executor) for v in value)
    return build(arrayx, value, executor)


def call(fn: F.Fn, args: tuple, kwargs: dict, executor: str):
    """The call on ``executor``, materialised (``report.materialise``): arrays become host arrays."""
    with arrayx.use_executor(executor), small_pieces(executor), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        built = [_build_all(a, executor) for a in args]
        kw = {k: _build_all(v, executor) for k, v in kwargs.items()}
        result = _invoke(fn, built, kw)
        if fn.view:
            result = F.VIEWS[fn.view](arrayx, result)
        return materialise(result, executor)


def _invoke(fn: F.Fn, args: list, kw: dict):
    name = F.standard_name(fn)
    if name.startswith("array."):
        member = name[len("array."):]
        if member == "mT":
            return args[0].mT
        if member == "__getitem__":
            return args[0][args[1]]
        if member == "__setitem__":
            x, index, value = args
            y = arrayx.asarray(x, copy=True)
            y[index] = value
            return y, x
        op = F.OPERATOR_FUNCTIONS[member]
        if member.startswith("__i") and member not in ("__invert__",):
            y = arrayx.asarray(args[0], copy=True) if isinstance(args[0], arrayx.Array) else args[0]
            out = op(y, args[1])
            return out, y, args[0]   # the result, the updated operand and the untouched original
        return op(*args)
    target = arrayx
    for part in name.split("."):
        target = getattr(target, part)
    if name == "__array_namespace_info__":
        info = target()
        return info.default_dtypes(), info.dtypes(), info.dtypes(kind="integral"), info.dtypes(kind="numeric")
    if name in ("finfo", "iinfo"):
        r = target(*args)
        fields = ("bits", "eps", "max", "min", "smallest_normal", "dtype") if name == "finfo" else ("bits", "max", "min", "dtype")
        return tuple(getattr(r, f) for f in fields)
    return target(*args, **kw)


# -- comparing ----------------------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


def _finite_scale(args, want) -> float:
    """The largest finite magnitude among the array inputs and the reference result (at least 1)."""
    scale = 1.0
    for v in list(_leaves(args)) + list(_leaves(want)):
        if isinstance(v, np.ndarray) and v.dtype.kind in "fciu" and v.size:
            a = np.abs(v.astype(np.complex128 if v.dtype.kind == "c" else np.float64))
            a = a[np.isfinite(a)]
            if a.size:
                scale = max(scale, float(a.max()))
    return scale


def _leaves(tree):
    if isinstance(tree, Input):
        yield tree.values
    elif isinstance(tree, np.ndarray):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for t in tree:
            yield from _leaves(t)


def compare(fn: F.Fn, got, want, scale: float, path: str = "result") -> None:
    if got[0] != want[0]:
        raise Mismatch(f"{path}: got a {got[0]}, expected a {want[0]}")
    kind = want[0]
    if kind == "array":
        return _compare_arrays(fn, got[1], want[1], scale, path)
    if kind == "named":
        if got[1] != want[1]:
            raise Mismatch(f"{path}: fields {got[1]} != {want[1]}")
        got, want = ("tuple", got[2]), ("tuple", want[2])
    if kind in ("named", "tuple", "list", "dict"):
        if len(got[1]) != len(want[1]):
            raise Mismatch(f"{path}: {len(got[1])} items, expected {len(want[1])}")
        for i, (g, w) in enumerate(zip(got[1], want[1])):
            if kind == "dict":
                if g[0] != w[0]:
                    raise Mismatch(f"{path}: key {g[0]!r} != {w[0]!r}")
                g, w = g[1], w[1]
            compare(fn, g, w, scale, f"{path}[{i}]")
        return
    g, w = got[1], want[1]
    if type(g) is not type(w) or not (g == w or (g != g and w != w)):
        raise Mismatch(f"{path}: {g!r} ({type(g).__name__}) != {w!r} ({type(w).__name__})")


def _parts(a: np.ndarray):
    return (a.real, a.imag) if a.dtype.kind == "c" else (a,)


def _compare_arrays(fn: F.Fn, g: np.ndarray, w: np.ndarray, scale: float, path: str) -> None:
    if g.dtype != w.dtype:
        raise Mismatch(f"{path}: dtype {g.dtype} != {w.dtype}")
    if g.shape != w.shape:
        raise Mismatch(f"{path}: shape {g.shape} != {w.shape}")
    tol = TOLERANCES[fn.tolerance]
    if tol is None:
        return
    if w.dtype.kind not in "fc":
        if not np.array_equal(g, w):
            raise Mismatch(f"{path}: {_where_differs(g != w, g, w)}")
        return
    eps = float(np.finfo(w.dtype).eps)
    tiny = float(np.finfo(w.dtype).smallest_normal)
    rtol, atol = tol[0] * eps, tol[1] * eps * scale
    for gp, wp in zip(_parts(g), _parts(w)):
        checks = (
            ("NaN where the reference has none or a number where it has NaN", np.isnan(gp) != np.isnan(wp)),
            ("an infinity differs", (np.isinf(gp) | np.isinf(wp)) & (gp != wp) & ~np.isnan(wp)),
            ("a subnormal flushed to zero", (gp == 0) & (wp != 0) & (np.abs(wp) < tiny)),
        )
        for what, bad in checks:
            if bad.any():
                raise Mismatch(f"{path}: {what}: {_where_differs(bad, g, w)}")
        if fn.tolerance in ("exact", "elementwise"):
            zeros = (gp == 0) & (wp == 0) & (np.signbit(gp) != np.signbit(wp))
            if zeros.any():
                raise Mismatch(f"{path}: the sign of a zero differs: {_where_differs(zeros, g, w)}")
        finite = np.isfinite(gp) & np.isfinite(wp)
        with np.errstate(over="ignore", invalid="ignore"):
            err = np.abs(gp.astype(np.float64) - wp.astype(np.float64))
            bound = atol + rtol * np.abs(wp.astype(np.float64))
        bad = finite & (err > bound) if rtol or atol else finite & (gp != wp)
        if bad.any():
            raise Mismatch(f"{path}: values differ beyond rtol={rtol:.3g}, atol={atol:.3g}: {_where_differs(bad, g, w)}")


def _where_differs(bad: np.ndarray, g: np.ndarray, w: np.ndarray) -> str:
    if bad.ndim == 0:
        return f"{g!r} != {w!r}"
    idx = tuple(int(i[0]) for i in np.nonzero(bad))
    return f"{int(np.count_nonzero(bad))} of {w.size} differ, first at {idx}: {g[idx]!r} != {w[idx]!r}"


# -- one example on one executor --------------------------------------------------------------------


@dataclass
class Disagreement:
    function: str
    executor: str
    kind: str          # "value", "error", "raises", "gap", "no-error"
    detail: str
    example: str       # a call that reproduces it
    size: int          # elements in the inputs (to pick the smallest reproducer of a class)
    tags: frozenset = frozenset()  # input_tags of the example
    call: tuple | None = field(default=None, repr=False)  # (fn, args, kwargs): for deviations' rechecks

    @property
    def signature(self) -> str:
        """What makes two disagreements one class: function, executor and the shape of the difference."""
        return f"{self.function} | {self.executor} | {self.kind} | {_first_words(self.detail)}"


def _first_words(detail: str) -> str:
    head = detail.split(":")[1] if detail.startswith("result") and ":" in detail else detail
    head = head.split(" first at ")[0].split("[")[0]
    for token in ("rtol=", "of "):
        head = head.split(token)[0]
    return " ".join(head.split()[:8])


def reproducer(fn: F.Fn, args: tuple, kwargs: dict) -> str:
    name = F.standard_name(fn)
    target = f"xp.{name}" if not name.startswith("array.") else f"operator/array {name[6:]}"
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{target}({', '.join(parts)})"


def _size(args, kwargs) -> int:
    return sum(int(v.size) for v in _leaves(list(args) + list(kwargs.values())))


def input_tags(args, kwargs) -> frozenset:
    """What special values the example's floating inputs hold: "subnormal", "nan", "inf", "zero"."""
    tags = set()
    for v in _leaves(list(args) + list(kwargs.values())):
        if v.dtype.kind not in "fc" or not v.size:
            continue
        for part in _parts(v):
            tiny = np.finfo(part.dtype).smallest_normal
            tags.update(t for t, hit in (("nan", np.isnan(part)), ("inf", np.isinf(part)), ("zero", part == 0),
                                         ("subnormal", (part != 0) & (np.abs(part) < tiny))) if hit.any())
    return frozenset(tags)


def _short(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:240]


def reference(fn: F.Fn, args: tuple, kwargs: dict):
    """("ok", materialised result) or ("raised", exception) on the NumPy executor."""
    try:
        return "ok", call(fn, args, kwargs, REFERENCE)
    except Exception as e:  # noqa: BLE001 - the reference's exception is what the others must match
        return "raised", e


def outcome(fn: F.Fn, args: tuple, kwargs: dict, executor: str, ref=None) -> Disagreement | None:
    """None when ``executor`` agrees with NumPy on this call, else what differs."""
    status, want = ref or reference(fn, args, kwargs)

    def disagree(kind, detail):
        return Disagreement(F.standard_name(fn), executor, kind, detail, reproducer(fn, args, kwargs),
                            _size(args, kwargs), input_tags(args, kwargs), (fn, args, kwargs))

    try:
        got = call(fn, args, kwargs, executor)
    except NotImplementedError as e:
        if status == "raised" and isinstance(e, type(want)):
            return None
        if _gaps.reason(executor, F.standard_name(fn)) is not None:
            return None
        return disagree("gap", _short(e))
    except Exception as e:  # noqa: BLE001
        if status == "raised":
            if type(e) is type(want) or isinstance(e, type(want)):
                return None
            return disagree("error", f"raised {_short(e)}; NumPy raised {_short(want)}")
        return disagree("raises", _short(e))
    if status == "raised":
        return disagree("no-error", f"returned a result; NumPy raised {_short(want)}")
    try:
        compare(fn, got, want, _finite_scale(args, want))
    except Mismatch as e:
        return disagree("value", str(e))
    return None


def available_executors() -> list[str]:
    return [n for n in _base.registered() if _base.get(n).available()]
