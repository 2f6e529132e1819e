"""The threads that run one kernel side by side: chunks claimed inside the kernel, a team of workers.

The Numba executor's fused kernels (jit) and its eager elementwise, where and clip kernels run so.
A kernel's range (elements, or work items of rows and columns) is cut into chunks (a fused
kernel's at the boundaries ``cuts``, made once per region; an eager kernel's of 4096 elements).  Every thread that runs the kernel enters it once and
claims chunks itself, with an atomic increment of ``claims[0]`` (``claim``), until none is left;
after each chunk it counts it done in ``claims[1]`` (``finish``).  So a call costs one entry into
compiled code per thread, not one per chunk (each entry takes the GIL: on 2 cores the hand-offs
cost ~100 us of a 400 us call), and a worker that starts late only finds fewer chunks: the
caller never waits for it to start.

Waiting is a spin, then a sleep: ``wait_until(counter, target, rounds)`` spins (a CPU pause per
round, the GIL released) until ``counter[0] >= target`` or the rounds run out.  The caller, out of
its kernel, waits so for the other threads' last chunks, for ``CALLER_SPIN_US`` (an eager kernel) or
``SPIN_US`` (a fused program's region, ``patient``), then sleeps in short steps (counted in
``Team.stalls``); a worker, after a job, watches the job counter so for about ``SPIN_US`` before it
sleeps on its bell (below).  A sleeping thread
costs a wake-up (~50 us here) that back-to-back calls, and the regions of one jitted call, then
do not pay.  ``wait_until`` is one loop of LLVM IR compiled by llvmlite (~8 ms, once per process)
and called through ctypes, which releases the GIL: no Numba function to compile or cache.

``Team`` holds the workers (``size - 1`` daemon threads; the caller is the last member).  Any
number of threads may call ``run`` at once: each caller claims chunks of its own job until none is
left, so a job is finished by its caller even if no worker ever sees it.  A job's ``claims`` are a
fresh array (a worker may still hold an old job's: reused counters would count its chunks in
another job).  Workers drop their references to a job's buffers as soon as they leave the kernel
(the buffer pool hands a buffer out again only when nothing else references it).

A caller takes no lock: it may be the main thread, where Ctrl-C raises KeyboardInterrupt at any
bytecode, and a lock acquired by Python code (``threading.Condition``'s ``__enter__`` is Python) can
be left held by an exception raised between the acquire and the ``with`` block (that leaked lock
hung every later call).  So publishing a job is single steps that each either happen or not: store
the job, store its number (``next`` of an ``itertools.count``), release the bell of each worker
registered as asleep.  A worker's bell is a plain lock it holds while awake; to sleep it registers
the bell, checks the job number again (a job published before the registration is seen here, one
published after it rings the bell) and blocks acquiring it.  A ring that finds the worker awake
only makes its next sleep return at once, to check again; a second ring of an open bell is a
RuntimeError the caller ignores.  An interrupted caller leaves at worst a job that workers finish
(its buffers alive while they use them) or a worker asleep until the next call rings it.

After a fork the child has none of the parent's threads: in the child every Team, including the
ones compiled regions keep, hands its callers to a new team made on first use (``run``), and the
module's own locks are new.

Importing this module imports Numba (the kernels import it; ``numba.fusion.run`` on first run).
"""
from __future__ import annotations

import ctypes
import itertools
import os
import platform
import threading
import time
import weakref

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from arrayx.core import config as _config

__all__ = ["claim", "finish", "Team", "team", "new_claims", "claimed_claims", "cuts", "wait_until", "SPIN_US",
           "CALLER_SPIN_US", "numba_threads"]

#: microseconds a worker, after a job, spins watching for the next one before it sleeps
#: (``ARRAYX_NUMBA_SPIN_US``; 0: always sleep)
SPIN_US = _config.get("ARRAYX_NUMBA_SPIN_US")
#: microseconds at most a caller spins waiting for the other threads' last chunks before it sleeps
#: in short steps (each such wait is a stall, counted in ``Team.stalls``): a worker that the OS
#: descheduled mid-chunk (a loaded 2-core machine) then gets the caller's core instead of watching it
#: spin for a millisecond
CALLER_SPIN_US = 50
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


# -- in the kernels -------------------------------------------------------------------------------

def _counter(context, builder, arrty, arr, index: int):
    data = context.make_array(arrty)(context, builder, value=arr).data
    return builder.gep(data, [ir.Constant(ir.IntType(64), index)], inbounds=True)


def _is_counters(arr) -> bool:
    return isinstance(arr, types.Array) and arr.dtype == types.int64 and arr.layout == "C"


def _add_one(context, builder, sig, args, index: int):
    """Atomically adds 1 to ``claims[index]``; the value before."""
    ptr = _counter(context, builder, sig.args[0], args[0], index)
    return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "seq_cst")


@intrinsic
def claim(typingctx, claims):
    """The next unclaimed chunk's number (``claims[0]``, atomically incremented)."""
    if not _is_counters(claims):
        return None
    return types.int64(claims), lambda context, builder, sig, args: _add_one(context, builder, sig, args, 0)


@intrinsic
def finish(typingctx, claims):
    """Counts one chunk done (``claims[1]``): after the chunk's stores, which it publishes."""
    if not _is_counters(claims):
        return None

    def codegen(context, builder, sig, args):
        _add_one(context, builder, sig, args, 1)
        return context.get_dummy_value()
    return types.void(claims), codegen


def new_claims() -> np.ndarray:
    """A job's counters: ``[next chunk to claim, chunks done]``."""
    return np.zeros(2, np.int64)


def claimed_claims() -> np.ndarray:
    """Counters with every chunk already claimed: a call that compiles the kernel and runs nothing."""
    return np.array([1 << 62, 0], np.int64)


def cuts(items: int, chunks: int) -> np.ndarray:
    """Boundaries of ``chunks`` near-equal ranges of ``items`` (``chunks + 1`` int64 values)."""
    return np.array([items * c // chunks for c in range(chunks + 1)], np.int64)


# -- waiting ---------------------------------------------------------------------------------------

_WAIT_IR = """
{declare}
define i32 @arrayx_wait_until(i64* %counter, i64 %target, i64 %rounds) {{
entry:
  br label %loop
loop:
  %k = phi i64 [0, %entry], [%next, %body]
  %value = load atomic i64, i64* %counter seq_cst, align 8
  %reached = icmp sge i64 %value, %target
  br i1 %reached, label %yes, label %check
check:
  %more = icmp slt i64 %k, %rounds
  br i1 %more, label %body, label %no
body:
  {pause}
  %next = add i64 %k, 1
  br label %loop
yes:
  ret i32 1
no:
  ret i32 0
}}
"""
_wait_lock = threading.Lock()
_wait = None  # (ctypes function, its execution engine: kept alive with it)


def wait_until(address: int, target: int, rounds: int) -> bool:
    """Spin until the int64 at ``address`` is at least ``target`` (True), or for ``rounds`` pauses (False)."""
    global _wait
    if _wait is None:
        with _wait_lock:
            if _wait is None:
                # (idempotent; done by Numba's first compile, which a team made first has not seen)
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
                pause = "call void @llvm.x86.sse2.pause()" if _X86 else "fence seq_cst"
                declare = "declare void @llvm.x86.sse2.pause()" if _X86 else ""
                module = llvm.parse_assembly(_WAIT_IR.format(declare=declare, pause=pause))
                module.verify()
                machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
                engine = llvm.create_mcjit_compiler(module, machine)
                engine.finalize_object()
                signature = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
                _wait = (signature(engine.get_function_address("arrayx_wait_until")), engine)
    return bool(_wait[0](address, target, rounds))


def _rounds_per_us() -> float:
    """Rounds of ``wait_until`` per microsecond here (a pause takes ~10-140 cycles by CPU model)."""
    counter = np.zeros(1, np.int64)
    address = counter.ctypes.data
    wait_until(address, 1, 1)  # compiled before the clock starts
    rounds, best = 10000, float("inf")
    for _ in range(3):
        t = time.perf_counter()
        wait_until(address, 1, rounds)
        best = min(best, time.perf_counter() - t)
    return rounds / max(best * 1e6, 1.0)


def numba_threads() -> int:
    """``numba.get_num_threads()``, without Numba's launch locks once its threads run.

    Numba's ``get_num_threads`` enters its process-wide launch lock (a multiprocessing RLock, whose
    ``__enter__`` is Python) on every call: Ctrl-C there leaves it held by the main thread, and
    every other thread's next call waits for good.  Once the threads run, the count (this thread's
    setting, what ``get_num_threads`` returns) is read from the threading layer itself.  Starts
    Numba's threads when they do not run yet: its threading layer must be set first (``layer``).
    """
    from numba.np.ufunc import parallel

    read = getattr(parallel, "_get_num_threads", None)  # set when the threads start
    if parallel._is_initialized and read is not None:
        n = read()
        if n > 0:
            return n
    return parallel.get_num_threads()


# -- the team ---------------------------------------------------------------------------------------

class Team:
    """``size - 1`` worker threads that help callers of ``run`` through their kernels' chunks."""

    def __init__(self, size: int, spin_us: float = SPIN_US):
        self.size = size
        per_us = _rounds_per_us() if spin_us > 0 else 0.0
        self.spin = int(spin_us * per_us)  # rounds of wait_until: a worker between jobs
        self.caller_spin = int(min(spin_us, CALLER_SPIN_US) * per_us)  # a caller waiting for the last chunks
        #: calls whose caller, after its own chunks, waited past ``CALLER_SPIN_US`` and slept
        self.stalls = 0
        self._job: list = []  # [kernel, claims, args] of the newest call; emptied when its caller returns
        self._jobs = np.zeros(1, np.int64)  # number of the newest job published, where workers watch it
        self._jobs_address = self._jobs.ctypes.data
        self._published = itertools.count(1)  # job numbers (next() is one step: no lock)
        self._bells: dict[int, threading.Lock] = {}  # worker index -> its bell, while it sleeps
        self.failures: list[str] = []  # what a worker's kernel call raised (none is expected)
        self._pid = os.getpid()  # the process whose threads serve it (a fork child's team has none)
        self._successor: Team | None = None  # in a fork child: the team that runs this one's calls
        _every_team.add(self)
        for i in range(size - 1):
            threading.Thread(target=self._serve, args=(i,), name=f"arrayx-fused-{i}", daemon=True).start()

    def _serve(self, index: int) -> None:
        seen = 0
        jobs, bells = self._jobs, self._bells
        bell = threading.Lock()  # held while this worker is awake; a caller releases it to wake it
        bell.acquire()
        while True:
            if self.spin:
                wait_until(self._jobs_address, seen + 1, self.spin)  # a job that comes soon starts at once
            while jobs[0] == seen:
                bells[index] = bell  # asleep from here on: a caller that publishes a job now rings it
                if jobs[0] == seen:  # (a job published before that is seen here instead)
                    bell.acquire()  # returns at once after a ring that found it awake: checked again
                bells.pop(index, None)
            seen = int(jobs[0])
            job = self._job
            try:
                kernel, claims, args = job
            except ValueError:  # emptied: its caller is done with it
                continue
            finally:
                del job
            try:
                kernel(claims, *args)
            except BaseException as e:  # the caller finishes the chunks left; keep the team alive
                self.failures.append(f"{type(e).__name__}: {e}")
            del kernel, claims, args  # no buffer of this job kept alive while waiting

    def _forked(self) -> None:
        """In a fork child: no job, no workers (their bells are gone with them)."""
        self._job = []
        self._bells = {}
        self._successor = None

    def run(self, kernel, chunks: int, args, patient: bool = False):
        """``kernel(claims, *args)`` by the caller and the workers, until its ``chunks`` chunks are done;
        what the caller's own call of the kernel returned (the eager kernels: the chunks it ran).
        ``patient``: the caller spins as long as a worker between jobs (``SPIN_US``) before it sleeps,
        not ``CALLER_SPIN_US``: the regions of a fused program run back to back, and a caller woken
        from a sleep late starts the next region late."""
        if self._pid != _pid:  # a parent's team in a fork child: its workers do not exist here
            if self._successor is None:
                self._successor = team(self.size)
            return self._successor.run(kernel, chunks, args, patient)
        claims = new_claims()
        job = [kernel, claims, args]
        try:
            self._job = job
            self._jobs[0] = next(self._published)
            if self._bells:
                for bell in list(self._bells.values()):  # the workers asleep: wake them
                    try:
                        bell.release()
                    except RuntimeError:  # rung already (by another caller): awake or waking
                        pass
            mine = kernel(claims, *args)
            # the other threads' last chunks: spin (CALLER_SPIN_US at most), then sleep in short steps.
            # A plain read of the count orders the reads of their stores after it on x86 only:
            # elsewhere the atomic read does
            if claims[1] < chunks or not _X86:
                address = claims.ctypes.data
                spin = self.spin if patient else self.caller_spin
                if not wait_until(address + 8, chunks, spin):
                    self.stalls += 1
                    while not wait_until(address + 8, chunks, spin):
                        if self.failures:
                            raise RuntimeError(f"a Numba kernel failed in a worker thread: {self.failures[-1]}")
                        time.sleep(2e-5)
        finally:  # a worker that has not taken the job finds it empty (all its chunks are done,
            # or its caller was interrupted): no buffer of it kept alive by the team
            job.clear()
        return mine


_teams: dict[int, Team] = {}
_teams_lock = threading.Lock()
_every_team: weakref.WeakSet = weakref.WeakSet()  # every Team of this process (regions keep theirs)
_pid = os.getpid()


def team(size: int) -> Team:
    """The team of ``size`` threads (the caller included), made on first use."""
    t = _teams.get(size)
    if t is None:
        with _teams_lock:
            t = _teams.get(size)
            if t is None:
                t = _teams[size] = Team(size)
    return t


def _after_fork_in_child() -> None:
    global _teams_lock, _wait_lock, _pid
    _pid = os.getpid()
    _teams.clear()  # the parent's workers do not exist here
    _teams_lock = threading.Lock()
    _wait_lock = threading.Lock()
    for t in list(_every_team):  # teams the parent's regions and executors still hold
        t._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)
