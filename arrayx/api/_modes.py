"""The two modes of the namespace: default (NumPy 2 / JAX habits) and strict (the standard only).

Where the standard leaves a case undefined, the default mode accepts what NumPy 2 and JAX both
accept: Python scalars where arrays are expected, in every function (as 0-d arrays of the default
dtype, weak beside an array as in JAX; ``_checks.array_arg``/``array_args`` decide it), NumPy arrays
as operands, integer and bool input to the floating-point functions (computed in NumPy 2's float
dtype for them, float32 where NumPy picks float16; ``divide``, ``mean``, ``std``, ``var`` and the
linalg and fft functions in float64, as NumPy), bool input to abs/floor/ceil/trunc/round (NumPy 2's
results), and operands of different kinds (bool, integer, float) promoted by NumPy 2's table
(``_dtypes.PROMOTION``; strict mode uses ``_dtypes.STANDARD_PROMOTION``, ``_checks.promote_dtypes``).
Strict mode refuses those exactly where array-api-strict does, so that library authors can test
that their code is portable.  ``with arrayx.strict():`` turns it on for the block (this thread or
asyncio task only, nestable; ``strict(False)`` turns it off inside); ``ARRAYX_STRICT=1`` makes it
the process's default.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Iterator

from arrayx.core import config as _config

__all__ = ["is_strict", "strict"]

_scoped: ContextVar = ContextVar("arrayx_strict", default=None)
_default: bool = bool(_config.get("ARRAYX_STRICT"))


def is_strict() -> bool:
    """Whether strict mode is on here (the innermost ``strict(...)`` block, else ``ARRAYX_STRICT``)."""
    value = _scoped.get()
    return _default if value is None else value


@contextlib.contextmanager
def strict(on: bool = True) -> Iterator[None]:
    """Within the block (this thread / asyncio task only), refuse what the standard leaves undefined.

    Under ``strict()`` arrayx accepts what array-api-strict accepts and raises TypeError where it
    refuses: Python scalars only beside an array (and of a kind the array's dtype takes), only
    floating-point input to the floating-point functions, operands of one kind (no bool with
    numbers, no integer with float arrays, no uint64 with signed integers).  ``strict(False)``
    restores the default mode inside an outer strict block.
    """
    if not isinstance(on, bool):
        raise TypeError(f"strict: on must be True or False, got {type(on).__name__}")
    token = _scoped.set(on)
    try:
        yield
    finally:
        _scoped.reset(token)
