"""The precision of float32 products on executors whose hardware can cut it (XLA on a TPU or GPU).

XLA:TPU runs a float32 matrix product in bfloat16 passes unless told otherwise: about three
correct digits where NumPy, Numba and XLA:CPU give float32's seven.  arrayx keeps JAX's choice
as the default (a TPU user expects JAX's speed; docs/executors.rst, "Matmul precision") and
offers the other under JAX's own names, scoped per thread and task or for the process:

- ``"default"`` (``"bfloat16"``): XLA's choice for the hardware (one bfloat16 pass on a TPU);
- ``"high"`` (``"tensorfloat32"``): three bfloat16 passes on a TPU, TF32 on a GPU;
- ``"highest"`` (``"float32"``): float32 accuracy (six passes on a TPU).

``ARRAYX_MATMUL_PRECISION`` sets the process default; ``with arrayx.default_matmul_precision("highest"):``
a scope.  None (unset) leaves JAX's own setting (``jax.default_matmul_precision``) in charge.
Executors without such hardware (numpy, numba, dask, cupy) compute float32 products at full
float32 precision whatever the setting.  Bottom layer: imports nothing from arrayx but config.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

from arrayx.core import config as _config

__all__ = ["NAMES", "current", "default_matmul_precision"]

#: accepted names -> JAX's canonical one
NAMES = {"default": "default", "bfloat16": "default", "high": "high", "tensorfloat32": "high",
         "highest": "highest", "float32": "highest"}

_UNSET = object()
_scoped: contextvars.ContextVar = contextvars.ContextVar("arrayx_matmul_precision", default=_UNSET)


_from_env = _config.get("ARRAYX_MATMUL_PRECISION")  # read once, at import (as the other settings are checked)
_PROCESS = None if _from_env is None else NAMES[_from_env]


def current() -> str | None:
    """The precision in force here: a scope's, else ``ARRAYX_MATMUL_PRECISION``'s, else None (JAX's own)."""
    value = _scoped.get()
    return _PROCESS if value is _UNSET else value


@contextlib.contextmanager
def default_matmul_precision(name: str | None) -> Iterator[None]:
    """Float32 products inside the block at ``name``'s precision ("default", "high", "highest"; JAX's
    aliases "bfloat16", "tensorfloat32", "float32"; None: JAX's own setting), per thread and task.

    >>> import arrayx as xp
    >>> with xp.default_matmul_precision("highest"):
    ...     y = xp.ones((2, 2), dtype=xp.float32) @ xp.ones((2, 2), dtype=xp.float32)
    >>> float(y[0, 0])
    2.0
    """
    if name is not None and name not in NAMES:
        raise ValueError(f"default_matmul_precision: {name!r} is not a precision; choose one of "
                         f"{', '.join(NAMES)}, or None for JAX's own setting")
    token = _scoped.set(None if name is None else NAMES[name])
    try:
        yield
    finally:
        _scoped.reset(token)
