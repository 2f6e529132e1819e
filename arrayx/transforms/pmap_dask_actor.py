"""pmap on the dask executor through a runner actor: a call is one message to an actor, with no
task and no scheduler round trip (on a cluster whose workers live in this process, every call; on a
cluster of worker processes, a call whose inputs are small: ``pmap_dask.RUNNER_ACTOR_MAX_BYTES``).

A task costs a round trip through the scheduler: a chain of one trivial ``client.submit`` a step
takes ~6 ms a step on an in-process cluster on this 2-core machine at load 1, more than 3x a
warm ``jax.pmap`` step of JAX's pmap tutorial; the task runner of ``pmap_dask`` (one task per
worker group a step, one hop) took ~9-11 ms a step.  Here the first call on a client places one
*runner* actor on the first worker (its own thread there); each call posts the runner a message
(``Actor.post``, an async method: it only queues the message, ~0.3 ms) and returns at once.  The
runner takes the messages in the order they were posted (a sequence number; the transport may
reorder them) and runs each call's members in turn with the NumPy executor's runner
(``parallel._run_in_turn``: the same segments, the same collectives folded in member order, the
same bits as ``pmap`` on the numpy executor) and keeps the results.

A result is a dask array of one chunk whose task reads the runner's result (waiting for the runner
to reach that call); the next call recognises such an input and passes the runner the result's
name only, so a training loop's parameters never leave the runner.  A result's values go when the
last array whose graph holds it is collected (a finaliser posts a release, after every call
posted before it).  Other inputs are sent as values: an array made from host data by its host
copy, any other by one read (kept per Dask name: a name's data never changes).  At most
``_MAX_AHEAD`` calls wait in the runner's queue: a loop that never reads runs at the runner's pace.

Every worker group runs on the one runner's worker: on an in-process cluster the workers share
this process (and its GIL), so the placement of groups on workers bought no parallelism; on a
cluster of worker processes the runner serves the small calls (a scheduler round trip and a
transfer per group a step cost more than their members' work there), the others take the task
runner (groups on their workers, in parallel).

In another process the runner gets the call once as a function of its inputs (the task runner's
compiled stages of one group holding every member: the same bits; a pickled member graph's
primitives would not be the worker's own, which the segments are cut at), the host-made inputs
by value once per Dask name, and tells its progress when asked (``wait_run``); a result's chunk
is read in the runner's process from its state, elsewhere from the actor (``read``).
"""
from __future__ import annotations

import itertools
import threading
import uuid
import weakref
from collections import OrderedDict

import numpy as np

#: the runners' states of this process, by runner id (the client's side and the tasks that read
#: results find a runner's state here: the cluster is in this process)
_STATES: "weakref.WeakValueDictionary[str, _State]" = weakref.WeakValueDictionary()
#: per client (by id): (the client, its _Client entry); None when its workers are not in-process
_CLIENTS: dict = {}
#: calls the client may post ahead of the runner
_MAX_AHEAD = 64
#: seconds a read waits for the runner to reach the call that makes the result
_READ_TIMEOUT = 600.0


class _State:
    """A runner's queue and results, shared by its actor, its thread and this process's readers."""

    def __init__(self, runner_id):
        self.runner_id = runner_id
        self.cv = threading.Condition()
        self.items: dict = {}  # sequence number -> message
        self.next_seq = 0  # the next message to take
        self.results: dict = {}  # run number -> tuple of arrays, or the exception the call raised
        self.last_run = -1  # the newest run number the runner has finished
        self.values: dict = {}  # Dask name -> host value sent for it
        self.graphs: dict = {}  # program number -> the call as a function of its inputs (sent once)
        self.stopped = False


class Runner:
    """The actor: ``post`` queues a message; a thread of its own runs the messages in order."""

    def __init__(self, runner_id):
        from distributed import get_worker

        self._state = state = _State(runner_id)
        _STATES[runner_id] = state
        worker = weakref.ref(get_worker())
        threading.Thread(target=_serve, args=(state, worker), daemon=True,
                         name=f"arrayx-pmap-runner-{runner_id}").start()

    async def post(self, seq, item):
        state = self._state
        with state.cv:
            state.items[seq] = item
            state.cv.notify_all()

    def wait_run(self, run, timeout):
        """The newest finished run number, once it is at least ``run`` (or ``timeout`` has passed)."""
        state = self._state
        with state.cv:
            state.cv.wait_for(lambda: state.last_run >= run or state.stopped, timeout)
            return state.last_run

    def read(self, run, k):
        """Output ``k`` of call ``run`` (a read from another worker than the runner's)."""
        return _wait_result(self._state, run, k)

    def __del__(self):
        state = self.__dict__.get("_state")
        if state is not None:
            with state.cv:
                state.stopped = True
                state.cv.notify_all()


def _serve(state: _State, worker_ref) -> None:
    """The runner's thread: the messages in sequence order, until the worker closes."""
    while True:
        with state.cv:
            while state.next_seq not in state.items:
                if state.stopped or _closed(worker_ref):
                    return
                state.cv.wait(1.0)
            item = state.items.pop(state.next_seq)
            state.next_seq += 1
        kind = item[0]
        if kind == "call":
            _, run, gid, inputs = item
            try:
                got = tuple(state.graphs[gid](*(_value_of(state, i) for i in inputs)))
            except BaseException as e:  # kept: the reads of its results (and the calls reading them) raise it
                got = e
            with state.cv:
                state.results[run] = got
                state.last_run = run
                state.cv.notify_all()
        elif kind == "release":
            with state.cv:
                state.results.pop(item[1], None)
        elif kind == "forget":
            state.values.pop(item[1], None)
        elif kind == "graph":
            state.graphs[item[1]] = item[2]


def _closed(worker_ref) -> bool:
    w = worker_ref()
    return w is None or getattr(getattr(w, "status", None), "name", "running") in (
        "closing", "closing_gracefully", "closed", "stopping", "stopped", "failed")


def _value_of(state: _State, ref):
    kind = ref[0]
    if kind == "held":
        got = state.results.get(ref[1])
        if got is None:
            raise RuntimeError(f"pmap on the dask executor: the result of call {ref[1]} was released")
        if isinstance(got, BaseException):
            raise got
        return got[ref[2]]
    if kind == "value":
        if ref[1] is not None:
            state.values[ref[1]] = ref[2]
        return ref[2]
    return state.values[ref[1]]  # "named": sent before


class _Client:
    """The client's side of a runner: the actor, the message numbers, the values sent by name."""

    def __init__(self, client, actor, runner_id, worker, local):
        self.client, self.actor, self.runner_id, self.worker = client, actor, runner_id, worker
        self.local = local  # the runner is in this process (its state in _STATES here)
        self.seq = itertools.count()
        self.runs = itertools.count()
        self.graphs = itertools.count()
        self.finished = -1  # the newest run the runner is known to have finished (another process)
        self.sent: OrderedDict = OrderedDict()  # Dask names whose values the runner holds, oldest first
        self.lock = threading.RLock()  # re-entrant: a release's finaliser may run inside post
        self.future = None

    def post(self, item) -> int:
        with self.lock:  # numbers in the order the messages go out
            seq = next(self.seq)
            self.actor.post(seq, item)
        return seq


def runner_for(client, cluster_workers=None):
    """The runner of ``client``'s cluster (None: the cluster has no worker); the first call on a
    client places it (``cluster_workers(client)`` lists the workers)."""
    got = _CLIENTS.get(id(client))
    if got is not None and got[0] is client:
        return got[1]
    if cluster_workers is None:
        return None

    for k, (c, _) in list(_CLIENTS.items()):  # forget closed clients (and their runners' handles)
        if getattr(c, "status", "running") in ("closing", "closed"):
            _CLIENTS.pop(k, None)
    workers = cluster_workers(client)
    entry = None
    if workers:
        runner_id = uuid.uuid4().hex[:12]
        future = client.submit(Runner, runner_id, actor=True, workers=[workers[0]], pure=False)
        with client.as_current():  # the handle binds to this client (it need not be the default one)
            actor = future.result()
        entry = _Client(client, actor, runner_id, workers[0],
                        all(str(w).startswith("inproc://") for w in workers))
        entry.future = future  # the actor lives while its future is held
    _CLIENTS[id(client)] = (client, entry)
    return entry


class _Held:
    """A call's results, held by the runner while an array's graph holds this (client side only:
    a copy, as a task's argument, is a plain ``_HeldRef``)."""

    __slots__ = ("runner_id", "run", "actor", "__weakref__")

    def __init__(self, entry: _Client, run: int):
        self.runner_id, self.run, self.actor = entry.runner_id, run, entry.actor
        weakref.finalize(self, _release, entry, run)

    def __reduce__(self):
        return _HeldRef, (self.runner_id, self.run, self.actor)


class _HeldRef:
    __slots__ = ("runner_id", "run", "actor")

    def __init__(self, runner_id, run, actor):
        self.runner_id, self.run, self.actor = runner_id, run, actor


def _release(entry: _Client, run: int) -> None:
    try:
        entry.post(("release", run))
    except Exception:  # the client or cluster is gone, and the runner with it
        pass


def _held_part(held, k):
    """A result's chunk: output ``k`` of call ``held.run``, once the runner has run it (in the
    runner's process from its state, elsewhere by asking the actor)."""
    state = _STATES.get(held.runner_id)
    if state is not None:
        return _wait_result(state, held.run, k)
    if held.actor is None:
        raise RuntimeError("pmap on the dask executor: the runner that held this result is gone "
                           "(its cluster was closed); run the pmap again on the new cluster")
    return held.actor.read(held.run, k).result()  # the runner's error, if the call raised one


def _wait_result(state: _State, run: int, k: int):
    """Output ``k`` of call ``run`` from the runner's state, once the runner has run it."""
    with state.cv:
        if not state.cv.wait_for(lambda: state.last_run >= run or state.stopped, _READ_TIMEOUT):
            raise TimeoutError(f"pmap on the dask executor: call {run} did not finish within "
                               f"{_READ_TIMEOUT:.0f} s")
        got = state.results.get(run)
    if got is None:
        raise RuntimeError(f"pmap on the dask executor: the result of call {run} was released "
                           f"(or its runner stopped) before it was read")
    if isinstance(got, BaseException):
        raise got
    return got[k]


def _input_ref(entry: _Client, ex, b, mapped, n):
    """What the runner reads for input ``b``: a held result by name, or its value."""
    import dask.array as da

    if isinstance(b, da.Array):
        held = b.__dict__.get("_arrayx_pmap_held")
        if held is not None and held[0].runner_id == entry.runner_id:
            return ("held", held[0].run, held[1]), held[0]
        host = b.__dict__.get("_arrayx_host")
        if host is not None and host.shape == b.shape and entry.local:
            return ("value", None, host), None  # by reference: the runner is in this process
        name = b.name
        if name in entry.sent:
            entry.sent.move_to_end(name)
            return ("named", name), None
        value = np.asarray(host if host is not None and host.shape == b.shape else ex.to_host(b))
        entry.sent[name] = True
        if len(entry.sent) > 16:
            old, _ = entry.sent.popitem(last=False)
            entry.post(("forget", old))
        return ("value", name, value), None
    return ("value", None, np.asarray(b)), None


def run(entry: _Client, ex, graph, n, bufs, flags, program, wrap):
    """One pmap call posted to ``entry``'s runner: the results, one dask array per output (each
    made an array of ``ex`` by ``wrap``).  ``program(local)`` is the call as a function of its
    inputs' values returning the outputs' (NumPy arrays, every member's stacked), for a runner in
    this process (``local``) or in another (picklable, with nothing of this process)."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    inputs, keep = [], []
    for b, f in zip(bufs, flags):
        ref, held = _input_ref(entry, ex, b, f, n)
        inputs.append(ref)
        keep.append(held)  # the inputs' results stay held until the call is posted
    gid = graph.derived.get(("pmap runner", entry.runner_id))
    if gid is None:  # the member graph goes to the runner once
        gid = graph.derived[("pmap runner", entry.runner_id)] = next(entry.graphs)
        entry.post(("graph", gid, program(entry.local)))
    run_no = next(entry.runs)
    if run_no - entry.finished > _MAX_AHEAD:  # the runner is far behind: wait for it (a bounded queue)
        state = _STATES.get(entry.runner_id) if entry.local else None
        if state is not None:
            with state.cv:
                state.cv.wait_for(lambda: run_no - state.last_run <= _MAX_AHEAD // 2 or state.stopped,
                                  _READ_TIMEOUT)
                entry.finished = state.last_run
        else:
            entry.finished = entry.actor.wait_run(run_no - _MAX_AHEAD // 2, _READ_TIMEOUT).result()
    entry.post(("call", run_no, gid, tuple(inputs)))
    del keep
    held = _Held(entry, run_no)
    ann = {"workers": [entry.worker], "allow_other_workers": True}  # read there, or asked of the actor
    outs = []
    for k, o in enumerate(graph.outputs):
        shape, dtype = (n,) + tuple(o.aval.shape), np.dtype(o.aval.dtype)
        oname = f"pmap-held-{entry.runner_id}-{run_no}-{k}"
        layer = MaterializedLayer({(oname,) + (0,) * len(shape): (_held_part, held, k)}, annotations=ann)
        arr = da.Array(HighLevelGraph({oname: layer}, {oname: set()}), oname,
                       chunks=tuple((d,) for d in shape), dtype=dtype, meta=np.empty((0,) * len(shape), dtype))
        arr._arrayx_pmap_held = (held, k)
        outs.append(wrap(arr, ex))
    return outs

