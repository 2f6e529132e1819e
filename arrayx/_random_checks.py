"""The argument checks of ``arrayx.random``'s functions: keys, shapes, float dtypes and parameters
(split from random.py; every error names the function and the fix)."""
from __future__ import annotations

import numpy as np

from arrayx import api as xp
from arrayx._threefry import _U32
from arrayx.api import _dtypes
from arrayx.api._array import Array
from arrayx.api._device_dtypes import for_array as _defaults_of

_KEY_HINT = "make keys with arrayx.random.key(seed) and derive new ones with split or fold_in"


def _check_key(fname: str, key) -> Array:
    if not isinstance(key, Array):
        raise TypeError(
            f"{fname}: key must be an arrayx PRNG key (a uint32 array of shape (2,)), "
            f"got {type(key).__name__}; {_KEY_HINT}"
        )
    if key.dtype != _U32:
        raise TypeError(
            f"{fname}: key must be a uint32 array of shape (2,), got dtype {key.dtype}; "
            f"to use a seed, pass arrayx.random.key(seed)"
        )
    if key.shape != (2,):
        if key.ndim >= 2 and key.shape[-1] == 2:
            raise ValueError(
                f"{fname}: accepts a single key of shape (2,), got a batch of keys of shape {key.shape}; "
                f"map over them with arrayx.vmap or pick one (keys[i])"
            )
        raise ValueError(f"{fname}: key must have shape (2,), got shape {key.shape}; {_KEY_HINT}")
    return key


def _check_shape(fname: str, shape: tuple, *param_shapes) -> None:
    """Parameters must broadcast to exactly ``shape``."""
    try:
        full = xp.broadcast_shapes(shape, *param_shapes)
    except ValueError:
        full = None
    if full != tuple(shape):
        raise ValueError(
            f"{fname}: parameter shapes {list(param_shapes)} must broadcast to the requested shape {shape}; "
            f"pass a shape they broadcast to, or reshape the parameters"
        )


def _float_dtype(fname: str, dtype, key, *, complex_ok: bool = False) -> np.dtype:
    """``dtype`` checked, else the default float of the key's device (float32 on a TPU)."""
    if dtype is None:
        return _defaults_of(key).real
    dt = _dtypes.as_dtype(dtype, fname)
    kind = _dtypes.kind_of(dt)  # "f" for bfloat16 too (its NumPy kind is "V")
    if kind != "f" and not (complex_ok and kind == "c"):
        kinds = "a floating-point" if complex_ok else "a real floating-point"
        raise TypeError(f"{fname}: dtype must be {kinds} dtype (bfloat16, float16, float32 or float64), got {dt}")
    return dt


def _float_param(fname: str, name: str, value, dtype):
    """A real parameter converted to ``dtype``: a NumPy scalar for Python numbers, else an arrayx array."""
    if isinstance(value, Array):
        if _dtypes.kind_of(value.dtype) not in "biuf":
            raise TypeError(f"{fname}: {name} must be real, got dtype {value.dtype}")
        return xp.astype(value, dtype) if value.dtype != dtype else value
    if isinstance(value, (bool, int, float, np.integer, np.floating)) or type(value).__name__ == "bfloat16":
        return dtype.type(value)
    raise TypeError(
        f"{fname}: {name} must be a Python number or an arrayx array, got {type(value).__name__}"
    )


def _shape_of(v) -> tuple:
    return v.shape if isinstance(v, Array) else ()
