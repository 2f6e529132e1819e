"""The JAX executor: jax.Array buffers, 64-bit dtypes, JAX devices, functional updates, and every
function of the standard compared with the NumPy executor.

Where the default device has native 64-bit types (CI's CPU) results are compared as they are; on
one without (a TPU) with the dtypes of its ``default_dtypes`` and the downcast of 64-bit host data
(``tests/executors/platform_tolerances.py``), and the 64-bit checks run on the jax CPU device.  The
``jax_default_device`` fixture also runs the per-device rules with the default device taken for a
TPU, so that CI checks the branch the chip takes.
"""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import arrayx as xp
from arrayx.api._device_dtypes import DowncastWarning
from arrayx.core import executor as base
from tests.conftest import assert_same
from tests.executors.conftest import only_on
from tests.executors.platform_tolerances import (arriving, assert_same_here, defaults, native64,
                                                 native64_device, platform)

EX = base.get("jax")
pytestmark = [*only_on("jax"),  # and a 64-bit request that JAX truncates (x64 off in an arrayx call) fails
              pytest.mark.filterwarnings("error:Explicitly requested dtype:UserWarning")]


def test_buffers_are_jax_arrays_and_namespace_is_jax_numpy():
    import jax
    import jax.numpy as jnp

    x = xp.asarray([1.0, 2.0])
    assert isinstance(x._buf, jax.Array)
    assert isinstance((x + 1)._buf, jax.Array) and isinstance(xp.sum(x)._buf, jax.Array)
    # jax.numpy, its functions run with arrayx's 64-bit types on (executors/jax/x64.py)
    assert EX.xp.__name__ == "jax.numpy" and EX.xp.ndarray is jnp.ndarray and EX.xp.sin.__wrapped__ is jnp.sin
    assert x.executor == "jax"


def test_float64_and_int64_are_not_truncated():
    """On a device with native 64-bit types (the default one on a CPU; the jax CPU device on a TPU
    machine) 64-bit values keep every bit, whatever the caller's own JAX setting."""
    import jax

    dev = native64_device()
    if dev is None:
        pytest.skip("no jax device with native 64-bit types")
    with jax.enable_x64(False):  # arrayx's calls have 64-bit types whatever the caller's setting
        x = xp.asarray([1.0, 1.0 + 2**-40], device=dev)
        assert x.dtype == xp.float64 and float(x[1] - x[0]) == 2**-40
        big = xp.asarray([2**62, -(2**62)], device=dev)
        assert big.dtype == xp.int64 and int(big[0] + 3) == 2**62 + 3
        assert xp.arange(3, device=dev).dtype == xp.int64
        assert xp.zeros(2, device=dev).dtype == xp.float64
        assert xp.ones(2, dtype=xp.complex128, device=dev).dtype == xp.complex128
        assert (xp.asarray([1, 2], device=dev) / 2).dtype == xp.float64
        u = xp.asarray(np.array([2**63 + 5], dtype=np.uint64), device=dev)
        assert u.dtype == xp.uint64 and int(u[0]) == 2**63 + 5
        assert not jax.config.jax_enable_x64 and jax.numpy.arange(2).dtype == np.int32  # the caller's own


def test_default_device_follows_its_default_dtypes(jax_default_device):
    """Python data takes the default device's ``default_dtypes``, and 64-bit host data keeps its dtype
    where 64-bit types are native, else becomes them (the default ``downcast``); a 64-bit ``dtype=``
    there raises unless ``tpu_64bit('emulate')``, which keeps 64-bit data."""
    dev = jax_default_device
    d = defaults(dev)
    x = xp.asarray([1.0, 1.0 + 2**-40])
    assert x.device == dev and x.dtype == d["real floating"]
    assert float(x[1] - x[0]) == (2**-40 if np.finfo(x.dtype).nmant >= 40 else 0.0)  # float32 rounds it away
    assert xp.arange(3).dtype == xp.asarray([1, 2]).dtype == d["integral"]
    assert xp.zeros(2).dtype == (xp.asarray([1, 2]) / 2).dtype == d["real floating"]
    assert xp.asarray([1j, 2]).dtype == d["complex floating"]
    hosts = [np.array([1.0, 1.0 + 2**-40]), np.array([2**31 - 1, -3]), np.array([7, 2**32 - 1], dtype=np.uint64),
             np.array([1 + 2j]), np.array([1.5], dtype=np.float32), np.array([-3], dtype=np.int16)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DowncastWarning)
        for host in hosts:
            a = xp.asarray(host)
            assert a.dtype == arriving(host.dtype, dev), host.dtype
            np.testing.assert_array_equal(np.asarray(a), host.astype(a.dtype))
    if native64(dev):
        assert xp.ones(2, dtype=xp.complex128).dtype == xp.complex128
        return
    with pytest.raises(TypeError, match=r"ones: dtype=complex128 on .*no native 64-bit types.*emulate"):
        xp.ones(2, dtype=xp.complex128)
    with xp.tpu_64bit("emulate"):  # (float64 only: XLA:TPU aborts on conversions to complex128, tpu_limits.py)
        assert xp.asarray(hosts[0]).dtype == xp.float64 and xp.zeros(2, dtype=xp.float64).dtype == xp.float64


def test_index_results_have_the_default_index_dtype(jax_default_device):
    x = xp.asarray([3.0, 1.0, 2.0, 1.0])
    index = defaults(jax_default_device)["indexing"]  # int64 on a CPU, as NumPy's; int32 on a TPU
    s = xp.sort(x)
    assert xp.searchsorted(s, x).dtype == index  # JAX itself returns int32 here (int64 where native)
    assert xp.searchsorted(s, x, side="right").dtype == index
    assert_same(xp.searchsorted(s, x, side="right"), np.array([4, 2, 3, 2], dtype=index))
    assert xp.argmax(x).dtype == index and xp.argsort(x).dtype == index
    assert xp.nonzero(x)[0].dtype == index
    u = xp.unique_all(x)
    assert u.indices.dtype == u.inverse_indices.dtype == u.counts.dtype == index
    assert xp.count_nonzero(x).dtype == index


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's own divide-by-zero warnings
@pytest.mark.parametrize("fn", ["floor_divide", "remainder"])
def test_floor_divide_and_remainder_follow_numpy(fn):
    """Signed zeros, infinities and integer division by zero as NumPy (and the NumPy executor) give them."""
    a = np.array([-0.0, 0.0, -3.0, 5.5, np.inf, -np.inf, 7.0, np.nan, -2.0, 7.5, -7.5, 3.0, 4.0])
    b = np.array([2.0, -2.0, -np.inf, 0.0, 2.0, 3.0, -0.0, 1.0, np.inf, -2.0, 2.5, -1.5, 0.0])
    op = getattr(xp, fn)
    real = defaults(EX.default_device())["real floating"]  # float32 on a TPU: these values are exact in it
    a, b = a.astype(real), b.astype(real)
    got = np.asarray(op(xp.asarray(a), xp.asarray(b)))
    want = np.asarray(op(xp.asarray(a, device="numpy"), xp.asarray(b, device="numpy")))
    assert got.dtype == want.dtype == real
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)  # a NaN's sign bit is not a value (XLA:TPU and NumPy set it differently)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))
    i, k = np.array([5, -5, 7, 0, -7], dtype=np.int32), np.array([0, 0, -2, 0, 2], dtype=np.int32)
    assert_same(op(xp.asarray(i), xp.asarray(k)), getattr(np, fn)(i, np.where(k == 0, 1, k)) * (k != 0))
    assert_same(op(xp.asarray(i), 3), getattr(np, fn)(i, 3))


def test_sign_of_zero_is_zero():
    s = np.asarray(xp.sign(xp.asarray([-0.0, 0.0, -2.0, np.nan])))
    assert s[0] == 0 and not np.signbit(s[0]) and s[2] == -1 and np.isnan(s[3])
    assert_same_here(xp.sign(xp.asarray([-0j, 3 + 4j])), np.array([0j, 0.6 + 0.8j]))  # complex64 on a TPU


def test_setitem_and_inplace_operators_are_functional():
    x = xp.asarray([1.0, 2.0, 3.0, 4.0])
    before = x._buf
    x[0] = 10.0
    x[xp.asarray([False, True, False, True])] = -1.0
    x[1:3] += 5
    x *= 2
    assert_same_here(x, np.array([20.0, 8.0, 16.0, -2.0]))  # (the default device's float: float32 on a TPU)
    assert_same_here(xp.asarray(np.asarray(before)), np.array([1.0, 2.0, 3.0, 4.0]))  # the old buffer is untouched
    m = xp.reshape(xp.arange(6), (2, 3))
    m[:, 0] = xp.asarray([7, 8])
    m[1, ...] = 0
    assert_same_here(m, np.array([[7, 1, 2], [0, 0, 0]]))
    with pytest.raises(TypeError, match="in-place"):
        m += 0.5  # int64 (int32 on a TPU) += float would change the dtype


def test_at_updates_accumulate_repeated_indices():
    x = xp.zeros(4)  # the default device's float (float32 on a TPU): these values are exact in it
    idx = xp.asarray([0, 0, 2, 0])
    assert_same_here(x.at[idx].add(1.0), np.array([3.0, 0.0, 1.0, 0.0]))
    assert_same_here(x.at[idx].subtract(2.0), np.array([-6.0, 0.0, -2.0, 0.0]))
    y = xp.asarray([1.0, 2.0, 3.0, 4.0])
    assert_same_here(y.at[idx].multiply(2.0), np.array([8.0, 2.0, 6.0, 4.0]))
    assert_same_here(y.at[idx].max(xp.asarray([5.0, 0.0, 9.0, 2.0])), np.array([5.0, 2.0, 9.0, 4.0]))
    assert_same_here(y.at[1:].min(2.5), np.array([1.0, 2.0, 2.5, 2.5]))
    assert_same_here(y.at[y > 2].set(0.0), np.array([1.0, 2.0, 0.0, 0.0]))
    assert_same_here(y, np.array([1.0, 2.0, 3.0, 4.0]))  # x.at[...] never changes x


def test_devices_are_jax_devices():
    import jax

    devs = EX.devices()
    assert [d.native for d in devs][: len(jax.devices())] == list(jax.devices())
    assert devs[0].label == f"{jax.devices()[0].platform}:{jax.devices()[0].id}"
    x = xp.asarray([1, 2], device=devs[0])
    assert x.device == devs[0] and x.device.native in x._buf.devices()
    assert x.dtype == defaults(devs[0])["integral"]  # int32 on a TPU, kept when moved to a CPU device
    assert xp.asarray([1], device=f"jax:{devs[0].label}").device == devs[0]
    for d in devs:  # to_device between this executor's devices
        y = x.to_device(d)
        assert y.device == d and y.executor == "jax"
        assert_same(y, np.array([1, 2], dtype=x.dtype))
    info = xp.__array_namespace_info__()
    assert set(devs) <= set(info.devices())
    with pytest.raises(ValueError, match="no device"):
        xp.zeros(2, device="jax:tpu:99")


def test_dlpack_exchange_with_numpy():
    x = xp.asarray([1.5, 2.5, 3.5])
    h = np.from_dlpack(x)
    assert h.dtype == defaults(x.device)["real floating"] and h.tolist() == [1.5, 2.5, 3.5]
    assert x.__dlpack_device__()[0] == 1  # kDLCPU (a TPU's arrays export a host copy, dlpack test below)
    for kw in ({"device": "cpu"}, {"copy": True}):  # NumPy asks for the host: dl_device=(kDLCPU, 0)
        assert np.from_dlpack(x, **kw).tolist() == [1.5, 2.5, 3.5]
    src = np.arange(4, dtype=np.int32)
    y = xp.from_dlpack(src, device="jax")
    assert y.executor == "jax" and y.dtype == xp.int32
    assert_same(y, src)


def test_dlpack_of_a_device_dlpack_cannot_name_is_a_host_copy(monkeypatch):
    """JAX has no DLPack device for a TPU buffer (``__dlpack_device__`` raises BufferError and
    ``__dlpack__`` an XLA error): arrayx exports a private host copy there, which is what NumPy and
    ``dl_device=(kDLCPU, 0)`` ask for, and raises BufferError for copy=False or another device.  An
    export refusing as JAX's does on a TPU stands in for one here (test_tpu_chip.py: the chip's)."""
    x = xp.asarray([1.5, 2.5, 3.5])

    class NoDevice:  # what JAX gives for a TPU buffer
        def __init__(self, buf):
            self.buf = buf

        def __dlpack_device__(self):
            raise BufferError("__dlpack__ device only supported for CPU and GPU, got platform: tpu")

        def __dlpack__(self, **kwargs):
            raise AssertionError("XLA cannot export a TPU buffer: not to be asked")

    monkeypatch.setattr(EX, "dlpack_buffer", NoDevice)
    assert x.__dlpack_device__() == (1, 0)  # where its export is: host memory
    for kw in ({}, {"device": "cpu"}, {"copy": True}):
        h = np.from_dlpack(x, **kw)
        assert h.dtype == x.dtype and h.tolist() == [1.5, 2.5, 3.5] and h.flags.writeable
        h[0] = 9.0
        assert float(x[0]) == 1.5  # a private copy
    with pytest.raises(BufferError, match=r"__dlpack__: float\d+ array on .*host copy.*copy=False"):
        np.from_dlpack(x, copy=False)
    with pytest.raises(BufferError, match=r"only be exported to host memory .*dl_device=\(2, 0\)"):
        x.__dlpack__(dl_device=(2, 0))
    assert_same(xp.from_dlpack(x, device="jax"), np.asarray(x))  # arrayx itself imports it
    assert_same(xp.from_dlpack(x, device="numpy"), np.asarray(x))


def test_debug_callbacks_have_run_when_a_jitted_call_returns(monkeypatch):
    """JAX dispatches a compiled call asynchronously, and on a TPU runs a debug callback when the chip
    reaches it, after the call has returned: arrayx's compiled call waits for its callbacks
    (``jax.effects_barrier``) where its graph has any, nested ones included, and only there."""
    import jax

    waits = []
    barrier = jax.effects_barrier
    monkeypatch.setattr(jax, "effects_barrier", lambda: waits.append(1) or barrier())
    seen = []
    f = xp.jit(lambda x: (xp.debug.callback(seen.append, x), x + 1)[1])
    nested = xp.jit(lambda x: xp.scan(lambda c, v: (xp.debug.print("v={}", v) or c + v, None), x[0], x)[0])
    g = xp.jit(lambda x: x + 1)
    for v in (1.0, 2.0):
        f(xp.asarray(v))
        g(xp.asarray(v))
        assert len(waits) == len(seen)  # after each call of f, none of g
    assert [float(s) for s in seen] == [1.0, 2.0]
    nested(xp.asarray([1.0, 2.0]))
    assert len(waits) == 3
    (entry,) = g._cache.values()
    assert isinstance(entry.fn.fn, type(jax.jit(abs)))  # jax.jit's own dispatch, no barrier


def test_implicit_conversions():
    x = xp.asarray([[2.5]])
    assert float(x) == 2.5 and bool(x) and int(xp.asarray(7)) == 7
    assert complex(xp.asarray(1 + 2j)) == 1 + 2j
    assert "device=jax:" in repr(x)
    assert np.asarray(x).tolist() == [[2.5]]


def test_mixed_executor_operands_are_refused():
    a = xp.asarray([1.0])
    b = xp.asarray([1.0], device="numpy")
    with pytest.raises(TypeError, match="different executors"):
        a + b


def test_jit_runs_jax_jit_dispatch_traced_once_when_compiled():
    """arrayx.jit on jax hands each call to jax.jit's own dispatch (no Python frame around it), traced
    once at compile time and not again on the first call; pytrees, keyword, static and donated
    arguments and a new shape give the numpy executor's values."""
    import jax

    rng = np.random.default_rng(3)
    a, b, c = rng.normal(size=3), rng.normal(size=3), rng.normal(size=5)

    def model(p, n, *, bias):
        return {"s": xp.sin(p["a"]) * p["b"] ** n + bias, "t": xp.sum(p["a"] * p["b"])}

    f = xp.jit(model, static_argnums=1)
    g = xp.jit(lambda x, y: x * 2.0 + y, donate_argnums=0)
    got = [f({"a": xp.asarray(a), "b": xp.asarray(b)}, 2, bias=xp.asarray(0.5)),
           f({"a": xp.asarray(a), "b": xp.asarray(b)}, 3, bias=xp.asarray(0.5)),
           f({"a": xp.asarray(c), "b": xp.asarray(c)}, 2, bias=xp.asarray(0.5)),
           g(xp.asarray(a), xp.asarray(b))]
    assert f.trace_count == 3 and g.trace_count == 1  # a new static value and a new shape retrace
    for entry in [*f._cache.values(), *g._cache.values()]:
        # with donated arguments one Python check first computes a donated deferred transpose
        fn = entry.fn.fn  # the program, called with arrayx's 64-bit types on (executors/jax/x64.py)
        fn = fn.jitted if entry.donate else fn
        assert isinstance(fn, type(jax.jit(abs))), type(fn)
        assert fn._cache_size() == 1  # the compile-time trace served the first call
    with xp.use_executor("numpy"):
        want = [model({"a": xp.asarray(a), "b": xp.asarray(b)}, 2, bias=xp.asarray(0.5)),
                model({"a": xp.asarray(a), "b": xp.asarray(b)}, 3, bias=xp.asarray(0.5)),
                model({"a": xp.asarray(c), "b": xp.asarray(c)}, 2, bias=xp.asarray(0.5)),
                xp.asarray(a) * 2.0 + xp.asarray(b)]
    for w, h in zip(want[:3], got[:3]):  # float32 on a TPU (its sin agrees within the comparator's bound)
        assert_same_here(h["s"], w["s"])
        assert_same_here(h["t"], w["t"])
    assert_same_here(got[3], want[3])


def test_jit_per_op_matches_eager_and_falls_back(monkeypatch):
    """Each op runs as one jax.jit call; data-dependent results still run (eagerly)."""
    x = xp.asarray([3.0, -1.0, 2.0, -1.0])
    assert xp.unique_values(x).shape == (3,)
    assert x[x > 0].shape == (2,)
    assert_same_here(xp.repeat(x, xp.asarray([1, 0, 2, 1])), np.array([3.0, 2.0, 2.0, -1.0]))
    assert_same_here(xp.where(x > 0, x, 0.0), np.array([3.0, 0.0, 2.0, 0.0]))
    assert_same_here(xp.sum(x), np.array(3.0))
    assert_same_here(xp.sum(x, axis=0, keepdims=True), np.array([3.0]))  # other params: another compiled variant


def test_import_does_not_import_jax():
    code = "import sys, arrayx; assert 'jax' not in sys.modules, 'jax imported eagerly'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_unavailable_reason_names_the_missing_library():
    code = (
        "import sys; sys.modules['jax'] = None\n"
        "import arrayx\n"
        "ex = arrayx.executors.get('jax')\n"
        "assert not ex.available()\n"
        "assert 'jax' in ex.unavailable_reason.lower(), ex.unavailable_reason\n"
        "assert 'jax' not in arrayx.executors()\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


# -- the known deviation: XLA on CPU flushes subnormals to zero (README, executor table) ----------


def test_known_deviation_subnormals_flush_to_zero_on_jax_only():
    """XLA's CPU runtime sets FTZ/DAZ for every execution (no flag switches it off: see
    benchmarks/bench_jax_subnormals.py).  The deviation is exactly this, so that it cannot grow
    silently, and a JAX that keeps subnormals makes this test fail (then drop the README entry).
    It is XLA:CPU's: checked on the jax CPU device (the default one on a CPU machine); a TPU's
    float32 arithmetic is test_tpu_chip.py's."""
    cpu = next((d for d in EX.devices() if platform(d) == "cpu"), None)
    if cpu is None:
        pytest.skip("the jax executor lists no CPU device")
    tiny32 = np.array([1e-40], np.float32)
    tiny64 = np.array([1e-310])
    with xp.use_executor("jax"):
        a32, a64 = xp.asarray(tiny32, device=cpu), xp.asarray(tiny64, device=cpu)
        np.testing.assert_array_equal(np.asarray(a32), tiny32)  # stored and read back unchanged
        if EX.platform_of(EX.default_device()) == "cpu":
            np.testing.assert_array_equal(np.asarray(a64), tiny64)
        else:  # seen on a TPU machine's jax CPU device (JAX 0.10.2): a float64 subnormal arrives as 0
            assert np.asarray(a64)[0] in (tiny64[0], 0.0)
        assert np.asarray(a32 * 1.0)[0] == 0.0 and np.asarray(a64 * 1.0)[0] == 0.0
        assert bool(a64[0] == 0)  # comparisons read subnormals as zero too
    with xp.use_executor("numpy"):
        assert np.asarray(xp.asarray(tiny32) * 1.0)[0] == np.float32(1e-40)
        assert np.asarray(xp.asarray(tiny64) * 1.0)[0] == 1e-310


HOSTS = {  # each test gets its own (it writes into them)
    "f64": lambda: np.arange(6.0).reshape(2, 3), "0d-i8": lambda: np.array(-3, np.int8),
    "empty-c64": lambda: np.zeros((0, 2), np.complex64), "bool": lambda: np.array([True, False]),
    "fortran-u16": lambda: np.asfortranarray(np.arange(6, dtype=np.uint16).reshape(2, 3)),
    "strided-u64": lambda: np.arange(10, dtype=np.uint64)[::3],
    "subnormal-f32": lambda: np.array([1e-40, -0.0, np.nan], np.float32),
    "big-i64": lambda: np.array([2 ** 62 + 1], np.int64),
}


@pytest.mark.parametrize("make", HOSTS.values(), ids=HOSTS.keys())
def test_asarray_of_host_data_keeps_every_bit_and_owns_its_buffer(make, jax_default_device):
    """Host arrays are placed as a private copy (no compiled conversion per shape): same dtype and
    bits, and later writes to the host array do not show through.  On a device with native 64-bit
    types all of them (and on the jax CPU device of a TPU machine); on one without, 64-bit data
    arrives as its 32-bit default, NumPy's ``astype`` of it (the default ``downcast``)."""
    for dev in dict.fromkeys(d for d in (jax_default_device, native64_device()) if d is not None):
        host = make()
        want = arriving(host.dtype, dev)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DowncastWarning)
            a = xp.asarray(host, device=dev)
        assert a.dtype == want and a.shape == host.shape and a.device == dev
        assert np.asarray(a).tobytes() == np.ascontiguousarray(host.astype(want, copy=False)).tobytes()
        if host.size and host.flags.writeable:
            before = np.asarray(a).copy()
            host[...] = ~host if host.dtype.kind == "b" else host + 1
            assert np.asarray(a).tobytes() == before.tobytes()
        real = defaults(dev)["real floating"]  # a conversion takes JAX's path
        assert xp.asarray(host, dtype=real, device=dev).dtype == real
