"""arrayx's 64-bit types on JAX, for arrayx's own calls only.

JAX computes in 32 bits unless ``jax_enable_x64`` is on, and then turns float64/int64 requests
into float32/int32 silently; an operation on a float64 array made with it on gives float32 when
it runs with it off, and a ``jax.jit`` program traced with it on is traced again, in 32 bits,
when called with it off.  The setting has a value per thread: ``jax.enable_x64(True)`` sets the
calling thread's until it is undone (JAX >= 0.8; before, ``jax.experimental.enable_x64``).

So arrayx never touches the process-wide setting.  Each way into JAX that the executor hands to
the rest of arrayx turns the calling thread's setting on for the length of the call and puts the
caller's back after (``swap``/``restore``): the user's own ``jax.numpy`` code keeps its
defaults (``jnp.asarray(numpy float64)`` is float32 unless the user enabled 64 bits), and arrayx
keeps the standard's dtypes (float64 default float, int64 default index).  Those ways in:

- the eager implementations (``JaxExecutor.finish_impl``: one :class:`Scoped` around each),
  compiled graphs (``JaxExecutor.compile``: traced inside, and called inside, so that JAX never
  traces them again in 32 bits), ``basic_index``;
- the transfers (``asarray``, ``from_dlpack``, ``to_host``, ``to_device``, ``from_foreign``,
  ``index_range``): :func:`in_x64` on the methods;
- the namespace ``JaxExecutor.xp`` (:class:`Namespace`): ``jax.numpy`` whose functions run inside,
  for the code above the executors that calls it directly (creation functions, ``iota``, copies);
- a deferred transpose computed (``Permuted.materialize``), and the runners of ``pmap``/
  ``shard_map`` (:meth:`JaxExecutor.scoped`).

Work that XLA hands to other threads (host callbacks) runs NumPy only, or enters arrayx, which
enters the scope itself.  The other way round, the user's own code that arrayx calls back from
inside its scope (``arrayx.debug.callback``) runs at the process-wide setting (:func:`as_process`).
A ``jax.Array`` of the user's keeps its dtype in arrayx (``asarray`` of a float32 one is float32).

Cost: two C++ calls per scope (~0.1 us) plus one Python call layer; eager ops of 8 elements
measured 0.5-0.8 us slower than with the process-wide switch, of 7-10 us
(``benchmarks/bench_jax_x64_scope.py``, results/jax_x64_scope.json).  Inside the scope a
``jax.jit`` call itself takes ~0.15 us more (4.6 -> 4.8 us on CPU: the thread's setting enters its
cache key); it keeps JAX's C++ fast path.  The eager path enters the scope inline (``eager.direct``).
"""
from __future__ import annotations

import functools
import types

from arrayx.core.precision import current as _precision

__all__ = ["load", "in_x64", "as_process", "Scoped", "Namespace", "swap", "restore"]

#: ``swap(True)`` turns the calling thread's 64-bit setting on and returns what it was;
#: ``restore(that)`` puts it back (set by :func:`load`: JAX is imported only when the executor is used)
swap = None
restore = None
#: the same pair for ``jax.default_matmul_precision``, used while ``arrayx.default_matmul_precision``
#: (or ARRAYX_MATMUL_PRECISION) names a precision (arrayx/core/precision.py); None leaves JAX's own
precision_swap = None
precision_restore = None


def load(jax) -> None:
    """Take the per-thread switch from ``jax`` (``jax.enable_x64``'s own swap, else its context manager)."""
    global swap, restore
    global precision_swap, precision_restore
    precision = jax.default_matmul_precision
    if hasattr(precision, "swap_local") and hasattr(precision, "set_local"):
        precision_swap, precision_restore = precision.swap_local, precision.set_local
    else:  # older JAX: its context manager
        def swap_precision(value):
            cm = precision(value)
            cm.__enter__()
            return cm

        precision_swap, precision_restore = swap_precision, lambda cm: cm.__exit__(None, None, None)
    state = getattr(jax, "enable_x64", None)
    global process_value
    process_value = getattr(state, "get_global", None)
    if hasattr(state, "swap_local") and hasattr(state, "set_local"):  # JAX >= 0.8: a C++ per-thread value
        swap, restore = state.swap_local, state.set_local
        return
    from jax.experimental import enable_x64 as scope  # older JAX: the per-thread context manager

    def swap_cm(value):
        cm = scope(value)
        cm.__enter__()
        return cm

    swap, restore = swap_cm, lambda cm: cm.__exit__(None, None, None)


#: the process-wide setting (the user's: ``JAX_ENABLE_X64``, ``jax.config.update``), None where JAX
#: does not say (set by :func:`load`)
process_value = None


def as_process(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with the calling thread at JAX's process-wide 64-bit setting, the user's,
    not arrayx's: for the user's own code that arrayx calls back (``arrayx.debug.callback``), which
    may call ``jax.numpy`` itself.  (A thread setting of the user's own around the arrayx call is
    not seen there; older JAX without ``get_global``: the callback sees arrayx's.)"""
    if process_value is None:
        return fn(*args, **kwargs)
    prev = swap(process_value())
    try:
        return fn(*args, **kwargs)
    finally:
        restore(prev)


def in_x64(fn):
    """``fn`` that runs with the calling thread's 64-bit types on, the caller's setting restored after."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return call_scoped(fn, args, kwargs)

    return run


def call_scoped(fn, args, kwargs):
    """``fn(*args, **kwargs)`` with 64-bit types on and arrayx's matmul precision, if one is named."""
    prev = swap(True)
    wanted = _precision()
    if wanted is None:
        try:
            return fn(*args, **kwargs)
        finally:
            restore(prev)
    before = precision_swap(wanted)
    try:
        return fn(*args, **kwargs)
    finally:
        precision_restore(before)
        restore(prev)


class Scoped:
    """A callable (an eager implementation, a compiled program) called with 64-bit types on; its
    other attributes are the callable's (``jax.jit``'s ``lower``, ``_cache_size``, ...)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        prev = swap(True)
        wanted = _precision()
        if wanted is None:
            try:
                return self.fn(*args, **kwargs)
            finally:
                restore(prev)
        before = precision_swap(wanted)  # the jit cache keys on it: traced and called at the same precision
        try:
            return self.fn(*args, **kwargs)
        finally:
            precision_restore(before)
            restore(prev)

    def scope_parts(self):
        """(the program, ``swap``, ``restore``) for a caller that enters the scope inline (jit's
        cache-hit path): ``prev = swap(True)``, the program, ``restore(prev)``; only while arrayx names
        no matmul precision (``arrayx.core.precision.current()`` is None), else it calls this object."""
        return self.fn, swap, restore

    def __getattr__(self, name):
        if name == "fn":  # not yet set (a copy being made)
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __repr__(self) -> str:
        return f"Scoped({self.fn!r})"


class Namespace:
    """``jax.numpy`` (or a submodule: ``linalg``, ``fft``) whose functions run with 64-bit types on.
    Classes (``ndarray``, ``float64``, ``dtype``), constants and other values are the module's own."""

    def __init__(self, module: types.ModuleType):
        self._module = module

    def __getattr__(self, name):
        if name.startswith("__") and name not in ("__name__", "__doc__", "__version__"):
            raise AttributeError(name)
        value = getattr(self._module, name)
        if isinstance(value, types.ModuleType):
            value = Namespace(value)
        elif callable(value) and not isinstance(value, type):
            value = in_x64(value)
        setattr(self, name, value)  # found once: later reads are an instance attribute
        return value

    def __dir__(self):
        return dir(self._module)

    def __repr__(self) -> str:
        return f"<{self._module.__name__}, with arrayx's 64-bit types>"
