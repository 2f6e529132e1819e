"""The executor protocol, the registry and executor selection.

An executor knows how to run one primitive on its own buffers (``resolve`` ->
callable, used by eager ``bind``) and how to compile a whole graph
(``compile``, used by jit).  Everything above executors is executor-neutral.

Selection for creation functions, first match wins: the ``device=`` argument,
``with arrayx.use_executor(name)``, ``arrayx.set_executor(name)``, the
``ARRAYX_EXECUTOR`` environment variable, then ``"numpy"``.  Operations on
existing arrays run on their arrays' executor.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import os
import threading
from contextvars import ContextVar
from typing import Any, Callable, Iterator

import numpy as np

from arrayx.core import config as _config

__all__ = [
    "Device", "Executor", "GENERIC", "register_executor", "get", "executors", "registered",
    "set_executor", "get_executor", "use_executor", "resolve_device"
]



class Device:
    """A device of one executor: ``Device('numpy:cpu')``, ``Device('jax:cpu:0')``.

    ``native`` is the executor's own device object (a ``jax.Device``, a CuPy
    device id, ...).  Devices compare equal when executor and label agree.
    """

    __slots__ = ("executor", "label", "native")

    def __init__(self, executor: str, label: str, native: Any = None):
        self.executor = executor
        self.label = label
        self.native = native

    def __repr__(self) -> str:
        return f"Device('{self.executor}:{self.label}')"

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        if isinstance(other, Device):
            return self.executor == other.executor and self.label == other.label
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.executor, self.label))

    def __reduce__(self):
        # ``native`` (a jax.Device, ...) does not pickle: look the device up where it is loaded
        return (_device_named, (self.executor, self.label))


def _device_named(executor: str, label: str) -> Device:
    ex = _registry.get(executor)
    if ex is not None and ex.available():
        for d in ex.devices():
            if d.label == label:
                return d
    return Device(executor, label)


class Executor:
    """Base class of executors.  Subclasses set ``name``, ``array_type`` and ``_load``.

    One table per executor, ``self.table``: primitive name -> implementation over this
    executor's buffers, or None for "not supported by this executor" (NotImplementedError naming
    both).  It is the class's ``overrides``: the entries whose implementation differs from
    ``getattr(xp, prim.impl_name)``, written in the executor's own package, one module per
    category beside the class (``executors/<name>/lax.py``, ``nn.py``, ``random.py``,
    ``parallel.py``, ``sharding.py``: the entries for ``lax``'s convolution, ``nn``'s special
    functions, random's XLA operations, the collectives ...), each merged into ``overrides``.

    How ``resolve`` finds the implementation of a primitive, the one way for every primitive:

    1. this executor's table (None there: NotImplementedError);
    2. :data:`GENERIC`, the one table shared by all executors (implementations written over any
       standard namespace's buffers: ``astype``, ``concat``, the creation functions, the indexing
       primitives (``api/_indexing_generic.py``) ...);
    3. this executor's namespace, ``getattr(xp, prim.impl_name)``;
    4. the primitive's ``composition`` (written in arrayx operations, so any executor, a third
       party's too, runs it: ``lax.conv``, ``nn.erf`` ...);
    5. else NotImplementedError naming the function and the executor.

    jit (``core/lowering.py``) runs each equation through this same lookup; ``Primitive.lowerings``
    (keyed by executor name, ``"*"`` for any) is no second table of implementations but a factory
    called once per equation at compile time, ``(executor, params) -> callable over buffers``, for
    what must be built from the compiling executor or from sub-graphs: cond/while/scan, calls,
    custom rules and checkpoint lower their graphs, creation and iota build on the compiling
    executor, host callbacks use its own (``jax.debug.callback``).
    """

    name: str = "?"
    array_type: type = type(None)
    #: primitive name -> callable(*buffers, **params) or None (unsupported)
    overrides: dict[str, Callable | None] = {}
    #: one line a user can act on when the executor cannot run here
    install_hint: str = ""
    #: buffers can be written in place (``x[i] = v`` mutates); else updates are functional
    mutable: bool = True
    #: buffers may have unknown (NaN) dimensions, e.g. Dask after boolean masks
    unknown_shapes: bool = False
    #: the buffers' own integer-array indexing raises IndexError (naming index and size) out of
    #: range, so eager indexing need not check first (NumPy); JAX clamps, CuPy wraps
    checks_index_bounds: bool = False
    #: see ``__init__`` (the class's value serves executors whose ``__init__`` does not call ours)
    device_dtypes = None
    #: eager ops run in this process on host memory at little cost per call (random draws are
    #: then computed in cache-sized slices); False where dispatch or graph size dominates
    eager_on_host: bool = False
    #: results that may take this many bytes run ``resolve_large``'s function, which writes them
    #: into reused memory (the NumPy executor's buffer pool); 0: no pool, ``resolve`` for all
    pool_min_bytes: int = 0

    #: None, or ``f(buf, key)`` giving ``buf[key]`` for a basic key of ints, slices, None and
    #: Ellipsis (bounds already checked) or None where it does not take the key: eager basic
    #: indexing calls it before the buffer's own ``__getitem__`` (the JAX executor compiles it)
    basic_index = None

    def sole_holder(self, array) -> bool:
        """Whether nothing but ``array`` reaches its buffer's memory, so that an elementwise op of a
        temporary may write its result there (NumPy's temporary elision; `Array.__mul__` and
        friends).  False here: only executors whose buffers are written in place say otherwise."""
        return False

    def __init__(self) -> None:
        #: this executor's table (see the class docstring), a copy of the class's overrides
        self.table: dict = dict(type(self).overrides)
        self.impls: dict = {}  # Primitive -> resolved callable (cache for eager bind)
        self.large_impls: dict = self.impls  # the same for results from pool_min_bytes (no pool: one table)
        # read on every eager op: Python 3.11 specialises reads of instance attributes, not of class ones
        self.array_type = type(self).array_type
        self.unknown_shapes = type(self).unknown_shapes
        #: the default dtypes of the default device, a ``DeviceDtypes`` that ``api/_device_dtypes.py``
        #: fills on first use (None until then): the creation functions read it on every call
        self.device_dtypes = None
        self._xp = None
        self._unavailable: str | None = None
        self._checked = False

    # -- availability -----------------------------------------------------
    def _load(self):
        """Import the backing library and return its standard namespace (may raise)."""
        raise NotImplementedError(f"executor {self.name!r} ({type(self).__name__}) does not define _load")

    def available(self) -> bool:
        if not self._checked:
            # Threads that arrive while another loads wait for it: checked is set last.
            with _load_lock(self.name):
                if not self._checked:
                    try:
                        self._xp = self._load()
                    except Exception as e:  # ImportError, no GPU, broken install, a bad ARRAYX_* variable ...
                        self._unavailable = f"{type(e).__name__}: {e}".strip()
                        if isinstance(e, _config.ConfigError):  # the variable's fix, not an install hint
                            self.install_hint = "Correct or unset that environment variable."
                    self._checked = True
        return self._unavailable is None

    @property
    def unavailable_reason(self) -> str | None:
        self.available()
        return self._unavailable

    @property
    def xp(self):
        if not self.available():
            raise RuntimeError(
                f"executor {self.name!r} is not available here: {self._unavailable}. {self.install_hint}"
            )
        return self._xp

    # -- devices ----------------------------------------------------------
    def devices(self) -> list[Device]:
        return [Device(self.name, "cpu")]

    def default_device(self) -> Device:
        return self.devices()[0]

    def device_of(self, buf) -> Device:
        return self.default_device()

    def platform_of(self, device: Device) -> str:
        """The kind of hardware ``device`` is ("cpu", "gpu", "cuda", "tpu", ...), which decides its
        default dtypes (``arrayx/api/_device_dtypes.py``'s table): the first part of its label
        (``Device('jax:tpu:0')`` -> "tpu"), which every executor here writes as its platform."""
        return device.label.partition(":")[0]

    def capabilities(self) -> dict:
        """The standard's capabilities, exactly its three keys (anything more: ``executor_info``)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def executor_info(self) -> dict:
        """What this executor reports beyond the standard's capabilities (kernels, threads, caches)."""
        return {}

    def memory_limit(self) -> tuple[int, str] | None:
        """(most bytes one new array may need, what sets that limit), checked by the creation
        functions before they call the executor; None where there is no such limit to check."""
        total = host_memory_bytes()
        return None if total is None else (total, "this machine's memory and swap")

    def supports(self, prim_name: str) -> bool:
        """Whether ``prim_name`` runs here: False where this executor's table says None (unsupported)."""
        return self.table.get(prim_name, True) is not None

    def unsupported(self) -> list:
        """The primitives this executor's table marks unsupported (entries that are None)."""
        return sorted(name for name, fn in self.table.items() if fn is None)

    # -- running primitives -------------------------------------------------
    def resolve(self, prim) -> Callable:
        """The callable that runs ``prim`` on this executor's buffers (cached)."""
        # most specific first (the class docstring): this executor's table, the generic table, the
        # executor's namespace, the primitive's composition
        fn = self.table.get(prim.name)
        if fn is None and prim.name in self.table:
            raise NotImplementedError(f"{prim.name} is not supported by the {self.name!r} executor")
        if fn is None:
            fn = GENERIC.get(prim.name)
        if fn is None:
            fn = self.xp
            for part in prim.impl_name.split("."):
                fn = getattr(fn, part, None)
                if fn is None:
                    break
        if fn is None:  # last: the primitive written in arrayx operations, which any executor runs
            if getattr(prim, "composition", None) is None:
                raise NotImplementedError(
                    f"{prim.name} is not implemented by the {self.name!r} executor "
                    f"(its namespace has no {prim.impl_name!r}, and {prim.name} has no composition "
                    f"in arrayx operations)"
                )
            fn = prim.composed_impl(self)
        adapt = RESULT_ADAPTERS.get(prim.name)
        if adapt is not None:  # e.g. an index result's dtype param (api/_device_dtypes.py)
            fn = adapt(self, prim, fn)
        self.impls[prim] = fn = self.finish_impl(prim, fn)
        return fn

    def resolve_large(self, prim) -> Callable:
        """The callable for ``prim`` where its result may take ``pool_min_bytes`` or more (cached
        in ``large_impls``); an executor without a pool never gets here (``pool_min_bytes`` 0)."""
        return self.resolve(prim)

    def finish_impl(self, prim, fn) -> Callable:
        """The callable eager bind caches for ``prim`` (an executor may wrap ``fn``, e.g. in ``jax.jit``)."""
        return fn

    def index_range(self, buf) -> tuple[int, int]:
        """(min, max) of a non-empty integer buffer as Python ints, for bounds checks; only the
        two numbers reach the host."""
        xp = self.xp
        both = self.to_host(xp.stack([xp.min(buf), xp.max(buf)]))
        return int(both[0]), int(both[1])

    def coerce(self, out):
        """Turn a non-buffer result (e.g. a NumPy scalar) into this executor's buffer type."""
        return self.xp.asarray(out)

    def lower(self, graph) -> Callable:
        """A Python function of the graph's input buffers computing its outputs, one call per
        equation over this executor's implementations (see ``core/lowering.py``)."""
        return default_lowering(self, graph)

    def compile(self, graph, donate_argnums: tuple = ()) -> Callable:
        """``jit``'s executable for ``graph``: buffers in, list of buffers out (each executor's file)."""
        raise NotImplementedError(f"jit: the {self.name!r} executor does not implement compile(graph)")

    # -- moving data --------------------------------------------------------
    def asarray(self, obj, dtype=None, copy=None, device: Device | None = None):
        """A buffer of this executor from host data (NumPy array, scalar, nested sequence)."""
        return self.xp.asarray(obj, dtype=dtype, copy=copy)

    def casts_while_copying(self, obj: np.ndarray, dtype) -> bool:
        """Whether ``asarray(obj, dtype=dtype, copy=True)`` casts NumPy data ``obj`` with NumPy's
        rules in the copy it makes anyway (one pass over the data): then ``arrayx.asarray`` hands
        the data over uncast.  No by default: the caller casts with NumPy first."""
        return False

    def from_dlpack(self, obj, copy=None):
        return self.xp.from_dlpack(obj, copy=copy) if copy is not None else self.xp.from_dlpack(obj)

    def to_host(self, buf) -> np.ndarray:
        return np.asarray(buf)

    def from_foreign(self, buf, source: "Executor"):
        """A new buffer of this executor holding ``buf`` of executor ``source`` (a copy)."""
        return self.asarray(np.array(source.to_host(buf), copy=True))

    def host_for_pickle(self, buf) -> np.ndarray:
        """The values an array pickles as (arrays pickle by value: executor name, device, host data)."""
        return np.asarray(self.to_host(buf))

    def dlpack_buffer(self, buf):
        """An object exposing ``__dlpack__`` for ``buf`` (a host copy where the library has none)."""
        return buf

    def shape_of(self, buf) -> tuple:
        """Shape with unknown dimensions as None (only called when ``unknown_shapes``)."""
        return tuple(None if d != d else int(d) for d in buf.shape)

    def unknown_size_error(self, fname: str) -> TypeError:
        """The error for ``fname`` needing a size this executor reports as None (unknown_shapes only)."""
        return TypeError(f"{fname}: the array's size depends on its values and is not known on the {self.name!r} executor")

    def to_device(self, buf, device: Device):
        """Move a buffer between devices of this executor."""
        return buf

    def __repr__(self) -> str:
        return f"<arrayx executor {self.name!r}>"

    # An executor is identified by its name: a copy (from pickle, a Dask worker) is the same
    # executor, and pickling one stores its name for a registry lookup where it is loaded.
    def __eq__(self, other) -> bool:
        if isinstance(other, Executor):
            return self.name == other.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):
        return (get, (self.name,))


#: ``arrayx.core.lowering.straight_line``, set when that module loads (it builds on this one: graphs,
#: float checks); every path that compiles a graph imports it first
default_lowering: Callable | None = None


@functools.lru_cache(maxsize=None)  # read once: creation functions check every request against it
def host_memory_bytes() -> int | None:
    """This machine's physical memory plus swap (what one allocation can ever get), None if unknown."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return None
    try:
        with open("/proc/meminfo") as f:
            swap = next((int(line.split()[1]) * 1024 for line in f if line.startswith("SwapTotal:")), 0)
    except OSError:
        swap = 0
    return total + swap


_load_locks: dict[str, threading.RLock] = {}
_load_locks_guard = threading.Lock()


def _load_lock(name: str) -> threading.RLock:
    """The lock that one executor's first load holds (kept outside the instance, which pickles)."""
    lock = _load_locks.get(name)
    if lock is None:
        with _load_locks_guard:
            lock = _load_locks.setdefault(name, threading.RLock())
    return lock


# --------------------------------------------------------------------------
# registry

_registry: dict[str, Executor] = {}
_entry_points_loaded = False
#: primitive name -> its generic implementation, the one table every executor shares (step 2 of
#: ``Executor.resolve``): written over any standard namespace's buffers (the namespace found from
#: the buffers themselves, ``api.manipulation.buffer_namespace``), so a third party's executor runs
#: it too.  The module that defines the primitive adds its entry beside the definition
#: (``GENERIC[astype_p.name] = _astype_any``).  A primitive that is better written in arrayx
#: operations has a ``composition`` instead; per-executor implementations are entries of that
#: executor's own table.
GENERIC: dict[str, Callable] = {}
#: primitive name -> ``adapt(executor, prim, fn) -> fn``, applied to whatever ``resolve`` found: a
#: param that the api layer adds and no executor's implementation takes (``index_dtype`` of the
#: index results on devices whose index dtype is not int64, ``api/_device_dtypes.py``)
RESULT_ADAPTERS: dict[str, Callable] = {}


def register_executor(executor: Executor, *, replace: bool = False) -> Executor:
    """Register an executor instance under ``executor.name``."""
    if not isinstance(executor, Executor):
        raise TypeError(f"register_executor: expected an arrayx Executor, got {type(executor).__name__}")
    if executor.name in _registry and not replace:
        raise ValueError(f"register_executor: an executor named {executor.name!r} is already registered")
    _registry[executor.name] = executor
    return executor


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="arrayx.executors"):
        if ep.name in _registry:
            continue
        try:
            obj = ep.load()
            register_executor(obj() if isinstance(obj, type) else obj)
        except Exception as e:  # a broken plug-in must not break arrayx
            import warnings

            warnings.warn(f"arrayx: executor entry point {ep.name!r} failed to load: {e}")


def registered() -> list[str]:
    """Names of every registered executor, available here or not."""
    _load_entry_points()
    return list(_registry)


def executors() -> list[str]:
    """Names of the executors that can run on this machine."""
    return [n for n in registered() if _registry[n].available()]


def get(name: str) -> Executor:
    """The registered executor called ``name`` (ValueError listing the names otherwise)."""
    ex = _registry.get(name)
    if ex is None:
        _load_entry_points()
        ex = _registry.get(name)
        if ex is None:
            raise ValueError(
                f"unknown executor {name!r}; registered executors are {sorted(_registry)}"
            )
    return ex


def _get_available(name: str, where: str) -> Executor:
    ex = get(name)
    if not ex.available():
        raise RuntimeError(
            f"{where}: executor {name!r} is not available here ({ex.unavailable_reason}). "
            f"{ex.install_hint}"
        )
    return ex


# --------------------------------------------------------------------------
# selection

_scoped: ContextVar = ContextVar("arrayx_executor", default=None)
_process_default: Executor | None = None


def set_executor(name: str | None) -> None:
    """Make ``name`` the process-wide default executor for creation functions; ``None`` restores the
    default (``ARRAYX_EXECUTOR``, else numpy)."""
    global _process_default
    _process_default = None if name is None else _get_available(name, "set_executor")


def get_executor() -> Executor:
    """The executor new arrays are created on here (scope > process default > env > numpy)."""
    ex = _scoped.get()
    if ex is not None:
        return ex
    if _process_default is not None:
        return _process_default
    env = _config.get("ARRAYX_EXECUTOR")
    if env:
        if env not in _registry:
            _load_entry_points()
        if env not in _registry:
            raise ValueError(
                f"ARRAYX_EXECUTOR={env!r} names no registered executor; registered executors are "
                f"{sorted(_registry)} (unset the variable to use 'numpy')"
            )
        return _get_available(env, "ARRAYX_EXECUTOR")
    return _registry["numpy"]


@contextlib.contextmanager
def use_executor(name: str) -> Iterator[Executor]:
    """Within the block (this thread / asyncio task only), create arrays on ``name``."""
    token = _scoped.set(_get_available(name, "use_executor"))
    try:
        yield _scoped.get()
    finally:
        _scoped.reset(token)


def resolve_device(device, fname: str) -> tuple[Executor, Device | None]:
    """Executor and device named by a ``device=`` argument (Device, executor name or 'name:label')."""
    if device is None:
        return get_executor(), None
    if isinstance(device, Device):
        return _get_available(device.executor, fname), device
    if isinstance(device, str):
        name, _, label = device.partition(":")
        ex = _get_available(name, fname)
        if not label:
            return ex, None
        for d in ex.devices():
            if d.label == label:
                return ex, d
        raise ValueError(
            f"{fname}: executor {name!r} has no device {label!r}; its devices are {ex.devices()}"
        )
    if isinstance(device, Executor):
        return device, None
    raise TypeError(
        f"{fname}: device must be an arrayx Device (x.device, arrayx.__array_namespace_info__().devices()) "
        f"or an executor name such as 'numpy' or 'jax:cpu:0', got {device!r}"
    )
