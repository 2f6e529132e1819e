"""Executor selection: device= > use_executor > set_executor > ARRAYX_EXECUTOR > "numpy".

Also: scopes are per thread and per asyncio task (a ContextVar), are restored after
exceptions, unknown names list the registered ones, mixing executors is a TypeError that
names both and the fix, and third parties register executors directly or through the
``arrayx.executors`` entry-point group.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import arrayx
from arrayx.core import executor as _base
from arrayx.executors.numpy import NumpyExecutor

REPO = pathlib.Path(__file__).resolve().parents[1]
AVAILABLE = arrayx.executors()
OTHERS = [n for n in AVAILABLE if n != "numpy"]
# two executors other than numpy (cheapest first) for the priority tests
_PREFERENCE = ["numba", "dask", "jax", "cupy"]
OTHER = sorted(OTHERS, key=lambda n: _PREFERENCE.index(n) if n in _PREFERENCE else 99)
needs_one = pytest.mark.skipif(len(OTHER) < 1, reason="needs an executor besides numpy")
needs_two = pytest.mark.skipif(len(OTHER) < 2, reason="needs two executors besides numpy")


@pytest.fixture(autouse=True)
def clean_selection(monkeypatch):
    """Each test starts with no process default and no ARRAYX_EXECUTOR, and leaves none behind."""
    monkeypatch.delenv("ARRAYX_EXECUTOR", raising=False)
    saved = _base._process_default
    _base._process_default = None
    yield
    _base._process_default = saved


def created_on() -> str:
    return arrayx.zeros(2).executor


# -- priority ---------------------------------------------------------------------------------


def test_default_is_numpy() -> None:
    assert created_on() == "numpy"
    assert arrayx.get_executor().name == "numpy"


@needs_one
def test_environment_variable(monkeypatch) -> None:
    monkeypatch.setenv("ARRAYX_EXECUTOR", OTHER[0])
    assert created_on() == OTHER[0]


@needs_two
def test_set_executor_beats_environment(monkeypatch) -> None:
    monkeypatch.setenv("ARRAYX_EXECUTOR", OTHER[0])
    arrayx.set_executor(OTHER[1])
    assert created_on() == OTHER[1]


@needs_two
def test_use_executor_beats_set_executor(monkeypatch) -> None:
    monkeypatch.setenv("ARRAYX_EXECUTOR", "numpy")
    arrayx.set_executor(OTHER[0])
    with arrayx.use_executor(OTHER[1]):
        assert created_on() == OTHER[1]
    assert created_on() == OTHER[0]


@needs_one
def test_device_argument_beats_everything(monkeypatch) -> None:
    monkeypatch.setenv("ARRAYX_EXECUTOR", OTHER[0])
    arrayx.set_executor(OTHER[0])
    with arrayx.use_executor(OTHER[0]):
        assert arrayx.zeros(2, device="numpy").executor == "numpy"
        assert arrayx.asarray([1, 2], device="numpy").executor == "numpy"
        assert arrayx.arange(3, device=arrayx.asarray(1, device="numpy").device).executor == "numpy"


@needs_one
def test_nested_scopes_restore_in_order() -> None:
    with arrayx.use_executor(OTHER[0]):
        with arrayx.use_executor("numpy"):
            assert created_on() == "numpy"
        assert created_on() == OTHER[0]
    assert created_on() == "numpy"


@needs_one
def test_operations_follow_their_arrays_not_the_scope() -> None:
    x = arrayx.asarray([1.0, 2.0], device=OTHER[0])
    with arrayx.use_executor("numpy"):
        y = arrayx.sin(x) + 1.0
        assert y.executor == OTHER[0]
        assert arrayx.zeros_like(x).executor == OTHER[0]


@needs_one
def test_environment_variable_at_startup() -> None:
    env = dict(os.environ, ARRAYX_EXECUTOR=OTHER[0], PYTHONPATH=str(REPO))
    code = "import arrayx; print(arrayx.ones(3).executor, arrayx.get_executor().name)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [OTHER[0], OTHER[0]]


# -- isolation ------------------------------------------------------------------------------------


@needs_one
def test_scope_is_per_thread() -> None:
    """A use_executor block in one thread is invisible to other threads, both ways."""
    inside = threading.Event()
    done = threading.Event()

    def worker():
        with arrayx.use_executor(OTHER[0]):
            inside.set()
            assert done.wait(10)
            return created_on()

    with ThreadPoolExecutor(2) as pool:
        fut = pool.submit(worker)
        assert inside.wait(10)
        seen_here = created_on()                         # while the worker is in its block
        seen_by_other = pool.submit(created_on).result()  # another pool thread
        done.set()
        assert fut.result() == OTHER[0]
    assert seen_here == "numpy"
    assert seen_by_other == "numpy"


@needs_one
def test_scope_does_not_leak_into_pool_threads() -> None:
    with arrayx.use_executor(OTHER[0]):
        with ThreadPoolExecutor(2) as pool:
            names = list(pool.map(lambda _: created_on(), range(4)))
    assert names == ["numpy"] * 4


@needs_one
def test_set_executor_is_process_wide() -> None:
    arrayx.set_executor(OTHER[0])
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(created_on).result() == OTHER[0]


@needs_one
def test_scope_is_per_asyncio_task() -> None:
    async def task(name, ready, go):
        with arrayx.use_executor(name):
            ready.set()
            await go.wait()           # the other task enters its own block meanwhile
            await asyncio.sleep(0)
            return created_on()

    async def main():
        ready_a, ready_b, go = asyncio.Event(), asyncio.Event(), asyncio.Event()
        a = asyncio.create_task(task(OTHER[0], ready_a, go))
        b = asyncio.create_task(task("numpy", ready_b, go))
        await ready_a.wait()
        await ready_b.wait()
        outside = created_on()
        go.set()
        return await a, await b, outside

    assert asyncio.run(main()) == (OTHER[0], "numpy", "numpy")


@needs_one
def test_scope_restored_after_exception() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with arrayx.use_executor(OTHER[0]):
            assert created_on() == OTHER[0]
            raise RuntimeError("boom")
    assert created_on() == "numpy"


@needs_one
def test_scope_restored_after_exception_in_nested_block() -> None:
    with arrayx.use_executor(OTHER[0]):
        with pytest.raises(ZeroDivisionError):
            with arrayx.use_executor("numpy"):
                1 / 0  # noqa: B018
        assert created_on() == OTHER[0]
    assert created_on() == "numpy"


# -- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "select",
    [
        lambda: arrayx.use_executor("no_such_executor").__enter__(),
        lambda: arrayx.set_executor("no_such_executor"),
        lambda: arrayx.zeros(2, device="no_such_executor"),
        lambda: arrayx.asarray([1], device="no_such_executor:cpu"),
    ],
    ids=["use_executor", "set_executor", "device-name", "device-with-label"],
)
def test_unknown_executor_lists_registered_ones(select) -> None:
    with pytest.raises(ValueError) as info:
        select()
    msg = str(info.value)
    assert "no_such_executor" in msg
    for name in _base.registered():
        assert repr(name) in msg or name in msg, f"{name} missing from: {msg}"
    assert created_on() == "numpy"


def test_unknown_executor_in_environment(monkeypatch) -> None:
    monkeypatch.setenv("ARRAYX_EXECUTOR", "no_such_executor")
    with pytest.raises(ValueError, match=r"ARRAYX_EXECUTOR='no_such_executor' names no registered executor; "
                                         r"registered executors are \[.*'numpy'.*\]"):
        arrayx.zeros(2)


def test_unknown_device_label() -> None:
    with pytest.raises(ValueError, match="numpy.*no_such_device"):
        arrayx.zeros(2, device="numpy:no_such_device")


def test_bad_device_type() -> None:
    with pytest.raises(TypeError, match="device"):
        arrayx.zeros(2, device=3.5)


@needs_one
@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b,
        lambda a, b: arrayx.multiply(a, b),
        lambda a, b: arrayx.where(a > 0, a, b),
        lambda a, b: arrayx.concat([a, b]),
        lambda a, b: arrayx.stack([a, b]),
        lambda a, b: a @ b,
        lambda a, b: arrayx.vecdot(a, b),
    ],
    ids=["operator", "multiply", "where", "concat", "stack", "matmul", "vecdot"],
)
def test_mixed_executors_raise_naming_both(op) -> None:
    a = arrayx.asarray([1.0, 2.0], device="numpy")
    b = arrayx.asarray([3.0, 4.0], device=OTHER[0])
    with pytest.raises(TypeError) as info:
        op(a, b)
    msg = str(info.value)
    assert "'numpy'" in msg and f"'{OTHER[0]}'" in msg, msg
    assert "to_device" in msg, msg


@needs_one
def test_to_device_resolves_mixing() -> None:
    a = arrayx.asarray([1.0, 2.0], device="numpy")
    b = arrayx.asarray([3.0, 4.0], device=OTHER[0])
    c = a.to_device(OTHER[0]) + b
    assert c.executor == OTHER[0]
    np.testing.assert_array_equal(np.asarray(c), [4.0, 6.0])


# -- the registry -------------------------------------------------------------------------------------


def test_executors_lists_the_available_ones() -> None:
    names = arrayx.executors()
    assert isinstance(names, list) and "numpy" in names
    assert set(names) <= set(_base.registered())
    for n in names:
        assert _base.get(n).available()
        assert arrayx.zeros(1, device=n).executor == n
    for n in set(_base.registered()) - set(names):
        assert _base.get(n).unavailable_reason  # says why
        with pytest.raises(RuntimeError, match=n):
            arrayx.zeros(1, device=n)


class _Recording(NumpyExecutor):
    """A NumPy executor under another name that counts the primitives it runs."""

    name = "recording_test_executor"

    def __init__(self):
        super().__init__()
        self.calls = 0

    def resolve(self, prim):
        fn = super().resolve(prim)
        self.impls.pop(prim, None)  # do not cache: count every call

        def counted(*args, **kwargs):
            self.calls += 1
            return fn(*args, **kwargs)

        return counted


@pytest.fixture
def recording():
    ex = _Recording()
    arrayx.register_executor(ex)
    try:
        yield ex
    finally:
        _base._registry.pop(ex.name, None)


def test_register_executor(recording) -> None:
    assert recording.name in arrayx.executors()
    with arrayx.use_executor(recording.name):
        x = arrayx.asarray([1.0, 2.0])
    assert x.executor == recording.name
    y = arrayx.sin(x) * 2.0
    assert y.executor == recording.name and recording.calls >= 2
    np.testing.assert_allclose(np.asarray(y), 2 * np.sin([1.0, 2.0]))


def test_register_executor_refuses_duplicates_unless_replace(recording) -> None:
    with pytest.raises(ValueError, match=recording.name):
        arrayx.register_executor(_Recording())
    again = _Recording()
    assert arrayx.register_executor(again, replace=True) is again
    assert _base.get(recording.name) is again


def test_register_executor_type_checks() -> None:
    with pytest.raises(TypeError, match="Executor"):
        arrayx.register_executor("numpy")


class _FakeEntryPoint:
    name = "entry_point_test_executor"

    def load(self):
        class EntryPointExecutor(NumpyExecutor):
            name = "entry_point_test_executor"

        return EntryPointExecutor


def test_entry_point_group(monkeypatch) -> None:
    import importlib.metadata

    groups = []

    def fake_entry_points(*, group):
        groups.append(group)
        return [_FakeEntryPoint()]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    monkeypatch.setattr(_base, "_entry_points_loaded", False)
    try:
        assert "entry_point_test_executor" in _base.registered()
        assert groups == ["arrayx.executors"]
        assert arrayx.zeros(2, device="entry_point_test_executor").executor == "entry_point_test_executor"
    finally:
        _base._registry.pop("entry_point_test_executor", None)


def test_entry_point_group_is_documented() -> None:
    assert "arrayx.executors" in (REPO / "README.md").read_text()
    assert "arrayx.executors" in (_base.__doc__ or "") + (_base.Executor.__doc__ or "") + \
        pathlib.Path(_base.__file__).read_text()
