"""Every ``ARRAYX_*`` environment variable: its meaning, accepted values and default, in one table.

The modules that use a variable read it here, when they need it (``get("ARRAYX_NUMBA_SPIN_US")``),
never from ``os.environ`` themselves, so each value is checked the same way and a bad one raises
:class:`ConfigError` (a ValueError) naming the variable, the value and what is accepted, e.g.
``ARRAYX_DASK_CONNECT_TIMEOUT='abc': not a number. Accepted: seconds, a finite number > 0 (default 5)...``.
An empty (or unset) variable means its default.  ``import arrayx`` checks every variable that is set
(``check_environment``), so a bad value fails at import rather than in a worker thread or at exit.

This is the bottom layer: it imports nothing from arrayx.
"""
from __future__ import annotations

import math
import os
import pathlib
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["ConfigError", "VARIABLES", "check_environment", "get", "is_set"]


class ConfigError(ValueError):
    """An ``ARRAYX_*`` environment variable has a value arrayx does not accept."""


class _Bad(Exception):
    """A parser's complaint about a value (turned into ConfigError with the variable's name)."""


@dataclass(frozen=True)
class Variable:
    name: str
    parse: Callable[[str], Any]  # the stripped, non-empty text -> the value, or raise _Bad
    default: Any
    accepted: str  # what the error message lists as accepted
    meaning: str


# -- parsers ----------------------------------------------------------------------------------------

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag(text: str) -> bool:
    low = text.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise _Bad("not a yes/no value")


def _integer(lo: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise _Bad("not a whole number") from None
        if value < lo:
            raise _Bad(f"less than {lo}")
        return value
    return parse


def _number(lo: float, *, inclusive: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _Bad("not a number") from None
        if not math.isfinite(value):
            raise _Bad("not finite")
        if value < lo or (value == lo and not inclusive):
            raise _Bad(f"{'less than' if inclusive else 'not more than'} {lo:g}")
        return value
    return parse


def _choice(*options: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise _Bad("not one of the accepted values")
        return text
    return parse


def _text(text: str) -> str:
    return text


def _folder(text: str) -> pathlib.Path:
    """A folder arrayx may create things in: never the filesystem root, never an existing non-folder."""
    path = pathlib.Path(os.path.expanduser(text))
    for form in (pathlib.Path(os.path.abspath(path)), pathlib.Path(os.path.realpath(path))):
        if form == pathlib.Path(form.anchor):
            raise _Bad(f"the filesystem root ({form}); arrayx would create its folders directly in it")
    if path.exists() and not path.is_dir():
        raise _Bad("exists and is not a folder")
    return path


_SCHEDULER_NAMES = ("threads", "sync", "synchronous", "processes", "single-threaded")
_SCHEDULER_PROTOCOLS = ("tcp", "tls", "ws", "wss", "ucx", "inproc")


def _scheduler(text: str) -> str:
    """A Dask scheduler name, or a distributed scheduler's address ``protocol://host[:port]``,
    checked before any Client is built (a malformed address left a half-built one behind)."""
    if "://" not in text:
        if text not in _SCHEDULER_NAMES:
            raise _Bad("neither a scheduler name nor an address")
        return text
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in _SCHEDULER_PROTOCOLS:
        raise _Bad(f"unknown protocol {parts.scheme!r}")
    if parts.scheme == "inproc":
        return text
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise _Bad("not of the form protocol://host[:port]")
    try:
        port = parts.port  # ValueError for a non-numeric or out-of-range port
    except ValueError:
        raise _Bad("its port is not a number in 1..65535") from None
    if port == 0:
        raise _Bad("its port is not a number in 1..65535")
    return text


# -- the table ---------------------------------------------------------------------------------------

_YES_NO = f"one of {', '.join(_TRUE + _FALSE)} (any case)"

VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("ARRAYX_EXECUTOR", _text, None, "the name of a registered executor",
             "the executor new arrays are created on (after use_executor / set_executor)"),
    Variable("ARRAYX_CACHE_DIR", _folder, None, "a folder (not the filesystem root, not a file)",
             "where arrayx keeps its caches (the Numba kernels go in its 'numba' folder)"),
    Variable("ARRAYX_STRICT", _flag, False, _YES_NO,
             "whether the namespace starts in strict mode (refuses what only NumPy and JAX accept, as "
             "array-api-strict does; arrayx.strict() scopes it)"),
    Variable("ARRAYX_TPU_64BIT", _choice("downcast", "emulate", "refuse"), "downcast",
             "downcast, emulate or refuse",
             "what 64-bit data (float64, int64, uint64, complex128) does on a device without native 64-bit "
             "types (a TPU): becomes the device's 32-bit default with one warning, is kept (XLA emulates it, "
             "slowly), or raises; an explicit 64-bit dtype= there needs emulate (arrayx.tpu_64bit() scopes it)"),
    Variable("ARRAYX_MATMUL_PRECISION", _choice("default", "high", "highest", "bfloat16", "tensorfloat32",
                                                "float32"), None,
             "default, high or highest (JAX's names; also bfloat16, tensorfloat32, float32)",
             "the precision of float32/complex64 products on the jax executor (matmul, tensordot, conv, "
             "linalg): unset is JAX's own setting (XLA's default: bfloat16 passes on a TPU); "
             "arrayx.default_matmul_precision() scopes it"),
    Variable("ARRAYX_CHECK_GRAPHS", _flag, False, _YES_NO, "whether every graph staging builds is type-checked"),
    Variable("ARRAYX_DEBUG_NANS", _flag, False, _YES_NO, "whether the first primitive that makes a NaN raises"),
    Variable("ARRAYX_DEBUG_INFS", _flag, False, _YES_NO, "whether the first primitive that makes an infinity raises"),
    Variable("ARRAYX_BUFFER_POOL", _flag, True, _YES_NO, "whether freed output buffers are reused (numpy, numba)"),
    Variable("ARRAYX_JIT_CACHE_SIZE", _integer(1), None, "a whole number of cache entries >= 1",
             "compiled signatures jit keeps per function, least recently used dropped first "
             "(default: arrayx.transforms.jitting.CACHE_SIZE)"),
    Variable("ARRAYX_BUFFER_POOL_LIMIT", _integer(0), None, "a whole number of bytes >= 0",
             "the most bytes the buffer pool keeps (default: an eighth of memory, at most 1 GiB)"),
    Variable("ARRAYX_BUFFER_POOL_MIN_BYTES", _integer(0), 1 << 20, "a whole number of bytes >= 0",
             "the smallest buffer the pool keeps"),
    Variable("ARRAYX_JAX_JIT_OPS", _flag, True, _YES_NO, "whether each eager JAX op runs as one jax.jit call"),
    Variable("ARRAYX_JAX_REUSE_MEMORY", _flag, True, _YES_NO,
             "whether loading the jax executor has glibc's malloc reuse freed blocks up to 1 GiB (no page faults "
             "per XLA result; the process keeps freed heap)"),
    Variable("ARRAYX_JAX_BLAS_MATMUL", _flag, True, _YES_NO,
             "whether large eager float64 matrix products of the jax executor on one CPU device run through "
             "NumPy's BLAS (the NumPy executor's values; XLA's under jit)"),
    Variable("ARRAYX_DASK_SCHEDULER", _scheduler, None,
             f"a scheduler name ({', '.join(_SCHEDULER_NAMES)}) or an address protocol://host[:port] "
             f"(protocols {', '.join(_SCHEDULER_PROTOCOLS)})",
             "where Dask computes"),
    Variable("ARRAYX_DASK_CONNECT_TIMEOUT", _number(0, inclusive=False), 5.0, "seconds, a finite number > 0",
             "how long to wait for the scheduler of ARRAYX_DASK_SCHEDULER"),
    Variable("ARRAYX_DASK_UNKNOWN_SHAPES", _choice("compute", "lazy"), "compute", "compute or lazy",
             "whether data-dependent shapes on Dask are computed or read None"),
    Variable("ARRAYX_NUMBA_CACHE_DIR", _folder, None, "a folder (not the filesystem root, not a file)",
             "where the Numba kernels are cached, in its subfolder arrayx-numba-kernels/ (overrides ARRAYX_CACHE_DIR)"),
    Variable("ARRAYX_NUMBA_THRESHOLD", _integer(0), None, "a whole number of elements >= 0",
             "the fewest elements every native Numba kernel runs for"),
    Variable("ARRAYX_NUMBA_PARALLEL", _flag, True, _YES_NO, "whether Numba kernels run on several threads"),
    Variable("ARRAYX_NUMBA_THREADING_LAYER", _choice("workqueue", "omp", "tbb", "default", "safe", "forksafe",
                                                     "threadsafe"), "workqueue",
             "a Numba threading layer: workqueue, omp, tbb, default, safe, forksafe or threadsafe",
             "Numba's threading layer, unless NUMBA_THREADING_LAYER is set"),
    Variable("ARRAYX_NUMBA_FUSION_MIN_SIZE", _integer(0), 1 << 12, "a whole number of elements >= 0",
             "the fewest elements of a jit region fused into a Numba kernel"),
    Variable("ARRAYX_NUMBA_FUSED_KERNELS", _integer(1), 512, "a whole number >= 1",
             "how many fused Numba kernels are kept"),
    Variable("ARRAYX_NUMBA_SPIN_US", _number(0, inclusive=True), 1000.0, "microseconds, a finite number >= 0",
             "how long Numba's worker threads spin before they sleep"),
    Variable("ARRAYX_NUMBA_VECTOR_WIDTH", _choice("256", "512"), None, "256 or 512",
             "the fused kernels' vector width (default: chosen for this CPU)"),
    Variable("ARRAYX_NUMBA_FMA", _flag, True, _YES_NO, "whether fused kernels may use fused multiply-add"),
    Variable("ARRAYX_CUPY_FUSION_MIN_SIZE", _integer(0), 1, "a whole number of elements >= 0",
             "the fewest elements of a jit region fused into a CuPy kernel"),
)}


def get(name: str):
    """The value of ``name`` (an ``ARRAYX_*`` variable of :data:`VARIABLES`) from the environment now,
    parsed and checked; its default when unset or empty.  Raises :class:`ConfigError`."""
    var = VARIABLES[name]
    raw = os.environ.get(name, "")
    text = raw.strip()
    if not text:
        return var.default
    try:
        value = var.parse(text)
    except _Bad as e:
        default = "" if var.default is None else f" (default {_shown(var.default)})"
        raise ConfigError(
            f"{name}={raw!r}: {e}. Accepted: {var.accepted}{default}. {name} sets {var.meaning}; "
            f"correct or unset it"
        ) from None
    return value


def check_environment() -> None:
    """Check every variable of the table that is set (``import arrayx`` does, so a bad value fails
    at once, before a thread, a cache folder or a Dask Client is made from it)."""
    for name in VARIABLES:
        get(name)


def is_set(name: str) -> bool:
    """Whether ``name`` has a non-empty value in the environment (the value is not checked)."""
    VARIABLES[name]  # noqa: B018 - only the table's variables
    return bool(os.environ.get(name, "").strip())


def _shown(value) -> str:
    return {True: "1", False: "0"}.get(value, str(value)) if isinstance(value, bool) else f"{value:g}" \
        if isinstance(value, float) else str(value)
