"""``device_put`` follows the per-device dtype rules of ``asarray`` (issue #41: it bypassed them).

The target's devices decide what arriving data becomes (``arrayx/api/_device_dtypes.py``): float64
NumPy data put with a sharding over devices with 32-bit defaults (a TPU) becomes float32 under
``tpu_64bit("downcast")``, stays float64 under ``"emulate"`` and raises under ``"refuse"``, as
``asarray(x, device=d)`` does, whatever the default device is; and the call into JAX runs with
arrayx's 64-bit types on (a resharding JAX computes traced with them), leaving the process-wide
``jax_enable_x64`` as it was.  There is no TPU here: devices are taken for TPUs by patching the jax
executor's ``platform_of`` (as tests/executors/conftest.py's ``jax_default_device`` does), in this
process (its one CPU device) and in a child process with 8 CPU devices (some taken for TPUs).
Values are compared with NumPy's.
"""
from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pytest

import arrayx as ax
from arrayx import sharding as sh
from arrayx.api import _device_dtypes
from arrayx.core import executor as base

from tests.executors.platform_tolerances import dtypes_of_a_tpu
from tests.sharding.conftest import json_from_eight_jax_devices

_jax = base.get("jax")
pytestmark = pytest.mark.skipif(not _jax.available(), reason=f"executor 'jax' unavailable: {_jax.unavailable_reason}")


@pytest.fixture(params=["here", "taken-for-a-tpu"])
def jax_device(request, monkeypatch):
    """The jax executor's default device, as it is and taken for a TPU (its 32-bit row), current."""
    if request.param != "here":
        with dtypes_of_a_tpu(monkeypatch) as device:
            yield device
        return
    with ax.use_executor("jax"):
        yield _jax.default_device()


def _targets(dev):
    mesh = sh.Mesh(np.array([dev]), ("a",))
    return {"named": sh.NamedSharding(mesh, sh.P("a")), "replicated": sh.NamedSharding(mesh, sh.P()),
            "single": sh.SingleDeviceSharding(dev), "device": dev}


@pytest.mark.parametrize("kind", ["named", "replicated", "single", "device"])
@pytest.mark.parametrize("src", [np.float64, np.int64, np.complex128, np.float32])
def test_device_put_gives_asarrays_dtype(jax_device, kind, src):
    x = (np.arange(12).reshape(4, 3) * 1.5 + 0.25).astype(src) if np.dtype(src).kind != "i" else \
        np.arange(12, dtype=src).reshape(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        want = ax.asarray(x, device=jax_device)
        got = ax.device_put(x, _targets(jax_device)[kind])
    assert got.dtype == want.dtype
    assert got.dtype == _device_dtypes.for_device(_jax, jax_device).narrow.get(np.dtype(src), np.dtype(src))
    assert np.array_equal(np.asarray(got), x.astype(got.dtype))


@pytest.mark.parametrize("kind", ["named", "single"])
def test_device_put_follows_the_64bit_setting(jax_device, kind):
    x = np.linspace(0.0, 1.0, 8)
    target = _targets(jax_device)[kind]
    native = _device_dtypes.for_device(_jax, jax_device).native64
    with ax.tpu_64bit("emulate"):
        assert ax.device_put(x, target).dtype == np.float64
    with ax.tpu_64bit("refuse"):
        if native:
            assert ax.device_put(x, target).dtype == np.float64
        else:
            with pytest.raises(TypeError, match=r"device_put: float64 data on .*no native 64-bit types.*'refuse'"):
                ax.device_put(x, target)
            with pytest.raises(TypeError, match="float64 data"):
                ax.asarray(x, device=jax_device)  # the same answer as asarray


def test_arrays_of_other_executors_follow_the_target(jax_device):
    with ax.use_executor("numpy"):
        x = ax.asarray(np.arange(6.0) / 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        got = ax.device_put(x, _targets(jax_device)["named"])
        want = ax.asarray(x, device=jax_device)
    assert got.dtype == want.dtype and np.array_equal(np.asarray(got), np.asarray(want))
    assert got.device == jax_device


def test_process_x64_setting_unchanged(jax_device):
    import jax

    before = bool(jax.config.jax_enable_x64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
        for target in _targets(jax_device).values():
            ax.device_put(np.arange(4.0), target)
    assert bool(jax.config.jax_enable_x64) == before
    assert jax.numpy.asarray(np.zeros(2)).dtype == (np.float64 if before else np.float32)


def test_deferred_transpose_is_placed_on_its_own_axes():
    """A large ``x.T`` (recorded as base and axes) is computed before it is placed."""
    with ax.use_executor("jax"):
        a = ax.asarray(np.arange(512 * 1024, dtype=np.float64).reshape(512, 1024))
        mesh = sh.Mesh(np.array([_jax.default_device()]), ("a",))
        got = ax.device_put(a.T, sh.NamedSharding(mesh, sh.P("a")))
        assert got._buf.__class__ is _jax.array_type
        assert got._buf.shape == (1024, 512)
        assert np.array_equal(np.asarray(got), np.asarray(a).T)


_CHILD = textwrap.dedent('''
    import json, warnings
    import numpy as np
    import jax
    import arrayx as ax
    from arrayx import sharding as sh
    from arrayx.api import _device_dtypes
    from arrayx.core import executor as base

    ex = base.get("jax")
    warnings.simplefilter("ignore", _device_dtypes.DowncastWarning)
    out = {"x64 before": bool(jax.config.jax_enable_x64)}
    platform_of = type(ex).platform_of  # put back at the end: the child runs other programs after this one
    try:
        with ax.use_executor("jax"):
            devs = ex.devices()
            lo, hi = devs[:4], devs[4:]
            x = np.arange(8.0) + 0.1

            def as_tpu(which):
                type(ex).platform_of = lambda self, d: "tpu" if d in which else "cpu"
                _device_dtypes.clear_caches()

            # the default device (devs[0]) keeps 64-bit types; the mesh of devs[4:] is taken for TPUs
            as_tpu(hi)
            m_hi = sh.Mesh(np.array(hi), ("a",))
            out["default 64, mesh 32: named"] = str(ax.device_put(x, sh.NamedSharding(m_hi, sh.P("a"))).dtype)
            out["default 64, mesh 32: single"] = str(ax.device_put(x, sh.SingleDeviceSharding(hi[0])).dtype)
            out["default 64, mesh 32: asarray"] = str(ax.asarray(x, device=hi[0]).dtype)
            a64 = ax.asarray(x)  # float64, on the default device
            moved = ax.device_put(a64, sh.NamedSharding(m_hi, sh.P("a")))
            out["float64 array onto mesh 32"] = [str(moved.dtype), sorted(str(d) for d in moved.devices())]
            # the default device taken for a TPU, the mesh of devs[4:] not
            as_tpu(lo)
            out["default 32, mesh 64: named"] = str(ax.device_put(x, sh.NamedSharding(m_hi, sh.P("a"))).dtype)
            out["default 32, mesh 64: single"] = str(ax.device_put(x, hi[1]).dtype)
            out["default 32, mesh 64: asarray"] = str(ax.asarray(x, device=hi[1]).dtype)
            # a float64 array resharded (a computation of JAX's) with 64-bit types: values kept, usable after
            as_tpu(())
            m_all = sh.Mesh(np.array(devs), ("a",))
            a = ax.device_put(x, sh.NamedSharding(m_all, sh.P("a")))
            r = ax.device_put(a, sh.NamedSharding(m_all, sh.P()))
            out["resharded"] = [str(r.dtype), str(np.asarray(r._buf).dtype), np.asarray(r + 1).tolist()]
            m2 = sh.Mesh(np.array(devs).reshape(2, 4), ("a", "b"))
            g = ax.device_put(ax.reshape(a, (4, 2)), sh.NamedSharding(m2, sh.P("b", "a")))
            out["2-d"] = [str(g.dtype), np.asarray(g).tolist()]
    finally:
        type(ex).platform_of = platform_of
        _device_dtypes.clear_caches()
    out["x64 after"] = bool(jax.config.jax_enable_x64)
    print(json.dumps(out))
''')


def test_mixed_devices_and_reshards_in_a_child_with_eight_devices():
    got = json_from_eight_jax_devices(_CHILD)
    assert got["default 64, mesh 32: named"] == got["default 64, mesh 32: asarray"] == "float32"
    assert got["default 64, mesh 32: single"] == "float32"
    assert got["float64 array onto mesh 32"][0] == "float32"
    assert got["float64 array onto mesh 32"][1] == [f"Device('jax:cpu:{i}')" for i in range(4, 8)]
    assert got["default 32, mesh 64: named"] == got["default 32, mesh 64: asarray"] == "float64"
    assert got["default 32, mesh 64: single"] == "float64"
    x = np.arange(8.0) + 0.1
    dtype, host_dtype, plus_one = got["resharded"]
    assert dtype == host_dtype == "float64"  # before: a float64 array holding float32 buffers
    assert plus_one == (x + 1).tolist()
    assert got["2-d"] == ["float64", x.reshape(4, 2).tolist()]
    assert got["x64 after"] == got["x64 before"]
