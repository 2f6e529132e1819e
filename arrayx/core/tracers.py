"""Tracers, abstract values and call primitives.

A :class:`Tracer` is an :class:`~arrayx.Array` whose ``_buf`` is a trace's
state object (``trace``, ``shape``, ``dtype`` and whatever the trace needs) and
whose ``_ex`` is a sentinel executor.  Because the layout is Array's, every
method of the standard works on tracers (they all bind primitives), and
``Array._become`` can turn a concrete array into a tracer when in-place code
stores a traced value into it.  The sentinel makes a tracer that escaped its
transform fail loudly the moment eager code touches it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from arrayx.core.executor import resolve_device
from arrayx.core.array import Array
from arrayx.core.primitives import (
    _TRACE,
    _TRACER_EXECUTOR,
    ConcretizationError,
    DataDependentShapeError,
    Primitive,
    UnexpectedTracerError,
    eval_eager,
)


_object_new = object.__new__

# -- abstract values ------------------------------------------------------------------


class ShapeDtypeStruct:
    """The abstract value of an array: its shape, dtype and weak type (``arrayx.eval_shape`` returns these).

    ``weak_type`` marks a value that stands for a Python scalar (as in JAX): in arithmetic
    with an array it takes the array's dtype, exactly as the Python scalar would eagerly.

    >>> import arrayx as ax
    >>> ax.ShapeDtypeStruct((2, 3), ax.float32)
    ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @classmethod
    def _trusted(cls, shape: tuple, dtype, weak_type: bool = False) -> "ShapeDtypeStruct":
        """Fast constructor for rules: ``shape`` is a tuple of ints, ``dtype`` a NumPy dtype."""
        self = _object_new(cls)
        self.shape = shape
        self.dtype = dtype
        self.weak_type = weak_type
        return self

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __eq__(self, other):
        if isinstance(other, ShapeDtypeStruct):
            return (self.shape == other.shape and self.dtype == other.dtype
                    and self.weak_type == other.weak_type)
        return NotImplemented

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def str_short(self) -> str:
        weak = "~" if self.weak_type else ""
        return f"{weak}{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"


def is_weak(x) -> bool:
    """Whether ``x`` stands for a Python scalar: a Python scalar itself, or a weakly typed traced value."""
    if x.__class__ in (bool, int, float, complex):
        return True
    return x.__class__ is not Array and getattr(getattr(x, "_buf", None), "weak_type", False)


_SHORT = {"bool": "bool", "float16": "f16", "float32": "f32", "float64": "f64", "complex64": "c64",
          "complex128": "c128", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def short_dtype(dtype) -> str:
    return _SHORT.get(np.dtype(dtype).name, np.dtype(dtype).name)


class UndefinedPrimal:
    """A linear operand of an equation being transposed: only its shape and dtype are known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapeDtypeStruct):
        self.aval = aval

    @property
    def shape(self) -> tuple:
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def aval_of(x) -> ShapeDtypeStruct:
    """The abstract value of an Array (concrete or traced)."""
    return ShapeDtypeStruct._trusted(tuple(x.shape), x.dtype, is_weak(x))


# -- tracers ------------------------------------------------------------------------------


class TracerState:
    """Base of the objects a tracer keeps in ``_buf`` (Array's ``shape``/``dtype`` read them)."""

    __slots__ = ("trace", "shape", "dtype")




class Tracer(Array):
    """A value inside a transform: an Array whose ``_buf`` is its trace's state.

    Subclasses (one per trace kind) set ``_concrete()``, which returns the
    concrete Array behind the tracer when there is one (JVP over eager values)
    or raises :class:`ConcretizationError` (staged values).
    """

    __slots__ = ()

    @classmethod
    def _make(cls, state) -> "Tracer":
        self = object.__new__(cls)
        self._buf = state
        self._ex = _TRACER_EXECUTOR
        return self

    @property
    def _trace(self):
        return self._buf.trace

    def _check_alive(self, what: str) -> None:
        trace = self._buf.trace
        if not trace.alive:
            raise UnexpectedTracerError(
                f"{what}: this value was traced by {trace.transform} (#{trace.tag}), which has already "
                f"returned; a traced value escaped its function (e.g. stored in a global or a closure). "
                f"Return it from the transformed function instead"
            )

    def _concrete(self, what: str) -> Array:
        raise NotImplementedError(f"{what}: {type(self).__name__} does not define _concrete (a Tracer subclass must)")

    def _inner(self):
        """The value one level down (the primal of a JVP tracer), or None when there is none."""
        return None

    def _shared_host_value(self, what: str) -> np.ndarray:
        """The value every vmap member shares, as a NumPy array (slice sizes under vmap); raises
        ConcretizationError when members differ or the value is only staged."""
        return np.asarray(self._concrete(what))

    # -- attributes that need a concrete buffer ------------------------------------------
    @property
    def device(self):
        inner = self._inner()
        if isinstance(inner, Array):
            return inner.device
        return self._buf.trace.device

    @property
    def executor(self) -> str:
        return self.device.executor

    def to_device(self, device, /, *, stream=None) -> Array:
        ex, dev = resolve_device(device, "to_device")
        here = self.device
        if ex.name == here.executor and (dev is None or dev == here):
            return self
        raise TypeError(
            f"to_device: cannot move a traced value from {here} to {device!r} inside "
            f"{self._buf.trace.transform}; move the inputs before calling the transformed function"
        )

    # -- conversions ------------------------------------------------------------------------
    def __bool__(self) -> bool:
        return bool(self._concrete("bool()"))

    def __int__(self) -> int:
        return int(self._concrete("int()"))

    def __float__(self) -> float:
        return float(self._concrete("float()"))

    def __complex__(self) -> complex:
        return complex(self._concrete("complex()"))

    def __index__(self) -> int:
        return self._concrete("__index__").__index__()

    def __array__(self, dtype=None, copy=None):
        raise conversion_error("numpy.asarray()", self, "a NumPy array")

    def __format__(self, spec: str) -> str:
        if not spec:
            return repr(self)
        # raises where conversions do; bfloat16 (NumPy kind "V", the one such dtype arrayx holds) is a float
        return format(_PYTHON_SCALAR.get(self.dtype.kind, float)(self), spec)

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        raise TypeError(
            f"__dlpack__: a traced value ({self._buf.trace.transform}) has no buffer to export; "
            f"export results after the transform returns"
        )

    def __dlpack_device__(self):
        self.__dlpack__()

    # -- pickle and copy ------------------------------------------------------------------------
    def __reduce__(self):
        trace = self._buf.trace
        raise TypeError(
            f"cannot pickle a traced value (a {type(self).__name__} of {trace.transform}): it has no data "
            f"yet, only what the transform tracks. Pickle the results after the transform returns"
        )

    def __copy__(self) -> "Tracer":
        # tracers are values: a new wrapper of the same state (in-place updates rebind one wrapper)
        return type(self)._make(self._buf)

    def __deepcopy__(self, memo) -> "Tracer":
        return self.__copy__()

    def __repr__(self) -> str:
        trace = self._buf.trace
        head = f"{type(self).__name__}<{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]>"
        extra = self._repr_extra()
        return f"{head}({trace.transform} #{trace.tag}{'' if trace.alive else ', finished'}{extra})"

    __str__ = __repr__

    def _repr_extra(self) -> str:
        return ""


_PYTHON_SCALAR = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def conversion_error(what: str, tracer, target: str) -> TypeError:
    """Converting a traced value to a foreign object would drop what the transform tracks."""
    trace = tracer._buf.trace
    return TypeError(
        f"{what}: cannot convert a traced value (a {type(tracer).__name__} of {trace.transform}) to "
        f"{target}: it would drop what the transform tracks (under grad, a silent zero gradient). "
        f"Use arrayx functions on it, or arrayx.stop_gradient(x) first if you only need its value"
    )


def concretization_error(what: str, tracer) -> ConcretizationError:
    trace = tracer._buf.trace
    return ConcretizationError(
        f"{what} of a value that depends on the inputs of {trace.transform}: the value is only known "
        f"symbolically while tracing (shape {tracer.shape}, dtype {tracer.dtype}). Use "
        f"arrayx.where(cond, x, y) to choose elementwise, arrayx.cond(pred, true_fn, false_fn, ...) for "
        f"data-dependent control flow, or mark the argument static with static_argnums"
    )


def known_values(x, prim: Primitive) -> np.ndarray:
    """The values of operand ``x`` on the host, for the abstract rule of a data-dependent ``prim``.

    Raises :class:`DataDependentShapeError` (naming ``prim`` and its alternative) when ``x``
    is only known symbolically, e.g. an input of a function being staged.
    """
    if isinstance(x, Tracer):
        try:
            x = x._concrete(prim.name)
        except ConcretizationError:
            trace = x._buf.trace
            raise DataDependentShapeError(
                f"{prim.name}: the size of its result depends on the values of an operand that "
                f"{trace.transform} only knows by shape and dtype ({x.dtype}{list(x.shape)}); "
                f"{prim.data_dependent or 'compute it eagerly'}"
            ) from None
    return np.asarray(x._ex.to_host(x._buf))


# -- binding on an explicit trace -------------------------------------------------------------


def bind_with(trace, prim: Primitive, args, params: dict):
    """Bind ``prim`` on ``trace`` (None: eager), whatever trace is current."""
    if trace is not None:
        if prim.call_like:
            return trace.process_call(prim, args, params)
        return trace.process_primitive(prim, args, params)
    if prim.__class__ is Primitive:
        return eval_eager(prim, args, params)
    token = _TRACE.set(None)
    try:
        return prim.bind(*args, **params)
    finally:
        _TRACE.reset(token)


class CallPrimitive(Primitive):
    """A call-like primitive: its params carry sub-computations (see the protocol in ``core``).

    Binding with no trace active calls ``eager(args, params)`` (by default
    ``params["fun"](*args)``) on the arrays themselves; under a transform it goes
    to the trace's ``process_call``.  ``fun_params`` names the params that hold
    Python functions of the operands, which a staging trace turns into closed
    Graphs; ``stage``, when set, is the primitive's own staging rule
    ``stage(trace, args, params) -> outputs`` (partial evaluation).
    Results are always a tuple (``multiple_results``).
    """

    __slots__ = ("eager", "fun_params", "stage")
    call_like = True

    def __init__(self, name: str, *, eager: Callable | None = None, fun_params: tuple = ("fun",),
                 stage: Callable | None = None):
        super().__init__(name, multiple_results=True)
        self.eager = eager or _call_fun
        self.fun_params = tuple(fun_params)
        self.stage = stage
        self.abstract_eval = _call_abstract_eval if "fun" in self.fun_params else None

    def bind(self, *args, **params):
        trace = _TRACE.get()
        if trace is None:
            return tuple(self.eager(args, params))
        return trace.process_call(self, args, params)


def _call_fun(args, params):
    return params["fun"](*args)


def _call_abstract_eval(*args, fun, **params):
    # once staged, ``fun`` is a Graph and knows its outputs
    return fun.out_avals


# -- abstract evaluation --------------------------------------------------------------------


def abstract_eval(prim: Primitive, args, params: dict):
    """Shape and dtype of ``prim``'s result(s) for these operands, without computing anything.

    Every primitive has an executor-free rule (``prim.abstract_eval``; call-like primitives
    get theirs by tracing their function); ``arrayx.transforms.rules.coverage()`` lists any
    that lacks one.
    """
    rule = prim.abstract_eval
    if rule is None:
        raise NotImplementedError(
            f"{prim.name}: no abstract evaluation rule, so it cannot be staged; register one with "
            f"arrayx.transforms.rules.defabstract({prim.name}_p, rule)"
        )
    return rule(*args, **params)


def remember_before_rebind(current, x, new) -> None:
    """``x`` is about to be rebound to ``new`` under ``current``: the trace that owns ``new`` (the
    current one for a concrete value) restores ``x`` when it finishes, unless ``x`` is its own."""
    owner = new._buf.trace if isinstance(new, Tracer) else current
    if isinstance(x, Tracer) and x._buf.trace is owner:
        return
    owner.remember(x)
