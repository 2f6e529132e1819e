"""NumPy's protocols on arrayx arrays: ``np.abs(x)``, ``np_array + x``, ``np.sum(x)``, ``np.histogram(x)``.

**Ufuncs** (``Array.__array_ufunc__``).  A NumPy ufunc whose arrayx function has the same meaning
(``_UFUNCS``: ``np.add`` -> ``add``, ``np.absolute`` -> ``abs``, ``np.arctan2`` -> ``atan2``,
``np.power`` -> ``pow``, comparisons, ``np.maximum``, ``np.matmul`` ...) runs as that function on the
arrays' executor (under transforms too) and returns an arrayx array; NumPy arrays and NumPy scalars
among the operands are moved to that executor first (NumPy scalars are typed, as in NumPy:
``np.float64(2) * x32`` is float64), Python scalars stay weak.  So ``numpy_array + arrayx_array`` is
an arrayx array, as it was when NumPy deferred to ``Array.__radd__``.  ``ufunc.reduce`` serves
``add``/``multiply``/``maximum``/``minimum``/``logical_and``/``logical_or`` (sum, prod, max, min, all,
any) and ``ufunc.accumulate`` ``add``/``multiply`` (cumulative sums and products), with
``axis``/``keepdims``.  Every other ufunc call (``np.exp2``, ``np.gcd``, SciPy's special functions,
which are ufuncs, ``where=``/``dtype=`` keywords, ``ufunc.outer``, and dtypes the standard's function
refuses but NumPy's ufunc takes: ``np.sqrt`` of integers, ``np.logical_not`` of floats, ``np.add`` of
bools) is computed by NumPy on NumPy copies
of the operands and its results come back as arrayx arrays on the operands' executor, as Dask applies
any ufunc to its chunks (asarray's dtype rules apply to them; a Dask operand is computed; a traced one
raises, as ``numpy.asarray`` of it does).  ``out=`` (one NumPy or arrayx array) is written after the
computation with NumPy's "same_kind" casting rule, and returned; ``numpy_array += arrayx_array`` thus
stays a NumPy array, as with NumPy's own operands.  ``ufunc.at`` (in place on its operand) returns
``NotImplemented``, so NumPy raises its TypeError; use ``x.at[idx].add(v)``.

**Functions** (``Array.__array_function__``).  A NumPy function with an arrayx counterpart of the same
meaning (``_FUNCTIONS``: ``np.sum``, ``np.mean``, ``np.std`` (``ddof`` -> ``correction``),
``np.concatenate``, ``np.stack``, ``np.where``, ``np.clip``, ``np.transpose``, ``np.reshape``,
``np.sort``, ``np.cumsum``, ``np.zeros_like`` ...) runs as that function and returns arrayx arrays;
``out=`` (a NumPy or arrayx array) is written as for ufuncs (scikit-learn's ``np.clip(d, 0, None,
out=d)``); a NumPy-only argument at a value arrayx cannot honour (``where=``, ``initial=``,
``order='F'``, ``decimals=2`` ...) raises a TypeError naming it.  ``np.shape``/``np.ndim``/
``np.size`` read the attributes.  Every other NumPy function (``np.histogram``, ``np.percentile``,
``np.atleast_2d``, ``np.column_stack``, ``np.isclose`` ... which matplotlib and SciPy call on the
arrays they are given) runs on NumPy copies of the arrayx arrays (``numpy.asarray``: a Dask array is
computed, a device array copied to the host) and returns what NumPy returns, NumPy arrays included,
as Dask does for functions it does not implement.
"""
from __future__ import annotations

import builtins
import functools
import inspect

import numpy as np

from arrayx.api import _hooks
from arrayx.api._array import Array

__all__ = ["array_ufunc", "array_function"]

_NO_VALUE = getattr(np, "_NoValue", None)

# NumPy ufunc name (ufunc.__name__: np.abs is np.absolute) -> arrayx function name
_UFUNCS = {name: name for name in (
    "acos", "acosh", "add", "asin", "asinh", "atan", "atanh", "bitwise_and", "bitwise_or", "bitwise_xor",
    "ceil", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
    "greater_equal", "hypot", "isfinite", "isinf", "isnan", "less", "less_equal", "log", "log10", "log1p",
    "log2", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor", "matmul", "maximum",
    "minimum", "multiply", "negative", "nextafter", "not_equal", "positive", "reciprocal", "remainder",
    "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc", "vecdot")}
_UFUNCS.update({
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh", "conjugate": "conj", "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift", "power": "pow",
    "true_divide": "divide", "rint": "round",
})
# ufunc.reduce / ufunc.accumulate -> the arrayx reduction / cumulative function
_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min", "logical_and": "all",
           "logical_or": "any"}
_ACCUMULATE = {"add": "cumulative_sum", "multiply": "cumulative_prod"}


def _namespace():
    return _hooks.namespace


def _anchor(values):
    """The first arrayx array among ``values`` (one level of lists/tuples looked into)."""
    for v in values:
        if isinstance(v, Array):
            return v
        if isinstance(v, (list, tuple)):
            found = _anchor(v)
            if found is not None:
                return found
    return None


def _moved(value, device):
    """An operand as arrayx takes it: NumPy arrays and scalars moved to ``device``, lists of them too."""
    if isinstance(value, (np.ndarray, np.generic)):
        return _namespace().asarray(value, device=device)
    if isinstance(value, list):
        return [_moved(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(_moved(v, device) for v in value)
    return value


_OPERANDS = (Array, np.ndarray, np.generic, bool, int, float, complex)


# -- ufuncs ------------------------------------------------------------------------------------------

def array_ufunc(ufunc, method: str, inputs: tuple, kwargs: dict):
    """``Array.__array_ufunc__``: the arrayx function of the same meaning, else NumPy's ufunc on NumPy
    copies with the results moved back (see the module doc); ``ufunc.at`` is NotImplemented."""
    if method == "at" or not builtins.all(isinstance(v, _OPERANDS) for v in inputs):
        return NotImplemented  # at: in place on a copy would be lost; another array type: let it decide
    out = kwargs.pop("out", None)
    if out is not None and (len(out) != 1 or not isinstance(out[0], (Array, np.ndarray))):
        return NotImplemented
    anchor = _anchor(inputs)
    if anchor is None:
        anchor = _anchor(out or ())
    if anchor is None:
        return NotImplemented
    _one_executor(ufunc.__name__, (*inputs, *(out or ())))  # as x + y: NumPy on copies would mix them
    try:
        result = _as_arrayx(ufunc, method, inputs, kwargs, anchor.device)
    except TypeError:  # a dtype the standard's function refuses and NumPy's ufunc takes (sqrt of ints,
        if not _concrete(inputs):  # logical_not of floats, bool + bool): NumPy's result, unless traced
            raise
        result = None
    if result is None:  # no arrayx counterpart for this call: NumPy computes it
        return _on_numpy_moved_back(getattr(ufunc, method), inputs, kwargs, out, anchor.device)
    return result if out is None else _write_out(ufunc, result, out[0])


def _one_executor(fname: str, values, first=None):
    """The TypeError of ``x + y`` where the concrete arrayx arrays among ``values`` (one level of
    lists/tuples looked into) live on different executors; returns the first such array."""
    for v in values:
        if type(v) is Array:
            if first is None:
                first = v
            elif v._ex is not first._ex:
                from arrayx.core.primitives import _mixed_executors

                raise _mixed_executors(fname, first._ex, v._ex)
        elif isinstance(v, (list, tuple)):
            first = _one_executor(fname, v, first)
    return first


def _concrete(values) -> bool:
    """No traced value (jit, grad, vmap) among ``values``: NumPy could compute with them."""
    return builtins.all(type(v) is Array for v in values if isinstance(v, Array))


def _as_arrayx(ufunc, method, inputs, kwargs, device):
    """The call as its arrayx counterpart, or None where arrayx has none (with these keywords)."""
    if getattr(np, ufunc.__name__, None) is not ufunc:  # another library's ufunc (SciPy's special functions)
        return None
    if method == "__call__":
        name = _UFUNCS.get(ufunc.__name__)
        if name is None or kwargs:  # where=, dtype=, casting=, axes= ...
            return None
        return getattr(_namespace(), name)(*[_moved(v, device) for v in inputs])
    if method not in ("reduce", "accumulate") or len(inputs) != 1:
        return None
    name = (_REDUCE if method == "reduce" else _ACCUMULATE).get(ufunc.__name__)
    rest = dict(kwargs)
    axis = rest.pop("axis", 0)
    keepdims = rest.pop("keepdims", False)
    if name is None or builtins.any(v is not None and v is not _NO_VALUE for v in rest.values()):
        return None
    x = _moved(inputs[0], device)
    if method == "reduce":
        return getattr(_namespace(), name)(x, axis=axis, keepdims=keepdims)
    if keepdims or axis is None:
        return None
    return getattr(_namespace(), name)(x, axis=axis)


def _on_numpy_moved_back(call, inputs, kwargs, out, device):
    """``call`` (a ufunc method) on NumPy copies, its array results as arrayx arrays on ``device``; an
    ``out=`` is handed to NumPy (a copy of an arrayx one, written back whole: where= leaves the rest)."""
    ax = _namespace()
    if out is not None:
        target = out[0]
        host = target if isinstance(target, np.ndarray) else np.array(np.asarray(target), copy=True)
        call(*_on_numpy(inputs), out=(host,), **_on_numpy(kwargs))
        if isinstance(target, Array):
            target[...] = ax.asarray(host, device=target.device)
        return target
    result = call(*_on_numpy(inputs), **_on_numpy(kwargs))
    if isinstance(result, tuple):
        return tuple(ax.asarray(r, device=device) for r in result)
    return ax.asarray(result, device=device)


def _write_out(ufunc, result, target):
    """NumPy's ``out=``: ``result`` written into ``target`` ("same_kind" casting), which is returned."""
    if isinstance(result, tuple):  # a ufunc with several outputs given one out
        raise TypeError(f"numpy.{ufunc.__name__} on arrayx arrays: {len(result)} outputs, one out= array given")
    if not np.can_cast(result.dtype, target.dtype, "same_kind"):
        raise TypeError(f"Cannot cast ufunc {ufunc.__name__!r} output from {result.dtype!r} to {target.dtype!r} "
                        f"with casting rule 'same_kind' (arrayx array operands)")
    if isinstance(target, np.ndarray):
        np.copyto(target, np.asarray(result), casting="same_kind")
        return target
    if isinstance(target, Array):
        ax = _namespace()
        target[...] = ax.astype(result, target.dtype) if result.dtype != target.dtype else result
        return target
    raise TypeError(f"numpy.{ufunc.__name__}: out= must be a NumPy or an arrayx array, got {type(target).__name__}")


# -- functions ---------------------------------------------------------------------------------------

class _Spec:
    """How a NumPy function maps onto arrayx function ``name``: NumPy's parameters passed
    positionally (in order), renamed to keywords, or allowed only at the value that changes nothing."""

    def __init__(self, name: str, positional=("a",), keywords=None, neutral=None, adapt=None):
        self.name = name
        self.positional = positional
        self.keywords = dict(keywords or {})  # NumPy name -> arrayx keyword
        self.neutral = dict(neutral or {})  # NumPy name -> the values that change nothing
        self.adapt = adapt  # (arrayx namespace, positional, keywords) -> result, for argument reshaping


_REDUCTION_NEUTRAL = {"out": (None,), "where": (True, _NO_VALUE), "initial": (_NO_VALUE,),
                      "keepdims": (_NO_VALUE, False)}


def _reduction(name, dtype=True):
    keywords = {"axis": "axis", "keepdims": "keepdims"}
    if dtype:
        keywords["dtype"] = "dtype"
    neutral = {**_REDUCTION_NEUTRAL, "dtype": (None,)}
    return _Spec(name, keywords=keywords, neutral=neutral,
                 adapt=lambda ax, pos, kw: getattr(ax, name)(*pos, **{k: v for k, v in kw.items()
                                                                   if not (k == "keepdims" and v is _NO_VALUE)}))


def _moments(name):
    def adapt(ax, pos, kw):
        if "ddof" in kw:
            kw["correction"] = kw.pop("ddof")
        kw = {k: v for k, v in kw.items() if not (k in ("keepdims", "correction") and v is _NO_VALUE)}
        return getattr(ax, name)(*pos, **kw)
    return _Spec(name, keywords={"axis": "axis", "keepdims": "keepdims", "ddof": "ddof", "correction": "ddof"},
                 neutral={**_REDUCTION_NEUTRAL, "dtype": (None,), "mean": (_NO_VALUE,)}, adapt=adapt)


def _flatten_if_no_axis(name, axis_default=None):
    """NumPy's axis=None flattens first (cumsum, sort, argsort, flip keeps None)."""
    def adapt(ax, pos, kw):
        axis = kw.pop("axis", axis_default)
        x = pos[0]
        if axis is None:
            x, axis = ax.reshape(x, (-1,)), 0
        return getattr(ax, name)(x, *pos[1:], axis=axis, **kw)
    return adapt


def _sort_adapt(name):
    inner = _flatten_if_no_axis(name, axis_default=-1)

    def adapt(ax, pos, kw):
        kind = kw.pop("kind", None)
        if kind is not None:
            kw["stable"] = kind in ("stable", "mergesort") or bool(kw.get("stable"))
        return inner(ax, pos, kw)
    return adapt


def _concat_adapt(ax, pos, kw):
    arrays, axis = list(pos[0]), kw.pop("axis", 0)
    if axis is None:
        arrays, axis = [ax.reshape(a, (-1,)) for a in arrays], 0
    return ax.concat(arrays, axis=axis)


def _where_adapt(ax, pos, kw):
    if len(pos) == 1:  # np.where(condition): np.nonzero
        return ax.nonzero(pos[0])
    if len(pos) != 3:
        raise TypeError("numpy.where on arrayx arrays: pass condition alone or condition, x and y")
    return ax.where(*pos)


def _clip_adapt(ax, pos, kw):
    lo = kw.pop("a_min", kw.pop("min", None))
    hi = kw.pop("a_max", kw.pop("max", None))
    lo = None if lo is _NO_VALUE else lo
    hi = None if hi is _NO_VALUE else hi
    return ax.clip(pos[0], lo, hi)


def _transpose_adapt(ax, pos, kw):
    axes = kw.get("axes")
    return ax.permute_dims(pos[0], tuple(reversed(range(pos[0].ndim))) if axes is None else tuple(axes))


def _squeeze_adapt(ax, pos, kw):
    axis = kw.get("axis")
    if axis is None:
        axis = tuple(i for i, n in enumerate(pos[0].shape) if n == 1)
    return ax.squeeze(pos[0], axis=axis)


def _take_adapt(ax, pos, kw):
    x, indices = pos
    axis = kw.get("axis")
    if axis is None:
        x, axis = ax.reshape(x, (-1,)), 0
    return ax.take(x, indices if isinstance(indices, Array) else ax.asarray(indices, device=x.device), axis=axis)


def _repeat_adapt(ax, pos, kw):
    x, repeats = pos
    return ax.repeat(x, repeats, axis=kw.get("axis"))


def _like_adapt(name):
    def adapt(ax, pos, kw):
        return getattr(ax, name)(*pos, **kw)
    return adapt


_LIKE_NEUTRAL = {"order": ("K", "C", "A"), "subok": (True, False), "shape": (None,), "device": (None,)}
_NEUTRAL_COPY = {"out": (None,), "casting": ("same_kind",), "dtype": (None,)}

_FUNCTIONS: dict = {
    np.sum: _reduction("sum"),
    np.prod: _reduction("prod"),
    np.mean: _reduction("mean", dtype=False),
    np.max: _reduction("max", dtype=False),
    np.amax: _reduction("max", dtype=False),
    np.min: _reduction("min", dtype=False),
    np.amin: _reduction("min", dtype=False),
    np.all: _reduction("all", dtype=False),
    np.any: _reduction("any", dtype=False),
    np.std: _moments("std"),
    np.var: _moments("var"),
    np.argmax: _Spec("argmax", keywords={"axis": "axis", "keepdims": "keepdims"}, neutral=_REDUCTION_NEUTRAL,
                     adapt=lambda ax, pos, kw: ax.argmax(*pos, **{k: v for k, v in kw.items() if v is not _NO_VALUE})),
    np.argmin: _Spec("argmin", keywords={"axis": "axis", "keepdims": "keepdims"}, neutral=_REDUCTION_NEUTRAL,
                     adapt=lambda ax, pos, kw: ax.argmin(*pos, **{k: v for k, v in kw.items() if v is not _NO_VALUE})),
    np.count_nonzero: _Spec("count_nonzero", keywords={"axis": "axis", "keepdims": "keepdims"}),
    np.cumsum: _Spec("cumulative_sum", keywords={"axis": "axis", "dtype": "dtype"}, neutral={"out": (None,)},
                     adapt=_flatten_if_no_axis("cumulative_sum")),
    np.cumprod: _Spec("cumulative_prod", keywords={"axis": "axis", "dtype": "dtype"}, neutral={"out": (None,)},
                      adapt=_flatten_if_no_axis("cumulative_prod")),
    np.concatenate: _Spec("concat", positional=("arrays",), keywords={"axis": "axis"}, neutral=_NEUTRAL_COPY,
                          adapt=_concat_adapt),
    np.stack: _Spec("stack", positional=("arrays",), keywords={"axis": "axis"}, neutral=_NEUTRAL_COPY,
                    adapt=lambda ax, pos, kw: ax.stack(list(pos[0]), **kw)),
    np.where: _Spec("where", positional=("condition", "x", "y"), adapt=_where_adapt),
    np.clip: _Spec("clip", keywords={"a_min": "a_min", "a_max": "a_max", "min": "min", "max": "max"},
                   neutral={"out": (None,)}, adapt=_clip_adapt),
    np.round: _Spec("round", neutral={"decimals": (0,), "out": (None,)}),
    np.transpose: _Spec("permute_dims", keywords={"axes": "axes"}, adapt=_transpose_adapt),
    np.reshape: _Spec("reshape", positional=("a", "shape"), keywords={"copy": "copy"}, neutral={"order": ("C",)}),
    np.squeeze: _Spec("squeeze", keywords={"axis": "axis"}, adapt=_squeeze_adapt),
    np.expand_dims: _Spec("expand_dims", keywords={"axis": "axis"}),
    np.moveaxis: _Spec("moveaxis", positional=("a", "source", "destination")),
    np.flip: _Spec("flip", positional=("m",), keywords={"axis": "axis"}),
    np.roll: _Spec("roll", positional=("a", "shift"), keywords={"axis": "axis"}),
    np.broadcast_to: _Spec("broadcast_to", positional=("array", "shape"), neutral={"subok": (False,)}),
    np.broadcast_arrays: _Spec("broadcast_arrays", positional=("args",), neutral={"subok": (False,)},
                               adapt=lambda ax, pos, kw: ax.broadcast_arrays(*pos[0])),
    np.tile: _Spec("tile", positional=("A", "reps")),
    np.repeat: _Spec("repeat", positional=("a", "repeats"), keywords={"axis": "axis"}, adapt=_repeat_adapt),
    np.sort: _Spec("sort", keywords={"axis": "axis", "kind": "kind", "stable": "stable"}, neutral={"order": (None,)},
                   adapt=_sort_adapt("sort")),
    np.argsort: _Spec("argsort", keywords={"axis": "axis", "kind": "kind", "stable": "stable"},
                      neutral={"order": (None,)}, adapt=_sort_adapt("argsort")),
    np.nonzero: _Spec("nonzero"),
    np.searchsorted: _Spec("searchsorted", positional=("a", "v"), keywords={"side": "side", "sorter": "sorter"}),
    np.take: _Spec("take", positional=("a", "indices"), keywords={"axis": "axis"},
                   neutral={"out": (None,), "mode": ("raise",)}, adapt=_take_adapt),
    np.take_along_axis: _Spec("take_along_axis", positional=("arr", "indices"), keywords={"axis": "axis"}),
    np.tensordot: _Spec("tensordot", positional=("a", "b"), keywords={"axes": "axes"}),
    np.zeros_like: _Spec("zeros_like", keywords={"dtype": "dtype"}, neutral=_LIKE_NEUTRAL),
    np.ones_like: _Spec("ones_like", keywords={"dtype": "dtype"}, neutral=_LIKE_NEUTRAL),
    np.empty_like: _Spec("empty_like", keywords={"dtype": "dtype"}, neutral=_LIKE_NEUTRAL),
    np.full_like: _Spec("full_like", positional=("a", "fill_value"), keywords={"dtype": "dtype"}, neutral=_LIKE_NEUTRAL),
    np.tril: _Spec("tril", positional=("m",), keywords={"k": "k"}),
    np.triu: _Spec("triu", positional=("m",), keywords={"k": "k"}),
    np.real: _Spec("real", positional=("val",)),
    np.imag: _Spec("imag", positional=("val",)),
    np.diff: _Spec("diff", keywords={"n": "n", "axis": "axis", "prepend": "prepend", "append": "append"},
                   adapt=lambda ax, pos, kw: ax.diff(*pos, **{k: v for k, v in kw.items() if v is not _NO_VALUE})),
}
for _name in ("matrix_transpose", "unstack", "astype", "permute_dims", "concat", "cumulative_sum",
              "cumulative_prod", "vecdot"):
    _fn = getattr(np, _name, None)
    if _fn is not None and _fn not in _FUNCTIONS and not isinstance(_fn, np.ufunc):
        _params = tuple(inspect.signature(_fn).parameters)
        _FUNCTIONS[_fn] = _Spec(_name, positional=_params[:1] if _name != "astype" else _params[:2],
                                keywords={p: p for p in _params[1:] if p not in ("out", "dtype", "include_initial")}
                                | ({"dtype": "dtype"} if _name.startswith("cumulative") else {}),
                                neutral={"out": (None,), "include_initial": (False,)},
                                adapt=(_flatten_if_no_axis(_name) if _name.startswith("cumulative") else None))

_ATTRIBUTES = {np.shape: "shape", np.ndim: "ndim", np.size: "size"}


@functools.lru_cache(maxsize=None)
def _signature(func):
    return inspect.signature(func)


def array_function(func, types, args: tuple, kwargs: dict):
    """``Array.__array_function__``: the arrayx counterpart, or NumPy on NumPy copies (see the module doc)."""
    if not builtins.all(issubclass(t, (Array, np.ndarray)) for t in types):
        return NotImplemented  # another array library takes part: let it decide
    if func in _ATTRIBUTES and len(args) == 1 and not kwargs and isinstance(args[0], Array):
        return getattr(args[0], _ATTRIBUTES[func])
    spec = _FUNCTIONS.get(func)
    anchor = _anchor(tuple(args) + tuple(kwargs.values()))
    if spec is None or anchor is None:
        return func(*_on_numpy(args), **_on_numpy(kwargs))
    try:
        bound = _signature(func).bind(*args, **kwargs).arguments
    except TypeError as e:
        raise TypeError(f"numpy.{func.__name__} on arrayx arrays: {e}") from None
    device = anchor.device
    out = bound.pop("out", None)
    if out is not None and not isinstance(out, (Array, np.ndarray)):
        raise TypeError(f"numpy.{func.__name__}: out= must be a NumPy or an arrayx array, got {type(out).__name__}")
    positional = [_moved(bound.pop(p), device) for p in spec.positional if p in bound]
    keywords = {}
    for name, value in bound.items():
        if name in spec.keywords:
            keywords[spec.keywords[name]] = _moved(value, device) if name in ("prepend", "append", "sorter") else value
        elif name in spec.neutral and builtins.any(value is n or (type(value) is type(n) and value == n)
                                                  for n in spec.neutral[name]):
            continue
        else:
            raise TypeError(
                f"numpy.{func.__name__}(..., {name}={value!r}) on arrayx arrays: arrayx.{spec.name} has no "
                f"counterpart for {name}={value!r}; call arrayx.{spec.name} (and write results with x[...] = ...), "
                f"or call numpy.{func.__name__} on numpy.asarray(x)"
            )
    ax = _namespace()
    try:
        if spec.adapt is not None:
            result = spec.adapt(ax, positional, keywords)
        else:
            result = getattr(ax, spec.name)(*positional, **keywords)
    except TypeError:  # operands the standard's function refuses and NumPy's takes (an int condition
        if out is not None or not _concrete(tuple(args) + tuple(kwargs.values())):  # of np.where): NumPy's
            raise  # result, moved back, unless traced
        return _on_numpy_moved_back(func, args, kwargs, None, device)
    return result if out is None else _write_out(func, result, out)


def _on_numpy(value):
    """``value`` with every arrayx array replaced by ``numpy.asarray`` of it (lists, tuples, dicts looked into)."""
    if isinstance(value, Array):
        return np.asarray(value)
    if isinstance(value, list):
        return [_on_numpy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_on_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _on_numpy(v) for k, v in value.items()}
    return value
