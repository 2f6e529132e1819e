"""The NumPy executor: eager, the default and the reference every other executor is compared with.

Its namespace is array-api-compat's NumPy namespace (which mostly returns NumPy's
own functions, so it costs nothing).  ``overrides`` lists the primitives whose
NumPy implementation differs from ``getattr(xp, name)``.
"""
from __future__ import annotations

import numpy as np

from arrayx.executors.common import buffer_pool as _buffer_pool, linalg as _linalg
from arrayx.executors.common.indexing import NUMPY_LIKE as _INDEXING
from arrayx.core.executor import GENERIC, Device, Executor
from arrayx.executors.common import fft as _fft, narrow_floats as _narrow
from arrayx.executors.numpy import lax as _lax, linalg as _npl, nn as _nn, random as _random


def _expm1(x):
    if x.dtype.kind != "c":
        return np.expm1(x)
    # NumPy's complex expm1 gives NaN + NaN j wherever a part is infinite or NaN; there
    # exp(z) - 1 (C99's special cases) is what the standard asks for, and exact.  It also
    # gives -0 + 0j for -0 + 0j, where the standard asks for +0 + 0j.
    with np.errstate(invalid="ignore"):
        out = np.asarray(np.expm1(x))
        bad = ~np.isfinite(x)
        if bad.any():
            out[bad] = np.exp(x[bad]) - 1
        out.real[x == 0] = 0.0
    return out


def _tanh(x):
    out = np.tanh(x)
    if x.dtype.kind == "c":
        # tanh(±inf + bj) for finite b: NumPy (C99) gives ±1 + 0*sin(2b) j, whose zero takes
        # sin(2b)'s sign; the standard asks for the sign of b.
        out = np.asarray(out)
        edge = np.isinf(x.real) & np.isfinite(x.imag)
        if edge.any():
            out.imag[edge] = np.copysign(0.0, x.imag[edge])
    return out


def _complex_quotient_fix(a, b, c, d, out):
    """C99 Annex G's recovery for complex ``(a+bj) / (c+dj)`` where the formula gave NaN + NaN j
    (NumPy stops there): a non-zero or infinite dividend over zero is an infinity, an infinite
    dividend over a finite divisor is an infinity, a finite dividend over an infinite divisor a zero."""
    lost = np.isnan(out.real) & np.isnan(out.imag)
    if not lost.any():
        return out
    a, b, c, d = (np.broadcast_to(v, out.shape)[lost] for v in (a, b, c, d))
    re, im = out.real[lost], out.imag[lost]
    unit = lambda v: np.copysign(np.where(np.isinf(v), 1.0, 0.0), v)  # noqa: E731 - the direction of an infinity
    by_zero = (c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b))
    inf_over_finite = ~by_zero & (np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d)
    finite_over_inf = ~by_zero & ~inf_over_finite & (np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b)
    scale = np.copysign(np.inf, c)
    re = np.where(by_zero, scale * a, re)
    im = np.where(by_zero, scale * b, im)
    ua, ub = unit(a), unit(b)
    re = np.where(inf_over_finite, np.inf * (ua * c + ub * d), re)
    im = np.where(inf_over_finite, np.inf * (ub * c - ua * d), im)
    uc, ud = unit(c), unit(d)
    re = np.where(finite_over_inf, 0.0 * (a * uc + b * ud), re)
    im = np.where(finite_over_inf, 0.0 * (b * uc - a * ud), im)
    out = np.array(out, copy=True)
    out[lost] = re + 0j
    out.imag[lost] = im
    return out


def _divide(x1, x2):
    out = np.divide(x1, x2)
    if out.dtype.kind != "c":
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        z1, z2 = np.asarray(x1, out.dtype), np.asarray(x2, out.dtype)
        return _complex_quotient_fix(z1.real, z1.imag, z2.real, z2.imag, np.asarray(out))


_divide.real_ufunc = np.divide  # what _divide is on real operands (in-place operators use it: Array._inplace)
_expm1.real_ufunc = np.expm1  # (and large results on real operands go to pooled buffers: resolve_large)
_tanh.real_ufunc = np.tanh


def _reciprocal(x):
    out = np.reciprocal(x)
    if out.dtype.kind != "c":
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        return _complex_quotient_fix(np.ones_like(x.real), np.zeros_like(x.real), x.real, x.imag, np.asarray(out))


_reciprocal.real_ufunc = np.reciprocal


def _real_pooled(fn, pooled_ufunc):
    """``fn`` (an override that is a ufunc on real operands and fixes up complex results) with its
    real results written by ``pooled_ufunc``, the ufunc into the buffer pool: a large divide no longer
    pays a fresh mapping's page faults on every call (``x / s`` of 100000 x 64: 9.8 -> 3.3 ms)."""
    if fn.__code__.co_argcount == 1:
        def run(x, /):
            return fn(x) if x.dtype.kind == "c" else pooled_ufunc(x)
    else:
        def run(x1, x2, /):
            if getattr(x1, "dtype", _NO_DTYPE).kind == "c" or getattr(x2, "dtype", _NO_DTYPE).kind == "c":
                return fn(x1, x2)
            return pooled_ufunc(x1, x2)
    run.real_ufunc = fn.real_ufunc
    return run


_NO_DTYPE = np.dtype(np.complex128)  # a Python scalar operand: the override decides


_SQUARING = {np.dtype(np.float64): np.float64(2.0), np.dtype(np.float32): np.float32(2.0)}


class _Power:
    """``np.power``, with a real floating array to the scalar power 2 computed as ``np.square``: one
    multiply per element instead of a call of the C library's ``pow`` (2.5x faster: StandardScaler's
    ``temp **= 2``).  The results are identical, as ``pow(x, 2)`` is correctly rounded like ``x * x``;
    NumPy's own ``**`` operator does the same.  Called like the ufunc (``out=`` included, and
    ``resolve_dtypes``/``nin``/``nout``), so in-place operators and the buffer pool use it as one."""

    nin, nout, signature = 2, 1, None
    resolve_dtypes = staticmethod(np.power.resolve_dtypes)
    __name__ = "power"

    def __call__(self, x1, x2, /, out=None):
        two = _SQUARING.get(getattr(x1, "dtype", None))
        if two is not None and (x2.__class__ is two.__class__ or (x2.__class__ is np.ndarray and x2.ndim == 0
                                                                    and x2.dtype == two.dtype)) and x2 == two:
            # the exponent a scalar (or 0-d array) 2 of x1's dtype
            return np.square(x1) if out is None else np.square(x1, out=out)
        return np.power(x1, x2) if out is None else np.power(x1, x2, out=out)


_power = _Power()
_power.real_ufunc = _power  # what ``_into`` (in-place operators) calls with ``out=``: the same


def _astype(buf, *, dtype, copy=True):
    """``astype`` (and ``asarray(x, copy=True)``, which is astype to x's own dtype): a large contiguous
    result written into a pooled buffer, as the ufuncs' are (a 4 MB copy: ~490 us in fresh memory,
    paying its page faults on each call, ~110 us in a reused buffer: StandardScaler copies its input).
    The result keeps the source's layout as NumPy's ``astype`` (order K) does: a C-ordered source a
    C-ordered result, a Fortran-ordered one (``X.T``: ``xpx.cov(X.T)`` copies it) a Fortran-ordered one.
    Float -> integer casts keep their rule (``api.data_types._float_to_int``)."""
    if (_buffer_pool.ENABLED and buf.__class__ is np.ndarray
            and (buf.dtype.kind not in "fc" or dtype.kind not in "iu")
            and buf.size * dtype.itemsize >= _buffer_pool.POOL.min_bytes and (copy or buf.dtype != dtype)):
        flags = buf.flags
        if flags.c_contiguous:
            out = _buffer_pool.POOL.empty(buf.shape, dtype)
        elif flags.f_contiguous:
            out = _buffer_pool.POOL.empty(buf.shape[::-1], dtype).T
        else:
            out = None
        if out is not None:
            np.copyto(out, buf, casting="unsafe")
            return out
    # the generic rule (api.data_types registers it in GENERIC: executors import only core)
    return GENERIC["astype"](buf, dtype=dtype, copy=copy)


def _tensordot(x1, x2, *, axes=2):
    import array_api_compat.numpy as npx

    return npx.tensordot(x1, x2, axes=axes) + 0  # a sum starts from +0, as in sum/matmul (np.dot keeps -0)


def _reshape(x, shape, copy=None):
    return x.reshape(shape) if copy is None else np.reshape(x, shape, copy=copy)


def _array_out() -> object:
    """``...`` where NumPy's reductions take ``out=...`` (return a 0-d array, never a NumPy scalar: the
    executor's result type, with no ``np.asarray`` after the call), else None (their default)."""
    try:
        return ... if np.add.reduce(np.zeros(2), out=...).__class__ is np.ndarray else None
    except TypeError:
        return None


_OUT = _array_out()


def _sum(x, axis=None, dtype=None, keepdims=False):
    if dtype is not None and dtype.itemsize == 2 and _narrow.is_narrow(dtype):  # float16/bfloat16: in float32
        return np.add.reduce(x, axis=axis, dtype=_F32, keepdims=keepdims).astype(dtype)
    return np.add.reduce(x, axis, dtype, out=_OUT, keepdims=keepdims)


def _prod(x, axis=None, dtype=None, keepdims=False):
    if dtype is not None and dtype.itemsize == 2 and _narrow.is_narrow(dtype):
        return np.multiply.reduce(x, axis=axis, dtype=_F32, keepdims=keepdims).astype(dtype)
    return np.multiply.reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)


_F32 = np.dtype(np.float32)
#: the accumulating functions computed in float32 for float16/bfloat16 by a wrapper
#: (common/narrow_floats.py); ``sum`` and ``prod`` test for it themselves, above
_WIDENED = frozenset(_narrow.WIDENED) - {"sum", "prod"}


def _clip(x, lo=None, hi=None):
    # array-api-compat's clip writes into integer bound arrays (a read-only view, e.g. a broadcast
    # bound under vmap, raises); arrayx's clip has cast the bounds to x's dtype and clamped scalars
    if lo is None and hi is None:
        return x.copy()
    out = np.clip(x, lo, hi)
    return out if out.dtype == x.dtype else out.astype(x.dtype)  # bfloat16: NumPy's clip computes in float32


def _complex_of(x):
    return np.result_type(x.dtype, np.complex64)


def _eig(x):
    w, v = np.linalg.eig(x)
    dt = _complex_of(x)
    return w.astype(dt, copy=False), v.astype(dt, copy=False)


def _eigvals(x):
    return np.linalg.eigvals(x).astype(_complex_of(x), copy=False)


class NumpyExecutor(Executor):
    name = "numpy"
    array_type = np.ndarray
    checks_index_bounds = True  # NumPy's IndexError: "index 10 is out of bounds for axis 0 with size 3"
    eager_on_host = True
    overrides: dict = {
        "expm1": _expm1,
        "tanh": _tanh,
        "divide": _divide,
        "reciprocal": _reciprocal,
        "tensordot": _tensordot,
        "pow": _power,
        "astype": _astype,
        "clip": _clip,
        # NumPy 2's own functions already have the standard's semantics; array-api-compat's
        # Python wrappers around them would only add per-call cost.
        "matmul": np.matmul,
        "matrix_transpose": np.matrix_transpose,
        "permute_dims": np.permute_dims,
        # singular / non-positive-definite matrices give NaN, not LinAlgError (executors/common/linalg.py)
        **{name: _linalg.nan_on_failure(name) for name in _linalg.FAILING},
        **_INDEXING,
        # the methods/ufunc reductions, without the Python layers of np.reshape / np.sum
        # (arrayx always passes the resolved dtype, so no dtype logic is skipped)
        "reshape": _reshape,
        "sum": _sum,
        "prod": _prod,
        # eig/eigvals results are complex whatever the spectrum (staging relies on the dtype)
        "eig": _eig,
        "eigvals": _eigvals,
        # tall, thin svd through SciPy's gesdd where SciPy is importable (executors/numpy/linalg.py)
        "svd": _npl.svd,
        # NumPy's transforms, large results into the buffer pool (executors/common/fft.py)
        **_fft.TABLE,
        # lax, nn and random's primitives (this package's lax.py, nn.py, random.py)
        **_lax.TABLE,
        **_nn.TABLE,
        **_random.TABLE,
    }

    #: large results of ufuncs and matmul are written into reused buffers (executors/common/buffer_pool.py)
    buffer_pool = _buffer_pool.POOL
    #: ``x op= y``'s ufunc call, where not simply ``ufunc(x, y, out=x)`` (None; the Numba executor's
    #: runs a large one on several threads): api/_inplace.py
    ufunc_into = None

    def __init__(self) -> None:
        super().__init__()
        self.large_impls = {}  # Primitive -> the callable for results from pool_min_bytes
        self.pool_min_bytes = self.buffer_pool.min_bytes if _buffer_pool.ENABLED else 0

    def _load(self):
        import array_api_compat.numpy as xp

        return xp

    def finish_impl(self, prim, fn):
        # float16/bfloat16 moments, running sums and contractions accumulate in float32 (common/narrow_floats.py)
        if prim.name not in _WIDENED:
            return fn
        return _narrow.widened_pair(fn) if prim.name == "matmul" else _narrow.widened(fn)

    def resolve_large(self, prim):
        """``resolve(prim)``'s function writing its result into a pooled buffer (ufuncs and matmul;
        other functions as they are): what the eager paths and jit call where a result may be large."""
        fn = self.impls.get(prim) or self.resolve(prim)
        narrow = getattr(fn, "widens_narrow_floats", False)
        if narrow:
            fn = fn.__wrapped__  # pooled below, then widened again
        if fn is _power:  # a ufunc in all but class: pooled like np.power
            fn = _buffer_pool._pooled_binary(_power, self.buffer_pool, self.buffer_pool.min_bytes)
        elif isinstance(getattr(fn, "real_ufunc", None), np.ufunc) and hasattr(fn, "__code__"):
            fn = _real_pooled(fn, _buffer_pool.pooled(fn.real_ufunc, self.buffer_pool))
        else:
            fn = _buffer_pool.pooled(fn, self.buffer_pool)
        if narrow:
            fn = _narrow.widened_pair(fn) if prim.name == "matmul" else _narrow.widened(fn)
        self.large_impls[prim] = fn
        return fn

    def sole_holder(self, array) -> bool:
        return _buffer_pool.sole_holder(array)

    def set_buffer_pool(self, on: bool) -> None:
        """Large results into reused buffers (True, the default unless ``ARRAYX_BUFFER_POOL=0``) or
        NumPy's own allocations (False), from the next op on, for this executor and those built on
        its table (Numba's NumPy fallbacks); jitted functions keep what they were compiled with."""
        from arrayx.core import executor as base

        _buffer_pool.ENABLED = bool(on)
        for ex in list(base._registry.values()):
            if isinstance(ex, NumpyExecutor):
                ex.pool_min_bytes = ex.buffer_pool.min_bytes if on else 0

    def coerce(self, out):
        return np.asarray(out)

    def compile(self, graph, donate_argnums: tuple = ()):
        # generated straight-line Python over this executor's table; donation has nothing to give
        # back (a large result whose input buffer is dropped may reuse it through the buffer pool)
        return self.lower(graph)

    def index_range(self, buf) -> tuple[int, int]:
        return int(buf.min()), int(buf.max())

    def asarray(self, obj, dtype=None, copy=None, device=None):
        if copy is False:
            out = np.asarray(obj, dtype=dtype)
            if dtype is not None and isinstance(obj, np.ndarray) and out is not obj:
                raise ValueError("asarray: copy=False but converting the dtype needs a copy")
            return out
        return np.array(obj, dtype=dtype, copy=True) if copy else np.asarray(obj, dtype=dtype)

    def from_dlpack(self, obj, copy=None):
        return np.from_dlpack(obj, copy=copy)

    def to_host(self, buf) -> np.ndarray:
        return buf

    def devices(self):
        # a subclass (a third-party executor built on this one) has a device of its own name
        return [_CPU] if self.name == "numpy" else [Device(self.name, "cpu")]

    def default_device(self):
        # the one device, without building devices()' list: clients read x.device on every call
        return _CPU if self.name == "numpy" else self.devices()[0]

    def device_of(self, buf):
        return _CPU if self.name == "numpy" else self.devices()[0]


_CPU = Device("numpy", "cpu")
