"""Running the fused kernels of ``numba.fusion.lowering``: their files on disk, the threads, partials.

A region's kernel is compiled (or loaded from the disk cache) on its first call, in the calling
thread; then the calling thread and a team of workers run it side by side, claiming chunks of its
range inside the kernel (``numba.team``; the kernels release the GIL), and reductions' partials
per (row, split) are combined here.  The cache keeps the newest
``CACHE_MAX_KERNELS`` fused kernels (``ARRAYX_NUMBA_FUSED_KERNELS``).
"""
from __future__ import annotations

import hashlib
import math
import os
import threading
from typing import NamedTuple

import numpy as np

from arrayx.core import config as _config
from arrayx.executors.common import buffer_pool as _buffer_pool
from arrayx.core.graph import Var
from arrayx.executors.common.fusion import Region, RegionPlaceholder, operand_slots, region_inputs


class _Plan(NamedTuple):
    """A region made concrete: its kernel source and how to call it."""
    source: str
    operands: tuple  # _Operand per kernel array/scalar argument
    stored: tuple  # Vars stored as full outputs (elementwise results used outside)
    reductions: tuple  # (Var, primitive name, accumulator dtype, params) per reduction
    outer: int
    mid: int
    inner: int
    flat: bool  # elementwise, full and scalar operands: a kernel over element ranges (_FLAT)
    donors: dict  # stored output index -> operand index whose buffer the kernel writes it into
    #: None, or the kernel source that runs the region on the transposes of its full operands (when they
    #: are all transposed: ``X.T`` of a C array), with outputs written transposed: the flat kernel itself,
    #: or for a 2-D region reducing (or broadcasting along) axis 1, its columns kernel over (1, mid, outer)
    transposed: str | None = None


CACHE_MAX_KERNELS = _config.get("ARRAYX_NUMBA_FUSED_KERNELS")
#: chunks of a parallel kernel's range per thread, claimed as threads come free (see numba.team)
CHUNKS_PER_THREAD = 8


# -- kernels on disk ----------------------------------------------------------------------------------

_stats_lock = threading.Lock()
_loaded: dict[str, object] = {}  # stem -> dispatcher, this process


def _kernel(source: str):
    """The compiled kernel of ``source`` (its file named from the source's hash; see the module doc)."""
    from arrayx.executors.numba import kernels as K

    stem = "fused_" + hashlib.sha256(source.encode()).hexdigest()[:24]
    folder, fd = K.cache_dir(), K.cache_fd()  # files through the held handle on the verified folder
    new = folder is not None and not _exists(fd, f"{stem}.py")
    fn = K._cached(("fused", stem), lambda: (stem, source))
    with _stats_lock:
        _loaded[stem] = fn
    if folder is not None:
        if new:
            _prune(fd)
        else:
            _touch(fd, stem)
    return fn


def _exists(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
        return True
    except OSError:
        return False


def _touch(fd: int, stem: str) -> None:
    """Mark a kernel as used (its Numba index file: touching the source would invalidate it)."""
    try:
        names = [n for n in os.listdir(fd) if n.startswith(stem + ".") and n.endswith(".nbi")]
    except OSError:
        return
    for name in names:
        try:
            os.utime(name, dir_fd=fd, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass


def _prune(fd: int, keep: int | None = None) -> None:
    """Remove the least recently used fused kernels beyond ``keep`` (CACHE_MAX_KERNELS) from the
    cache folder held by ``fd``."""
    keep = CACHE_MAX_KERNELS if keep is None else keep
    try:
        stems: dict = {}
        names = [n for n in os.listdir(fd) if n.startswith("fused_")]
        for name in names:
            stem = name.split(".")[0]
            mtime = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime
            stems[stem] = max(stems.get(stem, 0.0), mtime)
    except OSError:
        return
    if len(stems) <= keep:
        return
    old = set(sorted(stems, key=stems.__getitem__)[:len(stems) - keep])
    for name in names:
        if name.split(".")[0] in old:
            try:
                os.unlink(name, dir_fd=fd)
            except OSError:
                pass


def kernel_stats() -> dict:
    """{"kernels": fused kernels used by this process, "compiled": compiled here, "loaded": loaded
    from the disk cache} (Numba's per-dispatcher counters)."""
    with _stats_lock:
        kernels = list(_loaded.values())
    return {"kernels": len(kernels),
            "compiled": sum(sum(k._cache_misses.values()) for k in kernels),
            "loaded": sum(sum(k._cache_hits.values()) for k in kernels)}


# -- running regions ------------------------------------------------------------------------------

_FUSED = RegionPlaceholder("fused_region")  # an equation of it runs its RegionRunner


def _combine(name: str, p, q, counts, mid: int, params: dict):
    """A reduction's result over mid from its (outer, nsplit, inner) partials."""
    if p.shape[1] == 1 and name not in ("mean", "var", "std"):
        return p[:, 0, :]
    if name == "sum":
        return p.sum(axis=1)
    if name == "mean":
        return p.sum(axis=1) / mid
    if name == "prod":
        return p.prod(axis=1)
    if name in ("max", "min"):
        return (np.maximum if name == "max" else np.minimum).reduce(p, axis=1)
    if name in ("any", "all"):
        return p.any(axis=1) if name == "any" else p.all(axis=1)
    mean = (p * counts).sum(axis=1) / mid  # var, std: the blocks' means and squared deviations
    m2 = q.sum(axis=1) + (counts * (p - mean[:, None, :]) ** 2).sum(axis=1)
    res = m2 / (mid - params.get("correction", 0.0))
    return np.sqrt(res) if name == "std" else res


class RegionRunner:
    """Runs one region's kernel on buffers (see the module doc); op by op if Numba fails on it."""

    def __init__(self, ex, region: Region, plan_: _Plan, fallback):
        from arrayx.executors.numba import team as _numba_team  # imports Numba: only the Numba executor makes runners

        self._team = _numba_team
        self.ex = ex
        self.plan = plan_
        self.shape = region.shape
        self.donors = plan_.donors  # stored output index -> operand whose buffer the kernel writes it into
        self.fallback = fallback
        self.kernel = None  # the compiled kernel, on first call
        self.failed: str | None = None
        size = math.prod(region.shape)
        self.threads = _threads() if ex.parallel and size >= ex.fusion_parallel_size else 1
        slots = operand_slots(plan_.operands, _inputs(plan_))
        self.positions = {i: s for i, s in enumerate(slots) if s is not None}  # operand -> buffer position
        self.out_dtypes = [v.aval.dtype for v in plan_.stored]
        self.red_dtypes = [v.aval.dtype for v, *_ in plan_.reductions]
        self.step, self.nsplit, self.cuts, self._team_size = self._work(plan_.outer, plan_.mid, plan_.inner)
        self.team = None
        self._transposed = None  # [kernel, team, step, nsplit, cuts, team size]: on its first run

    def _work(self, outer: int, mid: int, inner: int) -> tuple:
        """(step, nsplit, cuts, threads) of the work items of a run viewed as (outer, mid, inner)."""
        # work items: enough splits of mid for every thread, each at least ~8192 elements
        nsplit = 1 if self.threads == 1 else max(1, min(mid, -(-4 * self.threads // outer), (mid * inner) // 8192 or 1))
        step = -(-mid // nsplit)
        nsplit = -(-mid // step)
        items = outer * mid * inner if self.plan.flat else outer * nsplit  # what the threads share
        threads = min(self.threads, items)
        # a chunk boundary every ~1/CHUNKS_PER_THREAD of a thread's share; the team on first run
        cuts = self._team.cuts(items, max(1, min(items, threads * CHUNKS_PER_THREAD) if threads > 1 else 1))
        return step, nsplit, cuts, threads

    @property
    def source(self) -> str:
        return self.plan.source

    def run_kernel(self, kargs) -> None:
        if self.team is None:
            self.kernel(self._team.new_claims(), self.cuts, *kargs)
        else:  # chunks claimed inside the kernel by the caller and the team's workers (see numba.team)
            self.team.run(self.kernel, len(self.cuts) - 1, (self.cuts, *kargs), patient=True)

    def _all_transposed(self, bufs) -> bool:
        """Whether every full operand is a transposed array (F- and not C-contiguous, ``X.T`` of a C
        array), so the region runs on their transposes without copying any of them into C order."""
        found = False
        shape = self.shape
        for i, op in enumerate(self.plan.operands):
            if op.value is None and op.layout == "f":
                b = bufs[self.positions[i]]
                if b.__class__ is not np.ndarray or b.shape != shape:
                    return False  # a broadcast operand: in C order, as before
                flags = b.flags
                if not flags.f_contiguous:
                    return False
                found = found or not flags.c_contiguous
        return found

    def __call__(self, *bufs):
        if self.failed is not None:
            return self.fallback(*bufs)
        if self.plan.transposed is not None and len(self.shape) > 1 and self._all_transposed(bufs):
            return self._run_transposed(bufs)
        plan_ = self.plan
        shape = self.shape
        # outputs and copies from the buffer pool (pages already mapped: a fresh 80 MB output costs
        # ~20 ms of page faults); a buffer anything still references is never handed out
        empty = _buffer_pool.POOL.empty if _buffer_pool.ENABLED else np.empty
        def full(op, b):
            if b.shape != shape:
                b = np.broadcast_to(b if op.expand is None else b.reshape(op.expand), shape)
            return _contiguous(b, empty).reshape(-1)

        args = self._operand_args(bufs, empty, full)
        outs = []
        for k, dt in enumerate(self.out_dtypes):
            donor = self.donors.get(k)
            if donor is None:
                outs.append(empty(shape, dt))
                continue
            # the kernel writes this output into the donor operand's argument: the operand's own
            # buffer where it may (a kernel made it), else a copy of it (e.g. a fallback's view)
            b = bufs[self.positions[donor]]
            if not (b.__class__ is np.ndarray and b.flags.c_contiguous and b.flags.writeable and b.shape == shape):
                args[donor] = args[donor].copy()
            outs.append(args[donor].reshape(shape))
        step, nsplit = self.step, self.nsplit
        parts = []
        kargs = [*args, *(o.reshape(-1) for o in outs)]
        if not plan_.flat:
            kargs[:0] = [plan_.outer, plan_.mid, plan_.inner, step, nsplit]
        kargs += _reduction_parts(plan_.reductions, plan_.outer, nsplit, plan_.inner, parts)
        try:
            if self.kernel is None:
                kernel = _kernel(plan_.source)
                kernel(self._team.claimed_claims(), self.cuts, *kargs)  # compiled here, never in a worker
                if self._team_size > 1:
                    self.team = self._team.team(self._team_size)
                # set last: an interruption (KeyboardInterrupt) before this point leaves the region
                # to be set up again on its next call, never without its team
                self.kernel = kernel
            self.run_kernel(kargs)
        except Exception as e:
            return self._kernel_failed(e, "reduction" if plan_.reductions else "elementwise", bufs)
        results = list(outs)
        if plan_.reductions:
            counts = None
            if any(name in ("var", "std") for _, name, _, _ in plan_.reductions):
                starts = np.arange(nsplit) * step
                counts = np.minimum(step, plan_.mid - starts).astype(np.float64).reshape(1, nsplit, 1)
            for (v, name, _, params), (p, q), dt in zip(plan_.reductions, parts, self.red_dtypes):
                r = _combine(name, p, q, counts, plan_.mid, params)
                results.append(np.asarray(r.astype(dt, copy=False)).reshape(v.aval.shape))
        return results


    def _kernel_failed(self, e: Exception, kind: str, bufs):
        """A kernel Numba could not compile: recorded on the executor (``failed``) and the region run
        by its fallback from then on; any other exception propagates."""
        from numba.core.errors import NumbaError

        if not isinstance(e, NumbaError):
            raise e
        first = str(e).strip().splitlines()
        self.failed = f"{type(e).__name__}: {first[0] if first else ''}"
        self.ex.failed["fused region", kind] = self.failed
        return self.fallback(*bufs)

    def _operand_args(self, bufs, empty, full) -> list:
        """The kernel's operand arguments: constants as they are, scalars (layout "s") as one value,
        operands with one value per (outer, inner) or per position in mid ("k", "m") flat and
        contiguous, full operands as ``full(op, buffer)`` gives them."""
        args = []
        for i, op in enumerate(self.plan.operands):
            if op.value is not None:
                args.append(op.value)
                continue
            b = bufs[self.positions[i]]
            if op.layout == "s":
                args.append(b.reshape(-1)[0] if b.__class__ is np.ndarray else np.asarray(b).reshape(-1)[0])
            elif op.layout in ("k", "m"):
                args.append(_contiguous(b, empty).reshape(-1))
            else:
                args.append(full(op, b))
        return args

    def _run_transposed(self, bufs):
        """The region on the transposes of its (all transposed) full operands: a flat region's own kernel
        over their memory order, a 2-D one's columns kernel over (1, mid, outer) (the reduced axis 1 of
        ``X.T`` is axis 0 of X); stored outputs come back as transposes of C-ordered buffers, as NumPy
        gives a transposed operand's elementwise results."""
        plan_ = self.plan
        tshape = self.shape[::-1]
        empty = _buffer_pool.POOL.empty if _buffer_pool.ENABLED else np.empty
        # full operands: views, b.T is C-contiguous (_all_transposed); "k"/"m" ones per row / per
        # column of the region, as they are
        args = self._operand_args(bufs, empty, lambda op, b: b.T.reshape(-1))
        outs = []
        for k, dt in enumerate(self.out_dtypes):
            donor = self.donors.get(k)
            if donor is None:
                outs.append(empty(tshape, dt).T)
                continue
            if not bufs[self.positions[donor]].flags.writeable:
                args[donor] = args[donor].copy()
            outs.append(args[donor].reshape(tshape).T)
        if plan_.flat:
            outer, mid, inner = 1, math.prod(self.shape), 1
        else:
            outer, mid, inner = 1, self.shape[1], self.shape[0]
        t = self._transposed
        if t is None:
            t = [None, None, *self._work(outer, mid, inner)]
        _, _, step, nsplit, cuts, team_size = t
        kargs = [*args, *(o.T.reshape(-1) for o in outs)]
        if not plan_.flat:
            kargs[:0] = [outer, mid, inner, step, nsplit]
        parts = []
        kargs += _reduction_parts(plan_.reductions, outer, nsplit, inner, parts)
        try:
            if t[0] is None:
                kernel = _kernel(plan_.transposed)
                kernel(self._team.claimed_claims(), cuts, *kargs)  # compiled here, never in a worker
                t[1] = self._team.team(team_size) if team_size > 1 else None
                t[0] = kernel
                self._transposed = t
            if t[1] is None:
                t[0](self._team.new_claims(), cuts, *kargs)
            else:
                t[1].run(t[0], len(cuts) - 1, (cuts, *kargs), patient=True)
        except Exception as e:
            return self._kernel_failed(e, "transposed", bufs)
        results = list(outs)
        if plan_.reductions:
            counts = None
            if any(name in ("var", "std") for _, name, _, _ in plan_.reductions):
                starts = np.arange(nsplit) * step
                counts = np.minimum(step, mid - starts).astype(np.float64).reshape(1, nsplit, 1)
            for (v, name, _, params), (p, q), dt in zip(plan_.reductions, parts, self.red_dtypes):
                r = _combine(name, p, q, counts, mid, params)
                results.append(np.asarray(r.astype(dt, copy=False)).reshape(v.aval.shape))
        return results


def _after_fork_in_child() -> None:
    global _stats_lock
    _stats_lock = threading.Lock()  # a parent thread may have held it


os.register_at_fork(after_in_child=_after_fork_in_child)


def _reduction_parts(reductions, outer: int, nsplit: int, inner: int, parts: list) -> list:
    """Per-split partial results of the region's reductions (a second one for var/std), appended to
    ``parts``; returns them as the kernel's trailing arguments."""
    out = []
    for _, name, acc, _ in reductions:
        p = np.empty((outer, nsplit, inner), acc)
        q = np.empty_like(p) if name in ("var", "std") else None
        parts.append((p, q))
        out += [p] if q is None else [p, q]
    return out


def _contiguous(b, empty):
    """``b`` itself where it is a C-contiguous ndarray, else a C-contiguous copy made by ``empty``."""
    if b.__class__ is np.ndarray and b.flags.c_contiguous:
        return b
    b = np.asarray(b)
    out = empty(b.shape, b.dtype)
    np.copyto(out, b)
    return out


def _threads() -> int:
    """Numba's thread count, without starting Numba's threading layer (~20 ms) just to read it."""
    from numba.np.ufunc import parallel

    from arrayx.executors.numba.layer import numba as _numba

    numba = _numba()  # the threading layer set before anything can start it

    if not parallel._is_initialized:
        return numba.config.NUMBA_NUM_THREADS
    from arrayx.executors.numba.team import numba_threads

    return numba_threads()  # (not through Numba's launch lock, which Ctrl-C can leave held)


def _inputs(plan_: _Plan) -> tuple:
    """The region's input Vars, each once (``region_inputs`` of its operands)."""
    return region_inputs(plan_.operands)
