"""``arrayx.lazy()`` scopes that fail, run across threads, change a Python scalar every step, or sit
in a suspended generator (issue 40, points 1, 7 and 8).

- a failed run (an error or Ctrl-C while the recorded operations compile or run, at a read or at
  the scope's end) leaves each array written in place as it was before the failed run, readable,
  and raises; when the block raised its own exception, that one is raised with the run's failure
  in a note (a Ctrl-C during the run wins over an ordinary exception of the block);
- ``lazy()`` is per thread: a decorator or one scope object used by several threads at once, and
  threads reading arrays that another thread's scope writes in place (they see the values from
  before that scope) do not disturb each other;
- a Python scalar that changes between runs of the same recorded structure becomes an input of
  the program (as a weakly typed scalar argument of ``jit``): one more compile, not one per value;
- a generator suspended inside a scope does not leave its caller recording."""
from __future__ import annotations

import importlib
import threading
from collections import OrderedDict

import numpy as np
import pytest

import arrayx as ax
from arrayx.core.graph import Literal
from arrayx.core.primitives import current_trace
from tests.conftest import assert_same

laziness = importlib.import_module("arrayx.transforms.laziness")


# -- point 1: a failed run keeps the arrays it would have written ------------------------------------

class _Failing:
    """Makes the next lazy() run fail with ``error`` where ``where`` says: while compiling the
    recorded graph, or while running the compiled program."""

    def __init__(self, monkeypatch, ex, error, where):
        self.error, self.where, self.armed = error, where, False
        monkeypatch.setattr(laziness, "_CACHE", OrderedDict())  # every run compiles
        compile_ = ex.compile

        def failing_compile(graph):
            if self.armed and self.where == "compile":
                self.armed = False
                raise self.error("injected")
            fn = compile_(graph)
            if not (self.armed and self.where == "run"):
                return fn

            def failing_run(*args):
                self.armed = False
                raise self.error("injected")

            return failing_run

        monkeypatch.setattr(ex, "compile", failing_compile)


def _arrays():
    w = ax.asarray(np.arange(4.0))
    g = ax.asarray(np.ones(4))
    return w, g, np.arange(4.0)


@pytest.mark.parametrize("where", ["compile", "run"])
@pytest.mark.parametrize("error", [KeyboardInterrupt, MemoryError, RuntimeError])
def test_a_failed_run_at_the_scope_end_leaves_arrays_written_in_place_as_they_were(executor, monkeypatch,
                                                                                    error, where):
    w, g, before = _arrays()
    failing = _Failing(monkeypatch, w._ex, error, where)
    failing.armed = True
    with pytest.raises(error, match="injected"):
        with ax.lazy():
            w[0] = 5.0
            w += g
            made = w * 2.0
    assert type(w) is ax.Array
    assert_same(w, before)  # readable, the values from before the block
    assert_same(w + 1.0, before + 1.0)
    with pytest.raises(RuntimeError, match="injected"):  # a value made in the failed scope names the failure
        float(made[0])


@pytest.mark.parametrize("error", [KeyboardInterrupt, MemoryError])
def test_writes_whose_run_completed_are_kept(executor, monkeypatch, error):
    w, g, before = _arrays()
    failing = _Failing(monkeypatch, w._ex, error, "run")
    with pytest.raises(error):
        with ax.lazy():
            w[0] = 5.0
            assert float(w[0]) == 5.0  # a read runs the first write
            failing.armed = True
            w += g
    want = before.copy()
    want[0] = 5.0
    assert_same(w, want)


def test_a_failed_read_inside_the_scope_restores_and_the_scope_goes_on(executor, monkeypatch):
    w, g, before = _arrays()
    failing = _Failing(monkeypatch, w._ex, MemoryError, "run")
    with ax.lazy():
        w += g
        made = w * 2.0
        failing.armed = True
        with pytest.raises(MemoryError):
            float(ax.sum(w))
        assert type(w) is ax.Array
        assert_same(w, before)
        with pytest.raises(RuntimeError, match="MemoryError"):
            made + 1.0  # a value of the failed run: not computed, and says why
        w *= 3.0  # recording goes on
    assert_same(w, before * 3.0)


@pytest.mark.parametrize("error", [MemoryError, RuntimeError])
def test_the_blocks_own_exception_carries_the_runs_failure(executor, monkeypatch, error):
    w, g, before = _arrays()
    failing = _Failing(monkeypatch, w._ex, error, "run")
    failing.armed = True
    with pytest.raises(ValueError, match="own") as info:
        with ax.lazy():
            w += g
            raise ValueError("own")
    notes = getattr(info.value, "__notes__", [])
    assert any(error.__name__ in n and "injected" in n for n in notes), notes
    assert_same(w, before)


def test_a_ctrl_c_during_the_run_wins_over_the_blocks_exception(executor, monkeypatch):
    w, g, before = _arrays()
    failing = _Failing(monkeypatch, w._ex, KeyboardInterrupt, "run")
    failing.armed = True
    with pytest.raises(KeyboardInterrupt) as info:
        with ax.lazy():
            w += g
            raise ValueError("own")
    assert isinstance(info.value.__context__, ValueError)  # the block's exception is chained
    assert_same(w, before)


def test_a_failing_recorded_op_restores_a_mutated_host_view(executor, monkeypatch):
    """On numpy and numba the write lands in the array's memory only once the program ran: a failed
    run leaves a NumPy view of it untouched."""
    w, g, before = _arrays()
    if not w._ex.mutable:
        pytest.skip(f"{executor} buffers are immutable: there is no memory to share")
    view = np.asarray(w, copy=False)
    failing = _Failing(monkeypatch, w._ex, MemoryError, "run")
    failing.armed = True
    with pytest.raises(MemoryError):
        with ax.lazy():
            w[1:3] = 7.0
    assert view.tolist() == before.tolist()
    w[1:3] = 7.0  # and the array is writable as before
    assert view.tolist() == [0.0, 7.0, 7.0, 3.0]


# -- point 7: threads ---------------------------------------------------------------------------------

def _in_thread(fn, *args):
    out = {}

    def body():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - reported to the test thread
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    return t, out


def test_another_thread_reads_the_values_from_before_the_scope(executor):
    """While one thread's scope holds a recorded write into ``w``, another thread computes with ``w``
    and converts it: it sees ``w`` as it was before that scope, and the scope is not disturbed."""
    with ax.use_executor(executor):
        w = ax.asarray(np.arange(4.0))
        x = ax.asarray(np.full(4, 10.0))
    written, read = threading.Event(), threading.Event()

    def writer():
        nonlocal w
        with ax.use_executor(executor):
            with ax.lazy():
                w[...] = x * 2.0
                w += 1.0
                written.set()
                assert read.wait(60)
                total = float(ax.sum(w))  # the scope's own view: its writes
            return total

    def reader():
        assert written.wait(60)
        try:
            return (float(ax.sum(w)), np.asarray(w * 2.0).tolist(), float(w[1]), np.asarray(w).tolist(),
                    float(ax.max(ax.abs(w))), "3." in repr(w))
        finally:
            read.set()

    tw, ow = _in_thread(writer)
    tr, orr = _in_thread(reader)
    tw.join(120)
    tr.join(120)
    assert "error" not in ow and "error" not in orr, (ow.get("error"), orr.get("error"))
    assert ow["value"] == 84.0
    assert orr["value"] == (6.0, [0.0, 2.0, 4.0, 6.0], 1.0, [0.0, 1.0, 2.0, 3.0],
                            3.0, True)
    assert_same(w, np.full(4, 21.0))


def test_threads_reading_while_a_loop_records_see_no_errors(executor):
    """A short stress: a loop of scopes writing ``w`` in place while another thread reads it."""
    w = ax.asarray(np.zeros(16))
    x = ax.asarray(np.ones(16))
    stop = threading.Event()
    errors, seen = [], []

    def reader():
        with ax.use_executor(executor):
            while not stop.is_set():
                try:
                    seen.append(float(ax.sum(w)))
                except Exception as e:  # noqa: BLE001 - counted below
                    errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    failures = []
    try:
        for i in range(60):
            try:
                with ax.lazy():
                    w[...] = x * float(i)
                    w += 1.0
            except Exception as e:  # noqa: BLE001 - counted below
                failures.append(e)
    finally:
        stop.set()
        t.join(60)
    assert failures == [] and errors == [], (failures[:3], errors[:3])
    assert set(seen) <= {0.0} | {16.0 * (i + 1) for i in range(60)}
    assert_same(w, np.full(16, 60.0))


def test_one_decorated_function_called_from_threads_at_once(executor):
    """Thread 0 calls, thread 1 calls, thread 0 returns first: each call has its own scope."""
    entered = [threading.Event(), threading.Event()]
    returned = threading.Event()

    @ax.lazy()
    def f(x, k):
        y = x * 2.0
        entered[k].set()
        assert entered[1 - k].wait(60)  # both threads are inside their scopes
        if k == 1:
            assert returned.wait(60)
        return y + 1.0, type(y) is laziness.LazyTracer

    def call(k):
        with ax.use_executor(executor):
            if k == 1:
                assert entered[0].wait(60)
            out, recording = f(ax.asarray([float(k)] * 2), k)
            returned.set()
            return np.asarray(out).tolist(), recording, type(out) is ax.Array, current_trace() is None

    runs = [_in_thread(call, k) for k in range(2)]
    for t, _ in runs:
        t.join(120)
    for k, (_, out) in enumerate(runs):
        assert "error" not in out, out.get("error")
        assert out["value"] == ([2.0 * k + 1.0] * 2, True, True, True)


def test_one_scope_object_entered_by_threads_at_once(executor):
    """Thread 0 enters, thread 1 enters, thread 0 leaves first: each leaves its own scope."""
    scope = ax.lazy()
    entered = [threading.Event(), threading.Event()]
    left = threading.Event()

    def body(k):
        with ax.use_executor(executor):
            x = ax.asarray([float(k)])
            if k == 1:
                assert entered[0].wait(60)
            with scope:
                y = ax.exp(x) - 1.0
                entered[k].set()
                assert entered[1 - k].wait(60)
                if k == 1:
                    assert left.wait(60)
                recording = type(y) is laziness.LazyTracer
            left.set()
            return float(y[0]), recording, type(y) is ax.Array, current_trace() is None

    runs = [_in_thread(body, k) for k in range(2)]
    for t, _ in runs:
        t.join(120)
    for k, (_, out) in enumerate(runs):
        assert "error" not in out, out.get("error")
        assert out["value"] == (pytest.approx(np.expm1(k)), True, True, True)


# -- point 7: a Python scalar that changes every step --------------------------------------------

def _schedule_step(w, x, lr):
    g = ax.tanh(x @ w) * 0.5
    w -= lr * g
    return w


def test_a_learning_rate_schedule_compiles_once_more_not_once_per_step(executor):
    rng = np.random.default_rng(3)
    W, X = rng.normal(size=(6, 3)).astype(np.float32), rng.normal(size=(6, 6)).astype(np.float32)
    w, x = ax.asarray(W), ax.asarray(X)
    want = ax.asarray(W)
    before = laziness.stats["compiles"]
    for i in range(12):
        with ax.lazy():
            _schedule_step(w, x, 0.1 * 0.9 ** i)
        _schedule_step(want, x, 0.1 * 0.9 ** i)
    assert laziness.stats["compiles"] - before <= 2
    assert w.dtype == ax.float32
    np.testing.assert_allclose(np.asarray(w), np.asarray(want), rtol=2e-6, atol=2e-6)


def _scalar_uses(x, i, s):
    """Many kinds of scalar operands whose values change with the step."""
    return (x * s, x < s, ax.where(x > s, x, s), ax.abs(x) ** (s + 1.0), ax.clip(x, s, s + 2.0), i + int(s * 4),
            i << (int(s * 4) % 3), ax.maximum(x, -s), x.at[0].set(s))


def test_scalars_changing_in_many_places_give_eager_values(executor):
    x = ax.asarray(np.linspace(-1.0, 3.0, 6).astype(np.float32))
    i = ax.asarray(np.arange(6, dtype=np.int16))
    before = laziness.stats["compiles"]
    for s in (0.25, 0.5, 1.25, 2.0):
        with ax.lazy():
            got = _scalar_uses(x, i, s)
        assert_same(got, _scalar_uses(x, i, s))
    assert laziness.stats["compiles"] - before <= 3  # the first values, then the ones that changed


def test_a_scalar_that_never_changes_stays_in_the_program(executor, monkeypatch):
    """Values that stay the same run after run are kept written in the program (the fused kernels
    specialise on them); only the ones seen to change become inputs."""
    monkeypatch.setattr(laziness, "_CACHE", OrderedDict())
    monkeypatch.setattr(laziness, "_SCALARS", OrderedDict())
    x = ax.asarray(np.arange(5.0))
    graphs = []
    compile_ = x._ex.compile

    def spy(graph):
        graphs.append(graph)
        return compile_(graph)

    monkeypatch.setattr(x._ex, "compile", spy)
    for lr in (0.5, 0.25, 0.125, 0.0625):
        with ax.lazy():
            y = x * 2.0 + lr
        assert_same(y, np.arange(5.0) * 2.0 + lr)
    assert len(graphs) == 2  # the first values, then lr as an input
    literals = [[a.value for e in g.equations for a in e.inputs if a.__class__ is Literal] for g in graphs]
    assert literals == [[2.0, 0.5], [2.0]]
    assert len(graphs[1].inputs) == len(graphs[0].inputs) + 1


# -- point 8: generators ----------------------------------------------------------------------------

def test_a_suspended_generator_does_not_leave_its_caller_recording(executor):
    x = ax.asarray([1.0, 2.0])

    def gen():
        with ax.lazy():
            y = x * 2.0
            assert type(y) is laziness.LazyTracer
            yield y
            z = y + 1.0
            assert type(z) is laziness.LazyTracer
            yield z

    g = gen()
    first = next(g)
    eager = x + 1.0
    assert type(eager) is ax.Array  # the caller computes eagerly
    with ax.lazy():  # and may open a scope of its own
        mine = x * 3.0
        assert type(mine) is laziness.LazyTracer
    assert type(mine) is ax.Array
    assert_same(first, np.asarray([2.0, 4.0]))  # a value the generator yielded computes when read
    second = next(g)
    assert type(x - 1.0) is ax.Array
    with pytest.raises(StopIteration):
        next(g)
    assert_same(second, np.asarray([3.0, 5.0]))
    assert_same(eager, np.asarray([2.0, 3.0]))
    assert_same(mine, np.asarray([3.0, 6.0]))
    assert type(x * 1.0) is ax.Array


def test_a_generator_closed_inside_its_scope_computes_what_it_recorded(executor):
    w = ax.asarray([1.0, 2.0])

    def gen():
        with ax.lazy():
            w[...] = w * 10.0
            yield
            w[...] = w + 1.0  # never reached

    g = gen()
    next(g)
    assert type(w + 0.0) is ax.Array
    g.close()
    assert_same(w, np.asarray([10.0, 20.0]))


def test_an_async_generator_suspended_inside_its_scope(executor):
    """The same for an async generator driven by ``async for`` in one task (one context)."""
    asyncio = pytest.importorskip("asyncio")
    x = ax.asarray([1.0, 2.0])

    async def agen():
        with ax.lazy():
            for k in range(2):
                yield x * float(k + 2), type(x * 1.0) is laziness.LazyTracer
                await asyncio.sleep(0)

    async def main():
        got = []
        async for y, recording in agen():
            got.append((np.asarray(y).tolist(), recording, type(x + 1.0) is ax.Array))
        return got

    assert asyncio.run(main()) == [([2.0, 4.0], True, True), ([3.0, 6.0], True, True)]


def test_the_caller_writes_eagerly_while_a_generator_is_suspended_in_its_scope(executor):
    w = ax.asarray([1.0, 2.0])

    def gen():
        with ax.lazy():
            yield
            w[...] = w + 1.0  # reads the caller's writes
            yield

    g = gen()
    next(g)
    w[0] = 5.0  # the caller's writes are eager
    w += 10.0
    assert type(w) is ax.Array
    assert_same(w, np.asarray([15.0, 12.0]))
    next(g)
    with pytest.raises(StopIteration):
        next(g)
    assert_same(w, np.asarray([16.0, 13.0]))
