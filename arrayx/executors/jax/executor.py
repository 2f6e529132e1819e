"""The JAX executor: buffers are ``jax.Array``, the namespace is ``jax.numpy``.

Select it with ``arrayx.use_executor("jax")``, ``device="jax"`` (or
``"jax:cpu:0"``, ``"jax:gpu:0"``), or ``ARRAYX_EXECUTOR=jax``.

64-bit types
    JAX computes in 32 bits unless ``jax_enable_x64`` is on, and then turns
    ``float64``/``int64`` requests into ``float32``/``int32`` *silently*.  arrayx
    needs the standard's dtypes (float64 default float, int64 default index), but
    it never changes the process-wide setting: the setting has a value per thread,
    and every call arrayx makes into JAX (eager operations, compiled graphs, the
    transfers, ``xp``) turns the calling thread's on for that call and puts the
    caller's back after (``x64.py``: where, and what it costs).  So the user's own
    JAX code in the same process keeps its own defaults: ``jnp.asarray(numpy
    float64)`` stays float32 and ``jnp.arange(3)`` int32 unless the user enabled
    64 bits (``JAX_ENABLE_X64=1``, ``jax.config.update``, ``jax.enable_x64``).
    A ``jax.Array`` the user gives arrayx keeps its dtype (``asarray`` of a
    float32 one is float32); the buffers arrayx returns (``__dlpack__``,
    ``numpy.asarray``) keep theirs; JAX code of the user's that computes on them
    outside arrayx computes with the user's setting.

Immutability
    ``jax.Array`` buffers cannot be written.  ``x[k] = v`` and ``x += y`` on an
    arrayx array still work: arrayx computes the updated value functionally
    (``buf.at[k].set(v)``, see ``_scatter``) and rebinds the wrapper, so other
    arrayx arrays that shared the old buffer are unchanged (``mutable = False``).

One compiled call per op
    Each primitive runs as one ``jax.jit`` call of its ``jax.numpy``
    implementation (one program per set of params), which is faster than ``jax.numpy``'s own
    eager mode (one dispatch per internal step); see ``eager.py`` (its direct path for small
    operands: benchmarks/bench_jax_dispatch.py) and benchmarks/bench_executors_jax.py.
    Primitives with data-dependent output shapes (``nonzero``, ``unique_*``, boolean
    masks) or value-like params (indices, fill values) run op-by-op.  ``ARRAYX_JAX_JIT_OPS=0`` turns this off.

Deferred transposes
    ``x.T``, ``x.mT`` and ``permute_dims`` of an array of 1 MiB or more record the base and the
    axes (``permuted.Permuted``) instead of copying it in XLA (NumPy's transpose is a free view;
    XLA:CPU's took 5-80 ms on 61 MB): elementwise operations and reductions run on the base,
    ``matmul`` folds the transpose into the product, other compiled operations transpose inside
    their program, ``numpy.asarray`` is a transposed host view.  Compiled graphs that compute the
    operand of a LAPACK call (``svd``, ``qr``, ``eigh``, ``solve``, ...) run as consecutive programs
    cut before it (``programs.lapack_cut``), as XLA:CPU ran the fused form slower.

Large eager results on CPU
    On a process whose JAX backend is one CPU device, a result of 1 MiB or more is written into a
    dropped earlier result of its shape and dtype, donated to the program (``recycle.py``: XLA's
    freshly allocated results paid a page fault per 4 KiB, as much as the operation itself), and
    chains of ``add``/``subtract``/``maximum``/``minimum``/``sqrt``/``abs``/``negative`` (and a
    last ``multiply``) are recorded and run as one program when their value is needed
    (``fused.py``: one pass instead of one per operation, the values of the operations one by one).

Index arrays
    Eager ``x[int array]`` and ``x[mask]`` go through arrayx's primitives (``general_eager_keys``):
    ``gather`` compiled, ``boolean_mask`` selected on the host views on CPU; ``jax.Array``'s own
    indexing dispatched each step separately (1.4 ms and 8.4 ms on 20,000 x 64 float64).

Memory
    Loading the executor raises glibc's mmap threshold and keeps one malloc arena
    (``executors/common/heap.py``) so that XLA's large result buffers reuse freed heap instead
    of faulting in fresh pages on every op (a 6x cut in CPU time on 50 MB elementwise
    results); process-wide, the process keeps freed heap up to 1 GiB.
    ``ARRAYX_JAX_REUSE_MEMORY=0`` leaves malloc alone.

Deviations of ``jax.numpy`` that this module corrects (``overrides``): index
results that JAX returns as int32 (``searchsorted``) are int64, the standard's
default index dtype; ``floor_divide``/``remainder`` follow NumPy for signed
zeros, infinities and integer division by zero (0), and ``sign(-0.0)`` is 0,
as on every other executor.  Complex functions (and ``divide``, ``reciprocal``,
``pow``, ``sign``) at elements with a zero or non-finite part, in an operand or
in XLA's result, are computed on the host as the NumPy executor computes them: XLA drops
the sign of zero (branch cuts) and does not follow C99 Annex G at infinities.
The host reads and writes subnormals as zeros of their sign, as XLA does, on a
thread of its own (XLA runs callbacks with flush-to-zero on).  ``unique_*`` of
complex arrays, and of any array on a CPU device (faster), run on the host as the NumPy
executor's (JAX turns ``0+nanj`` into ``nan+0j``; docs/executors.rst, host kernels).
``max``/``min`` return NaN for a slice with one
(XLA:CPU loses NaNs in reductions of some lengths), ``any``/``all`` of complex look at
both parts, ``abs(inf+nanj)`` is inf, sums start from +0, and ``inv``/``solve``/
``cholesky`` mark failing matrices NaN as LAPACK decides (executors/common/linalg.py).
Still JAX's own: subnormals flush to zero on CPU (docs/executors.rst, the known deviation;
benchmarks/bench_jax_subnormals.py). Out-of-range indices are checked above the
executors, the same on each.
"""
from __future__ import annotations


import numpy as np

from arrayx.core import config as _config
from arrayx.executors.common.indexing import NUMPY_LIKE as _INDEXING, gather_key, native_basic_key
from arrayx.executors.common.linalg import FAILING as _LINALG_FAILING, checked as checked_linalg
from arrayx.core.executor import Device, Executor
from arrayx.executors.jax import lax as _lax, linalg as _jax_linalg, nn as _nn, parallel as _parallel, random as _random
from arrayx.executors.jax import sharding as _sharding, tpu_limits as _tpu_limits, x64 as _x64
from arrayx.executors.jax import numpy_rules as _numpy_rules
_SIGNED_ZERO = {name: _numpy_rules.keeping_signed_zero(name) for name in ("expm1", "sinh")}
from arrayx.executors.jax.numpy_rules import (  # noqa: E402
    _abs, _floor_divide, _mean, _nan_propagating, _prod, _remainder, _sign, _sum_from_plus_zero,
    _truth_reduction,
)
from arrayx.executors.jax import fused as _fused, permuted as _permuted, programs as _programs, recycle as _recycle
from arrayx.executors.jax import blas as _blas, eager as _eager, host_transfer as _host_transfer
from arrayx.executors.jax.fused import Pending
from arrayx.executors.jax.programs import lapack_cut as _lapack_cut
from arrayx.executors.jax.indexing import basic_index as _basic_index, boolean_mask as _boolean_mask, \
    in_host_memory as _in_host_memory
from arrayx.executors.jax.permuted import Permuted, plain as _plain
from arrayx.executors.jax.x64 import Scoped as _Scoped, in_x64 as _in_x64
from arrayx.executors.jax.eager import EAGER_ONLY as _EAGER_ONLY, Jitted as _Jitted, \
    SameDtypeShares as _SameDtypeShares, SquareForTwo as _SquareForTwo

_INDEX = np.dtype("int64")

jnp = None  # jax.numpy, set by JaxExecutor._load (JAX is imported only when the executor is used)

def _scatter(x, u, *index_bufs, axes, kind, mode, unique_indices=False):
    """scatter through ``x.at[k]`` (kind is the method's name); "drop" is JAX's own mode."""
    ref = x.at[gather_key(index_bufs, axes)]
    return getattr(ref, kind)(u, mode="drop" if mode == "drop" else "promise_in_bounds",
                              unique_indices=unique_indices)


_REPEAT = None  # the eager repeat-by-counts program, made on first use
_RANGE = None  # an index buffer's (min, max) off the host (JaxExecutor.index_range)


def _repeat(x, *counts, axis, repeats=None):
    """``repeat``: eagerly with a counts array, one compiled program per shapes and total length (the
    total read from the counts on the host, as the result's shape needs them anyway): ``jax.numpy``'s
    eager ``repeat`` dispatched ~20 steps, each compiling a program for every new shape.  A traced
    counts array (under jit: a data-dependent shape) keeps ``jax.numpy``'s own path; a negative count
    raises ValueError, as NumPy's does (``jax.numpy.repeat`` gave a result)."""
    global _REPEAT
    if not counts:
        return jnp.repeat(x, repeats, axis=axis)
    c = counts[0]
    if isinstance(c, _jax.core.Tracer) or isinstance(x, _jax.core.Tracer):
        return jnp.repeat(x, c, axis=axis)
    host = np.broadcast_to(np.asarray(c), (x.shape[axis],))
    if host.size and host.min() < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {host.min()} in the counts array")
    if _REPEAT is None:
        _REPEAT = _jax.jit(lambda x, c, axis, total: jnp.repeat(x, c, axis=axis, total_repeat_length=total),
                           static_argnames=("axis", "total"))
    return _REPEAT(x, c, axis=axis, total=int(host.sum()))


def _slice_update(x, v, *, key):
    from arrayx.executors.jax.indexing import slice_update  # a window by concatenation, not a scatter
    return slice_update(x, v, native_basic_key(key))


def _starts(starts):
    # the primitive clamps a negative start to 0; lax would count it from the end first
    return [jnp.maximum(jnp.asarray(s, dtype=_INDEX), 0) for s in starts]


def _dynamic_slice(x, *starts, sizes):
    return _jax.lax.dynamic_slice(x, _starts(starts), sizes)  # lax clamps the window into range


def _dynamic_update_slice(x, u, *starts):
    return _jax.lax.dynamic_update_slice(x, u, _starts(starts))


def _searchsorted(x1, x2, *, side="left", sorter=None):
    return jnp.searchsorted(x1, x2, side=side, sorter=sorter).astype(_INDEX)  # JAX gives int32


# -- linalg on singular / non-positive-definite input: NaN for the failing matrices (executors/common/linalg.py)

def _linalg_nan_where_failed(name):
    return checked_linalg(name, lambda: jnp)


# -- complex functions at infinite/NaN parts and at zero parts: XLA's kernels do not follow C99
# Annex G there (infinities, NaNs) and drop the sign of zero (so branch cuts ignore it:
# sqrt(-2-0j) gave +1.41j), so when such elements exist the host computes them as the NumPy
# executor does; so does an element whose result has a zero or non-finite part in XLA's answer
# (an overflow inside pow's exp(y*log(x)) gave nan+nanj where C99 gives inf+nanj; the real part
# of reciprocal(-0.36+3.4e38j) underflowed to +0, not -0); the other elements stay XLA's

_COMPLEX_SPECIAL = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "divide", "exp", "expm1",
                    "log", "log1p", "log2", "log10", "pow", "reciprocal", "sign", "sin", "sinh", "sqrt", "square",
                    "tan", "tanh")


def _flush_subnormals(a: np.ndarray) -> np.ndarray:
    """``a`` with each subnormal (of either part) a zero of its sign, as XLA on CPU reads and writes them."""
    if a.dtype.kind == "c":
        out = np.empty_like(a)
        out.real, out.imag = _flush_subnormals(a.real), _flush_subnormals(a.imag)
        return out
    if a.dtype.kind != "f":
        return a
    tiny = np.finfo(a.dtype).smallest_normal
    return np.where((a != 0) & (np.abs(a) < tiny), np.copysign(np.zeros((), a.dtype), a), a)


#: whether XLA here flushes subnormals to zero (measured once when JAX loads: True on CPU)
_XLA_FLUSHES = False
#: one worker thread, started by ``_load``, for the host side of callbacks: XLA runs a callback on
#: its own thread with the CPU's flush-to-zero mode on, where NumPy would flush too (compat's
#: complex sign(0+3.4e38j) became 0 through the subnormal 1/|z|)
_HOST_THREAD = None


def _numpy_reference(name, **params):
    """``name`` on host arrays, as the NumPy executor computes it (its own fixes included).

    Where XLA flushes subnormals, so does the host (operands and result): a patched element
    then reads its operands as XLA's own kernels and the mask that selected it did.
    """
    from arrayx.core.executor import get

    numpy_ex = get("numpy")
    fn = numpy_ex.overrides.get(name) or getattr(numpy_ex.xp, name)
    flush = _flush_subnormals if _XLA_FLUSHES else (lambda a: a)

    def compute(*xs):
        with np.errstate(all="ignore"):
            return flush(np.asarray(fn(*(flush(np.asarray(x)) for x in xs), **params)))

    def host(*xs):
        return _HOST_THREAD.submit(compute, *xs).result()

    return host


def _complex_special(name, fn=None):
    """``fn`` (default ``jax.numpy``'s ``name``) with its complex elements at zero/non-finite parts from the host."""
    def impl(*xs):
        out = (fn or getattr(jnp, name))(*xs)
        if out.dtype.kind != "c":
            return out
        zs = [jnp.asarray(x, dtype=out.dtype) for x in xs]
        special = ~jnp.isfinite(out) | (out.real == 0) | (out.imag == 0)  # zero parts: underflow and its sign
        for z in zs:
            special = special | ~jnp.isfinite(z) | (z.real == 0) | (z.imag == 0)

        def patch(out):
            ref = _jax.pure_callback(_numpy_reference(name), _jax.ShapeDtypeStruct(out.shape, out.dtype), *zs)
            return jnp.where(special, ref, out)

        return _jax.lax.cond(jnp.any(special), patch, lambda out: out, out)

    impl.__name__ = name
    return impl


def _log1p(x):
    """Complex log1p as NumPy computes it, log|1+z| + i arg(1+z) (XLA's formula parts from it by
    up to ~8 ulp at ordinary values, e.g. -0.28-0.28j, and stays finite where |1+z| overflows)."""
    if not jnp.issubdtype(x.dtype, jnp.complexfloating):
        return jnp.log1p(x)
    re, im = x.real + 1, x.imag
    return _jax.lax.complex(jnp.log(jnp.hypot(re, im)), jnp.arctan2(im, re))


def _cumulative_prod(x, **params):
    """XLA's running complex product starts from 1+0j, NumPy's from the first element: 1*(nan-9.1j)
    is nan+nanj, and so on after it.  They part only where a non-finite or zero part appears, so
    there the host computes the product as the NumPy executor does; finite products stay XLA's."""
    out = jnp.cumulative_prod(x, **params)
    if out.dtype.kind != "c":
        return out
    special = ~jnp.isfinite(out) | (out.real == 0) | (out.imag == 0)

    def patch(out):
        ref = _jax.pure_callback(_numpy_reference("cumulative_prod", **params),
                                 _jax.ShapeDtypeStruct(out.shape, out.dtype), x)
        return jnp.where(special, ref, out)

    return _jax.lax.cond(jnp.any(special), patch, lambda out: out, out)


def _atan2(x1, x2):
    """``atan2`` of operands whose subnormals are made zeros of their sign first.

    XLA's atan2 reads a subnormal operand as zero in some of its steps and not in others
    (atan2(1.5e-323, -0.5) gave -pi, atan2(1.5e-323, 1e-308) pi/2); flushed first, the result is
    NumPy's for those zeros, as everywhere else on XLA:CPU (the jax-flushes-subnormals deviation).
    """
    if _XLA_FLUSHES:
        x1, x2 = (jnp.where(jnp.abs(x) < jnp.finfo(x.dtype).smallest_normal, jnp.copysign(jnp.zeros((), x.dtype), x), x)
                  if jnp.issubdtype(x.dtype, jnp.floating) else x for x in (x1, x2))
    return jnp.arctan2(x1, x2)


def _on_host(obj) -> bool:
    try:
        return obj.__dlpack_device__()[0] == 1  # kDLCPU
    except Exception:  # noqa: BLE001 - a legacy capsule or a refusing producer: let JAX decide
        return False


def _private_copy(jnp, host: np.ndarray):
    """A JAX array over a host copy nobody else holds.

    ``jnp.from_dlpack(..., copy=True)`` of a CPU buffer was seen aliasing the producer's memory
    (about one move in seven, by alignment), so a later in-place write by a mutable executor showed
    through; copying on the host first leaves JAX nothing shared to alias.  The copy is placed as it
    is (``jax.device_put``, as ``asarray``'s own host path): ``jax.numpy.asarray`` compiled a
    conversion program per shape and dtype (a move from another executor compiled each new shape).
    """
    if _host_transfer.fits(host):
        return _jax.device_put(_host_transfer.private_copy(host))
    return jnp.asarray(np.array(host, copy=True))


def _unique_on_host(name):
    """``unique_*`` as the NumPy executor computes them, for complex arrays anywhere (JAX's turns
    0+nanj into nan+0j) and for every array in host memory (CPU): the result's size depends on
    the values, so eager ``jax.numpy`` waits for them too, and then sorts in a dozen dispatches
    (20,000 int64: 2.5 ms, NumPy 0.2 ms; scikit-learn's LDA calls it eight times per fit).  The
    values are the same (the elements themselves, their indices and counts), placed on x's device."""
    def impl(x):
        if x.dtype.kind != "c" and (isinstance(x, _jax.core.Tracer) or not _in_host_memory(x)):
            return getattr(jnp, name)(x)
        from arrayx.core.executor import get

        numpy_ex = get("numpy")  # eager only (a data-dependent shape): the values are on the host anyway
        out = (numpy_ex.overrides.get(name) or getattr(numpy_ex.xp, name))(np.asarray(x))
        device = next(iter(x.devices()))
        if isinstance(out, tuple):
            return type(out)(*(_jax.device_put(np.asarray(o), device) for o in out))
        return _jax.device_put(np.asarray(out), device)

    impl.__name__ = name
    return impl


def _nonzero(x):
    """``nonzero``.  In host memory (CPU) NumPy's on the host view, the index arrays placed on x's
    device: the result's size depends on the values, so eager ``jax.numpy`` waits for them too, then
    dispatches its steps one by one (64 elements: 1.2 ms; 20,000: 3.9 ms; scikit-learn's
    StandardScaler writes ``var[mask] = ...`` each fit, a ``nonzero`` per write).  Same values and
    dtype (int64 under JAX's 64-bit mode, NumPy's ``intp``)."""
    if isinstance(x, _jax.core.Tracer) or not _in_host_memory(x):
        return jnp.nonzero(x)
    device = next(iter(x.devices()))
    return tuple(_jax.device_put(i.astype(np.int64, copy=False), device) for i in np.nonzero(np.asarray(x)))


class _DLPackExport:
    """A jax.Array's DLPack export that also serves consumers asking for ``max_version`` < (0, 5).

    JAX refuses such requests although the capsule it makes is the unversioned (legacy) one
    those consumers want; the request is passed on without the version then.
    """

    __slots__ = ("buf",)

    def __init__(self, buf):
        self.buf = buf

    def __dlpack__(self, **kwargs):
        max_version = kwargs.get("max_version")
        if max_version is not None and tuple(max_version) < (0, 5):
            del kwargs["max_version"]
        return self.buf.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.buf.__dlpack_device__()


_jax = None  # the jax module, set by JaxExecutor._load
_NEEDS_CONCRETE: tuple = ()


def _data_dependent_error(graph) -> NotImplementedError:
    names = sorted({e.prim.name for e in graph.equations if e.prim.name in _EAGER_ONLY})
    return NotImplementedError(
        f"jit on the 'jax' executor: {', '.join(names) or 'an operation'} has an output shape that depends on "
        f"the values (a boolean mask, nonzero, unique), which XLA cannot compile; use arrayx.where(mask, x, 0) "
        f"or an operation with a size= argument inside jit, or call it outside jit"
    )


def _debug_callback(*bufs, fn):
    """``arrayx.debug.callback``'s user function on host copies, at the user's own JAX 64-bit setting
    (it may call ``jax.numpy`` itself), not arrayx's."""
    _x64.as_process(fn, *(np.asarray(b) for b in bufs))
    return ()


def _basic_key(buf, key):
    """``buf[key]`` for a basic key: one compiled window (``indexing.basic_index``) where it takes the key."""
    out = _basic_index(buf, key)
    return buf[key] if out is None else out


@_in_x64
def _xla_flushes_subnormals() -> bool:
    return bool(jnp.asarray(np.float64(5e-324)) * jnp.float64(1) == 0)


#: cut a compiled graph that computes a LAPACK operand before that call (``programs.lapack_cut``)
_CUT_BEFORE_LAPACK = True


class JaxExecutor(Executor):
    name = "jax"
    install_hint = "Install JAX with `pip install jax` (CPU) or `pip install 'jax[cuda12]'` (NVIDIA GPU)."
    mutable = False
    #: eager index arrays go through the primitives (``gather`` compiled, ``boolean_mask`` on the host
    #: on CPU), not ``jax.Array.__getitem__``, which dispatches jax.numpy's indexing steps one by one
    #: (``x[int array]`` 1.4 ms -> 0.3 ms; read by ``api/indexing.py``'s ``_eager_native_key``)
    general_eager_keys = True
    #: run each op as one ``jax.jit`` call (``eager.Jitted``); False: plain op-by-op jax.numpy
    jit_ops = _config.get("ARRAYX_JAX_JIT_OPS")
    #: primitive name -> implementation, where ``getattr(jax.numpy, name)`` is not what the standard says
    overrides: dict = {
        **_INDEXING,  # gather, slice, boolean_mask: jax.Array indexes as NumPy does (in-range indices)
        "scatter": _scatter,
        "slice_update": _slice_update,
        "repeat": _repeat,
        "dynamic_slice": _dynamic_slice,
        "dynamic_update_slice": _dynamic_update_slice,
        "searchsorted": _searchsorted,
        "debug_callback": _debug_callback,
        "boolean_mask": _boolean_mask,
        "nonzero": _nonzero,
        "floor_divide": _floor_divide,
        "remainder": _remainder,
        "abs": _abs,
        "atan2": _atan2,
        **{name: _sum_from_plus_zero(name) for name in ("sum", "matmul", "tensordot", "vecdot")},
        "mean": _mean,
        "prod": _prod,
        "max": _nan_propagating("max"),
        "min": _nan_propagating("min"),
        "cumulative_prod": _cumulative_prod,
        "any": _truth_reduction("any"),
        "all": _truth_reduction("all"),
        **{name: _complex_special(name, {"sign": _sign, "log1p": _log1p, **_SIGNED_ZERO}.get(name))
           for name in _COMPLEX_SPECIAL},
        **{name: _unique_on_host(name) for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values")},
        **{name: _linalg_nan_where_failed(name) for name in _LINALG_FAILING},
        # tall, thin float64 svd through CholeskyQR2's matrix products (this package's linalg.py)
        # (on a TPU each matrix scaled by a power of two first, svd, eigh and qr alike: XLA:TPU's
        # overflow and underflow where LAPACK scales)
        **{name: _numpy_rules._per_platform("power_of_two_scaled", getattr(_jax_linalg, f"scaled_{name}"),
                                            getattr(_jax_linalg, name))
           for name in ("svd", "svdvals", "eigh", "eigvalsh", "qr")},
        # lax, nn, random, the collectives and the sharding constraint (this package's modules)
        **_lax.TABLE,
        **_nn.TABLE,
        **_random.TABLE,
        **_parallel.TABLE,
        **_sharding.TABLE,
    }

    #: eager ``x[3:7]``, ``x[:, 2]``, ``x[i]`` as one compiled program (executors/jax/indexing.py), other
    #: basic keys (``x[::2]``, a 0-d ``x[...]``) by jax.Array's own indexing, with 64-bit types on
    basic_index = staticmethod(_Scoped(_basic_key))

    def __init__(self) -> None:
        super().__init__()
        self._devices: list[Device] = []
        self._by_native: dict = {}
        self._default: Device | None = None
        self._jax = None
        self._has_tpu = False  # set at load: whether tpu_limits' checks apply

    # -- availability ---------------------------------------------------------------
    def _load(self):
        import jax

        _x64.load(jax)  # 64-bit types for arrayx's own calls only, not the process's (see the module docstring)
        if _config.get("ARRAYX_JAX_REUSE_MEMORY"):
            from arrayx.executors.common.heap import reuse_large_blocks

            reuse_large_blocks()  # XLA's result buffers: reused heap, not fresh pages (executors/common/heap.py)
        import jax.numpy

        global jnp, _jax, _NEEDS_CONCRETE, _XLA_FLUSHES, _HOST_THREAD
        jnp = jax.numpy
        _jax = jax
        from concurrent.futures import ThreadPoolExecutor

        _HOST_THREAD = ThreadPoolExecutor(1, thread_name_prefix="arrayx-jax-host")
        _HOST_THREAD.submit(int).result()  # its thread starts here, with the default floating-point mode
        _XLA_FLUSHES = _xla_flushes_subnormals()
        _NEEDS_CONCRETE = (jax.errors.ConcretizationTypeError, jax.errors.NonConcreteBooleanIndexError,
                           jax.errors.TracerArrayConversionError, jax.errors.TracerIntegerConversionError)
        self._jax = jax
        _permuted.load(jax)
        _eager.load(jax, type(jnp.zeros((), dtype=jnp.float32)))
        _numpy_rules.load(jax)
        self.array_type = type(jnp.zeros((), dtype=jnp.float32))
        single_cpu = len(jax.devices()) == 1 and jax.devices()[0].platform == "cpu"
        _recycle.load(jax, self.array_type, single_cpu and _config.get("ARRAYX_JAX_REUSE_MEMORY"))
        _fused.load(jax, self.array_type, single_cpu)
        _blas.load(jax, self.array_type, single_cpu and _config.get("ARRAYX_JAX_BLAS_MATMUL"))  # blas.py
        natives = list(jax.devices())
        if natives[0].platform != "cpu":  # list the host too when an accelerator is the default
            try:
                natives += [d for d in jax.devices("cpu") if d not in natives]
            except RuntimeError:
                pass
        self._devices = [Device(self.name, f"{d.platform}:{d.id}", d) for d in natives]
        self._has_tpu = any(d.platform == "tpu" for d in natives)
        self._by_native = {d.native: d for d in self._devices}
        # many processes (jax.distributed): JAX lists every process's devices; new arrays go on this one's
        local = set(jax.local_devices())
        self._default = next((d for d in self._devices if d.native in local), self._devices[0])
        return _x64.Namespace(jnp)  # ``xp``: jax.numpy, each function run with 64-bit types on

    def finish_impl(self, prim, fn):
        # run with 64-bit types on (x64.py); what XLA:TPU aborts on refused first (tpu_limits.py)
        impl = self._eager_impl(prim, fn)
        routed = prim.name == "matmul"
        if routed:  # large float64 products on one CPU device: NumPy's BLAS (blas.py)
            impl = _blas.Routed(impl)
        jitted = impl.inner if routed else impl
        if jitted.__class__ is _Jitted:  # with the direct path for small plain operands (eager.py)
            scoped = _eager.direct(impl, jitted, gated=jitted.record is not None, routed=routed)
        else:
            scoped = _Scoped(impl)
        return _tpu_limits.guard(self, prim, scoped, raw=fn)

    def _eager_impl(self, prim, fn):
        raw = fn
        fn = _Jitted(fn) if prim.name not in _EAGER_ONLY and prim.name not in _eager.OWN_PROGRAMS and self.jit_ops \
            else fn
        if prim.name == "pow":
            fn = _SquareForTwo(fn)
        elif prim.name == "astype":
            fn = _SameDtypeShares(fn)
        deferring = _permuted.Deferring(prim.name, fn, raw, self.array_type)
        jitted = fn if fn.__class__ is _Jitted else getattr(fn, "fn", None)
        if deferring.kind == "transpose" or jitted.__class__ is not _Jitted:
            return deferring  # transposes, and what runs op by op (a Permuted is computed first)
        if deferring.kind != "other":  # elementwise, reductions, matmul: the check in _Jitted's call
            jitted.on_permuted = deferring.take
        if _fused.ENABLED:  # large add/subtract/maximum/... chains recorded, run as one pass (fused.py)
            jitted.record = _fused.fuser(prim.name, raw)
        return fn

    # -- jit ----------------------------------------------------------------------------------
    def raw_impl(self, prim):
        """The jax.numpy implementation of ``prim`` without the per-op ``jax.jit`` of eager mode."""
        fn = self.impls.get(prim) or self.resolve(prim)
        if fn.__class__ is _tpu_limits.Guarded:  # compiled graphs are checked whole (compile)
            fn = fn.fn
        if fn.__class__ is _Scoped:
            fn = fn.fn
        elif getattr(fn, "jitted", None).__class__ is _Jitted:  # eager.direct's function
            fn = fn.general
        if fn.__class__ is _blas.Routed:
            fn = fn.inner
        if isinstance(fn, _permuted.Deferring):
            return fn.raw
        if isinstance(fn, (_SameDtypeShares, _SquareForTwo)):
            fn = fn.fn
        return fn.fn if isinstance(fn, _Jitted) else fn

    def lower(self, graph):
        from arrayx.core.lowering import _buffer_for, straight_line

        # a captured constant that is a deferred transpose enters the program computed
        return straight_line(self, graph, impl_of=self.raw_impl, coerce_scalars=False,
                             consts_of=lambda a: _plain(_buffer_for(self, a)))

    def compile(self, graph, donate_argnums: tuple = ()):
        # traced and called with 64-bit types on: called without, jax.jit would trace it again in 32 bits
        from arrayx.debug import waiting_for_callbacks  # debug callbacks have run when a call returns

        if self._has_tpu:  # what XLA:TPU aborts on, refused before it compiles (tpu_limits.py)
            device = graph.device if graph.device is not None else self.default_device()
            if _tpu_limits.check_graph(self, graph, self.platform_of(device)):  # (or lowered in 32 bits)
                program = _tpu_limits.In32Bits(_tpu_limits.in_32_bits(self._compile, (graph, donate_argnums), {}))
                return waiting_for_callbacks(graph, program, self._jax.effects_barrier)
        # (and at arrayx's matmul precision, if one is named: the trace and the calls see the same)
        program = _Scoped(_x64.call_scoped(self._compile, (graph, donate_argnums), {}))
        return waiting_for_callbacks(graph, program, self._jax.effects_barrier)

    def _compile(self, graph, donate_argnums: tuple = ()):
        # the whole graph as jax.numpy/lax calls inside one jax.jit; arrayx has already
        # differentiated and batched it, so JAX only compiles
        if not donate_argnums:
            deferred = _programs.deferred_outputs(graph)
            if deferred is not None:  # outputs that are large transposes come out as Permuted
                graph, axes_of = deferred
                return _programs.PermutedOutputs(self._compile(graph), axes_of)
            if _CUT_BEFORE_LAPACK and not graph.consts:
                cut = _lapack_cut(graph)
                if cut is not None:
                    return _programs.in_pieces(self._compile, graph, cut)
        lowered = self.lower(graph)
        jitted = self._jax.jit(lowered, donate_argnums=tuple(donate_argnums))
        # traced here on the graph's avals (jax keeps the trace for the first call), so a shape XLA
        # cannot compile fails now with arrayx's message and each call is jax.jit's own C++ dispatch
        try:
            jitted.trace(*(self._jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                           for a in graph.in_avals))
        except _NEEDS_CONCRETE as e:
            raise _data_dependent_error(graph) from e
        # each call is jax.jit's own C++ dispatch; a Permuted argument enters as its base (a pytree,
        # permuted.py); a donated one must enter computed (its base may be another array's buffer)
        return _programs.DonatingProgram(jitted, tuple(donate_argnums)) if donate_argnums else jitted

    def capabilities(self) -> dict:
        # eager JAX computes data-dependent shapes (boolean masks, unique, nonzero) on the host
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    # -- devices ------------------------------------------------------------------------
    def memory_limit(self):
        # host memory on the CPU backend; an accelerator's allocator reports RESOURCE_EXHAUSTED itself
        return super().memory_limit() if self.default_device().label.startswith("cpu") else None

    def devices(self) -> list[Device]:
        self.xp  # noqa: B018 - loads JAX (raises with the reason when it is missing)
        return list(self._devices)

    def default_device(self) -> Device:
        self.xp  # noqa: B018
        return self._default

    def device_of(self, buf) -> Device:
        natives = buf.devices()
        if len(natives) == 1:
            (native,) = natives
            dev = self._by_native.get(native)
            if dev is not None:
                return dev
        # sharded over several devices: report the first, as JAX's own ``.device`` would refuse (the
        # first of this process's, where the devices of several processes hold it: jax.distributed)
        me = self._default.native.process_index
        natives = [d for d in natives if d.process_index == me] or list(natives)
        return self._by_native.get(min(natives, key=lambda d: d.id), self._devices[0])

    @_in_x64
    def to_device(self, buf, device: Device):
        return self._jax.device_put(_plain(buf), self._native(device, "to_device"))

    @_in_x64
    def put(self, buf, sharding):
        """``buf`` placed as ``sharding`` (a JAX sharding) says: a resharding JAX computes is traced
        with arrayx's 64-bit types, and a deferred transpose or fused chain is computed first, so the
        sharding applies to the array's own axes (``arrayx.device_put``, sharding/_jax.py)."""
        return self._jax.device_put(_plain(buf), sharding)

    @staticmethod
    def scoped(fn):
        """``fn`` called with 64-bit types on (x64.py): what runs a JAX program arrayx built outside this
        class (``pmap``'s, ``shard_map``'s) goes through it."""
        return _Scoped(fn)

    def _native(self, device: Device, fname: str):
        if device.executor != self.name or device.native is None:
            raise ValueError(f"{fname}: {device} is not a device of the 'jax' executor; its devices are {self.devices()}")
        return device.native

    # -- buffers ----------------------------------------------------------------------------
    def coerce(self, out):
        if out.__class__ is Permuted or out.__class__ is Pending:  # deferred values are this executor's buffers too
            return out
        return self.xp.asarray(out)

    @_in_x64
    def index_range(self, buf) -> tuple[int, int]:
        """(min, max) of an integer index buffer: on the host's view of it where it lives in host memory
        (CPU: no program), else one compiled program for both (eagerly, min, max and their stack
        compiled a program each for every new index shape)."""
        global _RANGE
        buf = _plain(buf)
        if _in_host_memory(buf):
            host = np.asarray(buf)
            return int(host.min()), int(host.max())
        if _RANGE is None:
            _RANGE = self._jax.jit(lambda b: jnp.stack([jnp.min(b), jnp.max(b)]))
        both = np.asarray(_RANGE(buf))
        return int(both[0]), int(both[1])

    @_in_x64
    def asarray(self, obj, dtype=None, copy=None, device: Device | None = None):
        native = None if device is None else self._native(device, "asarray")
        if copy is None and isinstance(obj, np.ndarray) and obj.flags.writeable:
            copy = True  # XLA may alias an aligned host buffer, which mutable executors write into
        if copy and isinstance(obj, np.ndarray) and _host_transfer.fits(obj, dtype):
            # a private host copy, cast to ``dtype`` in the same pass, placed as it is (host_transfer.py):
            # jnp.asarray(copy=True) compiles a conversion per shape and dtype (55 ms each, against 0.5 ms)
            return self._jax.device_put(_host_transfer.private_copy(obj, dtype), native)
        return self.xp.asarray(obj, dtype=dtype, copy=copy, device=native)

    def casts_while_copying(self, obj, dtype) -> bool:
        return _host_transfer.fits(obj, dtype)

    @_in_x64
    def from_dlpack(self, obj, copy=None):
        if copy is None:
            copy = True  # a zero-copy import would alias a producer that may write in place later
        if copy and _on_host(obj):
            return _private_copy(self.xp, np.from_dlpack(obj))
        try:
            return self.xp.from_dlpack(obj, copy=copy)
        except BufferError:
            # a read-only producer (e.g. np.from_dlpack of a JAX buffer) cannot be exported by
            # this DLPack version; JAX buffers are immutable anyway, so import by copying
            if copy is False:
                raise
            return self.xp.array(np.asarray(obj), copy=True)

    @_in_x64
    def to_host(self, buf) -> np.ndarray:
        try:
            return np.asarray(buf)  # read-only view on CPU, a device-to-host copy elsewhere
        except RuntimeError:
            if getattr(buf, "is_fully_addressable", True):
                raise
            from arrayx.sharding._distributed import not_addressable_error  # blocks held by other processes

            raise not_addressable_error(buf) from None

    def dlpack_buffer(self, buf):
        return _DLPackExport(_plain(buf))

    @_in_x64
    def from_foreign(self, buf, source: Executor):
        """Copy ``buf`` of ``source`` here: DLPack when the source can export it, else via the host."""
        if source.name != "numpy":
            try:
                exported = source.dlpack_buffer(buf)
                kind, _ = exported.__dlpack_device__()
                if kind == 2:  # kDLCUDA; host buffers take the private copy below
                    return self.xp.from_dlpack(exported, copy=True)
            except Exception:  # noqa: BLE001 - any DLPack refusal falls back to the host copy
                pass
        return _private_copy(self.xp, source.to_host(buf))
