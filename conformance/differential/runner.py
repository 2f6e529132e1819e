"""Running one example on an executor and on NumPy, comparing, and grouping disagreements into classes.

``outcome(fn, args, kwargs, executor)`` runs the call on the NumPy executor and on
``executor`` (inside ``small_pieces``: numba's kernel thresholds at 1 element, Dask chunks of
2 elements per axis, so that numba's own kernels and Dask's multi-chunk paths compute) and
returns None when they agree, else a ``Disagreement``.  Agreement is: the same exception
class when NumPy raises; otherwise the same structure, dtypes and shapes, integers and bools
exactly, NaN positions (of the real and imaginary parts) exactly, infinities exactly, zeros
with the same sign for elementwise functions, subnormals not flushed, and the other values
within the entry's tolerance class: the one comparator, ``conformance.compare``.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

import arrayx
from arrayx.core import executor as _base
from conformance import compare as _compare
from conformance import gaps as _gaps
from conformance.differential import functions as F
from conformance.differential.strategies import Input, build
from conformance.report import materialise, own_kernels

REFERENCE = "numpy"
#: Dask chunk size inside the suite: every axis longer than 2 spans several chunks
DASK_CHUNKS = 2

#: tolerance class -> (rtol, atol) in units of the result dtype's epsilon: the one rule (``conformance.compare``)
TOLERANCES = _compare.TOLERANCES


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


Mismatch = _compare.Mismatch


def _finite_scale(args, want) -> float:
    """The largest finite magnitude among the array inputs and the reference result (at least 1)."""
    return _compare.scale_of(args, want)


def _leaves(tree):
    if isinstance(tree, Input):
        yield tree.values
    elif isinstance(tree, np.ndarray):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for t in tree:
            yield from _leaves(t)


def compare(fn: F.Fn, got, want, scale: float, path: str = "result") -> None:
    """``conformance.compare.compare`` with the entry's tolerance class."""
    _compare.compare(got, want, fn.tolerance, scale, path)


def _parts(a: np.ndarray):
    return (a.real, a.imag) if a.dtype.kind == "c" else (a,)


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
