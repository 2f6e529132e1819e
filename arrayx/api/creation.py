"""Creation functions (the standard's "Creation Functions" category).

Functions without array inputs run on the executor chosen by ``device=`` or the
selection rules (``arrayx.core.executor``); ``*_like``, ``tril``/``triu`` and
``meshgrid`` follow their array arguments and bind primitives, so they work
under transforms.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from arrayx.api import _device_dtypes, _dtypes
from arrayx.api._array import Array
from arrayx.api._checks import array_arg, check_size, int_arg, shape_arg, with_article
from arrayx.core import executor as _exec
from arrayx.core import primitives as _prims
from arrayx.core.primitives import Primitive, _TRACE
from arrayx.core.executor import GENERIC

__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
]


def _defaults(ex, dev):
    """The default dtypes of ``dev`` of ``ex`` (None: its default device), ``api/_device_dtypes.py``."""
    dd = ex.device_dtypes if dev is None else None  # for_device's first step, inline (hot path)
    return dd if dd is not None else _device_dtypes.for_device(ex, dev)


def _dtype_arg(fname: str, dtype, ex, dev):
    """An explicit ``dtype`` (checked against the device's 64-bit setting), else the device's
    default real floating dtype."""
    dd = ex.device_dtypes if dev is None else None  # _defaults, inline (zeros, ones: hot path)
    if dd is None:
        dd = _device_dtypes.for_device(ex, dev)
    if dtype is None:
        return dd.real
    dt = _dtypes.as_dtype(dtype, fname)
    return dt if dd.native64 else _device_dtypes.requested(dt, dd, ex, dev, fname)


def _place(ex, buf, device):
    if device is not None and device != ex.default_device():
        buf = ex.to_device(buf, device)
    return Array._new(buf, ex)


def _host_array(obj, dtype, dd=_device_dtypes.STANDARD):
    """Host (NumPy) array of nested Python data with the default dtypes of the device (``dd``)."""
    if dtype is None:
        a = np.asarray(obj)
        if a.dtype.kind in "US":
            raise _text_error(obj, a.dtype)
        if a.dtype.kind == "O":
            raise TypeError(f"asarray: cannot make an array from {type(obj).__name__} of mixed/unsupported objects")
        if a.dtype.kind == "f" and a.dtype != _dtypes.float64 and not isinstance(obj, np.ndarray):
            a = a.astype(_dtypes.DEFAULT_FLOAT)
        if not _dtypes.is_known(a.dtype):  # (registers bfloat16 on first sight)
            raise TypeError(f"asarray: dtype {a.dtype} is not a dtype of the array API standard")
        if not dd.native64 and a.dtype in dd.narrow:
            a = _narrow_defaults(a, dd.narrow[a.dtype])
        return a
    try:
        return np.asarray(obj, dtype=dtype)
    except ValueError as e:  # strings that are not numbers: NumPy's wording, after the function's name
        raise ValueError(f"asarray: {e}") from None


def _narrow_defaults(a: np.ndarray, to: np.dtype) -> np.ndarray:
    """Python numbers NumPy read as 64-bit, in a 32-bit device's default of their kind (the
    standard's default dtype there, not a downcast of 64-bit data); integers that do not fit raise."""
    if to.kind in "iu" and a.size:
        info = np.iinfo(to)
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            raise OverflowError(
                f"asarray: the Python integers {lo}..{hi} are out of range for {to}, this device's default "
                f"integer; pass dtype=arrayx.int64 under arrayx.tpu_64bit('emulate')")
    return a.astype(to)


def _contains_arrays(obj) -> bool:
    if isinstance(obj, Array):
        return True
    if isinstance(obj, (list, tuple)):
        return builtins.any(_contains_arrays(o) for o in obj)
    return False


def asarray(obj, /, *, dtype=None, device=None, copy: bool | None = None) -> Array:
    """Convert arrays (arrayx, NumPy, DLPack-capable), Python scalars and nested sequences."""
    if obj.__class__ is Array and dtype is None and not copy and (
            device is None or (device.__class__ is _exec.Device and device == obj.device)):
        return obj  # already what is asked for (clients call xp.asarray(x, device=x.device) per op)
    dtype = None if dtype is None else _dtypes.as_dtype(dtype, "asarray")
    if isinstance(obj, Array):
        return _from_arrayx(obj, dtype, device, copy)
    ex, dev = _exec.resolve_device(device, "asarray")
    dd = ex.device_dtypes if dev is None else None  # _defaults, inline (hot path)
    if dd is None:
        dd = _device_dtypes.for_device(ex, dev)
    if dtype is not None and not dd.native64:
        dtype = _device_dtypes.requested(dtype, dd, ex, dev, "asarray")
    if isinstance(obj, (bool, int, float, complex)):
        dt = dtype or dd.scalar_dtype(obj)
        if dt.kind in "iu" and isinstance(obj, int):
            info = np.iinfo(dt)
            if not info.min <= obj <= info.max:
                raise OverflowError(f"asarray: the Python integer {obj} is out of range for {dt}")
        if dt.kind in "iub" and isinstance(obj, float):
            raise TypeError(f"asarray: cannot convert the float {obj!r} to {dt} exactly; pass dtype explicitly as a float dtype")
        return _place(ex, ex.asarray(np.asarray(obj, dtype=dt), copy=None), dev)
    if isinstance(obj, str) or (isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind in "US"):
        return _from_text(obj, dtype, device, copy)
    if isinstance(obj, (list, tuple)) and _contains_arrays(obj):
        from arrayx.api.manipulation import stack

        parts = [asarray(o, dtype=dtype, device=device) for o in obj]
        return stack(parts)
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
        if not _dtypes.is_known(obj.dtype):  # (registers bfloat16 on first sight)
            raise TypeError(f"asarray: NumPy dtype {obj.dtype} is not a dtype of the array API standard")
        if dtype is None and not dd.native64:  # 64-bit data on a device without 64-bit types: the setting
            dtype = _device_dtypes.arriving(obj.dtype, dd, ex, dev, "asarray")
            dtype = None if dtype == obj.dtype else dtype
        if ex.name == "numpy":
            return _place(ex, ex.asarray(np.asarray(obj), dtype=dtype, copy=copy), dev)
        if copy is False:
            raise ValueError(f"asarray: copy=False, but moving a NumPy array to the {ex.name!r} executor copies")
        if dtype is not None and isinstance(obj, np.ndarray) and ex.casts_while_copying(obj, dtype):
            return _place(ex, ex.asarray(obj, dtype=dtype, copy=True), dev)  # one pass over the data
        return _place(ex, ex.asarray(np.asarray(obj, dtype=dtype)), dev)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        out = from_dlpack(obj, device=device, copy=copy)
        return out if dtype is None or out.dtype == dtype else _from_arrayx(out, dtype, None, False)
    if isinstance(obj, (list, tuple)):
        return _place(ex, ex.asarray(_host_array(obj, dtype, dd)), dev)
    if hasattr(obj, "__array__") or hasattr(obj, "__array_interface__") or isinstance(obj, (bytes, bytearray, memoryview)):
        host = np.asarray(obj) if not isinstance(obj, (bytes, bytearray)) else np.frombuffer(obj, dtype=np.uint8)
        return asarray(host, dtype=dtype, device=device, copy=copy)
    raise TypeError(
        f"asarray: cannot convert {type(obj).__name__} to an arrayx array; expected a Python scalar, "
        f"a nested sequence, a NumPy array or an object supporting DLPack"
    )


def _from_text(obj, dtype, device, copy) -> Array:
    """Strings: with a numeric ``dtype`` NumPy parses them (its values and its errors, e.g.
    "could not convert string to float: 'abc'"); without one there is no standard dtype for text."""
    if dtype is None:
        raise _text_error(obj, np.asarray(obj).dtype)
    try:
        host = np.asarray(obj, dtype=dtype)
    except ValueError as e:  # NumPy's wording kept, after the function's name
        raise ValueError(f"asarray: {e}") from None
    return asarray(host, device=device, copy=copy)


def _text_error(obj, kind) -> TypeError:
    return TypeError(
        f"asarray: cannot make an array of strings ({type(obj).__name__}, NumPy dtype {kind}): Unsupported dtype, "
        f"text is not a dtype of the array API standard; pass a numeric dtype= to parse numbers from strings, as NumPy does"
    )


def _from_arrayx(x: Array, dtype, device, copy) -> Array:
    from arrayx.api.data_types import astype

    if device is not None:
        ex, dev = _exec.resolve_device(device, "asarray")
        dd = _defaults(ex, dev)
        if not dd.native64 and (x.dtype in _device_dtypes.WIDE or dtype in _device_dtypes.WIDE):
            # the device's 64-bit setting; converted before moving, so 64-bit never lands there
            if dtype is not None:
                dtype = _device_dtypes.requested(dtype, dd, ex, dev, "asarray")
            elif _device_dtypes.for_array(x) is not dd:
                dtype = _device_dtypes.arriving(x.dtype, dd, ex, dev, "asarray")
            if dtype is not None and dtype != x.dtype:
                x = astype(x, dtype)
        if ex != (x._ex if x.__class__ is Array else _exec.get(x.device.executor)):  # a tracer: its executor
            if copy is False:
                raise ValueError(
                    f"asarray: copy=False, but moving from the {x._ex.name!r} executor to {ex.name!r} copies"
                )
            buf = ex.from_foreign(x._buf, x._ex)
            x = _place(ex, buf, dev)
            copy = False  # already a fresh buffer
        elif dev is not None and dev != x.device:
            if copy is False:
                raise ValueError(f"asarray: copy=False, but moving to {dev} copies")
            x = Array._new(ex.to_device(x._buf, dev), ex)
            copy = False
    if dtype is not None and dtype != x.dtype:
        if copy is False:
            raise ValueError(f"asarray: copy=False, but converting {x.dtype} to {dtype} copies")
        return astype(x, dtype)
    if copy:
        return astype(x, x.dtype, copy=True)
    return x


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Array:
    """An arrayx array sharing memory with a DLPack-capable array where the executor allows."""
    if isinstance(x, Array):
        return _from_arrayx(x, None, device, copy)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not support DLPack (__dlpack__)")
    ex, dev = _exec.resolve_device(device, "from_dlpack")
    out = _place(ex, ex.from_dlpack(x, copy=copy), dev)
    dd = _defaults(ex, dev)
    if not dd.native64 and out.dtype in _device_dtypes.WIDE:  # the device's 64-bit setting
        to = _device_dtypes.arriving(out.dtype, dd, ex, dev, "from_dlpack")
        if to != out.dtype:
            from arrayx.api.data_types import astype

            out = astype(out, to)
    return out


# -- functions without array inputs (nullary primitives: they stage as ops, not constants) ------
#
# Their params name the Device the result lives on (resolved when the function is called, as
# eagerly), so eager bind and a staged graph agree; ``_build`` makes the buffer on a given
# executor, which jit's lowering calls for the executor it compiles for.

full_p = Primitive("full")  # zeros, ones, empty, full
arange_p = Primitive("arange")
eye_p = Primitive("eye")
linspace_p = Primitive("linspace")

_BUILDERS = {
    "full": lambda xp, *, shape, fill_value, dtype: (
        xp.empty(shape, dtype=dtype) if fill_value is None else xp.full(shape, fill_value, dtype=dtype)),
    "arange": lambda xp, *, start, stop, step, dtype, shape: (
        xp.arange(start, stop, step, dtype=dtype) if dtype.kind in "iu" else
        _float_arange(xp, start, stop, step, dtype) if _dtypes.kind_of(dtype) == "f" else
        xp.astype(_float_arange(xp, start, stop, step, _dtypes.REAL_OF[dtype]), dtype)),
    "eye": lambda xp, *, shape, k, dtype: xp.eye(shape[0], shape[1], k=k, dtype=dtype),
    "linspace": lambda xp, *, start, stop, endpoint, dtype, shape: xp.asarray(_host_linspace(start, stop, shape[0], endpoint, dtype)),
}


def _build(ex, prim, params: dict):
    """``prim``'s buffer made by executor ``ex`` and placed on ``params["device"]``."""
    device = params["device"]
    rest = {k: v for k, v in params.items() if k != "device"}
    buf = _BUILDERS[prim.name](ex.xp, **rest)
    if device.executor != ex.name:  # staged for another executor's device: jit copies constants over
        return ex.from_foreign(_build(_exec.get(device.executor), prim, params), _exec.get(device.executor))
    return buf if device == ex.default_device() else ex.to_device(buf, device)


def _define_nullary(prim):
    GENERIC[prim.name] = lambda _p=prim, **params: _build(_exec.get(params["device"].executor), _p, params)
    prim.lowerings["*"] = lambda ex, params, _p=prim: (lambda: _build(ex, _p, params))


for _prim in (full_p, arange_p, eye_p, linspace_p):
    _define_nullary(_prim)


def _creation(fname, prim, ex, dev, shape: tuple, dtype, **params):
    check_size(fname, shape, dtype, ex)  # before the executor: XLA aborts the process on overflow
    if ex.name == "numpy" and prim is full_p and (dev is None or dev == ex.default_device()) \
            and _TRACE.get() is None and _prims.eager_hook is None:
        # eager on the NumPy executor's default device: NumPy's own function, which is what the
        # primitive's builder calls there, without the dispatch (zeros((4, 5)): 5.7 -> ~2 us)
        fill = params["fill_value"]
        if fill is None:
            buf = np.empty(shape, dtype)
        elif fill is False or (fill.__class__ is int and fill == 0):  # (not a float 0: -0.0 fills with -0.0)
            buf = np.zeros(shape, dtype)
        else:
            buf = np.full(shape, fill, dtype)
        return _prims._wrap(buf, ex)
    return prim.bind(shape=shape, dtype=dtype, device=ex.default_device() if dev is None else dev, **params)


def zeros(shape, *, dtype=None, device=None) -> Array:
    """An array of zeros (the device's default float dtype unless ``dtype``)."""
    shape = shape_arg("zeros", shape)
    ex, dev = _exec.resolve_device(device, "zeros")
    dt = _dtype_arg("zeros", dtype, ex, dev)
    return _creation("zeros", full_p, ex, dev, shape, dt, fill_value=False if dt == _dtypes.bool else 0)


def ones(shape, *, dtype=None, device=None) -> Array:
    """An array of ones (the device's default float dtype unless ``dtype``)."""
    shape = shape_arg("ones", shape)
    ex, dev = _exec.resolve_device(device, "ones")
    dt = _dtype_arg("ones", dtype, ex, dev)
    return _creation("ones", full_p, ex, dev, shape, dt, fill_value=True if dt == _dtypes.bool else 1)


def empty(shape, *, dtype=None, device=None) -> Array:
    """An uninitialised array (zeros on executors that cannot leave memory uninitialised)."""
    shape = shape_arg("empty", shape)
    ex, dev = _exec.resolve_device(device, "empty")
    dt = _dtype_arg("empty", dtype, ex, dev)
    return _creation("empty", full_p, ex, dev, shape, dt, fill_value=None)


def _fill_dtype(fname, fill_value, dtype, dd=_device_dtypes.STANDARD):
    if not isinstance(fill_value, (bool, int, float, complex)):
        if isinstance(fill_value, Array) and fill_value.ndim == 0:
            fill_value = fill_value._ex.to_host(fill_value._buf).item()
        else:
            raise TypeError(f"{fname}: fill_value must be a Python scalar, got {type(fill_value).__name__}")
    dt = dd.scalar_dtype(fill_value) if dtype is None else _dtypes.as_dtype(dtype, fname)
    if isinstance(fill_value, float) and dt.kind in "biu":
        fill_value = _float_fill_as_numpy(fname, fill_value, dt)
    if dt.kind in "iu" and isinstance(fill_value, int) and not isinstance(fill_value, bool):
        info = np.iinfo(dt)
        if not info.min <= fill_value <= info.max:
            raise OverflowError(f"{fname}: fill_value {fill_value} is out of range for {dt}")
    if dt.kind in "biu" and isinstance(fill_value, (float, complex)):
        raise TypeError(f"{fname}: cannot fill {with_article(dt)} array with the {type(fill_value).__name__} {fill_value!r}")
    if dt.kind == "f" and isinstance(fill_value, complex):
        raise TypeError(f"{fname}: cannot fill {with_article(dt)} array with the complex {fill_value!r}")
    return fill_value, dt


def _float_fill_as_numpy(fname, fill_value: float, dt):
    """A float fill of a bool or integer array, which the standard leaves unspecified: NumPy 2's,
    JAX's and array-api-strict's cast in both modes (truncation toward zero; nonzero is True).  A
    value they would turn into an arbitrary integer (NaN, infinities) is refused instead."""
    if dt.kind == "b":
        return bool(fill_value)
    if not math.isfinite(fill_value):
        raise ValueError(f"{fname}: cannot fill {with_article(dt)} array with {fill_value!r}; "
                         "it has no integer value")
    return int(fill_value)  # then range-checked like an int fill


def full(shape, fill_value, *, dtype=None, device=None) -> Array:
    """An array filled with ``fill_value`` (dtype inferred from the Python scalar)."""
    shape = shape_arg("full", shape)
    ex, dev = _exec.resolve_device(device, "full")
    dd = _defaults(ex, dev)
    fill_value, dt = _fill_dtype("full", fill_value, dtype, dd)
    if dtype is not None and not dd.native64:
        dt = _device_dtypes.requested(dt, dd, ex, dev, "full")
    return _creation("full", full_p, ex, dev, shape, dt, fill_value=fill_value)


def _number_arg(fname: str, name: str, v, kinds: str = "iuf"):
    """``v`` as a Python number: Python scalars as they are, 0-d arrays (arrayx or NumPy, e.g.
    ``arange(1, n + 1)`` with a 0-d ``n``) and NumPy scalars by value (an int for integer and bool
    dtypes, a float or complex for the others).  ``kinds``: the dtype kinds allowed."""
    if isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic):
        number = v
    elif isinstance(v, (Array, np.ndarray, np.generic)) and v.ndim == 0:
        kind = v.dtype.kind
        number = (int if kind in "biu" else float if kind == "f" else complex)(v)
    elif isinstance(v, (Array, np.ndarray)):
        raise TypeError(f"{fname}: {name} must be a scalar or a 0-d array, got an array of shape {v.shape}")
    else:
        raise TypeError(f"{fname}: {name} must be a number, got {type(v).__name__}")
    if isinstance(number, complex) and "c" not in kinds:
        raise TypeError(f"{fname}: {name} must be an int or a float, got the complex {number!r}")
    return number


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Array:
    """Evenly spaced values in [start, stop) with ``step``.

    ``start``, ``stop`` and ``step`` are Python ints or floats, or 0-d arrays (taken by value, as
    NumPy does).  ``dtype`` may be an integer, real or complex floating dtype: a complex range is
    the real one (NumPy's values, computed in the matching real dtype) with zero imaginary parts.
    """
    start = _number_arg("arange", "start", start)
    stop = None if stop is None else _number_arg("arange", "stop", stop)
    step = _number_arg("arange", "step", step)
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if stop is None:
        start, stop = 0, start
    ex, dev = _exec.resolve_device(device, "arange")
    dd = _defaults(ex, dev)
    if dtype is None:
        dt = dd.real if builtins.any(isinstance(v, float) for v in (start, stop, step)) else dd.integral
    else:
        dt = _dtypes.as_dtype(dtype, "arange")
        if not dd.native64:
            dt = _device_dtypes.requested(dt, dd, ex, dev, "arange")
    if dt.kind in "iu" and builtins.any(isinstance(v, float) for v in (start, stop, step)):
        raise TypeError(f"arange: float arguments with integer dtype {dt}; pass ints or a float dtype")
    if dt.kind in "iu":
        size = (max(0, -((start - stop) // step)),)  # ceil((stop - start) / step), exact for any size
        return _creation("arange", arange_p, ex, dev, size, dt, start=start, stop=stop, step=step)
    if _dtypes.kind_of(dt) not in "fc":  # bfloat16's NumPy kind is "V"
        raise TypeError(f"arange: dtype must be an integer, real or complex floating dtype, got {dt}")
    span = (stop - start) / step  # NumPy's length is ceil(span)
    if not math.isfinite(span):
        raise ValueError(f"arange: [{start}, {stop}) in steps of {step} has infinitely many values; pass finite bounds")
    size = (max(0, math.ceil(span)),)
    return _creation("arange", arange_p, ex, dev, size, dt, start=start, stop=stop, step=step)


_HOST_ARANGE_MAX = 4096  # float aranges up to this length are built on the host and copied


def _float_arange(xp, start, stop, step, dt):
    """A float arange with NumPy's exact values, built by the executor (lazily on Dask).

    NumPy fills ``[start, start + step, start + 2*delta, ...]`` with ``delta = (start + step) - start``
    and ``start + i*delta`` evaluated in float64; the same formula in separate executor operations
    (no fused multiply-add) gives the same bits on every executor, without sending n values from
    the host.  Short ranges are cheaper to build on the host.
    """
    span = (stop - start) / step  # NumPy's length is ceil(span), in Python floats
    if not math.isfinite(span) or span <= _HOST_ARANGE_MAX:  # (NumPy reports bad spans)
        return xp.asarray(np.arange(start, stop, step, dtype=np.float64).astype(dt))
    after = start + step
    delta = after - start
    i = xp.arange(math.ceil(span), dtype=_dtypes.DEFAULT_INT)
    values = xp.astype(i, _dtypes.float64) * delta + float(start)
    values = xp.where(i == 1, after, values)  # element 1 is start + step itself, as in NumPy
    return xp.astype(values, dt)


def eye(n_rows, n_cols=None, /, *, k: int = 0, dtype=None, device=None) -> Array:
    """A 2-D array with ones on the k-th diagonal."""
    n_rows = shape_arg("eye", n_rows)[0]
    n_cols = n_rows if n_cols is None else shape_arg("eye", n_cols)[0]
    ex, dev = _exec.resolve_device(device, "eye")
    dt = _dtype_arg("eye", dtype, ex, dev)
    return _creation("eye", eye_p, ex, dev, (n_rows, n_cols), dt, k=int_arg("eye", k, "k"))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint: bool = True) -> Array:
    """``num`` evenly spaced samples over [start, stop] (or [start, stop) without endpoint).

    ``start``/``stop``: Python numbers or 0-d arrays (by value).  The samples are NumPy's,
    computed in double (complex double) precision, then cast to ``dtype``.  Beyond the standard
    (which asks for a floating dtype) integer and bool dtypes are accepted with NumPy's meaning:
    integers are the samples rounded down (``floor``: ``linspace(-1, 1, 5, dtype=int8)`` is
    ``[-1, -1, 0, 0, 1]``), bool is ``sample != 0``; samples outside an integer dtype's range
    raise ``OverflowError`` (NumPy wraps them).
    """
    start = _number_arg("linspace", "start", start, "iufc")
    stop = _number_arg("linspace", "stop", stop, "iufc")
    num = shape_arg("linspace", num)[0]
    ex, dev = _exec.resolve_device(device, "linspace")
    dd = _defaults(ex, dev)
    if dtype is None:
        dt = dd.complex if builtins.any(isinstance(v, complex) for v in (start, stop)) else dd.real
    else:
        dt = _dtypes.as_dtype(dtype, "linspace")
        if not dd.native64:
            dt = _device_dtypes.requested(dt, dd, ex, dev, "linspace")
        if dt.kind != "c" and builtins.any(isinstance(v, complex) for v in (start, stop)):
            raise TypeError(f"linspace: complex start/stop need a complex dtype, got {dt}")
    check_size("linspace", (num,), dt, _exec.get("numpy"),  # the values are computed on the host first
               where=f"in host memory (linspace computes the values there for the {ex.name!r} executor)")
    if dt.kind in "iu" and num:
        with np.errstate(invalid="ignore"):
            ends = np.floor(np.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64)[[0, -1]])
        info = np.iinfo(dt)
        if not builtins.all(np.isfinite(ends)) or not info.min <= ends.min() <= ends.max() <= info.max:
            raise OverflowError(
                f"linspace: samples from {start} to {stop} do not fit {dt} (range {info.min}..{info.max}); "
                f"pass a wider integer dtype or a floating dtype")
    return _creation("linspace", linspace_p, ex, dev, (num,), dt, start=start, stop=stop, endpoint=bool(endpoint))


def _host_linspace(start, stop, num, endpoint, dt):
    """NumPy's values (computed in double or complex double on the host), then cast: the same bits
    everywhere.  Integer dtypes take the floor first, as NumPy does."""
    host = np.linspace(start, stop, num, endpoint=endpoint, dtype=_dtypes.COMPLEX_OF.get(dt, dt) if dt.kind == "c" else np.float64)
    if dt.kind in "iu":
        host = np.floor(host)
    return host.astype(dt)


# -- functions of arrays (bind primitives) ------------------------------------

full_like_p = Primitive("full_like")
tril_p = Primitive("tril")
triu_p = Primitive("triu")


def full_like(x, /, fill_value, *, dtype=None, device=None) -> Array:
    """An array shaped like x, filled with ``fill_value``."""
    x = array_arg("full_like", x)
    if isinstance(fill_value, Array):  # a traced scalar: make_graph/jit of full_like(x, s)
        return _full_like_traced(x, fill_value, dtype, device)
    fill_value, dt = _fill_dtype("full_like", fill_value, x.dtype if dtype is None else dtype)
    if dtype is not None and dt in _device_dtypes.WIDE:
        dd = _device_dtypes.for_array(x)
        if not dd.native64:
            dt = _device_dtypes.requested(dt, dd, x._ex, x.device, "full_like")
    out = full_like_p.bind(x, fill_value=fill_value, dtype=dt)
    return out if device is None else out.to_device(device)


def _full_like_traced(x, fill_value, dtype, device):
    from arrayx.api.data_types import astype
    from arrayx.api.manipulation import broadcast_to

    if fill_value.ndim != 0:
        raise ValueError(f"full_like: fill_value must be a scalar, got an array of shape {fill_value.shape}")
    dt = x.dtype if dtype is None else _dtypes.as_dtype(dtype, "full_like")
    if dtype is None and x.dtype.kind in "biuf" and fill_value.dtype.kind == "c":
        raise TypeError(f"full_like: cannot fill {with_article(x.dtype)} array with a complex value; pass dtype")
    out = broadcast_to(astype(fill_value, dt), tuple(x.shape))
    return out if device is None else out.to_device(device)


def zeros_like(x, /, *, dtype=None, device=None) -> Array:
    """Zeros shaped like x."""
    x = array_arg("zeros_like", x)
    return full_like(x, False if (dtype or x.dtype) == _dtypes.bool else 0, dtype=dtype, device=device)


def ones_like(x, /, *, dtype=None, device=None) -> Array:
    """Ones shaped like x."""
    x = array_arg("ones_like", x)
    return full_like(x, True if (dtype or x.dtype) == _dtypes.bool else 1, dtype=dtype, device=device)


def empty_like(x, /, *, dtype=None, device=None) -> Array:
    """An uninitialised array shaped like x (zeros here)."""
    return zeros_like(x, dtype=dtype, device=device)


def tril(x, /, *, k: int = 0) -> Array:
    """Lower triangle of the last two dimensions (entries above diagonal k zeroed)."""
    x = array_arg("tril", x)
    if x.ndim < 2:
        raise ValueError(f"tril: x must have at least 2 dimensions, got shape {x.shape}")
    return tril_p.bind(x, k=int_arg("tril", k, "k"))


def triu(x, /, *, k: int = 0) -> Array:
    """Upper triangle of the last two dimensions (entries below diagonal k zeroed)."""
    x = array_arg("triu", x)
    if x.ndim < 2:
        raise ValueError(f"triu: x must have at least 2 dimensions, got shape {x.shape}")
    return triu_p.bind(x, k=int_arg("triu", k, "k"))


def meshgrid(*arrays: Array, indexing: str = "xy") -> tuple[Array, ...]:
    """Coordinate matrices from 1-D coordinate vectors (a tuple, as the 2025.12 standard returns)."""
    from arrayx.api.manipulation import broadcast_to, reshape

    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = tuple(array_arg("meshgrid", a, f"arrays[{i}]") for i, a in enumerate(arrays))
    for i, a in enumerate(arrays):
        if a.ndim != 1:
            raise ValueError(f"meshgrid: every array must be 1-D, arrays[{i}] has shape {a.shape}")
    if len({a.dtype for a in arrays}) > 1:
        raise TypeError(f"meshgrid: all arrays must have the same dtype, got {[str(a.dtype) for a in arrays]}")
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        shape = [1] * n
        shape[axis] = a.shape[0]
        out.append(broadcast_to(reshape(a, tuple(shape)), tuple(sizes)))
    return tuple(out)
