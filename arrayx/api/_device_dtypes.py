"""Default dtypes per device, and what 64-bit data does on a device without native 64-bit types.

The standard lets the default dtypes differ per device (``__array_namespace_info__().default_dtypes(
device=)``).  arrayx keeps them as data: :data:`PLATFORMS` maps a kind of hardware (the executor's
``platform_of(device)``: "cpu", "gpu", "tpu", ...) to its :class:`DeviceDtypes`; a platform not in
the table has the standard's 64-bit defaults (:data:`STANDARD`: float64, complex128, int64, int64).
A TPU has 32-bit ones (:data:`TPU`: float32, complex64, int32, int32), for these reasons:

- XLA:TPU computes float64 and int64 by emulation (pairs of 32-bit values), many times slower than
  the chip's own 32-bit types; JAX, the library TPU users come from, defaults to 32 bits there;
- the index dtype is int32 as JAX's: index results are divided and compared by user code, and
  XLA:TPU's compiler aborted the process on an int64 ``floor_divide``;
- the integral default follows the index one (``arange(n)`` indexes, ``sum`` of int8 counts).

Everything the standard derives from "the default floating / integer / index dtype" follows the
device it happens on: the creation functions without ``dtype=`` (``zeros``, ``arange``, ``asarray``
of Python scalars and sequences), ``sum``/``prod``/``cumulative_*`` of small integers, ``mean`` of
integers, the index results (``argmax``, ``nonzero``, ``searchsorted``, ``unique_*``, ``argsort``)
and ``arrayx.random``'s default dtypes.  The index dtype travels as a primitive param
(``index_dtype``, see :func:`index_params`) where it is not int64, so a staged graph has the dtype
eager evaluation gives without asking an executor.

64-bit data arriving on such a device (``asarray`` of NumPy float64/int64/uint64/complex128 data,
``to_device`` of a 64-bit array) follows one setting, ``ARRAYX_TPU_64BIT`` (process-wide) or
``with arrayx.tpu_64bit(mode):`` (this thread or task):

- ``"downcast"`` (default): it becomes the device's default of its kind (float32, int32, uint32,
  complex64), with one :class:`DowncastWarning` per process; what JAX users expect of a TPU.  An
  explicit 64-bit ``dtype=`` (``zeros(n, dtype=float64)``, ``astype(x, float64)``) raises TypeError:
  a request is never dropped silently;
- ``"emulate"``: 64-bit types are kept and XLA emulates them (slow; on a TPU float64 keeps float32's
  exponent range).  complex128 is the exception on a TPU (:data:`TPU`'s ``unemulated``): XLA:TPU's
  emulation of it aborted the process or failed inside XLA on transposes, slices, ``abs``, division,
  the decompositions and FFTs (session 26's probe on the chip, conformance/results/tpu_emulate64.json),
  so complex128 data or ``dtype=complex128`` raises NotImplementedError there, naming complex64 and
  the host device as the ways out;
- ``"refuse"``: 64-bit data and 64-bit ``dtype=`` raise TypeError naming the conversion to make.

Python scalars and sequences of them are not 64-bit data: they take the device's defaults in every
mode, as the standard says.  Lookups are cached per executor and device (creation functions are on
the eager hot path); :func:`clear_caches` forgets them (tests that substitute the table).
"""
from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from contextvars import ContextVar
from typing import Iterator

import numpy as np

from arrayx.api import _dtypes
from arrayx.core import config as _config
from arrayx.core import executor as _exec

__all__ = ["DeviceDtypes", "DowncastWarning", "PLATFORMS", "STANDARD", "TPU", "tpu_64bit"]


class DeviceDtypes:
    """The default dtypes of one kind of device, and whether it runs 64-bit types natively."""

    __slots__ = ("real", "complex", "integral", "index", "unsigned", "native64", "narrow", "index_params",
                 "unemulated")

    def __init__(self, real, complex, integral, index, *, native64: bool,  # noqa: A002 - the kinds' names
                 unemulated: dict | None = None):
        self.real, self.complex, self.integral, self.index = real, complex, integral, index
        #: 64-bit dtype -> why "emulate" does not keep it here (what the device's emulation fails on)
        self.unemulated = unemulated or {}
        #: the unsigned integer as wide as ``integral`` (``sum`` of uint8 accumulates in it)
        self.unsigned = np.dtype(f"uint{integral.itemsize * 8}")
        self.native64 = native64
        #: 64-bit dtype -> what it becomes here when downcast (empty where 64-bit types are native)
        self.narrow = {} if native64 else {
            _dtypes.float64: real, _dtypes.complex128: complex, _dtypes.int64: integral,
            _dtypes.uint64: self.unsigned}
        #: the params an index-returning primitive gets here: none where the index dtype is the
        #: standard's int64 (graphs and results of every 64-bit device stay as they were), else
        #: ``index_dtype`` (read by its abstract-eval rule and by :func:`_index_adapter`)
        self.index_params = {} if index == _dtypes.int64 else {"index_dtype": index}

    def answer(self) -> dict:
        """``__array_namespace_info__().default_dtypes()``'s dict."""
        return {"real floating": self.real, "complex floating": self.complex,
                "integral": self.integral, "indexing": self.index}

    def scalar_dtype(self, scalar) -> np.dtype:
        """The dtype of ``asarray(scalar)`` for a Python bool, int, float or complex here."""
        if isinstance(scalar, (bool, np.bool_)):
            return _dtypes.bool
        if isinstance(scalar, int):
            return self.integral
        if isinstance(scalar, float):
            return self.real
        if isinstance(scalar, complex):
            return self.complex
        raise TypeError(f"expected a Python scalar, got {type(scalar).__name__}")

    def float_of(self, dt: np.dtype) -> np.dtype:
        """The default float for integer/bool input computed in floating point ("default float")."""
        return self.real

    def __repr__(self) -> str:
        return f"DeviceDtypes({self.real}, {self.complex}, {self.integral}, {self.index}, native64={self.native64})"


#: the standard's defaults (NumPy's): every device whose platform is not in PLATFORMS
STANDARD = DeviceDtypes(_dtypes.float64, _dtypes.complex128, _dtypes.int64, _dtypes.int64, native64=True)
#: a TPU's: 32-bit defaults, 64-bit types emulated by XLA (see the module docstring for the reasons)
TPU = DeviceDtypes(_dtypes.float32, _dtypes.complex64, _dtypes.int32, _dtypes.int32, native64=False, unemulated={
    _dtypes.complex128: "XLA:TPU's emulation of complex128 aborts the process or fails inside XLA on transposes, "
                        "slices, abs, division, the decompositions and FFTs (measured on the chip, JAX 0.10.2, "
                        "libtpu 0.0.42.1: conformance/results/tpu_emulate64.json)"})

#: platform (``Executor.platform_of(device)``) -> its defaults; absent: :data:`STANDARD`
PLATFORMS: dict[str, DeviceDtypes] = {"tpu": TPU}

#: the dtypes a device without native 64-bit types lists in ``dtypes(device=)``: what XLA:TPU runs
NARROW_DTYPES = (_dtypes.bool, _dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.uint8, _dtypes.uint16,
                 _dtypes.uint32, _dtypes.float32, _dtypes.complex64)

WIDE = frozenset({_dtypes.float64, _dtypes.complex128, _dtypes.int64, _dtypes.uint64})

# -- lookups (cached: creation functions ask on every call) ---------------------------------------

_cache: dict = {}  # (executor name, device label) -> DeviceDtypes (the default device's: ex.device_dtypes)
_uniform: dict = {}  # executor name -> the DeviceDtypes all its devices share, or None where they differ


def _lookup(ex, device) -> DeviceDtypes:
    return PLATFORMS.get(ex.platform_of(device), STANDARD)


def for_device(ex, device=None) -> DeviceDtypes:
    """The defaults of ``device`` of executor ``ex`` (None: its default device)."""
    if device is None:
        out = ex.device_dtypes  # the executor keeps its default device's (creation functions read it inline)
        if out is None:
            out = ex.device_dtypes = _lookup(ex, ex.default_device())
        return out
    key = (ex.name, device.label)
    out = _cache.get(key)
    if out is None:
        out = _cache[key] = _lookup(ex, device)
    return out


def for_executor(ex) -> DeviceDtypes | None:
    """The defaults every device of ``ex`` shares, or None where its devices differ."""
    try:
        return _uniform[ex.name]
    except KeyError:
        kinds = {id(for_device(ex, d)): for_device(ex, d) for d in ex.devices()}
        out = _uniform[ex.name] = next(iter(kinds.values())) if len(kinds) == 1 else None
        return out


def for_array(x) -> DeviceDtypes:
    """The defaults of the device ``x`` (an array or a tracer) lives on."""
    ex = x._ex
    out = _uniform.get(ex.name)
    if out is not None:
        return out
    device = x.device
    ex = _exec.get(device.executor)
    return for_executor(ex) or for_device(ex, device)


def chosen_default(dt, x):
    """``dt``, a dtype that promotion chose as a *default* for operand ``x`` (NumPy's float64 for an
    integer operand of a floating-point function, float64/complex128 for an integer array with a
    Python float/complex, int64 for bool with a Python int), made the default of x's device: on a
    device without native 64-bit types (a TPU) the 32-bit one, so that no emulated op reaches it by
    way of a default.  Operands that are 64-bit themselves are not passed here (their width stays)."""
    if dt is None:
        return dt
    dd = for_array(x)
    if dd.native64 or x.dtype in dd.narrow:  # a 64-bit operand (emulate) keeps NumPy's 64-bit choice
        return dt
    return dd.narrow.get(dt, dt)


def for_request(device, fname: str) -> tuple:
    """``(executor, device or None, DeviceDtypes)`` for a ``device=`` argument (None: the current one)."""
    ex, dev = _exec.resolve_device(device, fname)
    return ex, dev, for_device(ex, dev)


def index_params(x) -> dict:
    """The params an index-returning primitive of ``x`` (an array or tracer) gets: its device's
    ``DeviceDtypes.index_params`` (never written: only unpacked)."""
    out = _uniform.get(x._ex.name)  # for_array's first step, inline: argmax and friends call this
    return (out if out is not None else for_array(x)).index_params


def clear_caches() -> None:
    """Forget the cached lookups and the executors' resolved index primitives (after a change of
    :data:`PLATFORMS` or of an executor's ``platform_of``: tests do)."""
    _cache.clear()
    _uniform.clear()
    for name in list(_exec._registry):
        ex = _exec._registry[name]
        ex.device_dtypes = None
        for table in (ex.impls, ex.large_impls):
            for prim in [p for p in table if p.name in INDEX_OUTPUTS]:
                del table[prim]


# -- index results: the primitives' implementations give int64; ``index_dtype`` converts ----------

#: primitive name -> which of its results are indices (None: its one result)
INDEX_OUTPUTS: dict = {
    "argmax": None, "argmin": None, "count_nonzero": None, "searchsorted": None, "argsort": None,
    "nonzero": "all", "unique_counts": (1,), "unique_inverse": (1,), "unique_all": (1, 2, 3),
}


def _index_adapter(ex, prim, fn):
    """``fn`` taking an ``index_dtype`` param: its index results converted to it (inside the
    executor's compiled call, where the executor compiles per op or per graph)."""
    which = INDEX_OUTPUTS[prim.name]

    def impl(*bufs, index_dtype=None, **params):
        out = fn(*bufs, **params)
        if index_dtype is None:
            return out
        xp = ex.xp
        if which is None:
            return out if out.dtype == index_dtype else xp.astype(out, index_dtype)
        return tuple(xp.astype(o, index_dtype) if (which == "all" or i in which) and o.dtype != index_dtype
                     else o for i, o in enumerate(out))

    impl.__name__ = f"{prim.name}_index_dtype"
    return impl


def _adapt(ex, prim, fn):
    # only executors with a device whose index dtype is not int64 pay for the wrapper
    uniform = for_executor(ex)
    if uniform is not None and uniform.index == _dtypes.int64:
        return fn
    return _index_adapter(ex, prim, fn)


for _name in INDEX_OUTPUTS:
    _exec.RESULT_ADAPTERS[_name] = _adapt


# -- the setting for 64-bit data on devices without native 64-bit types ---------------------------

MODES = ("downcast", "emulate", "refuse")
_scoped: ContextVar = ContextVar("arrayx_tpu_64bit", default=None)
_default: str = _config.get("ARRAYX_TPU_64BIT")


class DowncastWarning(UserWarning):
    """64-bit data became 32-bit on a device without native 64-bit types (once per process)."""


def mode() -> str:
    """The setting here: the innermost ``tpu_64bit(...)`` block, else ``ARRAYX_TPU_64BIT``."""
    value = _scoped.get()
    return _default if value is None else value


@contextlib.contextmanager
def tpu_64bit(mode: str) -> Iterator[None]:
    """Within the block (this thread / asyncio task only), what 64-bit data does on a device without
    native 64-bit types (a TPU): ``"downcast"`` (the default: to float32/int32/uint32/complex64, one
    warning per process; an explicit 64-bit ``dtype=`` raises), ``"emulate"`` (kept; XLA emulates it,
    slowly) or ``"refuse"`` (TypeError).  ``ARRAYX_TPU_64BIT`` sets it for the process."""
    if mode not in MODES:
        raise ValueError(f"tpu_64bit: mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    token = _scoped.set(mode)
    try:
        yield
    finally:
        _scoped.reset(token)


_warned = False
_warn_lock = threading.Lock()


def _where(ex, device) -> str:
    return str(ex.default_device() if device is None else device)


def arriving(dt: np.dtype, dd: DeviceDtypes, ex, device, fname: str) -> np.dtype:
    """The dtype data of dtype ``dt`` gets when it arrives, without a ``dtype=``, on ``device`` (of
    ``ex``; None: its default) with defaults ``dd``: ``dt`` itself, except 64-bit data on a device
    without native 64-bit types, which the setting decides (downcast, emulate, refuse)."""
    if dd.native64 or dt not in WIDE:
        return dt
    setting = mode()
    if setting == "emulate":
        return _emulated(dt, dd, ex, device, fname)
    to = dd.narrow[dt]
    if setting == "refuse":
        raise TypeError(
            f"{fname}: {dt} data on {_where(ex, device)}, which has no native 64-bit types, and "
            f"ARRAYX_TPU_64BIT is 'refuse'; convert it first (e.g. numpy's .astype({to.name})), or allow "
            f"it with arrayx.tpu_64bit('downcast') (to {to}) or arrayx.tpu_64bit('emulate') (slow)")
    global _warned
    if not _warned:
        with _warn_lock:
            first, _warned = not _warned, True
        if first:
            warnings.warn(
                f"{fname}: {dt} data became {to} on {_where(ex, device)}, which has no native 64-bit "
                f"types (float64 -> {dd.real}, complex128 -> {dd.complex}, int64 -> {dd.integral}, "
                f"uint64 -> {dd.unsigned}; said once per process).  To keep 64 bits (XLA emulates them, "
                f"slowly) set ARRAYX_TPU_64BIT=emulate or use `with arrayx.tpu_64bit('emulate'):`; to "
                f"raise instead, 'refuse'", DowncastWarning, stacklevel=_user_stacklevel())
    return to


#: the modules whose public functions take a user's ``dtype=`` and ask :func:`requested` about it
_ENTRY_MODULES = frozenset({__name__, "arrayx.api.creation", "arrayx.api.data_types", "arrayx.api.statistical",
                            "arrayx.api.linalg"})


def _user_stacklevel() -> int:
    """``warnings.warn``'s stacklevel of the first caller outside arrayx (the user's line)."""
    level, frame = 2, sys._getframe(2)  # 1: the warn call's function, 2: its caller
    while frame is not None and frame.f_globals.get("__name__", "").startswith("arrayx."):
        level, frame = level + 1, frame.f_back
    return level


def _from_arrayx_itself() -> bool:
    """Whether the public function asking was called by arrayx's own code (an index key's int64, the
    float64 steps of float32 random draws), not by the user: such requests are kept (emulated)."""
    from arrayx.api import _numpy_methods  # x.astype(np.float64): the user's request, passed through

    passing = _numpy_methods.astype.__code__
    frame = sys._getframe(2)
    while frame is not None and (frame.f_globals.get("__name__") in _ENTRY_MODULES or frame.f_code is passing):
        frame = frame.f_back
    name = "" if frame is None else frame.f_globals.get("__name__", "")
    return name == "arrayx" or name.startswith("arrayx.")


def requested(dt: np.dtype, dd: DeviceDtypes, ex, device, fname: str) -> np.dtype:
    """An explicit ``dtype=`` argument for ``device``: a 64-bit one on a device without native 64-bit
    types is allowed only under ``"emulate"`` (never dropped silently); ``dt`` otherwise.  arrayx's
    own 64-bit intermediates (not the user's request) are kept in every mode."""
    if dd.native64 or dt not in WIDE:
        return dt
    setting = mode()
    if setting == "emulate" or _from_arrayx_itself():
        return _emulated(dt, dd, ex, device, fname)
    raise TypeError(
        f"{fname}: dtype={dt} on {_where(ex, device)}, which has no native 64-bit types "
        f"(ARRAYX_TPU_64BIT is {setting!r}); use {dd.narrow[dt]}, or emulate {dt} (exact, slow) with "
        f"`with arrayx.tpu_64bit('emulate'):` or ARRAYX_TPU_64BIT=emulate")


def _emulated(dt: np.dtype, dd: DeviceDtypes, ex, device, fname: str) -> np.dtype:
    """``dt``, kept under "emulate", unless the device cannot emulate it (NotImplementedError)."""
    why = dd.unemulated.get(dt)
    if why is None:
        return dt
    raise NotImplementedError(
        f"{fname}: {dt} on {_where(ex, device)} is not run, even with ARRAYX_TPU_64BIT=emulate: {why}. Use "
        f"{dd.narrow[dt]} (`with arrayx.tpu_64bit('downcast'):` makes {dt} data {dd.narrow[dt]}), or compute on "
        f"the host: device='jax:cpu:0'")


def reset_warning() -> None:
    """Let the next downcast warn again (tests)."""
    global _warned
    _warned = False
