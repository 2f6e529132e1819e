"""Argument checks, promotion and broadcasting shared by the namespace's functions.

Every error names the function, the offending value and, where there is one, the fix.
"""
from __future__ import annotations

import operator

import numpy as np

from arrayx.api import _device_dtypes, _dtypes
from arrayx.api._array import Array
from arrayx.api._modes import is_strict
from arrayx.core.primitives import _TRACE, ConcretizationError, _TracerExecutor
from arrayx.core.tracers import is_weak

_PY_SCALARS = (bool, int, float, complex)
_PROMOTION = _dtypes.PROMOTION  # the default mode's (NumPy 2) table
_STANDARD = _dtypes.STANDARD_PROMOTION  # strict mode's table


def with_article(word) -> str:
    """``word`` with its indefinite article: "an integer", "a float64", "a uint8"."""
    word = str(word)
    vowel = word[:1].lower() in "aeiou" and not word.startswith("uint")
    return ("an " if vowel else "a ") + word


def array_arg(fname: str, x, name: str = "x") -> Array:
    """``x``, an array argument of ``fname``, as an arrayx array: the one place the namespace
    decides what stands for an array.  The default mode takes a Python scalar (a 0-d array of
    its default dtype, as JAX's weakly typed scalars: bool, int64, float64, complex128) and a
    NumPy array or scalar (converted on the current executor); strict mode (``arrayx.strict()``)
    refuses both, as array-api-strict does.  Callers use the returned value."""
    if isinstance(x, Array):
        return x
    return as_array(fname, x, name)


def check_dtype(fname: str, x: Array, category: str, name: str = "x") -> None:
    if x.dtype not in _dtypes.CATEGORIES[category]:
        raise TypeError(f"{fname}: {name} must have {with_article(category)} dtype, got {x.dtype}")


def dtype_error(fname: str, category: str, dtype) -> TypeError:
    return TypeError(f"{fname}: expected {category} dtype(s), got {dtype}")


def cast(x: Array, dtype) -> Array:
    """``x`` as ``dtype`` (no-op when it already is)."""
    if x.dtype == dtype:
        return x
    from arrayx.api.data_types import astype

    return astype(x, dtype)


def scalar_operand(fname: str, value, dtype) -> object:
    """A Python scalar operand as a NumPy scalar of ``dtype`` (every executor accepts those)."""
    if dtype.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(
                f"{fname}: the Python integer {value} is out of range for {dtype} "
                f"[{info.min}, {info.max}]"
            )
    return dtype.type(value)


def _mixed_refusal(fname: str, category: str, d1, d2, strict: bool) -> TypeError:
    if strict and (d1, d2) in _PROMOTION and (d1, d2) not in _STANDARD:
        return TypeError(
            f"{fname}: {d1} and {d2} cannot be promoted together in strict mode (the standard leaves "
            f"the pair undefined); cast one operand with astype(...), or leave arrayx.strict() to "
            f"promote as NumPy 2 does"
        )
    return TypeError(f"{fname}: expected {category} dtypes, got {d1} and {d2}")


def _float_result(fname: str, dt, category: str, x=None):
    """In the default mode a floating-point function computes bool/integer operands in a float
    dtype (``_dtypes.inexact_of``: NumPy 2's choice, float32 for its float16), the default of x's
    device where that is narrower (a TPU: ``_device_dtypes.chosen_default``)."""
    if dt is not None and dt.kind in "biu" and category in _dtypes.FLOAT_ONLY:
        out = _dtypes.inexact_of(dt, fname)
        return out if x is None else _device_dtypes.chosen_default(out, x)
    return dt


def promote_binary(fname: str, x1, x2, category: str) -> tuple:
    """Check, promote and (under a transform) broadcast the operands of a binary function.

    Returns ``(a1, a2)``; a Python scalar becomes a NumPy scalar of the result dtype.  The default
    mode promotes by NumPy 2's table and accepts any operands whose promoted dtype the function
    takes (bool/integer ones computed in the default float by the floating-point functions);
    strict mode (``arrayx.strict()``) takes only the standard's pairs and categories.
    """
    allowed = _dtypes.CATEGORIES[category]
    strict = is_strict()
    if isinstance(x1, Array):
        d1 = x1.dtype
        if isinstance(x2, Array):
            d2 = x2.dtype
            if d1 != d2 or (not strict and d1 not in allowed):
                traced = _TRACE.get() is not None
                weak = traced and (is_weak(x1) or is_weak(x2))
                if strict:
                    dt = _STANDARD.get((d1, d2)) if not weak else _traced_result_dtype(x1, x2, True)
                    if dt is None or dt not in allowed or (d1 not in allowed or d2 not in allowed) and not weak:
                        raise _mixed_refusal(fname, category, d1, d2, True)
                else:
                    dt = _float_result(fname, _PROMOTION.get((d1, d2)) if not weak
                                       else _traced_result_dtype(x1, x2, False), category, x1)
                    if dt in _device_dtypes.WIDE and d1 not in _device_dtypes.WIDE and d2 not in _device_dtypes.WIDE:
                        # NumPy's 64-bit answer for two narrower operands (int32 with float32): the
                        # device's own width where 64-bit types are not native (a TPU: float32)
                        dt = _device_dtypes.chosen_default(dt, x1)
                    if dt is None or dt not in allowed:
                        raise _mixed_refusal(fname, category, d1, d2, False)
                x1 = cast(x1, dt)
                x2 = cast(x2, dt)
            elif d1 not in allowed:
                raise TypeError(f"{fname}: expected {category} dtypes, got {d1} and {d2}")
            s1 = x1.shape
            s2 = x2.shape
            if s1 != s2:
                shape = broadcast_shapes_for(fname, s1, s2)
                if _TRACE.get() is not None:
                    from arrayx.api.manipulation import broadcast_to

                    if None in shape:  # a data-dependent size (Dask's lazy policy) cannot be broadcast to
                        raise (x1 if None in s1 else x2)._ex.unknown_size_error(fname)

                    if s1 != shape:
                        x1 = broadcast_to(x1, shape)
                    if s2 != shape:
                        x2 = broadcast_to(x2, shape)
            return x1, x2
        if not isinstance(x2, _PY_SCALARS):
            if isinstance(x2, np.generic) or isinstance(x2, np.ndarray) and not strict:  # numpy (op) arrayx
                return promote_binary(fname, x1, _from_numpy(x2, x1), category)
            raise _operand_error(fname, x2, "x2")
        dt = _scalar_promotion(fname, category, d1, x2, strict, True, x1)
        return cast(x1, dt), scalar_operand(fname, x2, dt)
    if isinstance(x2, Array):
        if not isinstance(x1, _PY_SCALARS):
            if isinstance(x1, np.generic) or isinstance(x1, np.ndarray) and not strict:
                return promote_binary(fname, _from_numpy(x1, x2), x2, category)
            raise _operand_error(fname, x1, "x1")
        dt = _scalar_promotion(fname, category, x2.dtype, x1, strict, False, x2)
        return scalar_operand(fname, x1, dt), cast(x2, dt)
    if not strict and isinstance(x1, _PY_SCALARS + (np.ndarray, np.generic)) and isinstance(
            x2, _PY_SCALARS + (np.ndarray, np.generic)):
        # two scalars (NumPy and JAX accept them): the first becomes a 0-d array of its default
        # dtype, the second stays a weak Python scalar beside it (np.add(1, 2.5) -> float64)
        return promote_binary(fname, as_array(fname, x1, "x1"), x2, category)
    raise TypeError(
        f"{fname}: at least one argument must be an arrayx array, got {type(x1).__name__} "
        f"and {type(x2).__name__}; convert with arrayx.asarray(...)"
        + ("" if not strict or not isinstance(x1, _PY_SCALARS) or not isinstance(x2, _PY_SCALARS)
           else " (strict mode refuses two Python scalars, as the standard does)")
    )


def _scalar_promotion(fname: str, category: str, dt, scalar, strict: bool, array_first: bool, x=None):
    """Result dtype of an array of dtype ``dt`` with a Python ``scalar`` (TypeError when refused).
    The operands' description is formatted only for an error (``str(dtype)`` costs ~1 us a call)."""
    def operands():
        name = type(scalar).__name__
        return f"{dt} and Python {name}" if array_first else f"Python {name} and {dt}"

    if strict:
        why = _dtypes.strict_scalar_refusal(dt, scalar)
        if why is not None:
            raise TypeError(f"{fname}: {why} in strict mode, got {operands()}; cast the array or leave arrayx.strict()")
        out = _dtypes.scalar_result_dtype(dt, scalar)
        if out != dt and x is not None:  # a default chosen for the scalar: the device's
            out = _device_dtypes.chosen_default(out, x)
        if out not in allowed_of(category) or dt not in allowed_of(category):
            raise TypeError(f"{fname}: expected {category} dtypes, got {operands()}")
        return out
    out = _dtypes.scalar_result_dtype(dt, scalar)
    if out != dt and x is not None:  # a default chosen for the scalar: the device's
        out = _device_dtypes.chosen_default(out, x)
    out = _float_result(fname, out, category, x)
    if out not in allowed_of(category):
        raise TypeError(f"{fname}: expected {category} dtypes, got {operands()}")
    return out


def allowed_of(category: str) -> frozenset:
    return _dtypes.CATEGORIES[category]


def as_array(fname: str, x, name: str = "x"):
    """``x`` as an arrayx array: in the default mode a Python scalar (or NumPy array/scalar) becomes
    one on the current executor (its default dtype: bool, int64, float64, complex128); strict mode
    and anything else raise TypeError naming the function."""
    if isinstance(x, Array):
        return x
    if not is_strict() and isinstance(x, _PY_SCALARS + (np.ndarray, np.generic)):
        from arrayx.api.creation import asarray

        return asarray(x)
    raise TypeError(
        f"{fname}: {name} must be an arrayx array, got {type(x).__name__}; convert it with arrayx.asarray(...)"
        + (" (strict mode refuses Python scalars here, as the standard does; or leave arrayx.strict())"
           if isinstance(x, _PY_SCALARS) else
           " (strict mode refuses NumPy arrays, as array-api-strict does; or leave arrayx.strict())"
           if isinstance(x, (np.ndarray, np.generic)) else "")
    )


def array_args(fname: str, values, names) -> list:
    """Several array arguments of one function (concat/stack's elements, where's condition and
    operands, ...) as arrayx arrays.  In the default mode a Python scalar among them is weakly
    typed, as in JAX: it becomes a 0-d array of the dtype it takes beside the others' common
    dtype (``stack([float32_array, 2.0])`` is float32), or of its default dtype when all are
    scalars; NumPy arrays convert with their own dtype.  Strict mode refuses what is not an array."""
    values = list(values)
    if all(isinstance(v, Array) for v in values):
        return values
    out = [v if isinstance(v, Array) or isinstance(v, _PY_SCALARS) and not is_strict()
           else array_arg(fname, v, n) for v, n in zip(values, names)]
    arrays = [v for v in out if isinstance(v, Array)]
    common = promote_dtypes(fname, [a.dtype for a in arrays]) if arrays else None
    from arrayx.api.creation import asarray

    device = arrays[0].device if arrays else None
    for i, v in enumerate(out):
        if not isinstance(v, Array):
            dt = _dtypes.scalar_dtype(v) if common is None else _dtypes.scalar_result_dtype(common, v)
            out[i] = asarray(scalar_operand(fname, v, dt), device=device)
    return out


def promote_dtypes(fname: str, dtypes) -> np.dtype:
    """The common dtype of several arrays' ``dtypes`` under the mode's table (NumPy 2's in the
    default mode; the standard's in strict mode, which refuses mixed kinds with a TypeError)."""
    dtypes = list(dtypes)
    out = dtypes[0]
    strict = is_strict()
    for d in dtypes[1:]:
        if d == out:
            continue
        nxt = (_STANDARD if strict else _PROMOTION).get((out, d))
        if nxt is None:
            raise _mixed_refusal(fname, "promotable", out, d, strict)
        out = nxt
    return out


def float_arg(fname: str, x, category: str = "floating-point", name: str = "x", hint: str = "") -> Array:
    """``x`` for a function computing in floating point (linalg, fft, the moments): in the default
    mode a bool or integer array (or a Python scalar) is computed in the default float dtype, as
    NumPy 2 does there (``inv``, ``fft``, ``mean`` of int8 give float64/complex128); strict mode
    refuses it, as array-api-strict does, with the fix in the message."""
    x = array_arg(fname, x, name)
    if x.dtype in _dtypes.CATEGORIES[category]:
        return x
    if x.dtype.kind in "biu" and category in _dtypes.FLOAT_ONLY and not is_strict():
        from arrayx.api._device_dtypes import for_array

        return cast(x, for_array(x).real)  # the default float of x's device (float32 on a TPU)
    if x.dtype.kind in "biu" and category in _dtypes.FLOAT_ONLY:
        hint = (f"; cast it with astype({name}, arrayx.float64) (strict mode; the default mode computes "
                f"integer and bool input in float64)")
    raise TypeError(f"{fname}: {name} must have {with_article(category)} dtype, got {x.dtype}{hint}")


# a Python scalar of each dtype kind, for the promotion of a weakly typed (traced scalar) operand
_SCALAR_OF_KIND = {"b": True, "i": 1, "u": 1, "f": 1.0, "c": 1j}


def _traced_result_dtype(x1, x2, strict: bool = False):
    """Promotion under a transform: a weakly typed operand (a traced Python scalar) promotes
    as the Python scalar would eagerly, so staged and eager results have one dtype."""
    w1, w2 = is_weak(x1), is_weak(x2)
    table = _STANDARD if strict else _PROMOTION
    for weak, other, strong in ((w1, x1, x2), (w2, x2, x1)):
        if weak and not (w1 and w2):
            scalar = _SCALAR_OF_KIND[_dtypes.kind_of(other.dtype)]
            if strict and _dtypes.strict_scalar_refusal(strong.dtype, scalar) is not None:
                return None
            return _dtypes.scalar_result_dtype(strong.dtype, scalar)
    return table.get((x1.dtype, x2.dtype))


def _from_numpy(value, like: Array) -> Array:
    from arrayx.api.creation import asarray

    return asarray(value, device=like.device)


def _operand_error(fname, value, name):
    return TypeError(
        f"{fname}: {name} must be an arrayx array or a Python scalar (bool, int, float, complex), "
        f"got {type(value).__name__}"
    )


def broadcast_shapes_for(fname: str, *shapes) -> tuple:
    """The broadcast of ``shapes`` (ValueError naming the function and the shapes otherwise)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, d in enumerate(s):
            o = out[offset + i]
            if d == o or d == 1:
                continue
            if o == 1:
                out[offset + i] = d
            elif d is None or o is None:
                out[offset + i] = None
            else:
                raise ValueError(
                    f"{fname}: shapes {', '.join(str(tuple(t)) for t in shapes)} cannot be broadcast together"
                )
    return tuple(out)


def traced_value_error(fname: str, name: str, value):
    """The error for a value a transform traces (jit, vmap, grad) where a Python int is needed (a
    shape, a size, an axis), pointing at static arguments; None for any other value."""
    if not isinstance(getattr(value, "_ex", None), _TracerExecutor):
        return None
    return ConcretizationError(
        f"{fname}: {name} must be known when the function is traced, got a traced value ({value!r}); shapes "
        "are fixed when a function is traced: pass it as a Python int and mark the argument static, "
        "jit(f, static_argnums=...), or compute the shape outside the transformed function")


def shape_arg(fname: str, shape) -> tuple:
    """A ``shape`` argument (an int or a sequence of non-negative ints) as a tuple of ints."""
    if shape.__class__ is tuple:  # the common case, a tuple of plain non-negative ints, as it is
        for d in shape:
            if d.__class__ is not int or d < 0:
                break
        else:
            return shape
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        err = traced_value_error(fname, "shape", shape)
        if err is not None:
            raise err
        raise TypeError(f"{fname}: shape must be an int or a tuple of ints, got {type(shape).__name__}")
    out = []
    for d in shape:
        if isinstance(d, bool):
            raise TypeError(f"{fname}: shape entries must be ints, got {d!r} in {tuple(shape)}")
        try:
            d = operator.index(d)
        except TypeError:
            raise traced_value_error(fname, "shape", d) or TypeError(
                f"{fname}: shape entries must be ints, got {d!r} in {tuple(shape)}") from None
        if d < 0:
            raise ValueError(f"{fname}: shape entries must be non-negative, got {tuple(shape)}")
        out.append(d)
    return tuple(out)


#: the most bytes one buffer can span anywhere: NumPy and XLA count sizes in int64 (XLA aborts
#: the process on a larger shape, so this is checked before any executor sees the shape)
MAX_BUFFER_BYTES = 2**63 - 1
_SMALL_BYTES = 2**30  # below any machine's memory limit


def _bytes_text(n: int) -> str:
    for unit, scale in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def check_size(fname: str, shape: tuple, dtype, executor=None, *, where: str | None = None) -> None:
    """ValueError naming ``fname``, the shape and the limit when no buffer of ``shape`` and ``dtype``
    can exist: more than MAX_BUFFER_BYTES (zero dimensions do not count: executors multiply the
    others first), or, for an ``executor`` that allocates now, more than its ``memory_limit()``
    (``where``: where the buffer is, when the executor is not the one the caller uses)."""
    itemsize = dtype.itemsize if isinstance(dtype, np.dtype) else np.dtype(dtype).itemsize
    extent = 1
    for d in shape:
        extent *= d or 1
    if extent * itemsize <= _SMALL_BYTES:  # the common case: nothing to compare
        return
    if extent * itemsize > MAX_BUFFER_BYTES:
        raise ValueError(
            f"{fname}: shape {tuple(shape)} of {dtype} spans {extent} elements ({_bytes_text(extent * itemsize)}), "
            f"more than any executor can address (2**63 - 1 bytes: NumPy and XLA count sizes in int64); "
            f"pass a smaller shape"
        )
    limit = None if executor is None else executor.memory_limit()
    nbytes = 0 if 0 in shape else extent * itemsize
    if limit is not None and nbytes > limit[0]:
        raise ValueError(
            f"{fname}: shape {tuple(shape)} of {dtype} ({extent} elements) needs {_bytes_text(nbytes)} "
            f"{where or f'on the {executor.name!r} executor'}, more than one array can have there ({_bytes_text(limit[0])}: "
            f"{limit[1]}); pass a smaller shape"
        )


def int_arg(fname: str, value, name: str) -> int:
    """An integer argument (an int or anything with ``__index__``, not a bool) as an int."""
    if isinstance(value, bool):
        raise TypeError(f"{fname}: {name} must be an int, got a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise traced_value_error(fname, name, value) or TypeError(
            f"{fname}: {name} must be an int, got {type(value).__name__}") from None


def normalize_axis(fname: str, axis, ndim: int, name: str = "axis") -> int:
    a = int_arg(fname, axis, name)
    if not -ndim <= a < ndim:
        raise IndexError(f"{fname}: {name}={axis} is out of bounds for an array with {ndim} dimension(s)")
    return a % ndim if ndim else 0


def normalize_axes(fname: str, axis, ndim: int):
    """``axis`` (None, int or tuple of ints) as a sorted tuple of non-negative ints; None stays None."""
    if axis is None:
        return None
    if isinstance(axis, tuple):
        axes = tuple(normalize_axis(fname, a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{fname}: axis {axis} contains repeated axes")
        return tuple(sorted(axes))
    if isinstance(axis, list):
        raise TypeError(f"{fname}: axis must be an int or a tuple of ints, got a list; pass tuple(axis)")
    return (normalize_axis(fname, axis, ndim),)
