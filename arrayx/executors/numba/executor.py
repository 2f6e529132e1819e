"""The Numba executor: NumPy buffers, with the hot operations run as Numba-compiled parallel kernels.

Buffers are NumPy ndarrays and the namespace is array-api-compat's NumPy namespace, so every
operation works exactly as on the NumPy executor.  The operations in ``NATIVE`` (elementwise
functions, ``where``, ``clip`` and the reductions ``sum``/``prod``/``mean``/``var``/``std``/
``min``/``max`` over any axes) run as multi-threaded Numba kernels when

- the array has at least ``thresholds[kind]`` elements (below that NumPy is faster: a parallel
  launch costs tens of microseconds),
- its dtype is one the kernel handles (bool, integers, float32, float64 as the operation
  allows; complex, float16 and bfloat16 always go to NumPy, as in jit's fused regions), and
- the operands are C-contiguous and of equal shape, or one is a scalar (anything else, such as
  general broadcasting, goes to NumPy), and
- a reduction has its own threshold where its layout makes NumPy's pass cheap or costly: a sum or
  mean that adds whole rows (over the leading axes of a C array, the trailing ones of ``X.T``) is
  native from ``thresholds["columns"]`` (NumPy's one SIMD pass is fast there), one over short rows
  (the last axis, at most ``SHORT_ROW`` elements) from ``thresholds["short rows"]`` (NumPy pays a
  loop start per row).

Memory-bound elementwise operations (``MEMORY_BOUND``: arithmetic, comparisons) run natively only
while the team's worker threads take their share of the chunks (``min_team_share``, ``team_pays``);
otherwise NumPy's ufunc, which one thread runs as fast.  A C- or F-contiguous matrix plus, minus,
times or over a row or column vector (``X - mean``, ``X.T - mean``) runs as a matrix-vector kernel
(or NumPy's ufunc) into a pooled output of the matrix's own layout.

In-place operators (``x -= y``) run NumPy's ufunc into x's own memory (a kernel writing into its
own operand loses its vector loop); from ``thresholds["in place"]`` elements in pieces on several
threads (``ufunc_into``).  The fft functions split a batch of transforms between threads
(``common/fft.py``), and ``svd`` of a tall, thin float64 matrix runs CholeskyQR2's matrix products
(``numba/linalg.py``).

Everything else, and any kernel Numba fails to compile, runs on NumPy.
``executor_info()["native"]`` lists what runs natively; ``explain(name, *buffers)`` says why a
call would not.  Kernels are compiled on first use, one per operation and dtype, and cached on
disk (see numba.kernels.cache_dir``), so a later process loads them in milliseconds.

Configuration (environment, read when the executor loads; the attributes can be changed later):

``ARRAYX_NUMBA_THRESHOLD``
    one size for every kind of operation (default: the measured ``DEFAULT_THRESHOLDS``).
``ARRAYX_NUMBA_PARALLEL=0``
    compile single-threaded kernels (no threading layer; for machines whose cores are busy).
``ARRAYX_NUMBA_THREADING_LAYER``
    Numba threading layer to use (default ``workqueue``; ``NUMBA_THREADING_LAYER`` wins).
``ARRAYX_NUMBA_VECTOR_WIDTH`` (``256`` / ``512``)
    the vector width of jit's fused kernels (default: 512 on AVX-512 CPUs that keep their clock
    with it, see ``numba.vectors``).
``ARRAYX_NUMBA_SPIN_US``
    how long the threads of a parallel fused kernel spin between jobs before they sleep (default
    1000; see ``numba.team``).
``ARRAYX_NUMBA_CACHE_DIR`` / ``ARRAYX_CACHE_DIR``
    where generated kernel sources and Numba's compiled code for them go (a private folder,
    verified before use; ``NUMBA_CACHE_DIR`` does not apply to arrayx's kernels).

Numba is imported when the executor is first used, never by ``import arrayx``.
"""
from __future__ import annotations

import collections
import math
import os
import threading
import weakref

import numpy as np

from arrayx.core import config as _config
from arrayx.executors.common import buffer_pool as _buffer_pool
from arrayx.core.executor import Device
from arrayx.executors.common import fft as _fft, threads as _threads
from arrayx.executors.numba import linalg as _linalg
from arrayx.executors.numpy import NumpyExecutor
from arrayx.executors.numba.reductions import (
    SHORT_ROW, _MINMAX, _REDUCTION_PARAMS, _build_reduction, _reduce_axes, _reduction_kind,
)

__all__ = ["NumbaExecutor", "DEFAULT_THRESHOLDS", "NATIVE"]

#: Fewest elements for which a native kernel beats NumPy, by kind of operation, measured with
#: benchmarks/bench_executors_numba.py (numba.json) and per function on 2 vCPUs with AVX-512, where
#: NumPy's own SIMD loops are fastest (on AVX2 CPUs NumPy's transcendentals are 2-4x slower and the
#: kernels win earlier):
#: - "transcendental" (exp, expm1, tanh, sin, cos) and "elementwise" (arithmetic, comparisons,
#:   where, clip) kernels run on ``numba.team`` (a launch costs ~5-10 us, a thread wake-up ~50):
#:   from 256K elements exp/sin/cos float32 run at 1.1-1.7x NumPy (tanh 0.98, expm1 0.79), every
#:   float64 one at 1.0-16x; arithmetic is memory-bound and crosses at 256-512K (float64) and
#:   512K-1M (float32): 1.0-1.5x at 1M (``where`` 4-9x at any size);
#: - "moment" (mean, var, std: one fused pass where NumPy makes three to five) from ~1M;
#: - "reduction" (sum, prod) and "extremum" (min, max) ran as parfors kernels (workqueue layer, a
#:   launch 35-150 us) when these were measured, and only broke even at 4-16M elements (their
#:   single-thread speed equals NumPy's), so they go native for larger arrays only; they now run on
#:   ``numba.team`` like the elementwise kernels.  Lower the thresholds where cores are idle.
#: - "short rows": any of those reductions over the last axis of a C array whose rows are short
#:   (at most ``SHORT_ROW`` elements: logsumexp's and softmax's max/sum over axis 1 of (N, 64)),
#:   where NumPy pays a loop start per row: max of (N, 64) ran natively at 1.3x NumPy from 512K
#:   elements and 6-11x at 2-6M, sum at 0.8x at 1M and 1.4-1.7x at 2-6M: native from 2M;
#: - "columns": a sum or mean that adds whole rows (over the leading axes of a C array:
#:   StandardScaler's ``mean(X, axis=0)``; the trailing ones of ``X.T``, xpx.cov's mean) is one
#:   memory-bound SIMD pass in NumPy; the kernel (which also sums |x|) ran at 0.5-0.8x NumPy on
#:   100000 x 64, with two threads: native only from 64M elements.
#: - "in place": ``x op= y`` (``ufunc_into``: NumPy's ufunc in pieces on two threads): on 2000 x 4000
#:   float64 ``D += col`` 5.5 -> 3.0 ms, ``D *= c`` 2.4 -> 2.0 ms; at 1M elements (in cache) 0.64-0.76x
#:   NumPy's one call, at 1.5-4M 1.25-1.7x: from 2M.
DEFAULT_THRESHOLDS = {"elementwise": 1 << 20, "transcendental": 1 << 18, "moment": 1 << 20,
                      "reduction": 1 << 24, "extremum": 1 << 26, "short rows": 1 << 21, "columns": 1 << 26,
                      "in place": 1 << 21}
#: ``ufunc_into``'s fewest elements in one piece
IN_PLACE_PIECE_MIN = 1 << 17

#: elementwise operations of one or two flops per element: memory-bound, so the native kernel beats
#: NumPy's ufunc only with the team's workers taking their share of its chunks (``team_pays``)
MEMORY_BOUND = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "copysign", "equal", "not_equal",
    "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "abs", "negative", "positive", "square",
    "logical_not", "bitwise_invert",
})
#: recent memory-bound calls whose worker shares ``team_pays`` averages, and how often a call is run
#: natively anyway while the team does not pay (to see whether it pays again)
TEAM_WINDOW = 8
TEAM_REPROBE = 16

_TRANSCENDENTAL = frozenset({"exp", "expm1", "tanh", "sin", "cos"})
_MOMENTS = frozenset({"mean", "var", "std"})
_KIND_DTYPES = {k: tuple(np.dtype(d) for d in ds) for k, ds in {
    "b": ("bool",), "i": ("int8", "int16", "int32", "int64"),
    "u": ("uint8", "uint16", "uint32", "uint64"), "f": ("float32", "float64"),
}.items()}

_BOOL = np.dtype(bool)


def _dtypes_of(kinds: str) -> frozenset:
    return frozenset(d for k in kinds for d in _KIND_DTYPES[k])


def _native_table() -> dict:
    """primitive name -> (kind of operation, frozenset of dtypes run natively)."""
    from arrayx.executors.numba import kernels as K

    table = {}
    for name, (kinds, _, _) in K.UNARY.items():
        table[name] = ("transcendental" if name in _TRANSCENDENTAL else "elementwise", _dtypes_of(kinds))
    for name, (kinds, _, _) in K.BINARY.items():
        table[name] = ("elementwise", _dtypes_of(kinds))
    table["where"] = ("elementwise", _dtypes_of(K.WHERE_KINDS))
    table["clip"] = ("elementwise", _dtypes_of(K.CLIP_KINDS))
    for name, kinds in K.REDUCTIONS.items():
        kind = "moment" if name in _MOMENTS else "extremum" if name in _MINMAX else "reduction"
        table[name] = (kind, _dtypes_of(kinds))
    return table


#: primitive name -> (kind, dtypes) of everything that can run natively (filled on first load)
NATIVE: dict[str, tuple[str, frozenset]] = {}


class NumbaExecutor(NumpyExecutor):
    #: name -> (kind, dtypes) of what runs natively (``NATIVE``, filled when the executor loads)
    native = NATIVE
    name = "numba"
    install_hint = "Install Numba with `pip install numba`."
    #: the table starts as the NumPy executor's, the same entries (its lax, nn and random ones too:
    #: ``executors/numpy/``): ``resolve`` hands an entry it finds there to the NumPy executor's
    #: ``resolve`` (its buffer pool for large results) and sends large native-dtype operations to
    #: Numba kernels (``_BUILDERS``).  Numba's own entries: the fft functions, whose batches of 1-D
    #: transforms are split between threads (``executors/common/fft.py``), and svd, whose tall, thin
    #: float64 matrices go through CholeskyQR2's matrix products (``numba/linalg.py``).
    overrides: dict = {**NumpyExecutor.overrides, **_fft.table(lambda: _fft_threads()), "svd": _linalg.svd}

    def __init__(self) -> None:
        super().__init__()
        #: kind of operation -> fewest elements run natively; change it in place
        #: (``ex.thresholds.update(elementwise=...)``): the native functions hold this dict
        self.thresholds = dict(DEFAULT_THRESHOLDS)
        self.parallel = True
        #: jit: fewest elements of a region fused into a kernel, and of a parallel fused kernel
        #: (read when a function is compiled; see numba.fusion.lowering)
        self.fusion_min_size = _config.get("ARRAYX_NUMBA_FUSION_MIN_SIZE")
        self.fusion_parallel_size = 1 << 16
        self.threading_layer: str | None = None
        #: (primitive name, dtype name) -> why its kernel could not be compiled
        self.failed: dict[tuple[str, str], str] = {}
        # The workqueue layer must not be entered by two threads at once: a call that finds
        # another thread inside runs on NumPy instead of waiting.  {"thread": its ident} while one
        # is inside, taken with one dict.setdefault: Ctrl-C between a lock's acquire and the try
        # after it left a lock held for good (every later parallel kernel ran on NumPy); an
        # interrupted call leaves its thread's ident, which that thread's next call takes over.
        self._launch: dict = {}
        #: memory-bound elementwise kernels (``MEMORY_BOUND``) run natively only while the team's
        #: workers ran at least this fraction of their chunks on average over the last calls (on a
        #: loaded machine a descheduled worker leaves the caller alone, and one thread of the kernel
        #: loses to NumPy's ufunc); 0: always native.  See ``team_pays``.
        self.min_team_share = 0.3
        self._shares: collections.deque = collections.deque(maxlen=TEAM_WINDOW)
        self._declined = 0  # memory-bound calls sent to NumPy since the last native probe
        _EXECUTORS.add(self)

    def ufunc_into(self, ufunc, buf: np.ndarray, other) -> None:
        """``ufunc(buf, other, out=buf)`` - ``x op= y`` and an elided temporary's op (api/_inplace.py) -
        with a large ``buf`` cut along its first axis into pieces that NumPy's ufunc runs on Python
        threads side by side (``common/threads.py``): its SIMD loop on two cores where a Numba kernel
        writing into its own operand loses its vector loop.  Elementwise, so bit-identical; one call
        where ``other`` may share memory with ``buf`` (NumPy's overlap handling needs the whole call)."""
        if (buf.size < self.thresholds["in place"] or not self.parallel or buf.ndim == 0
                or (other.__class__ is np.ndarray and np.may_share_memory(buf, other))):
            ufunc(buf, other, out=buf)
            return
        threads = self.threads()
        spans = other.__class__ is np.ndarray and other.ndim == buf.ndim and other.shape[0] == buf.shape[0] > 1

        def work(start, stop):
            piece = buf[start:stop]
            ufunc(piece, other[start:stop] if spans else other, out=piece)

        _threads.run_pieces(work, buf.shape[0], _threads.piece_count(buf.size, threads, IN_PLACE_PIECE_MIN), threads)

    def threads(self) -> int:
        """Threads a call may use: Numba's thread count (1 where kernels are single-threaded,
        ``ARRAYX_NUMBA_PARALLEL=0``); starts Numba's threading layer, so only for large calls."""
        if not self.parallel:
            return 1
        self._numba()  # the threading layer set first
        from arrayx.executors.numba.team import numba_threads

        return numba_threads()  # (not through Numba's launch lock, which Ctrl-C can leave held)

    def team_pays(self) -> bool:
        """Whether a memory-bound elementwise call should run natively now: the workers' mean share
        of the chunks of the last ``TEAM_WINDOW`` such calls reaches ``min_team_share`` (or nothing
        was measured yet); while it does not, every ``TEAM_REPROBE``-th call runs natively anyway
        to measure it again."""
        shares = self._shares
        if self.min_team_share <= 0 or not shares or sum(shares) >= self.min_team_share * len(shares):
            return True
        self._declined += 1
        if self._declined >= TEAM_REPROBE:
            self._declined = 0
            return True
        return False

    def _record_share(self, share: float) -> None:
        self._shares.append(share)

    # -- loading ------------------------------------------------------------------------
    def _load(self):
        import importlib.util

        import array_api_compat.numpy as xp

        if importlib.util.find_spec("numba") is None:
            raise ImportError("No module named 'numba'")
        threshold = _config.get("ARRAYX_NUMBA_THRESHOLD")
        if threshold is not None:
            self.thresholds.update(dict.fromkeys(DEFAULT_THRESHOLDS, threshold))
        self.parallel = _config.get("ARRAYX_NUMBA_PARALLEL")
        NATIVE.update(_native_table())
        _BUILDERS.update(_builders())
        return xp

    def _numba(self):
        """Numba itself, imported on the first kernel (not when the executor loads: importing it
        takes most of a second, and small arrays never need it)."""
        from arrayx.executors.numba import layer as _numba_layer

        numba = _numba_layer.numba()  # the threading layer set before anything can start it
        if self.threading_layer is None:
            self.threading_layer = _numba_layer.layer()
        return numba

    def devices(self):
        return [_CPU]

    def asarray(self, obj, dtype=None, copy=None, device=None):
        # arrayx.asarray moves host data to a non-"numpy" executor without a copy flag and
        # promises a copy (it rejects copy=False), so a NumPy array is copied unless copy=False.
        if copy is None and isinstance(obj, np.ndarray):
            copy = True
        return super().asarray(obj, dtype=dtype, copy=copy, device=device)

    def executor_info(self) -> dict:
        caps = super().executor_info()
        if not self.available():
            return caps
        numba = self._numba()
        from arrayx.executors.numba import (
            kernels as _numba_kernels,
            team as _numba_team,
            vectors as _numba_vectors,
        )

        failed = {}
        for (prim, dt), reason in self.failed.items():
            failed.setdefault(prim, {})[dt] = reason
        caps.update({
            "native": {name: sorted(d.name for d in dts) for name, (_, dts) in sorted(NATIVE.items())},
            "native kinds": {name: kind for name, (kind, _) in sorted(NATIVE.items())},
            "native size thresholds": dict(self.thresholds),
            "short row": SHORT_ROW,
            "memory-bound": sorted(n for n in MEMORY_BOUND if n in NATIVE),
            "min team share": self.min_team_share,
            "recent team share": (sum(self._shares) / len(self._shares)) if self._shares else None,
            "native layouts": "C-contiguous operands of equal shape, or an array with scalars; a C- or "
                              "F-contiguous matrix with a row or column vector (add, subtract, multiply, "
                              "divide, ...)",
            "compile failures": failed,
            "parallel": self.parallel,
            "threads": numba.get_num_threads() if self.parallel else 1,
            "threading layer": self.threading_layer,
            # jit's fused kernels: their vector loops' width, and how long their threads spin between jobs
            "fused vector width": _numba_vectors.vector_width(),
            "fused spin us": _numba_team.SPIN_US,
            "kernel cache": str(_numba_kernels.cache_dir() or f"none ({_numba_kernels.cache_problem()})"),
        })
        return caps

    # -- running primitives -------------------------------------------------------------------
    def compile(self, graph, donate_argnums: tuple = ()):
        # fusible regions as generated kernels, the rest straight-line over this executor's table
        from arrayx.executors.numba.fusion.lowering import fuse

        self.available()
        self._numba()
        return fuse(self, graph)

    def resolve(self, prim, large: bool = False):
        """This executor's own impl if the primitive has one, else the NumPy executor's callable
        (``large``: the one for large results, see ``resolve_large``), wrapped so that large arrays
        of native dtypes go to a Numba kernel."""
        fn = self.table.get(prim.name)
        if fn is not None and fn is NumpyExecutor.overrides.get(prim.name):
            fn = None  # an entry of the NumPy table this one starts from: NumPy's resolve, below
        if fn is None:
            from arrayx.core.executor import get

            numpy_ex = get("numpy")
            try:
                fallback = numpy_ex.resolve_large(prim) if large else numpy_ex.resolve(prim)
            except NotImplementedError as e:  # the error names the executor used, not the one behind it
                raise NotImplementedError(f"{prim.name} is not implemented by the {self.name!r} executor, "
                                          f"nor by the NumPy implementations it falls back to ({e})") from None
            self.available()
            build = _BUILDERS.get(prim.name)
            fn = build(self, prim.name, fallback) if build is not None and prim.name in NATIVE else fallback
        (self.large_impls if large else self.impls)[prim] = fn
        return fn

    def resolve_large(self, prim):
        return self.resolve(prim, large=True)

    def explain(self, name: str, *args, **params) -> str:
        """Why ``name`` on these buffers runs on NumPy (or "native")."""
        if name not in NATIVE:
            return f"{name} has no Numba kernel"
        kind, dtypes = NATIVE[name]
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        if not arrays:
            return "no array operand"
        x = arrays[0]
        if kind not in ("elementwise", "transcendental"):
            axes = _reduce_axes(params.get("axis"), x.ndim)
            if axes:
                kind = _reduction_kind(kind, name, x, axes)
        if x.size < self.thresholds[kind]:
            return f"{x.size} elements is below the {kind} threshold {self.thresholds[kind]}"
        if x.dtype not in dtypes:
            return f"dtype {x.dtype} is not run natively (native: {sorted(d.name for d in dtypes)})"
        if (name, x.dtype.name) in self.failed:
            return f"its kernel failed to compile: {self.failed[name, x.dtype.name]}"
        if name in MEMORY_BOUND and self._shares and self.min_team_share > 0 and \
                sum(self._shares) < self.min_team_share * len(self._shares):
            return (f"memory-bound, and the team's workers ran {sum(self._shares) / len(self._shares):.2f} of the "
                    f"chunks of recent calls (min_team_share {self.min_team_share}): NumPy's ufunc")
        if name in _VECTOR_OPS and len(arrays) == 2 and arrays[0].shape != arrays[1].shape \
                and arrays[0].dtype == arrays[1].dtype and _vector_operands(*arrays) is not None:
            return "native (a matrix and a row or column vector)"
        reduction = name in _REDUCTION_PARAMS  # (an F-ordered operand is reduced as its C-ordered transpose)
        if not all(a.flags.c_contiguous or (reduction and a.flags.f_contiguous) for a in arrays):
            return "an operand is not C-contiguous"
        if len({a.shape for a in arrays if a.size != 1}) > 1:
            return "operands of different shapes (broadcasting) run on NumPy"
        return "native"

    # -- kernels ------------------------------------------------------------------------------
    def _call(self, name: str, dtype: np.dtype, kernels: dict, key: tuple, make, *args, chunks: int = 0) -> bool:
        """Run the kernel ``make(*key, parallel=...)`` (compiled on first use, kept in ``kernels``)
        on ``args``; False when it cannot run: Numba cannot compile it (recorded in ``failed``,
        never tried again) or, on the parallel executor, another thread is inside one of its unchunked
        kernels (one launch at a time; every kernel is compiled for one thread, the threads come from
        ``numba.team``).  ``chunks`` > 0: the kernel claims that many chunks and runs on the team."""
        key = key + (self.parallel,)
        kernel = kernels.get(key)
        if kernel is None:
            if key in kernels or (name, dtype.name) in self.failed:
                return False
            try:
                self._numba()
                kernel = make(*key[:-1], parallel=self.parallel)
            except (ImportError, OSError) as e:  # Numba broken, no writable kernel cache
                kernels[key] = None
                self.failed[name, dtype.name] = f"{type(e).__name__}: {e}"
                return False
            kernels[key] = kernel
            if chunks:  # compiled here, never in a worker
                from arrayx.executors.numba import team as _numba_team

                try:
                    kernel(_numba_team.claimed_claims(), *args)
                except Exception as e:
                    return self._failed(kernels, key, name, dtype, e)
        if chunks:
            from arrayx.executors.numba import team as _numba_team

            team = self._team(chunks)
            try:
                if team is None:
                    kernel(_numba_team.new_claims(), *args)
                    mine = chunks
                else:
                    mine = team.run(kernel, chunks, args)
            except Exception as e:
                return self._failed(kernels, key, name, dtype, e)
            if name in MEMORY_BOUND and (team is not None or chunks > 1):
                self._record_share(1.0 - mine / chunks)
            return True
        me = threading.get_ident()
        if self.parallel and self._launch.setdefault("thread", me) != me:
            return False
        try:
            kernel(*args)
        except Exception as e:
            return self._failed(kernels, key, name, dtype, e)
        finally:
            if self.parallel and self._launch.get("thread") == me:  # (no other thread changes it)
                self._launch.pop("thread", None)
        return True

    def _failed(self, kernels: dict, key: tuple, name: str, dtype: np.dtype, e: Exception) -> bool:
        """Record that Numba cannot compile a kernel (never tried again); re-raise anything else."""
        from numba.core.errors import NumbaError

        if not isinstance(e, NumbaError):
            raise e
        kernels[key] = None
        first = str(e).strip().splitlines()
        self.failed[name, dtype.name] = f"{type(e).__name__}: {first[0] if first else ''}"
        return False

    def _team(self, chunks: int):
        """The team of threads for a kernel of ``chunks`` chunks (None: the caller runs it alone)."""
        if not self.parallel or chunks < 2:
            return None
        from arrayx.executors.numba import team as _numba_team
        from arrayx.executors.numba.fusion.run import _threads

        threads = _threads()
        return _numba_team.team(threads) if threads > 1 else None


_CPU = Device("numba", "cpu")
_EXECUTORS: weakref.WeakSet = weakref.WeakSet()


def _fft_threads() -> int:
    """Threads the fft functions split a batch of transforms between (``NumbaExecutor.threads``)."""
    from arrayx.core.executor import get

    return get("numba").threads()


def _after_fork_in_child() -> None:
    for ex in list(_EXECUTORS):  # a parent thread inside a parallel kernel held it: new in the child
        ex._launch = {}


os.register_at_fork(after_in_child=_after_fork_in_child)


# ----------------------------------------------------------------------------------------------
# native implementations: each builder takes (executor, primitive name, NumPy fallback) and
# returns the callable that eager ``bind`` runs.  The checks are ordered cheapest first so that
# small arrays reach NumPy after a size comparison.

def _is_scalar_operand(v, dtype) -> bool:
    return isinstance(v, (np.generic, np.ndarray)) and v.size == 1 and v.dtype == dtype


def _scalar(v):
    return v if isinstance(v, np.generic) else v.reshape(-1)[0]


def _output(shape: tuple, dtype) -> np.ndarray:
    """A native kernel's output: from the NumPy executor's buffer pool where that is on (a large
    fresh output pays its page faults on every call: ~10 ms for 40 MB, more than an exp kernel)."""
    return (_buffer_pool.POOL.empty if _buffer_pool.ENABLED else np.empty)(shape, dtype)


def _run_native(ex, name, dt, kernels, key, make, args, shape, out_dtype, fallback, operands):
    """The step every elementwise builder ends with: the kernel ``make`` builds (cached in ``kernels``
    under ``key``) on the flat ``args``, into a fresh (pooled) output of ``shape``; NumPy's
    ``fallback`` on the original ``operands`` where the kernel cannot be built or run."""
    from arrayx.executors.numba import kernels as K

    out = _output(shape, out_dtype)
    if not ex._call(name, dt, kernels, key, make, *args, out.reshape(-1), chunks=K.chunks(out.size)):
        return fallback(*operands)
    return out


def _build_unary(ex: NumbaExecutor, name: str, fallback):
    from arrayx.executors.numba import kernels as K

    kind, dtypes = NATIVE[name]
    out_kind = K.UNARY[name][1]
    thresholds = ex.thresholds
    kernels: dict = {}  # (name, dtype, form, parallel) -> compiled kernel (None: failed)

    memory_bound = name in MEMORY_BOUND

    def run(x):
        if x.size < thresholds[kind] or (memory_bound and not ex.team_pays()):
            return fallback(x)
        return native(x)

    def native(x):
        dt = x.dtype
        if dt not in dtypes or type(x) is not np.ndarray or not x.flags.c_contiguous:
            return fallback(x)
        return _run_native(ex, name, dt, kernels, (name, dt, "v"), K.elementwise_kernel, (x.reshape(-1),),
                           x.shape, _BOOL if out_kind == "bool" else dt, fallback, (x,))

    return run


def _build_binary(ex: NumbaExecutor, name: str, fallback):
    from arrayx.executors.numba import kernels as K

    kind, dtypes = NATIVE[name]
    out_kind = K.BINARY[name][1]
    thresholds = ex.thresholds
    kernels: dict = {}

    memory_bound = name in MEMORY_BOUND
    ufunc = fallback if isinstance(fallback, np.ufunc) else getattr(fallback, "real_ufunc", None)
    vector_ops = name in _VECTOR_OPS
    vector_ufunc = getattr(np, name) if vector_ops else None  # on real operands: what ``fallback`` runs

    def run(x1, x2):
        limit = thresholds[kind]
        if x1.size < limit and x2.size < limit:
            return fallback(x1, x2)
        if memory_bound and not ex.team_pays():
            if vector_ops:  # NumPy's ufunc, but into a pooled output of the matrix's layout
                return _matrix_vector(x1, x2, None)
            return fallback(x1, x2)
        return native(x1, x2)

    def _matrix_vector(x1, x2, dt):
        """A C- or F-contiguous matrix op a vector along its rows or columns (either order), into a
        pooled output of the matrix's layout: natively (``dt``: their dtype) or with NumPy's ufunc
        (``dt`` None); ``fallback`` for anything else."""
        found = _vector_operands(x1, x2)
        if found is None:
            return fallback(x1, x2)
        form, m, v, transposed = found
        rows, inner = m.shape
        if dt is None:
            if m.dtype.kind not in "biuf" or v.dtype.kind not in "biuf":  # complex divide: NumPy executor's fix-up
                return fallback(x1, x2)
            try:
                out_dt = _buffer_pool._out_dtype(vector_ufunc, x1.dtype, x2.dtype)
            except TypeError:  # no loop (bool - bool): NumPy's own error
                return fallback(x1, x2)
            out = _output(m.shape, out_dt)
            if form[0] == "m":
                vector_ufunc(m, v.reshape(-1, 1) if form[1] == "c" else v, out=out)
            else:
                vector_ufunc(v.reshape(-1, 1) if form[0] == "c" else v, m, out=out)
        else:
            out = _output(m.shape, _BOOL if out_kind == "bool" else dt)
            x, y = (m, v) if form[0] == "m" else (v, m)
            step = K.vector_step(inner)
            if not ex._call(name, dt, kernels, (name, dt, form), K.vector_kernel, x, y, step, out,
                            chunks=max(1, -(-rows // step))):
                return fallback(x1, x2)
        shape = np.broadcast_shapes(x1.shape, x2.shape)
        return out.reshape(shape[::-1]).T if transposed else out.reshape(shape)

    def native(x1, x2):
        # array op array of one shape, array op scalar, scalar op array, a matrix op a row or
        # column vector; the rest is NumPy's
        if type(x1) is np.ndarray and x1.flags.c_contiguous:
            dt = x1.dtype
            if type(x2) is np.ndarray and x2.shape == x1.shape:
                if x2.dtype != dt or not x2.flags.c_contiguous:
                    return fallback(x1, x2)
                form, shape, args = "vv", x1.shape, (x1.reshape(-1), x2.reshape(-1))
            elif _is_scalar_operand(x2, dt) and np.ndim(x2) <= x1.ndim:
                form, shape, args = "vs", x1.shape, (x1.reshape(-1), _scalar(x2))
            elif vector_ops and type(x2) is np.ndarray and x2.dtype == dt and dt in dtypes:
                return _matrix_vector(x1, x2, dt)
            else:
                return fallback(x1, x2)
        elif vector_ops and type(x1) is np.ndarray and type(x2) is np.ndarray and x1.dtype == x2.dtype \
                and x1.dtype in dtypes:
            return _matrix_vector(x1, x2, x1.dtype)
        elif type(x2) is np.ndarray and x2.flags.c_contiguous and _is_scalar_operand(x1, x2.dtype) \
                and np.ndim(x1) <= x2.ndim:
            dt = x2.dtype
            form, shape, args = "sv", x2.shape, (_scalar(x1), x2.reshape(-1))
        else:
            return fallback(x1, x2)
        if dt not in dtypes:
            return fallback(x1, x2)
        return _run_native(ex, name, dt, kernels, (name, dt, form), K.elementwise_kernel, args, shape,
                           _BOOL if out_kind == "bool" else dt, fallback, (x1, x2))

    # ``x op= y`` (api._inplace._into): NumPy's ufunc writing into x itself.  Not the kernel: written
    # into its own operand it loses its vector loop (LLVM cannot rule the aliasing out; x /= s ran 7x
    # slower than NumPy's in-place divide), and in place NumPy's arithmetic is memory-bound anyway
    if ufunc is not None:
        run.real_ufunc = ufunc
    return run


#: binary operations with a matrix-vector kernel (``_vector_operands``)
_VECTOR_OPS = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum"})


def _vector_operands(x1, x2):
    """(form, matrix as C-contiguous (rows, inner), vector as 1-D, transposed) where one operand is
    a C- or F-contiguous array of the result's shape (ndim >= 2) and the other holds one value per
    column or per row of it (F order: of its transpose); None otherwise.  Form: "mr", "mc", "rm", "cm"
    (see ``kernels.vector_kernel``)."""
    if type(x1) is not np.ndarray or type(x2) is not np.ndarray:
        return None
    for first, m, v in ((True, x1, x2), (False, x2, x1)):
        nd = m.ndim
        if nd < 2 or v.ndim > nd or m.size == 0:
            continue
        vshape = (1,) * (nd - v.ndim) + v.shape
        if m.flags.c_contiguous:
            transposed, mshape = False, m.shape
        elif m.flags.f_contiguous:
            transposed, mshape, vshape = True, m.shape[::-1], vshape[::-1]
            m = m.T
        else:
            continue
        inner = mshape[-1]
        if vshape[-1] == inner and inner > 1 and all(d == 1 for d in vshape[:-1]):
            kind = "r"
        elif vshape[-1] == 1 and vshape[:-1] == mshape[:-1] and math.prod(mshape[:-1]) > 1:
            kind = "c"
        else:
            continue
        vec = np.ascontiguousarray((v.T if transposed else v).reshape(-1))
        mat = m.reshape(-1, inner)
        return ("m" + kind if first else kind + "m"), mat, vec, transposed
    return None


def _build_where(ex: NumbaExecutor, name: str, fallback):
    from arrayx.executors.numba import kernels as K

    _, dtypes = NATIVE[name]
    thresholds = ex.thresholds
    kernels: dict = {}

    def run(cond, x1, x2):
        if cond.size < thresholds["elementwise"]:
            return fallback(cond, x1, x2)
        return native(cond, x1, x2)

    def native(cond, x1, x2):
        if type(cond) is not np.ndarray or cond.dtype != _BOOL or not cond.flags.c_contiguous:
            return fallback(cond, x1, x2)
        shape = cond.shape
        form = ""
        args = []
        for v in (x1, x2):
            if type(v) is np.ndarray and v.shape == shape and v.flags.c_contiguous:
                form += "v"
                args.append(v.reshape(-1))
            elif isinstance(v, (np.generic, np.ndarray)) and v.size == 1 and np.ndim(v) <= cond.ndim:
                form += "s"
                args.append(_scalar(v))
            else:
                return fallback(cond, x1, x2)
        dt = x1.dtype
        if x2.dtype != dt or dt not in dtypes:
            return fallback(cond, x1, x2)
        return _run_native(ex, name, dt, kernels, (dt, form), K.where_kernel, (cond.reshape(-1), *args), shape, dt,
                           fallback, (cond, x1, x2))

    return run


def _build_clip(ex: NumbaExecutor, name: str, fallback):
    from arrayx.executors.numba import kernels as K

    _, dtypes = NATIVE[name]
    thresholds = ex.thresholds
    kernels: dict = {}

    def run(x, lo=None, hi=None):
        if x.size < thresholds["elementwise"]:
            return fallback(x, lo, hi)
        return native(x, lo, hi)

    def native(x, lo, hi):
        dt = x.dtype
        if (type(x) is not np.ndarray or dt not in dtypes or not x.flags.c_contiguous
                or (lo is None and hi is None)
                or (lo is not None and not (_is_scalar_operand(lo, dt) and np.ndim(lo) <= x.ndim))
                or (hi is not None and not (_is_scalar_operand(hi, dt) and np.ndim(hi) <= x.ndim))):
            return fallback(x, lo, hi)
        bounds = "both" if lo is not None and hi is not None else "lo" if lo is not None else "hi"
        zero = dt.type(0)  # stands for the missing bound
        args = (x.reshape(-1), zero if lo is None else _scalar(lo), zero if hi is None else _scalar(hi))
        return _run_native(ex, name, dt, kernels, (dt, bounds), K.clip_kernel, args, x.shape, dt, fallback,
                           (x, lo, hi))

    return run


# -- reductions -------------------------------------------------------------------------------

def _builders() -> dict:
    from arrayx.executors.numba import kernels as K

    table = {name: _build_unary for name in K.UNARY}
    table.update({name: _build_binary for name in K.BINARY})
    table.update({"where": _build_where, "clip": _build_clip})
    table.update({name: _build_reduction for name in K.REDUCTIONS})
    return table


#: primitive name -> builder of its native implementation (filled when the executor loads)
_BUILDERS: dict = {}
