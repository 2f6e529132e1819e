"""The JAX executor: jax.Array buffers, 64-bit dtypes, JAX devices, functional updates, and every
function of the standard compared with the NumPy executor."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import arrayx as xp
from arrayx.core import executor as base
from tests.conftest import assert_same
from tests.executors.conftest import only_on

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
    import jax

    with jax.enable_x64(False):  # arrayx's calls have 64-bit types whatever the caller's setting
        x = xp.asarray([1.0, 1.0 + 2**-40])
        assert x.dtype == xp.float64 and float(x[1] - x[0]) == 2**-40
        big = xp.asarray([2**62, -(2**62)])
        assert big.dtype == xp.int64 and int(big[0] + 3) == 2**62 + 3
        assert xp.arange(3).dtype == xp.int64
        assert xp.zeros(2).dtype == xp.float64 and xp.ones(2, dtype=xp.complex128).dtype == xp.complex128
        assert (xp.asarray([1, 2]) / 2).dtype == xp.float64
        u = xp.asarray(np.array([2**63 + 5], dtype=np.uint64))
        assert int(u[0]) == 2**63 + 5
        assert not jax.config.jax_enable_x64 and jax.numpy.arange(2).dtype == np.int32  # the caller's own


def test_index_results_have_the_default_index_dtype():
    x = xp.asarray([3.0, 1.0, 2.0, 1.0])
    s = xp.sort(x)
    assert xp.searchsorted(s, x).dtype == xp.int64  # JAX itself returns int32 here
    assert xp.searchsorted(s, x, side="right").dtype == xp.int64
    assert_same(xp.searchsorted(s, x, side="right"), np.array([4, 2, 3, 2]))
    assert xp.argmax(x).dtype == xp.int64 and xp.argsort(x).dtype == xp.int64
    assert xp.nonzero(x)[0].dtype == xp.int64
    u = xp.unique_all(x)
    assert u.indices.dtype == u.inverse_indices.dtype == u.counts.dtype == xp.int64
    assert xp.count_nonzero(x).dtype == xp.int64


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's own divide-by-zero warnings
@pytest.mark.parametrize("fn", ["floor_divide", "remainder"])
def test_floor_divide_and_remainder_follow_numpy(fn):
    """Signed zeros, infinities and integer division by zero as NumPy (and the NumPy executor) give them."""
    a = np.array([-0.0, 0.0, -3.0, 5.5, np.inf, -np.inf, 7.0, np.nan, -2.0, 7.5, -7.5, 3.0, 4.0])
    b = np.array([2.0, -2.0, -np.inf, 0.0, 2.0, 3.0, -0.0, 1.0, np.inf, -2.0, 2.5, -1.5, 0.0])
    op = getattr(xp, fn)
    got = np.asarray(op(xp.asarray(a), xp.asarray(b)))
    want = np.asarray(op(xp.asarray(a, device="numpy"), xp.asarray(b, device="numpy")))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    i, k = np.array([5, -5, 7, 0, -7], dtype=np.int32), np.array([0, 0, -2, 0, 2], dtype=np.int32)
    assert_same(op(xp.asarray(i), xp.asarray(k)), getattr(np, fn)(i, np.where(k == 0, 1, k)) * (k != 0))
    assert_same(op(xp.asarray(i), 3), getattr(np, fn)(i, 3))


def test_sign_of_zero_is_zero():
    s = np.asarray(xp.sign(xp.asarray([-0.0, 0.0, -2.0, np.nan])))
    assert s[0] == 0 and not np.signbit(s[0]) and s[2] == -1 and np.isnan(s[3])
    assert_same(xp.sign(xp.asarray([-0j, 3 + 4j])), np.array([0j, 0.6 + 0.8j]))


def test_setitem_and_inplace_operators_are_functional():
    x = xp.asarray([1.0, 2.0, 3.0, 4.0])
    before = x._buf
    x[0] = 10.0
    x[xp.asarray([False, True, False, True])] = -1.0
    x[1:3] += 5
    x *= 2
    assert_same(x, np.array([20.0, 8.0, 16.0, -2.0]))
    assert_same(xp.asarray(np.asarray(before)), np.array([1.0, 2.0, 3.0, 4.0]))  # the old buffer is untouched
    m = xp.reshape(xp.arange(6), (2, 3))
    m[:, 0] = xp.asarray([7, 8])
    m[1, ...] = 0
    assert_same(m, np.array([[7, 1, 2], [0, 0, 0]]))
    with pytest.raises(TypeError, match="in-place"):
        m += 0.5  # int64 += float would change the dtype


def test_at_updates_accumulate_repeated_indices():
    x = xp.zeros(4)
    idx = xp.asarray([0, 0, 2, 0])
    assert_same(x.at[idx].add(1.0), np.array([3.0, 0.0, 1.0, 0.0]))
    assert_same(x.at[idx].subtract(2.0), np.array([-6.0, 0.0, -2.0, 0.0]))
    y = xp.asarray([1.0, 2.0, 3.0, 4.0])
    assert_same(y.at[idx].multiply(2.0), np.array([8.0, 2.0, 6.0, 4.0]))
    assert_same(y.at[idx].max(xp.asarray([5.0, 0.0, 9.0, 2.0])), np.array([5.0, 2.0, 9.0, 4.0]))
    assert_same(y.at[1:].min(2.5), np.array([1.0, 2.0, 2.5, 2.5]))
    assert_same(y.at[y > 2].set(0.0), np.array([1.0, 2.0, 0.0, 0.0]))
    assert_same(y, np.array([1.0, 2.0, 3.0, 4.0]))  # x.at[...] never changes x


def test_devices_are_jax_devices():
    import jax

    devs = EX.devices()
    assert [d.native for d in devs][: len(jax.devices())] == list(jax.devices())
    assert devs[0].label == f"{jax.devices()[0].platform}:{jax.devices()[0].id}"
    x = xp.asarray([1, 2], device=devs[0])
    assert x.device == devs[0] and x.device.native in x._buf.devices()
    assert xp.asarray([1], device=f"jax:{devs[0].label}").device == devs[0]
    for d in devs:  # to_device between this executor's devices
        y = x.to_device(d)
        assert y.device == d and y.executor == "jax"
        assert_same(y, np.array([1, 2]))
    info = xp.__array_namespace_info__()
    assert set(devs) <= set(info.devices())
    with pytest.raises(ValueError, match="no device"):
        xp.zeros(2, device="jax:tpu:99")


def test_dlpack_exchange_with_numpy():
    x = xp.asarray([1.5, 2.5, 3.5])
    h = np.from_dlpack(x)
    assert h.dtype == np.float64 and h.tolist() == [1.5, 2.5, 3.5]
    assert x.__dlpack_device__()[0] == 1  # kDLCPU
    src = np.arange(4, dtype=np.int32)
    y = xp.from_dlpack(src, device="jax")
    assert y.executor == "jax" and y.dtype == xp.int32
    assert_same(y, src)


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
    for w, h in zip(want[:3], got[:3]):
        assert_same(h["s"], w["s"])
        assert_same(h["t"], w["t"])
    assert_same(got[3], want[3])


def test_jit_per_op_matches_eager_and_falls_back(monkeypatch):
    """Each op runs as one jax.jit call; data-dependent results still run (eagerly)."""
    x = xp.asarray([3.0, -1.0, 2.0, -1.0])
    assert xp.unique_values(x).shape == (3,)
    assert x[x > 0].shape == (2,)
    assert_same(xp.repeat(x, xp.asarray([1, 0, 2, 1])), np.array([3.0, 2.0, 2.0, -1.0]))
    assert_same(xp.where(x > 0, x, 0.0), np.array([3.0, 0.0, 2.0, 0.0]))
    assert_same(xp.sum(x), np.array(3.0))
    assert_same(xp.sum(x, axis=0, keepdims=True), np.array([3.0]))  # other params: another compiled variant


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
    silently, and a JAX that keeps subnormals makes this test fail (then drop the README entry)."""
    tiny32 = np.array([1e-40], np.float32)
    tiny64 = np.array([1e-310])
    with xp.use_executor("jax"):
        a32, a64 = xp.asarray(tiny32), xp.asarray(tiny64)
        np.testing.assert_array_equal(np.asarray(a32), tiny32)  # stored and read back unchanged
        np.testing.assert_array_equal(np.asarray(a64), tiny64)
        assert np.asarray(a32 * 1.0)[0] == 0.0 and np.asarray(a64 * 1.0)[0] == 0.0
        assert bool(a64[0] == 0)  # comparisons read subnormals as zero too
    with xp.use_executor("numpy"):
        assert np.asarray(xp.asarray(tiny32) * 1.0)[0] == np.float32(1e-40)
        assert np.asarray(xp.asarray(tiny64) * 1.0)[0] == 1e-310


@pytest.mark.parametrize("host", [
    np.arange(6.0).reshape(2, 3), np.array(-3, np.int8), np.zeros((0, 2), np.complex64), np.array([True, False]),
    np.asfortranarray(np.arange(6, dtype=np.uint16).reshape(2, 3)), np.arange(10, dtype=np.uint64)[::3],
    np.array([1e-40, -0.0, np.nan], np.float32), np.array([2 ** 62 + 1], np.int64),
], ids=["f64", "0d-i8", "empty-c64", "bool", "fortran-u16", "strided-u64", "subnormal-f32", "big-i64"])
def test_asarray_of_host_data_keeps_every_bit_and_owns_its_buffer(host):
    # host arrays are placed as a private copy (no compiled conversion per shape): same dtype and
    # bits, and later writes to the host array do not show through
    a = xp.asarray(host, device="jax")
    assert a.dtype == host.dtype and a.shape == host.shape
    assert np.asarray(a).tobytes() == np.ascontiguousarray(host).tobytes()
    if host.size and host.flags.writeable:
        before = np.asarray(a).copy()
        host[...] = ~host if host.dtype.kind == "b" else host + 1
        assert np.asarray(a).tobytes() == before.tobytes()
    assert xp.asarray(host, dtype=xp.float64, device="jax").dtype == xp.float64  # a conversion takes JAX's path
