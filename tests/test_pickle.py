"""Arrays pickle by value (executor and device kept), copy and deepcopy give independent arrays,
tracers refuse to pickle, and executors are identified by name, so arrays that went through
another process (multiprocessing, a Dask worker) mix with local ones.
"""
from __future__ import annotations

import concurrent.futures
import copy
import multiprocessing
import operator
import pathlib
import pickle
import re

import numpy as np
import pytest

import arrayx as xp
from arrayx.api._array import _unpickle
from arrayx.core import executor as base
from arrayx.executors.numpy import NumpyExecutor
from tests.conftest import ALL_EXECUTORS, assert_same

REPO = pathlib.Path(__file__).resolve().parents[1]
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]


def _host(dtype: str) -> np.ndarray:
    values = np.array([[0, 1, 2], [3, 250, 7]]) if dtype != "bool" else np.array([[True, False, True]] * 2)
    out = values.astype(dtype)
    if dtype.startswith("complex"):
        out = out + 1j * out[::-1]
    return out


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pickle_round_trip_every_dtype(dtype: str, protocol: int, executor: str) -> None:
    host = _host(dtype)
    x = xp.asarray(host)
    x = x[::-1] if dtype == "bool" else x + x  # after an op: the executor's caches are full of rules
    want = host[::-1] if dtype == "bool" else host + host
    y = pickle.loads(pickle.dumps(x, protocol=protocol))
    assert type(y) is xp.Array
    assert y.executor == executor and y.device == x.device
    assert y._ex is base.get(executor)  # the registry's executor, not a copy
    assert_same(y, want)
    if dtype != "bool":
        assert_same(y + x, want * 2)  # mixes with the local arrays


def test_pickle_keeps_the_device() -> None:
    jax_ex = base.get("jax")
    if not jax_ex.available():
        pytest.skip("the jax executor is not available")
    for device in jax_ex.devices():
        x = xp.asarray([1.0, 2.0], device=device)
        y = pickle.loads(pickle.dumps(x))
        assert y.device == device and y.device.native is device.native
        assert_same(y, np.array([1.0, 2.0]))


def test_pickle_of_unknown_size_dask_array() -> None:
    if not base.get("dask").available():
        pytest.skip("the dask executor is not available")
    x = xp.asarray([3.0, -1.0, 2.0, -5.0], device="dask")
    masked = x[x > 0]  # size unknown until computed
    y = pickle.loads(pickle.dumps(masked))
    assert y.executor == "dask" and y.shape == (2,)  # by value: the size is known again
    assert_same(y, np.array([3.0, 2.0]))


def test_deepcopy_of_a_parameter_dict(executor: str) -> None:
    params = {"w": xp.asarray([[1.0, 2.0], [3.0, 4.0]]), "b": [xp.asarray([5.0]), xp.asarray(6)]}
    twin = copy.deepcopy(params)
    assert twin["w"] is not params["w"] and twin["b"][0] is not params["b"][0]
    params["w"][0, 0] = 100.0
    params["b"][0] += 1.0
    assert_same(twin["w"], np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert_same(twin["b"][0], np.array([5.0]))
    assert_same(twin["b"][1], np.array(6))
    assert twin["w"].executor == executor
    assert_same(params["w"], np.array([[100.0, 2.0], [3.0, 4.0]]))


def test_copy_does_not_share_a_buffer_writes_reach(executor: str) -> None:
    x = xp.asarray([1.0, 2.0, 3.0])
    c = copy.copy(x)
    x[0] = 9.0
    x += 1.0
    assert_same(c, np.array([1.0, 2.0, 3.0]))
    assert_same(x, np.array([10.0, 3.0, 4.0]))
    c[1] = -1.0
    assert_same(x, np.array([10.0, 3.0, 4.0]))
    assert c.executor == executor


def test_unpickling_where_the_executor_is_missing_names_it() -> None:
    class Elsewhere(NumpyExecutor):
        name = "elsewhere"

    ex = base.register_executor(Elsewhere())
    try:
        blob = pickle.dumps(xp.asarray([1.0, 2.0], device="elsewhere"))
        ex._unavailable = "ImportError: No module named 'elsewhere_lib'"  # as if its library were gone
        with pytest.raises(RuntimeError, match=r"'elsewhere' executor.*not available here.*elsewhere_lib"):
            pickle.loads(blob)
        del base._registry["elsewhere"]
        with pytest.raises(RuntimeError, match=r"'elsewhere' executor: no executor of that name is registered"):
            pickle.loads(blob)
    finally:
        base._registry.pop("elsewhere", None)


def test_unpickling_onto_a_missing_device_names_it() -> None:
    with pytest.raises(RuntimeError, match=r"device numpy:gpu:7, which is not here"):
        _unpickle("numpy", "gpu:7", np.zeros(2))


def test_tracers_refuse_to_pickle_but_copy(executor: str) -> None:
    seen = []

    def f(t):
        with pytest.raises(TypeError, match=r"cannot pickle a traced value \(a JVPTracer of grad\)"):
            pickle.dumps(t)
        c = copy.copy(t)
        d = copy.deepcopy({"t": t})["t"]
        c += 1.0  # rebinds c only
        seen.append(True)
        return xp.sum(c * t + d)

    g = xp.grad(f)(xp.asarray([1.0, 2.0]))
    assert seen == [True]
    assert_same(g, np.array([2.0 * 1.0 + 1.0 + 1.0, 2.0 * 2.0 + 1.0 + 1.0]))  # d/dt (t+1)t + t


def test_executors_and_devices_pickle_as_registry_lookups(executor: str) -> None:
    ex = base.get(executor)
    assert pickle.loads(pickle.dumps(ex)) is ex
    assert copy.deepcopy(ex) is ex
    dev = xp.asarray(1.0).device
    back = pickle.loads(pickle.dumps(dev))
    assert back == dev and back.native is dev.native


def test_executors_are_identified_by_name(executor: str) -> None:
    ex = base.get(executor)
    clone = object.__new__(type(ex))  # what a by-value copy (cloudpickle, a worker) would carry
    clone.__dict__.update(ex.__dict__)
    clone.impls = {}
    assert clone == ex and hash(clone) == hash(ex) and clone is not ex
    x = xp.asarray([1.0, 2.0])
    foreign = xp.Array._new(x._buf, clone)
    assert_same(foreign + x, np.array([2.0, 4.0]))
    assert_same(xp.stack([x, foreign]), np.array([[1.0, 2.0], [1.0, 2.0]]))
    assert xp.asarray(foreign, device=executor, copy=False) is foreign  # no move between "executors"
    other = next(n for n in ALL_EXECUTORS if n != executor)
    assert base.get(other) != ex
    if base.get(other).available():
        with pytest.raises(TypeError, match=rf"different executors \('{executor}' and '{other}'\)"):
            x + xp.asarray([1.0, 2.0], device=other)


# -- through other processes ---------------------------------------------------------------------

def _available() -> list[str]:
    return [n for n in ALL_EXECUTORS if base.get(n).available()]


def test_round_trip_through_a_process_pool() -> None:
    arrays = {n: xp.asarray([[1.5, -2.0], [3.0, 4.0]], device=n) for n in _available()}
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing shared with this one
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        futures = {n: pool.submit(operator.mul, x, 3) for n, x in arrays.items()}
        results = {n: f.result(timeout=300) for n, f in futures.items()}
    for n, y in results.items():
        assert y.executor == n and y._ex is base.get(n)
        assert_same(y - arrays[n], np.array([[3.0, -4.0], [6.0, 8.0]]))


def test_round_trip_through_a_dask_worker_process(monkeypatch) -> None:
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the worker imports this checkout's arrayx
    # numpy and dask only: each executor the worker loads costs seconds of imports
    arrays = {n: xp.asarray([1.0, 2.0, 3.0], device=n) for n in ("numpy", "dask") if n in _available()}
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        where = client.submit(lambda: __import__("arrayx").__file__).result(timeout=120)
        assert pathlib.Path(where).resolve().is_relative_to(REPO)
        results = {n: client.submit(operator.add, x, x).result(timeout=120) for n, x in arrays.items()}
    for n, y in results.items():
        assert y.executor == n and y._ex is base.get(n)
        assert_same(y * arrays[n], np.array([2.0, 8.0, 18.0]))


@pytest.mark.parametrize("host", [np.array([object(), 1], dtype=object), np.array(["abcdefgh"], dtype="<U8"),
                                  np.array([b"ab"]), np.zeros(2, np.longdouble),
                                  np.array(["2020-01-01"], dtype="datetime64[D]")],
                         ids=["object", "<U8", "bytes", "longdouble", "datetime64"])
def test_unpickling_applies_asarrays_dtype_checks(host, executor) -> None:
    # a pickle built by hand (or edited) names arrayx's loader with data asarray would refuse
    with pytest.raises(TypeError):
        xp.asarray(host)
    blob = pickle.dumps(xp.asarray([1.0]))
    forged = pickle.dumps(_Forged(executor, host))
    assert b"_unpickle" in blob and b"_unpickle" in forged
    with pytest.raises(TypeError, match=rf"unpickling an arrayx array of the '{executor}' executor: the saved "
                                        rf"data has NumPy dtype {re.escape(str(host.dtype))}, which is not a dtype "
                                        rf"of the array API standard \(asarray refuses it too\); load it with numpy"):
        pickle.loads(forged)


def test_unpickling_refuses_data_that_is_not_an_array(executor) -> None:
    with pytest.raises(TypeError, match="the saved data is a list, not a NumPy array"):
        pickle.loads(pickle.dumps(_Forged(executor, [1, 2])))


class _Forged:
    """Pickles as arrayx's own loader called on ``host`` (what an edited pickle can say)."""

    def __init__(self, executor: str, host):
        self.executor, self.host = executor, host

    def __reduce__(self):
        return (_unpickle, (self.executor, base.get(self.executor).default_device().label, self.host))
