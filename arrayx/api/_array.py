"""``arrayx.Array``: the standard's array object, a thin wrapper over an executor buffer.

An Array holds ``(_buf, _ex)``: the executor's own buffer and the executor.
Users never construct it directly; every function returns one (``Array._new``).

Every operator routes through the namespace's public functions, which bind
primitives, so the same methods serve concrete arrays and tracers.  Tracers are
subclasses with ``__slots__ = ()`` that keep their state in ``_buf``: because
the layout is identical, in-place code (``x[i] = v``, ``x += y``) is
functionalised by computing the new value and rebinding the wrapper
(``_become``), even when a concrete array receives a traced value.
"""
from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np

from arrayx.api import _dtypes, _hooks
from arrayx.api._inplace import _TEMPORARY, _elide, _getrefcount, _into
from arrayx.core.array import Array, define_array_methods

SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")


_KDLCPU = 1  # DLPack's device type of host memory
_object_new = object.__new__


def _dlpack_device_of(buf):
    """``buf.__dlpack_device__()``, or None where its library has no DLPack device for it (JAX on a
    TPU: BufferError; XLA cannot export a TPU buffer either)."""
    try:
        return buf.__dlpack_device__()
    except BufferError:
        return None


def _host_dlpack(x, stream, max_version, dl_device, copy):
    """The DLPack export of ``x``, whose device DLPack cannot name: a private host copy, the only
    export there is (what ``np.from_dlpack(x)`` and ``dl_device=(kDLCPU, 0)`` get)."""
    if copy is False:
        raise BufferError(
            f"__dlpack__: {x.dtype} array on {x.device}, which DLPack cannot export; its only export is a "
            f"host copy, and copy=False forbids one; pass copy=None or copy=True (or use np.asarray(x))")
    if dl_device is not None and int(dl_device[0]) != _KDLCPU:
        raise BufferError(
            f"__dlpack__: {x.dtype} array on {x.device}, which DLPack cannot export; it can only be exported "
            f"to host memory (dl_device=({_KDLCPU}, 0)), not to dl_device={tuple(dl_device)}")
    host = np.array(x._ex.to_host(x._buf), copy=True)  # private and writeable: the consumer owns it
    kwargs = {} if max_version is None else {"max_version": max_version}
    if stream is not None:
        kwargs["stream"] = stream  # NumPy refuses a stream for host memory, as the standard says
    return host.__dlpack__(**kwargs)


@define_array_methods
class _ArrayMethods:
    """The standard's array object: ``x.shape``, ``x + y``, ``x[i]``, ``x.at[i].set(v)``, ...

    (The class body is installed on the core's :class:`~arrayx.core.array.Array`,
    which owns the layout, so that tracers, Arrays too, share every method.)
    """

    __array_priority__ = 1000

    # -- NumPy's protocols (api/_numpy_dispatch.py): ufuncs and functions with an arrayx counterpart run
    # as it and return arrayx arrays (``numpy_array + arrayx_array`` too); other functions run on NumPy copies
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy_dispatch.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _numpy_dispatch.array_function(func, types, args, kwargs)

    def __init__(self, *args, **kwargs):
        raise TypeError(
            "arrayx.Array is not constructed directly; use arrayx.asarray(obj) or a creation function"
        )

    @classmethod
    def _new(cls, buf, ex) -> "Array":
        self = object.__new__(cls)
        self._buf = buf
        self._ex = ex
        return self

    def _become(self, other: "Array") -> None:
        """Rebind this wrapper to ``other``'s value (functionalised in-place update).

        Under a transform the trace that owns the new value remembers the old one and puts it
        back when it finishes: a transform never leaves an array holding its tracers.
        """
        trace = _core._TRACE.get()
        if trace is not None:
            _tracers.remember_before_rebind(trace, self, other)
        if self.__class__ is not other.__class__:
            self.__class__ = other.__class__
        self._buf = other._buf
        self._ex = other._ex

    # -- attributes -----------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._buf.dtype

    @property
    def shape(self) -> tuple:
        shape = self._buf.shape
        if self._ex.unknown_shapes:
            return self._ex.shape_of(self._buf)
        return shape

    @property
    def ndim(self) -> int:
        return len(self._buf.shape)

    @property
    def size(self):
        shape = self.shape
        n = 1
        for d in shape:
            if d is None:
                return None
            n *= d
        return n

    @property
    def device(self):
        return self._ex.device_of(self._buf)

    # ``sharding``, ``devices()`` and ``addressable_shards`` are installed by arrayx.sharding (_api.py)

    @property
    def executor(self) -> str:
        """Name of the executor this array lives on (an arrayx extension)."""
        return self._ex.name

    @property
    def mT(self) -> "Array":
        # a view, as NumPy's: on JAX/Dask (and under transforms) writes through it reach self
        return _views.whole_view(self, _linalg.matrix_transpose, _linalg.matrix_transpose)

    @property
    def T(self) -> "Array":
        if self.__class__ is Array and self._buf.__class__ is np.ndarray and self._ex.mutable \
                and _core._TRACE.get() is None and _core.eager_hook is None and self._buf.ndim == 2:
            # eager NumPy buffers (numpy and numba executors): NumPy's transpose is the executor's
            # permute_dims, a view, without the primitive's dispatch (2.5 -> 0.35 us)
            return Array._new(self._buf.T, self._ex)
        if self.ndim != 2:
            raise ValueError(
                f"Array.T: only defined for 2-D arrays (got {self.ndim}-D); use x.mT or permute_dims"
            )
        return _views.whole_view(self, _transpose, _transpose)  # a view, as mT

    @property
    def at(self) -> "_AtIndexer":
        """Functional updates: ``x.at[idx].set(v)``, ``.add``, ``.multiply``, ``.min``, ``.max``, ``.get()``."""
        return _AtIndexer(self)

    # -- conversion -------------------------------------------------------------
    def __array_namespace__(self, /, *, api_version: str | None = None) -> types.ModuleType:
        if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
            raise ValueError(
                f"__array_namespace__: api_version {api_version!r} is not supported; "
                f"arrayx implements {SUPPORTED_API_VERSIONS}"
            )
        return _hooks.namespace

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        host = self._ex.to_host(self._buf)
        # clients (SciPy, scikit-learn) write into what np.asarray gives them, as they may with NumPy's
        # own arrays: hand out a writeable copy where the executor's host view is read-only (JAX);
        # only copy=False (no copy allowed) gets the read-only view.  Cost: benchmarks/bench_array_export.py
        if copy or (copy is None and not host.flags.writeable):
            return np.array(host, dtype=dtype, copy=True)
        return np.asarray(host, dtype=dtype)

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        buf = self._ex.dlpack_buffer(self._buf)
        if _dlpack_device_of(buf) is None:  # a device DLPack cannot name (a TPU): a host copy
            return _host_dlpack(self, stream, max_version, dl_device, copy)
        kwargs = {}
        if stream is not None:
            kwargs["stream"] = stream
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return buf.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        # where __dlpack__ exports to: the buffer's device, or the host for a device DLPack has no
        # type for (its export is a host copy)
        return _dlpack_device_of(self._ex.dlpack_buffer(self._buf)) or (_KDLCPU, 0)

    def to_device(self, device, /, *, stream=None) -> "Array":
        return _creation.asarray(self, device=device)

    def block_until_ready(self) -> "Array":
        """Wait until the value is computed and return ``self`` (as ``jax.Array.block_until_ready``):
        jax waits for its buffer, cupy for the device; numpy and numba compute before returning; dask
        stays lazy by design (nothing is computed: ``np.asarray(x)`` computes)."""
        wait = getattr(self._buf, "block_until_ready", None)
        if wait is not None:
            wait()
        elif self._ex.name == "cupy":
            self._buf.device.synchronize()
        return self

    def _scalar(self, kind, fname: str):
        if self.ndim != 0 and self.size != 1:
            raise TypeError(
                f"{fname}: only arrays with one element can be converted to a Python scalar, "
                f"got shape {self.shape}"
            )
        return kind(self._ex.to_host(self._buf).reshape(()).item())

    def __bool__(self) -> bool:
        return self._scalar(bool, "bool()")

    def __int__(self) -> int:
        if self.dtype.kind == "c":
            raise TypeError("int(): cannot convert a complex array to int; take real() or abs() first")
        v = self._ex.to_host(self._buf).reshape(()).item() if self.size == 1 else None
        if v is None:
            return self._scalar(int, "int()")
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise (ValueError if v != v else OverflowError)(f"int(): cannot convert {v} to int")
        return int(v)

    def __float__(self) -> float:
        if self.dtype.kind == "c":
            raise TypeError("float(): cannot convert a complex array to float; take real() or abs() first")
        return self._scalar(float, "float()")

    def __complex__(self) -> complex:
        return self._scalar(complex, "complex()")

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"__index__: only integer arrays can be used as an index, got {self.dtype}")
        return self._scalar(int, "__index__")

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        n = self.shape[0]
        if n is None:
            raise self._ex.unknown_size_error("len()")
        return n

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        try:
            host, summary = _printed_part(self)
            body = np.array2string(host, separator=", ", prefix="Array(",
                                   **({"threshold": 0} if summary else {}))
        except Exception as e:  # pragma: no cover - defensive: repr must not raise
            body = f"<{type(e).__name__}: {e}>"
        return f"Array({body}, dtype={self.dtype}, device={self.device.executor}:{self.device.label})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        if self.ndim != 0:  # NumPy's rule: a format spec formats one number
            raise TypeError(
                f"format(): the format spec {spec!r} applies to 0-d arrays, got shape {self.shape}; "
                f"format the elements one by one (e.g. [f'{{v:{spec}}}' for v in x]) or use numpy.array2string"
            )
        return format(self._ex.to_host(self._buf).reshape(()).item(), spec)

    def __hash__(self):
        raise TypeError("arrayx.Array is unhashable")

    # -- pickle and copy -----------------------------------------------------------
    def __reduce__(self):
        # by value: the executor is named (looked up in the registry when loading), never pickled
        return (_unpickle, (self._ex.name, self.device.label, self._ex.host_for_pickle(self._buf)))

    def __dask_tokenize__(self):
        # Dask names a task argument by its token: hash the buffer (as Dask would), never pickle it
        from dask.base import normalize_token

        return ("arrayx.Array", self._ex.name, normalize_token(self._buf))

    def __copy__(self) -> "Array":
        # a fresh buffer where buffers are written in place; immutable ones can be shared
        ex = self._ex
        buf = self._buf
        return Array._new(ex.xp.asarray(buf, copy=True) if ex.mutable else buf, ex)

    def __deepcopy__(self, memo) -> "Array":
        return self.__copy__()

    # -- indexing --------------------------------------------------------------
    def __getitem__(self, key, /) -> "Array":
        if key.__class__ is slice and self.__class__ is Array:
            # eager fast path of the commonest key, one slice, on an executor whose buffers are written
            # in place and index as NumPy's (numpy, numba): indexing.getitem's own, in this frame
            ex = self._ex
            buf = self._buf
            if ex.mutable and ex.basic_index is None and not ex.unknown_shapes and key.step != 0 and buf.ndim \
                    and _trace_now() is None and _core.eager_hook is None:
                out = buf[key]
                new = _object_new(Array)
                new._buf = out if out.__class__ is ex.array_type else ex.coerce(out)
                new._ex = ex
                return new
        return _indexing.getitem(self, key)

    def __setitem__(self, key, value, /) -> None:
        _index_updates.setitem(self, key, value)

    # -- arithmetic --------------------------------------------------------------
    # (``x + y``, ``x == y`` and the other binary operators of an elementwise function: installed
    # below the class, each with its function's eager fast path: api/_fast_paths.py)
    def __pos__(self):
        return _ew.positive(self)

    def __neg__(self):
        return _ew.negative(self)

    def __abs__(self):
        return _ew.abs(self)

    def __invert__(self):
        return _ew.bitwise_invert(self)

    def __radd__(self, other, /):
        if _getrefcount(self) == _TEMPORARY and _elide(self, _ew.add, other):  # a + b is b + a, bit for bit
            return self
        return _ew.add(other, self)

    def __iadd__(self, other, /):
        return self._inplace(_ew.add, other, "+=")

    def __rsub__(self, other, /):
        return _ew.subtract(other, self)

    def __isub__(self, other, /):
        return self._inplace(_ew.subtract, other, "-=")

    def __rmul__(self, other, /):
        if _getrefcount(self) == _TEMPORARY and _elide(self, _ew.multiply, other):
            return self
        return _ew.multiply(other, self)

    def __imul__(self, other, /):
        return self._inplace(_ew.multiply, other, "*=")

    def __rtruediv__(self, other, /):
        return _ew.divide(other, self)

    def __itruediv__(self, other, /):
        return self._inplace(_ew.divide, other, "/=")

    def __rfloordiv__(self, other, /):
        return _ew.floor_divide(other, self)

    def __ifloordiv__(self, other, /):
        return self._inplace(_ew.floor_divide, other, "//=")

    def __rmod__(self, other, /):
        return _ew.remainder(other, self)

    def __imod__(self, other, /):
        return self._inplace(_ew.remainder, other, "%=")

    def __pow__(self, other, /):
        return _ew.pow(self, other)

    def __rpow__(self, other, /):
        return _ew.pow(other, self)

    def __ipow__(self, other, /):
        return self._inplace(_ew.pow, other, "**=")

    def __matmul__(self, other, /):
        return _linalg.matmul(self, other)

    def __rmatmul__(self, other, /):
        return _linalg.matmul(other, self)

    def __imatmul__(self, other, /):
        return self._inplace(_linalg.matmul, other, "@=")

    def __rand__(self, other, /):
        return _ew.bitwise_and(other, self)

    def __iand__(self, other, /):
        return self._inplace(_ew.bitwise_and, other, "&=")

    def __ror__(self, other, /):
        return _ew.bitwise_or(other, self)

    def __ior__(self, other, /):
        return self._inplace(_ew.bitwise_or, other, "|=")

    def __rxor__(self, other, /):
        return _ew.bitwise_xor(other, self)

    def __ixor__(self, other, /):
        return self._inplace(_ew.bitwise_xor, other, "^=")

    def __rlshift__(self, other, /):
        return _ew.bitwise_left_shift(other, self)

    def __ilshift__(self, other, /):
        return self._inplace(_ew.bitwise_left_shift, other, "<<=")

    def __rrshift__(self, other, /):
        return _ew.bitwise_right_shift(other, self)

    def __irshift__(self, other, /):
        return self._inplace(_ew.bitwise_right_shift, other, ">>=")

    # -- in-place --------------------------------------------------------------------
    def _inplace(self, fn, other, op: str) -> "Array":
        if self.__class__ is Array and self._ex.mutable and _core._TRACE.get() is None:
            if _into(self, fn, other):  # NumPy's own in-place ufunc: no temporary, one pass
                return self
            result = fn(self, other)
            if result.dtype != self.dtype or result.shape != self.shape:
                self._inplace_check(result, op)  # raises, naming the difference
            buf = self._buf
            if _writeable(buf):
                if _observable(buf):
                    buf[...] = result._buf  # into the buffer, so views of it see the update (as in NumPy)
                else:  # nothing else sees this buffer (no view either): rebinding is writing
                    self._become(result)
            else:  # a read-only view (broadcast_to, ...): rebind; one made by getitem carries it to its base
                _views.functional_write(self, lambda: result)
            return self
        # immutable buffers, under a transform: rebind, atomically for self and its views and bases
        # (which see the result, as NumPy's views do: see arrayx/api/_views.py)
        _views.functional_write(self, lambda: self._inplace_result(fn, other, op))
        return self

    def _inplace_result(self, fn, other, op: str) -> "Array":
        """``fn(self, other)``, checked to keep self's dtype and shape."""
        result = fn(self, other)
        self._inplace_check(result, op)
        return result

    def _inplace_check(self, result, op: str) -> None:
        if result.dtype != self.dtype:
            raise TypeError(
                f"x {op} y: the result dtype {result.dtype} differs from x's dtype {self.dtype}; "
                f"in-place operators cannot change an array's dtype (write x = x {op[:-1]} y)"
            )
        if result.shape != self.shape:
            raise ValueError(
                f"x {op} y: the result shape {result.shape} differs from x's shape {self.shape}; "
                f"in-place operators cannot change an array's shape"
            )


def _transpose(x: Array) -> Array:
    return _manip.permute_dims(x, (1, 0))


def _writeable(buf) -> bool:
    flags = getattr(buf, "flags", None)  # NumPy's read-only views (broadcast_to, diagonal, ...)
    return flags is None or getattr(flags, "writeable", True)


# References to a buffer that only this array holds: its slot, _inplace's local, our argument
# and getrefcount's own.  A view or an exported NumPy array would add one (views keep ``.base``).
_PRIVATE_REFS = 4


def _observable(buf) -> bool:
    """Whether anything but this array can see ``buf`` (else rebinding equals writing, one pass less)."""
    return getattr(buf, "base", 0) is not None or _refcount(buf) > _PRIVATE_REFS


_refcount = getattr(sys, "getrefcount", lambda _: _PRIVATE_REFS + 1)  # no refcounts: always write


def _unpickle(executor: str, label: str, host: np.ndarray) -> Array:
    """An array of ``executor`` on its device ``label`` holding ``host`` (what Array.__reduce__ saved)."""
    from arrayx.core import executor as base

    what = f"unpickling an arrayx array of the {executor!r} executor"
    # the data passes asarray's checks: a pickle (edited, or from elsewhere) cannot make an array of
    # a dtype arrayx refuses (object, text, float16, ...), nor one of something that is not an array
    if not isinstance(host, (np.ndarray, np.generic)):
        raise TypeError(f"{what}: the saved data is a {type(host).__name__}, not a NumPy array; "
                        f"this pickle was not written by arrayx.Array.__reduce__")
    if not _dtypes.is_known(host.dtype):  # (registers bfloat16 on first sight)
        raise TypeError(f"{what}: the saved data has NumPy dtype {host.dtype}, which is not a dtype of the "
                        f"array API standard (asarray refuses it too); load it with numpy instead")
    host = np.asarray(host)
    try:
        ex = base.get(executor)
    except ValueError:
        raise RuntimeError(
            f"{what}: no executor of that name is registered here (registered: {base.registered()}); "
            f"install the package that provides it, or save the data with numpy.asarray(x) instead"
        ) from None
    if not ex.available():
        raise RuntimeError(
            f"{what}: that executor is not available here ({ex.unavailable_reason}). {ex.install_hint} "
            f"Load it where {executor!r} runs, or save the data with numpy.asarray(x) instead"
        )
    device = next((d for d in ex.devices() if d.label == label), None)
    if device is None:
        raise RuntimeError(
            f"{what}: it was saved on device {executor}:{label}, which is not here "
            f"(devices: {ex.devices()}); save it with x.to_device(...) onto a device both machines have"
        )
    buf = ex.asarray(host, device=device)
    if ex.device_of(buf) != device:  # an executor whose asarray ignores ``device``
        buf = ex.to_device(buf, device)
    return Array._new(buf, ex)


class _AtIndexer:
    __slots__ = ("_x",)

    def __init__(self, x: Array):
        self._x = x

    def __getitem__(self, key) -> "_AtRef":
        return _AtRef(self._x, key)


class _AtRef:
    """``x.at[key]``: functional updates that return new arrays (x is unchanged).

    ``mode`` is JAX's: None (NumPy's IndexError for known out-of-range indices; under
    staging, symbolic ones are clamped by ``get`` and dropped by updates), "clip",
    "fill" (``get``: ``fill_value``, default NaN / the integer minimum; updates: drop),
    "drop", "promise_in_bounds".  ``unique_indices=True`` promises no repeated index.
    """

    __slots__ = ("_x", "_key")

    def __init__(self, x: Array, key):
        self._x = x
        self._key = key

    def get(self, *, mode: str | None = None, fill_value=None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        """``x[key]`` (a new array, never a view); ``mode`` "clip", or "fill" / "drop" (with
        ``fill_value``) for out-of-range indices, integers included."""
        return _indexing.at_get(self._x, self._key, mode, fill_value)

    def apply(self, fn, *, mode: str | None = None, indices_are_sorted: bool = False,
              unique_indices: bool = False) -> Array:
        """x with ``fn`` (a unary arrayx function) applied at ``key``; repeated indices apply it
        repeatedly (JAX's ``x.at[key].apply``)."""
        return _index_updates.at_apply(self._x, self._key, fn, mode, unique_indices=unique_indices)

    def set(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        return self._update("set", values, mode, indices_are_sorted, unique_indices)

    def add(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        return self._update("add", values, mode, indices_are_sorted, unique_indices)

    def subtract(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False) -> Array:
        return self._update("subtract", values, mode, indices_are_sorted, unique_indices)

    def multiply(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False) -> Array:
        return self._update("multiply", values, mode, indices_are_sorted, unique_indices)

    def divide(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
               unique_indices: bool = False) -> Array:
        return self._update("divide", values, mode, indices_are_sorted, unique_indices)

    def power(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
              unique_indices: bool = False) -> Array:
        return self._update("power", values, mode, indices_are_sorted, unique_indices)

    def min(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        return self._update("min", values, mode, indices_are_sorted, unique_indices)

    def max(self, values, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Array:
        return self._update("max", values, mode, indices_are_sorted, unique_indices)

    def _update(self, op, values, mode, indices_are_sorted, unique_indices) -> Array:
        return _index_updates.at_update(self._x, self._key, values, op, mode,
                                   indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


#: elementwise function -> the operator that computes it on an Array (``x + y``: ``__add__``)
_OPERATOR_OF = {"add": "__add__", "subtract": "__sub__", "multiply": "__mul__", "divide": "__truediv__",
                "floor_divide": "__floordiv__", "remainder": "__mod__", "bitwise_and": "__and__",
                "bitwise_or": "__or__", "bitwise_xor": "__xor__", "bitwise_left_shift": "__lshift__",
                "bitwise_right_shift": "__rshift__", "equal": "__eq__", "not_equal": "__ne__", "less": "__lt__",
                "less_equal": "__le__", "greater": "__gt__", "greater_equal": "__ge__"}


# The namespace modules the methods route through (imported last: they import Array).
from arrayx.api import creation as _creation  # noqa: E402
from arrayx.api import elementwise as _ew  # noqa: E402
from arrayx.api import indexing as _indexing  # noqa: E402
from arrayx.api import _index_updates  # noqa: E402
from arrayx.api import _views  # noqa: E402
from arrayx.api import linalg as _linalg  # noqa: E402
from arrayx.api import manipulation as _manip  # noqa: E402
from arrayx.api import _numpy_dispatch  # noqa: E402
from arrayx.api import _numpy_methods  # noqa: E402
from arrayx.api import _fast_paths  # noqa: E402
from arrayx.core import primitives as _core  # noqa: E402
from arrayx.core import tracers as _tracers  # noqa: E402

_trace_now = _core._TRACE.get  # the active trace, None when eager (bound once: __getitem__ calls it)

_numpy_methods.install()  # NumPy's methods (astype, max, ...) in the default mode, none in strict

# The binary operators of the elementwise functions (``x + y`` is ``add(x, y)``), each with its function's
# eager fast path in its own frame (api/_fast_paths.py; ``x + y`` was four frames); the four with temporary
# elision (``_inplace._elide``) keep it for the results large enough to use it.  The reflected and in-place
# forms are written in the class body.
for _name, _elides in (("add", True), ("subtract", True), ("multiply", True), ("divide", True),
                       ("floor_divide", False), ("remainder", False), ("bitwise_and", False),
                       ("bitwise_or", False), ("bitwise_xor", False), ("bitwise_left_shift", False),
                       ("bitwise_right_shift", False), ("equal", False), ("not_equal", False),
                       ("less", False), ("less_equal", False), ("greater", False), ("greater_equal", False)):
    _dunder = _OPERATOR_OF[_name]
    setattr(Array, _dunder, _fast_paths.operator(_name, _elides, _dunder))
del _name, _elides, _dunder


def _printed_part(x: Array) -> tuple:
    """``(host array, summarised)``: what ``repr`` prints of ``x``, moving only that to the host.

    Above NumPy's print threshold only ``edgeitems`` at each end of each long axis are shown; those,
    plus one middle element that keeps the axis long enough to be elided, are sliced out on the
    executor first (a lazy Dask array computes only the blocks they touch).  NumPy formats a
    summarised array from its edges alone, so the text is the same as for the whole array.
    """
    opts = np.get_printoptions()
    size, edge = x.size, opts["edgeitems"]
    if size is None or size <= opts["threshold"]:
        return np.asarray(x._ex.to_host(x._buf)), False
    if hasattr(x._ex, "summary_to_host"):  # an executor that computes only what is shown (Dask)
        return np.asarray(x._ex.summary_to_host(x._buf, edge)), True
    buf = x._buf
    for axis, n in enumerate(buf.shape):
        if n > 2 * edge + 1:
            lead = (slice(None),) * axis
            buf = x._ex.xp.concat([buf[lead + (slice(0, edge),)], buf[lead + (slice(n // 2, n // 2 + 1),)],
                                   buf[lead + (slice(n - edge, n),)]], axis=axis)
    return np.asarray(x._ex.to_host(buf)), True


# -- what help(arrayx.Array) says of the methods written without a docstring above --------------------
# (one table: the operators are one-liners over the namespace's functions, so their doc is that function)
_OPERATORS = {
    "pos": ("+x", "positive"), "neg": ("-x", "negative"), "abs": ("abs(x)", "abs"),
    "invert": ("~x", "bitwise_invert"), "add": ("x + y", "add"), "sub": ("x - y", "subtract"),
    "mul": ("x * y", "multiply"), "truediv": ("x / y", "divide"), "floordiv": ("x // y", "floor_divide"),
    "mod": ("x % y", "remainder"), "pow": ("x ** y", "pow"), "matmul": ("x @ y", "matmul"),
    "and": ("x & y", "bitwise_and"), "or": ("x | y", "bitwise_or"), "xor": ("x ^ y", "bitwise_xor"),
    "lshift": ("x << y", "bitwise_left_shift"), "rshift": ("x >> y", "bitwise_right_shift"),
    "eq": ("x == y", "equal"), "ne": ("x != y", "not_equal"), "lt": ("x < y", "less"),
    "le": ("x <= y", "less_equal"), "gt": ("x > y", "greater"), "ge": ("x >= y", "greater_equal"),
}
_METHOD_DOCS = {
    "__array_ufunc__": "NumPy ufuncs on arrayx arrays run as the arrayx function and return arrayx arrays.",
    "__array_function__": "NumPy functions with an arrayx counterpart run as it; others run on NumPy copies.",
    "__init__": "Not called: arrays come from arrayx.asarray and the other functions (TypeError).",
    "dtype": "The data type (a NumPy dtype: ``arrayx.float32 == numpy.dtype('float32')``).",
    "shape": "The shape, a tuple of ints (None for a dimension only known after computing, on Dask).",
    "ndim": "The number of dimensions.",
    "size": "The number of elements (None when a dimension is unknown).",
    "device": "The device holding the array (``Device('numpy:cpu')``, ``Device('jax:cpu:0')`` ...).",
    "mT": "The transpose of the last two axes (a view: writes through it reach this array).",
    "T": "The transpose of a 2-D array (a view; ValueError for other ranks: use ``mT``).",
    "__array_namespace__": "The ``arrayx`` module (``api_version``: one of SUPPORTED_API_VERSIONS or None).",
    "__array__": "The values as a NumPy array (a writeable copy where the executor's host view is read-only).",
    "__dlpack__": ("A DLPack capsule of the buffer (a host copy where the executor's library has none, or where "
                   "DLPack has no device type for its device: a TPU's; copy=False then raises BufferError)."),
    "__dlpack_device__": "The ``(device type, device id)`` pair of DLPack: where ``__dlpack__`` exports to.",
    "to_device": "This array on another device or executor (``'jax'``, ``'numba:cpu'``, a Device).",
    "__bool__": "The value of a one-element array as a bool (ConcretizationError under jit: use cond/where).",
    "__int__": "The value of a one-element array as an int.",
    "__float__": "The value of a one-element array as a float.",
    "__complex__": "The value of a one-element array as a complex.",
    "__index__": "The value of an integer one-element array, for use as an index.",
    "__len__": "The length of the first axis (TypeError for a 0-d array).",
    "__iter__": "Iterates over the first axis (a 0-d array: TypeError).",
    "__repr__": "``Array([...], dtype=..., device=...)``, summarised as NumPy's for large arrays.",
    "__str__": "The values as NumPy prints them.",
    "__format__": "Formats a one-element array as its Python scalar (``f'{x:.3f}'``).",
    "__hash__": "None: arrays are mutable, so not hashable.",
    "__reduce__": "Pickles by value: the executor's name, the device and the host data.",
    "__dask_tokenize__": "A Dask token for this array (its buffer's identity).",
    "__copy__": "A new array with a copy of the buffer (immutable buffers are shared).",
    "__deepcopy__": "As ``__copy__``.",
    "__getitem__": "``x[key]``: basic (a view), integer-array and boolean-mask indexing (``arrayx.take`` ...).",
    "__setitem__": "``x[key] = value``: in place on mutable executors, functionalised under transforms.",
    "_scalar": "The value of a one-element array as the Python type ``kind`` (used by bool/int/float).",
    "_inplace": "``x op= y``: the result of ``fn`` rebound into this wrapper (functionalised).",
    "_inplace_check": "The checks an in-place operator makes (dtype kept, shape kept) before computing.",
}


def _document_methods() -> None:
    for op, (expr, fn) in _OPERATORS.items():
        left, _, right = expr.partition(" ")
        for name, form in ((f"__{op}__", expr), (f"__r{op}__", f"y {expr[2:-2]} x"),
                           (f"__i{op}__", f"{left} {right.replace(' ', '= ', 1)}")):
            _METHOD_DOCS.setdefault(name, f"``{form}``: :func:`arrayx.{fn}`.")
    for name, doc in _METHOD_DOCS.items():
        member = Array.__dict__.get(name)
        target = member.fget if isinstance(member, property) else member
        if target is not None and not getattr(target, "__doc__", None):
            try:
                target.__doc__ = doc
            except (AttributeError, TypeError):  # a slot wrapper or a builtin: left as it is
                pass
        if isinstance(member, property) and not member.__doc__:
            setattr(Array, name, property(member.fget, member.fset, member.fdel, doc))


_document_methods()
