"""``debug_nans`` / ``debug_infs``: name the first primitive that produced a NaN (or an infinity).

``with arrayx.debug_nans():`` (or ``ARRAYX_DEBUG_NANS=1`` in the environment, for the main
thread) installs a checking trace: every primitive is computed one level down as usual,
then its floating-point outputs are checked, and the first one whose output has a NaN
while its inputs have none raises ``FloatingPointError`` naming it.  Inside ``jit`` the
compiled function is generated with the same check after every equation (a separate cache
entry, so checked and unchecked code never mix).  ``debug_infs`` does the same for
infinities.  Checks copy values to the host: a debugging aid, not for speed.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar

import numpy as np

from arrayx.core import config as _config
from arrayx.core.array import Array
from arrayx.core.primitives import _TRACE, Trace
from arrayx.core.tracers import bind_with

__all__ = ["debug_nans", "debug_infs", "active_checks", "check_outputs"]

#: which checks compiled functions include: frozenset of "nan"/"inf" ("" when none)
_CHECKS: ContextVar = ContextVar("arrayx_float_checks", default=frozenset())


def active_checks() -> frozenset:
    return _CHECKS.get()


def _has(kind: str, x) -> bool:
    if x is None or getattr(x, "dtype", None) is None:
        return False
    dt = np.dtype(x.dtype)
    if dt.kind not in "fc" and dt.name != "bfloat16":  # (ml_dtypes' bfloat16 has NumPy kind "V")
        return False
    host = np.asarray(x._ex.to_host(x._buf)) if isinstance(x, Array) else np.asarray(x)
    return bool(np.isnan(host).any() if kind == "nan" else np.isinf(host).any())


def check_outputs(checks, name: str, inputs, outputs) -> None:
    """Raise if an output has a NaN/Inf (per ``checks``) that none of the inputs had."""
    for kind in checks:
        if any(_has(kind, o) for o in outputs) and not any(_has(kind, i) for i in inputs):
            what = "a NaN" if kind == "nan" else "an infinity"
            raise FloatingPointError(
                f"debug_{kind}s: {name} produced {what} (its inputs had none); inputs: "
                f"{[_describe(i) for i in inputs]}"
            )


def _describe(x) -> str:
    if getattr(x, "dtype", None) is None:
        return repr(x)
    return f"{np.dtype(x.dtype).name}{list(x.shape)}"


class FloatCheckTrace(Trace):
    """Computes every primitive one level down, then checks its concrete outputs."""

    __slots__ = ("checks",)

    def __init__(self, parent, checks: frozenset):
        super().__init__(parent, "debug_nans")
        self.checks = checks

    def process_primitive(self, prim, args, params):
        out = bind_with(self.parent, prim, args, params)
        outs = out if prim.multiple_results else (out,)
        check_outputs(self.checks, prim.name, [a for a in args if isinstance(a, Array)],
                      [o for o in outs if o.__class__ is Array])
        return out

    process_call = process_primitive  # jit's call runs its checked compiled function


@contextlib.contextmanager
def _checking(kind: str, enabled: bool):
    checks = _CHECKS.get()
    checks = checks | {kind} if enabled else checks - {kind}
    token_c = _CHECKS.set(frozenset(checks))
    parent = _TRACE.get()
    while isinstance(parent, FloatCheckTrace):  # one checking trace, with the union of the checks
        parent = parent.parent
    token_t = _TRACE.set(FloatCheckTrace(parent, frozenset(checks)) if checks else parent)
    try:
        yield
    finally:
        _TRACE.reset(token_t)
        _CHECKS.reset(token_c)


def debug_nans(enabled: bool = True):
    """Within the block, raise ``FloatingPointError`` naming the first primitive that made a NaN.

    >>> import arrayx as ax
    >>> with ax.debug_nans():
    ...     ax.log(ax.asarray(-1.0))
    Traceback (most recent call last):
    FloatingPointError: debug_nans: log produced a NaN (its inputs had none); inputs: ['float64[]']
    """
    return _checking("nan", enabled)


def debug_infs(enabled: bool = True):
    """Within the block, raise ``FloatingPointError`` naming the first primitive that made an infinity."""
    return _checking("inf", enabled)


def install_from_environment() -> None:
    """``ARRAYX_DEBUG_NANS``/``ARRAYX_DEBUG_INFS`` set: check from now on (called once ``arrayx`` is imported)."""
    kinds = frozenset(kind for kind, var in (("nan", "ARRAYX_DEBUG_NANS"), ("inf", "ARRAYX_DEBUG_INFS"))
                      if _config.get(var))
    if kinds:  # for the rest of the main thread's life: set, never reset
        _CHECKS.set(kinds)
        _TRACE.set(FloatCheckTrace(_TRACE.get(), kinds))
