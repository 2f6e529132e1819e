"""The parity matrix of ``python -m conformance``: function x executor x transform.

Every entry of the differential table (``differential/functions.py``: the standard's functions,
operators, linalg, fft) and of ``RANDOM`` below (PRNG bits) is drawn with the differential
suite's strategies and run four ways on each executor, each compared with the same way on the
NumPy executor (the differential suite's comparison, ``runner.compare``):

``eager``  the call itself (``runner.outcome``: errors must match too)
``jit``    ``arrayx.jit`` of the call, its array inputs as the jitted arguments
``vmap``   ``arrayx.vmap`` over a batch of two: the example and its array inputs flipped along
           every axis (which keeps sorted, symmetric and positive definite inputs so); the
           reference is the eager NumPy call on each member, stacked
``grad``   ``arrayx.grad`` of ``sum(weights * real(result))`` with respect to every real floating
           input (weights 1, 1.5, 2, 1, ...: a plain sum would hide permutations)

A cell is ``ok`` (every example agrees), ``deviation`` (every disagreement is a known deviation of
``deviations.py``: under a transform, its ``TRANSFORM_RECHECKS`` entry holds, e.g. NumPy's
transformed result for the inputs with subnormals flushed; for a deviation without one, the
example's eager value is that deviation and the transformed result is the executor's own eager answer), ``open`` (a
disagreement ``test_differential.OPEN`` lists as being fixed), ``DIFFERS``, ``ERROR`` (an exception
NumPy does not raise), ``gap`` (NotImplementedError: listed in gaps.py) / ``GAP!`` (not listed),
or ``n/a`` (the transform does not apply: no array input for vmap, no float input or output for
grad, results that are not arrays, results whose shape depends on the values under vmap). grad
draws only inputs where the gradient exists (``GRAD_DEFINED``: no repeated or zero singular values,
no repeated eigenvalues, with sqrt(eps) of room).
A failing cell keeps up to ``KEEP_FAILURES`` failing inputs with both results.
"""
from __future__ import annotations

import dataclasses
import time
import warnings
import zlib

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as _seed
from hypothesis.errors import Unsatisfiable
from hypothesis import strategies as st

import arrayx
from conformance import compare as _compare
from conformance import deviations as _deviations
from conformance import gaps as _gaps
from conformance.differential import functions as F
from conformance.differential import runner
from conformance.differential.strategies import CATEGORIES, Input, build
from conformance.report import materialise

TRANSFORMS = ("eager", "jit", "vmap", "grad")
REFERENCE = runner.REFERENCE
OK, DEVIATION, OPEN, DIFFERS, ERROR, GAP, UNLISTED_GAP, NA = (
    "ok", "deviation", "open", "DIFFERS", "ERROR", "gap", "GAP!", "n/a")
#: worst first wins when a cell's examples disagree in several ways
SEVERITY = {NA: 0, OK: 1, DEVIATION: 2, GAP: 3, OPEN: 4, UNLISTED_GAP: 5, DIFFERS: 6, ERROR: 7}
KEEP_FAILURES = 3
#: comparison classes from strictest to loosest (the one rule's): grad sums products, so it takes at least "reduction"
_TOLERANCE_ORDER = _compare.ORDER


class NotApplicable(Exception):
    """The transform does not apply to this example (the reason is the message)."""


# -- PRNG entries: the same bits on every executor ---------------------------------------------------

def _key(draw):
    return Input(np.asarray(draw(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2)), dtype=np.uint32))


def _random_shape(draw):
    return tuple(draw(st.lists(st.sampled_from((0, 1, 2, 3, 5)), max_size=2)))


def _float_dtype(draw):
    return draw(st.sampled_from([None, np.dtype("float32"), np.dtype("float64")]))


#: name -> (draw) -> (args, kwargs): the key first, then the parameters
RANDOM = {
    "random.split": lambda d: ((_key(d), d(st.integers(1, 4))), {}),
    "random.fold_in": lambda d: ((_key(d), d(st.integers(0, 2**31 - 1))), {}),
    "random.bits": lambda d: ((_key(d), _random_shape(d)),
                              {"dtype": d(st.sampled_from([None] + [np.dtype(f"uint{b}") for b in (8, 16, 32, 64)]))}),
    "random.uniform": lambda d: ((_key(d), _random_shape(d), _float_dtype(d)), {}),
    "random.normal": lambda d: ((_key(d), _random_shape(d), _float_dtype(d)), {}),
    "random.exponential": lambda d: ((_key(d), _random_shape(d), _float_dtype(d)), {}),
    "random.gumbel": lambda d: ((_key(d), _random_shape(d), _float_dtype(d)), {}),
    "random.randint": lambda d: ((_key(d), _random_shape(d), d(st.integers(-50, 0)), d(st.integers(1, 50))), {}),
    "random.bernoulli": lambda d: ((_key(d), d(st.sampled_from([0.0, 0.25, 0.5, 1.0])), _random_shape(d)), {}),
    "random.truncated_normal": lambda d: ((_key(d), -1.5, 2.0, _random_shape(d)), {}),
    "random.permutation": lambda d: ((_key(d), d(st.integers(0, 8))), {}),
    "random.choice": lambda d: ((_key(d), d(st.integers(1, 8)), _random_shape(d)), {}),
}
_RANDOM_TOLERANCE = {"random.truncated_normal": "elementwise"}  # README: truncated_normal to ~1e-13
RANDOM_TABLE = [F.Fn(name, "random", "any", "mixed", (), _RANDOM_TOLERANCE.get(name, "exact")) for name in RANDOM]


#: the PRNG rows of ``--quick``: key derivation and the draws the others are built on (eager JAX
#: compiles each of threefry's many ops once, so each PRNG row costs seconds there)
QUICK_RANDOM = ("random.split", "random.fold_in", "random.bits", "random.uniform", "random.normal")


def entries(quick: bool = False) -> list[F.Fn]:
    """Every row of the matrix: the differential table, then the PRNG entries (``QUICK_RANDOM`` if quick)."""
    return list(F.TABLE) + [fn for fn in RANDOM_TABLE if not quick or fn.name in QUICK_RANDOM]


def examples(fn: F.Fn):
    """The hypothesis strategy of ``(args, kwargs)`` for one row."""
    if fn.name in RANDOM:
        return st.composite(lambda draw: RANDOM[fn.name](draw))()
    return F.examples(fn)


# -- the array inputs of an example --------------------------------------------------------------------

def leaves(args: tuple, kwargs: dict) -> list[Input]:
    """The example's array inputs in order: positional, inside tuples (concat's parts), keywords."""
    out = []

    def walk(v):
        if isinstance(v, Input):
            out.append(v)
        elif isinstance(v, tuple):
            for u in v:
                walk(u)

    for a in args:
        walk(a)
    for v in kwargs.values():
        walk(v)
    return out


def replace_leaves(args: tuple, kwargs: dict, new: list):
    """``(args, kwargs)`` with the array inputs replaced by ``new`` (same order as ``leaves``)."""
    it = iter(new)

    def walk(v):
        if isinstance(v, Input):
            return next(it)
        if isinstance(v, tuple):
            return tuple(walk(u) for u in v)
        return v

    a = tuple(walk(v) for v in args)
    return a, {k: walk(v) for k, v in kwargs.items()}


def _flipped(item: Input) -> Input:
    return Input(np.flip(item.values).copy(), item.layout)  # ascontiguousarray would make 0-d arrays 1-d


#: signatures whose first array input must keep its order under the flip (searchsorted's sorted x1)
_UNFLIPPED_FIRST = {"searchsorted"}


def batch_members(fn: F.Fn, args: tuple, kwargs: dict) -> list[tuple[tuple, dict]]:
    """The two members of the vmap batch: the example and its array inputs flipped."""
    items = leaves(args, kwargs)
    flipped = [it if (i == 0 and fn.signature in _UNFLIPPED_FIRST) else _flipped(it) for i, it in enumerate(items)]
    return [(args, kwargs), replace_leaves(args, kwargs, flipped)]


# -- running one example under one transform --------------------------------------------------------

_WEIGHTS = (1.0, 1.5, 2.0)


def _weighted_sum(out):
    """``sum(weights * real(leaf))`` over the floating arrays of ``out`` (None when it has none)."""
    total = None
    stack = [out]
    while stack:
        v = stack.pop()
        if isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, arrayx.Array) and arrayx.isdtype(v.dtype, ("real floating", "complex floating")):
            re = arrayx.real(v) if arrayx.isdtype(v.dtype, "complex floating") else v
            n = int(np.prod(re.shape, dtype=np.int64))
            w = np.resize(np.asarray(_WEIGHTS), n).reshape(re.shape).astype(re.dtype)
            term = arrayx.sum(re * arrayx.asarray(w))
            total = term if total is None else total + term  # float32 + float64 promotes
    return total


def _transformed(fn: F.Fn, transform: str, args: tuple, kwargs: dict, executor: str):
    """The materialised result of ``transform`` of the call on ``executor`` (NotApplicable if it does not apply)."""
    items = leaves(args, kwargs)

    def f(*arrays):
        a, kw = replace_leaves(args, kwargs, list(arrays))
        out = runner._invoke(fn, list(a), kw)
        return arrays_only(F.VIEWS[fn.view](arrayx, out) if fn.view else out)

    with arrayx.use_executor(executor), runner.small_pieces(executor), warnings.catch_warnings(), \
            np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if transform == "jit":
            arrays = [build(arrayx, it, executor) for it in items]
            return materialise(arrayx.jit(f)(*arrays), executor)
        if transform == "vmap":
            if not items:
                raise NotApplicable("no array input to map over")
            members = batch_members(fn, args, kwargs)
            stacked = [Input(np.stack([leaves(*m)[i].values for m in members]), it.layout)
                       for i, it in enumerate(items)]
            arrays = [build(arrayx, it, executor) for it in stacked]
            return materialise(arrayx.vmap(f)(*arrays), executor)
        if transform == "grad":
            argnums = tuple(i for i, it in enumerate(items) if it.values.dtype.kind == "f")
            if not argnums:
                raise NotApplicable("no real floating input")
            arrays = [build(arrayx, it, executor) for it in items]

            def loss(*xs):
                total = _weighted_sum(f(*xs))
                if total is None:
                    raise NotApplicable("no floating result")
                return total

            return materialise(arrayx.grad(loss, argnums=argnums)(*arrays), executor)
    raise ValueError(f"unknown transform {transform!r}; one of {TRANSFORMS}")


def arrays_only(out):
    """``out`` with every leaf that is not an array replaced by None (transforms return arrays only)."""
    if isinstance(out, arrayx.Array):
        return out
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return type(out)(*(arrays_only(v) for v in out))
    if isinstance(out, (tuple, list)):
        return type(out)(arrays_only(v) for v in out)
    return None


def _arrays_only_materialised(m):
    kind = m[0]
    if kind == "array":
        return m
    if kind == "named":
        return ("named", m[1], tuple(_arrays_only_materialised(v) for v in m[2]))
    if kind in ("tuple", "list"):
        return (kind, tuple(_arrays_only_materialised(v) for v in m[1]))
    return ("value", None)


def _stack_results(results: list):
    """Materialised results of the batch members as one batched result (NotApplicable if they cannot stack)."""
    kinds = {r[0] for r in results}
    if len(kinds) != 1:
        raise NotApplicable("the members' results have different structures")
    kind = results[0][0]
    if kind == "array":
        shapes = {r[1].shape for r in results}
        if len(shapes) != 1:
            raise NotApplicable(f"the result's shape depends on the values ({sorted(shapes)})")
        return ("array", np.stack([r[1] for r in results]))
    if kind == "value" and all(r[1] is None for r in results):
        return results[0]
    if kind == "named":
        return ("named", results[0][1], tuple(_stack_results([r[2][i] for r in results])
                                              for i in range(len(results[0][2]))))
    if kind in ("tuple", "list"):
        if len({len(r[1]) for r in results}) != 1:
            raise NotApplicable("the members' results have different lengths")
        return (kind, tuple(_stack_results([r[1][i] for r in results]) for i in range(len(results[0][1]))))
    raise NotApplicable(f"the result is a {kind}, not arrays")


def reference(fn: F.Fn, transform: str, args: tuple, kwargs: dict):
    """("ok", result) or ("raised", exception) of the transform on NumPy; NotApplicable propagates."""
    if transform == "eager":
        return runner.reference(fn, args, kwargs)
    if transform == "vmap":
        refs = [runner.reference(fn, *m) for m in batch_members(fn, args, kwargs)]
        if any(status != "ok" for status, _ in refs):
            raise NotApplicable("NumPy raises on a member of the batch")
        out = _stack_results([_arrays_only_materialised(r) for _, r in refs])
        if not _has_arrays(out):
            raise NotApplicable("the result is not arrays")
        return "ok", out
    status, eager = runner.reference(fn, args, kwargs)
    if status != "ok" and transform == "grad":
        raise NotApplicable("NumPy raises on the call")
    if status == "ok" and not _has_arrays(eager):
        raise NotApplicable("the result is not arrays")
    try:
        return "ok", _transformed(fn, transform, args, kwargs, REFERENCE)
    except NotApplicable:
        raise
    except Exception as e:  # noqa: BLE001 - the reference's exception is what the others must match
        if status != "ok":
            return "raised", eager
        return "raised", e


def _has_arrays(result) -> bool:
    kind = result[0]
    if kind == "array":
        return True
    if kind == "named":
        return any(_has_arrays(r) for r in result[2])
    if kind in ("tuple", "list"):
        return any(_has_arrays(r) for r in result[1])
    return False


# -- comparing one example on one executor ------------------------------------------------------------

@dataclasses.dataclass
class Finding:
    status: str
    detail: str = ""
    input: str = ""
    got: str = ""
    want: str = ""
    deviation: str | None = None


def _show(value, limit: int = 1500) -> str:
    """A materialised result (or an exception) as text for the report."""
    if isinstance(value, BaseException):
        return runner._short(value)
    if isinstance(value, tuple) and value and value[0] == "array":
        a = value[1]
        text = f"{a.dtype.name}{list(a.shape)} " + np.array2string(a, threshold=60, max_line_width=120, floatmode="unique")
    elif isinstance(value, tuple) and value and value[0] in ("tuple", "list", "named"):
        parts = value[2] if value[0] == "named" else value[1]
        text = f"{value[0]}(" + ", ".join(_show(p, limit) for p in parts) + ")"
    else:
        text = repr(value[1] if isinstance(value, tuple) and len(value) == 2 else value)
    return text if len(text) <= limit else text[:limit] + " ..."


def _tolerance(fn: F.Fn, transform: str) -> F.Fn:
    if transform != "grad" or fn.tolerance == "meta":
        return fn
    loosest = max(fn.tolerance, "reduction", key=_TOLERANCE_ORDER.index)
    return dataclasses.replace(fn, tolerance=loosest)


def _eager_deviation(fn: F.Fn, args: tuple, kwargs: dict, executor: str) -> str | None:
    """The deviation that explains this example's eager disagreement on ``executor``, if any."""
    d = runner.outcome(fn, args, kwargs, executor)
    dev = _deviations.classify(d) if d is not None else None
    return dev.id if dev else None


def check(fn: F.Fn, transform: str, args: tuple, kwargs: dict, executor: str, ref, open_reason: str | None) -> Finding:
    """Compare ``transform`` of one example on ``executor`` with the reference ``ref`` (NumPy's)."""
    status, want = ref
    shown_input = runner.reproducer(fn, args, kwargs)

    def fail(kind: str, detail: str, got="") -> Finding:
        dev = None
        if kind == DIFFERS:
            dev = _explained(fn, transform, args, kwargs, executor, got)
        if dev:
            return Finding(DEVIATION, detail, shown_input, _show(got), _show(want), dev)
        if open_reason and kind in (DIFFERS, ERROR):
            return Finding(OPEN, f"{detail} (open: {open_reason})", shown_input, _show(got), _show(want))
        return Finding(kind, detail, shown_input, _show(got) if got != "" else "", _show(want))

    if transform == "eager":
        d = runner.outcome(fn, args, kwargs, executor, ref)
        if d is None:
            return Finding(OK)
        if d.kind == "gap":
            return Finding(UNLISTED_GAP, d.detail, shown_input)
        dev = _deviations.classify(d)
        got = _safe_call(fn, args, kwargs, executor)
        if dev is not None:
            return Finding(DEVIATION, d.detail, shown_input, _show(got), _show(want), dev.id)
        kind = DIFFERS if d.kind in ("value", "no-error") else ERROR
        if open_reason:
            return Finding(OPEN, f"{d.detail} (open: {open_reason})", shown_input, _show(got), _show(want))
        return Finding(kind, f"{d.kind}: {d.detail}", shown_input, _show(got), _show(want))
    try:
        got = _transformed(fn, transform, args, kwargs, executor)
    except NotApplicable as e:
        return Finding(NA, str(e))
    except NotImplementedError as e:
        if status == "raised" and isinstance(e, type(want)):
            return Finding(OK)
        listed = _gaps.reason(executor, F.standard_name(fn)) is not None
        return Finding(GAP if listed else UNLISTED_GAP, runner._short(e), shown_input)
    except Exception as e:  # noqa: BLE001
        if status == "raised" and isinstance(e, type(want)):
            return Finding(OK)
        return fail(ERROR, f"raised {runner._short(e)}" + (f"; NumPy raised {runner._short(want)}" if status == "raised" else ""), e)
    if status == "raised":
        return fail(DIFFERS, f"returned a result; NumPy raised {runner._short(want)}", got)
    try:
        runner.compare(_tolerance(fn, transform), got, want, runner._finite_scale(args, want))
    except runner.Mismatch as e:
        return fail(DIFFERS, str(e), got)
    return Finding(OK)


def _safe_call(fn, args, kwargs, executor):
    try:
        return runner.call(fn, args, kwargs, executor)
    except Exception as e:  # noqa: BLE001
        return e


def _as_if_subnormals_were_zero(fn: F.Fn, transform: str, args, kwargs, executor: str, got) -> bool:
    """The transform's result is NumPy's for the inputs with subnormals flushed to zero (both results flushed)."""
    flush = _deviations._flush
    try:
        status, want = reference(fn, transform, flush(args), flush(kwargs))
        if status != "ok":
            return False
        runner.compare(_tolerance(fn, transform), flush(got), flush(want), runner._finite_scale(args, want))
    except Exception:  # noqa: BLE001 - anything else is not this deviation
        return False
    return True


#: deviation id -> its recheck under a transform ``(fn, transform, args, kwargs, executor, got) -> bool``;
#: a deviation without one explains a transform's disagreement only through the executor's own eager answer
TRANSFORM_RECHECKS = {"jax-flushes-subnormals": _as_if_subnormals_were_zero}


def _explained(fn: F.Fn, transform: str, args, kwargs, executor: str, got) -> str | None:
    """The deviation that explains a transform's disagreement: its transform recheck holds, or else the
    example's eager value on this executor is that deviation and the transformed result equals the
    executor's own (untransformed) answer."""
    name = F.standard_name(fn)
    for dev in _deviations.DEVIATIONS:
        if executor in dev.executors and ("*" in dev.functions or name in dev.functions) \
                and dev.id in TRANSFORM_RECHECKS and TRANSFORM_RECHECKS[dev.id](fn, transform, args, kwargs, executor, got):
            return dev.id
    dev = _eager_deviation(fn, args, kwargs, executor)
    if dev is None or transform == "grad":  # a gradient has no eager counterpart to compare with
        return None
    try:
        if transform == "vmap":
            own = _stack_results([_arrays_only_materialised(runner.call(fn, *m, executor))
                                  for m in batch_members(fn, args, kwargs)])
        else:
            own = _arrays_only_materialised(runner.call(fn, args, kwargs, executor))
        runner.compare(fn, got, own, runner._finite_scale(args, own))
    except Exception:  # noqa: BLE001 - not the executor's eager answer: not this deviation
        return None
    return dev


# -- one row: every executor and transform ---------------------------------------------------------------

def open_issues() -> dict:
    """(executor, table name) -> reason: disagreements being fixed (``test_differential.OPEN``)."""
    try:
        from conformance.test_differential import OPEN as table
    except Exception:  # noqa: BLE001 - pytest missing: nothing is marked open
        return {}
    return dict(table)


def applicable(transform: str, fn: F.Fn | None = None):
    """A cheap test on a drawn example (no executor runs): can ``transform`` apply to it?"""
    if transform == "vmap":
        return lambda ex: bool(leaves(*ex))
    if transform == "grad":
        defined = GRAD_DEFINED.get(F.standard_name(fn)) if fn is not None else None

        def has_gradient(ex) -> bool:
            items = leaves(*ex)
            return any(it.values.dtype.kind == "f" for it in items) and (defined is None or defined(items[0].values))

        return has_gradient
    return lambda ex: True


# -- where a gradient exists: spectral functions -------------------------------------------------------
# The derivative of a singular value or eigenvalue, and of the vectors, has 1/(s_i - s_j) (and for
# thin non-square svd 1/s_i) in it: at repeated or zero values it does not exist, and near them
# (closer than sqrt(eps) of the largest) the floats of any two LAPACKs are noise, not a disagreement.

def _spread_apart(values, dtype, with_zero: bool) -> bool:
    """Every matrix of the stack: its sorted ``values`` (and, ``with_zero``, 0) at least sqrt(eps) x
    the largest magnitude apart."""
    if values.size == 0:
        return True
    v = np.sort(values, axis=-1)
    if with_zero:
        v = np.concatenate([np.zeros(v.shape[:-1] + (1,)), v], axis=-1)
    scale = np.max(np.abs(v), axis=-1, keepdims=True)
    tol = np.sqrt(np.finfo(dtype).eps) * np.maximum(scale, np.finfo(dtype).tiny)
    return bool(np.all(np.diff(v, axis=-1) >= tol)) and bool(np.all(np.isfinite(v)))


def _svd_gradient_defined(a) -> bool:
    if a.size == 0:
        return True
    with np.errstate(all="ignore"):
        try:
            s = np.linalg.svd(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), compute_uv=False)
        except (np.linalg.LinAlgError, ValueError):
            return False
    return _spread_apart(s, a.dtype, with_zero=True)


def _eigh_gradient_defined(a) -> bool:
    if a.size == 0:
        return True
    with np.errstate(all="ignore"):
        try:
            w = np.linalg.eigvalsh(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        except (np.linalg.LinAlgError, ValueError):
            return False
    return _spread_apart(w, a.dtype, with_zero=False)


#: standard name -> (first input's values -> does the gradient exist there, with room for rounding)
GRAD_DEFINED = {"linalg.svd": _svd_gradient_defined, "linalg.svdvals": _svd_gradient_defined,
                "linalg.eigh": _eigh_gradient_defined, "linalg.eigvalsh": _eigh_gradient_defined}


_NEEDS = {"vmap": "an array input", "grad": "a real floating input"}
#: signatures of the differential table that draw no array argument (shapes, dtypes, scalars only)
_NO_ARRAY_SIGNATURES = frozenset({"creation", "arange", "linspace", "eye", "freq", "dtype_pair", "finfo", "iinfo",
                                  "isdtype", "none", "broadcast_shapes"})


def never_applies(fn: F.Fn, transform: str) -> str | None:
    """Why ``transform`` can apply to no example of ``fn`` (known from its table entry), else None;
    saves drawing examples that would all be rejected."""
    if transform in ("vmap", "grad") and fn.signature in _NO_ARRAY_SIGNATURES:
        return f"no example of {fn.name} has an array input"
    if transform == "grad" and (fn.name in RANDOM or not {"float32", "float64"} & set(CATEGORIES[fn.dtypes])):
        return f"no example of {fn.name} has a real floating input (its domain: {fn.dtypes})"
    return None


def run_row(fn: F.Fn, executors: list[str], transforms: tuple, max_examples: int, seed: int | None = None,
            open_table: dict | None = None) -> dict:
    """``{transform: {executor: cell}}`` for one row, each cell ``{status, examples, failures, ...}``.

    Each transform draws its own ``max_examples`` examples among those it can apply to.
    """
    open_table = open_issues() if open_table is None else open_table
    cells = {t: {ex: {"status": NA, "examples": 0, "disagreements": 0, "failures": [], "note": ""}
                 for ex in executors} for t in transforms}
    start = time.perf_counter()

    def record(cell: dict, finding: Finding) -> None:
        if finding.status == NA:
            cell["note"] = cell["note"] or finding.detail
            return
        cell["examples"] += 1
        if finding.status != OK:
            cell["disagreements"] += finding.status in (DIFFERS, ERROR, OPEN, DEVIATION)
            if len(cell["failures"]) < KEEP_FAILURES:
                cell["failures"].append({k: v for k, v in dataclasses.asdict(finding).items() if v not in ("", None)})
        if SEVERITY[finding.status] > SEVERITY[cell["status"]]:
            cell["status"] = finding.status

    def probe_for(t: str):
        @settings(max_examples=max_examples, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(examples(fn).filter(applicable(t, fn)))
        def probe(example):
            args, kwargs = example
            try:
                ref = reference(fn, t, args, kwargs)
            except NotApplicable as e:
                for ex in executors:
                    record(cells[t][ex], Finding(NA, str(e)))
                return
            for ex in executors:
                if ex == REFERENCE:  # the reference column: it ran (or raised) and defines the others
                    record(cells[t][ex], Finding(OK))
                else:
                    record(cells[t][ex], check(fn, t, args, kwargs, ex, ref, open_table.get((ex, fn.name))))

        return _seed(zlib.crc32(f"{fn.name}:{t}".encode()) ^ (seed or 0))(probe)  # repeatable, distinct per row

    for t in transforms:
        reason = never_applies(fn, t)
        if reason:
            for ex in executors:
                cells[t][ex]["note"] = reason
            continue
        try:
            probe_for(t)()
        except Unsatisfiable:
            for ex in executors:
                cells[t][ex]["note"] = f"no example of {fn.name} has {_NEEDS.get(t, 'arguments it takes')}"
    return {"function": fn.name, "standard_name": F.standard_name(fn), "seconds": round(time.perf_counter() - start, 2),
            "cells": cells}
