"""The jax executor leaves the user's own JAX alone (issue #41 point 3): arrayx's float64/int64 come from
a per-call, per-thread 64-bit scope (``executors/jax/x64.py``), never from the process-wide
``jax_enable_x64``.  Process state matters, so the main checks run in fresh subprocesses: after each
kind of use of the executor, the user's ``jax.config.jax_enable_x64``, ``jnp.asarray(numpy float64)``
and ``jnp.arange`` are what they were before arrayx, while arrayx's results keep their 64-bit dtypes
and equal the NumPy executor's; with ``JAX_ENABLE_X64=1`` set by the user both stay 64-bit; and
``arrayx.debug.callback`` runs the user's function at the user's setting (the same subprocesses).  The
per-thread rules (the caller's setting restored, errors included; other threads; a user's own
``jax.Array``) are checked in this process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from tests.conftest import assert_same
from tests.executors.conftest import only_on

pytestmark = [*only_on("jax"),
              # a 64-bit request that JAX truncates (x64 off where arrayx calls it) fails the test
              pytest.mark.filterwarnings("error:Explicitly requested dtype:UserWarning")]

# Each step runs once per executor in the list; the report holds, per step: the dtypes and host values
# on each executor, and the user's JAX state read right after the step.
_SCRIPT = textwrap.dedent(r"""
    import json, pickle, threading, warnings
    warnings.filterwarnings("error", "Explicitly requested dtype")  # a truncated 64-bit request fails
    import numpy as np
    import jax, jax.numpy as jnp

    def user_state():
        return {"jax_enable_x64": bool(jax.config.jax_enable_x64),
                "asarray(np.ones(3))": str(jnp.asarray(np.ones(3)).dtype),
                "arange(3)": str(jnp.arange(3).dtype),
                "zeros(2)": str(jnp.zeros(2).dtype),
                "array(1.5) + 1": str((jnp.array(1.5) + 1).dtype),
                "jit(x * 2)(np.ones(2))": str(jax.jit(lambda v: v * 2)(np.ones(2)).dtype)}

    report = {"before_import": user_state()}
    import arrayx as ax
    from arrayx.sharding import NamedSharding, P
    report["after_import"] = user_state()
    ax.executors()
    report["after_executors"] = user_state()

    def host(v):
        a = np.asarray(v)
        return {"dtype": str(a.dtype), "shape": list(a.shape), "re": np.real(a).astype(float).ravel().tolist(),
                "im": np.imag(a).astype(float).ravel().tolist()}

    steps = {}

    def step(name, fn, executors=("numpy", "jax")):
        out = {}
        for ex in executors:
            try:
                with ax.use_executor(ex):
                    got = fn()
                got = got if isinstance(got, (tuple, list)) else (got,)
                out[ex] = [host(g) for g in got]
            except Exception as e:  # reported, not raised: the other steps still run
                out[ex] = f"{type(e).__name__}: {e}"
        out["user"] = user_state()
        steps[name] = out

    def data():
        x = ax.asarray(np.linspace(0.1, 1.7, 8) + 2.0**-40)
        m = ax.asarray(np.arange(16.0).reshape(4, 4) / 7 + np.eye(4) * 3)
        return x, m

    step("asarray float64, int64, complex128", lambda: (
        ax.asarray([1.0, 1.0 + 2**-40]), ax.asarray([2**62, -(2**62)]) + 3,
        ax.asarray(np.array([1 + 2j, 3 - 1e-12j])) * (1 + 1e-12j), ax.asarray(np.array([2**63 + 5], np.uint64))))
    step("creation", lambda: (ax.zeros(3), ax.ones(2, dtype=ax.complex128), ax.arange(5), ax.arange(0.5, 3.0, 0.25),
                              ax.linspace(0.0, 1.0, 7), ax.eye(3), ax.full(2, 1e-300), ax.empty(0).shape and ax.zeros(1),
                              ax.zeros_like(ax.asarray([1, 2])), ax.full_like(ax.asarray([1.0, 2.0]), 2**-40)))
    step("eager operations", lambda: (lambda x, m: (
        x + x * 2.0**-30, ax.exp(x), m @ m, ax.sum(x), ax.mean(m, axis=0), ax.sort(-x), ax.cumulative_sum(x),
        ax.where(x > 0.5, x, -x), ax.argmax(x), ax.searchsorted(ax.sort(x), x), ax.astype(x, ax.float32),
        ax.astype(ax.astype(x, ax.float32), ax.float64), x / 3, ax.floor_divide(ax.asarray([7, -7]), 2),
        ax.nonzero(x > 0.5)[0], ax.unique_values(ax.asarray([3, 1, 3])), ax.roll(x, 3), ax.repeat(x, 2),
        ax.sqrt(ax.asarray([-4.0 + 0j, 1e-300 + 1j])), ax.concat([x, x]), ax.reshape(m, (2, 8))))(*data()))
    step("jit", lambda: (lambda x, m: (
        ax.jit(lambda v: ax.sin(v) * 2 + ax.sum(v))(x), ax.jit(lambda a: ax.linalg.solve(a - 1, a[:, 0]))(m),
        ax.jit(lambda v: ax.arange(8.0) + v)(x), ax.jit(lambda v: v.T)(ax.reshape(ax.arange(300 * 500.0), (300, 500)))))(*data()))
    step("grad, vmap, jvp, hessian", lambda: (lambda x, m: (
        ax.grad(lambda v: ax.sum(v ** 3))(x), ax.vmap(lambda r: ax.vecdot(r, r))(m),
        ax.jvp(ax.sin, (x,), (ax.ones_like(x),))[1], ax.hessian(lambda v: ax.sum(ax.exp(v)))(x[:3]),
        ax.jit(ax.grad(lambda a: ax.sum(ax.linalg.inv(a))))(m)))(*data()))
    step("control flow", lambda: (lambda x, m: (
        ax.lax.fori_loop(0, 5, lambda i, c: c * 1.5 + 2.0**-40, x), ax.cond(ax.sum(x) > 1, ax.sin, ax.cos, x),
        ax.scan(lambda c, v: (c + v, c * v), 0.0, x)[1], ax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.1), (0, x))[1]))(*data()))
    step("random", lambda: (ax.random.normal(ax.random.key(0), (5,)), ax.random.uniform(ax.random.key(1), (5,)),
                            ax.random.randint(ax.random.key(2), (5,), 0, 2**40),
                            ax.jit(lambda k: ax.random.normal(k, (3,)))(ax.random.key(3))))
    step("linalg", lambda: (lambda x, m: (
        ax.linalg.inv(m), ax.linalg.det(m), ax.linalg.cholesky(m @ m.T), ax.linalg.eigh(m + m.T).eigenvalues,
        ax.linalg.svdvals(m), ax.linalg.qr(m).R, ax.linalg.vector_norm(x), ax.linalg.solve(m, x[:4])))(*data()))
    step("fft", lambda: (lambda x, m: (ax.fft.fft(x), ax.fft.rfft(x), ax.fft.ifft(ax.fft.fft(x)), ax.fft.fftn(m)))(*data()))
    step("nn and lax", lambda: (lambda x, m: (
        ax.nn.erf(x), ax.nn.softmax(x), ax.nn.logsumexp(x),
        ax.lax.conv(ax.reshape(m, (1, 1, 4, 4)), ax.ones((1, 1, 2, 2)), (1, 1), "VALID"),
        ax.lax.reduce_window(m, -ax.inf, ax.maximum, (2, 2), (1, 1), "VALID")))(*data()))
    def indexing():
        x, m = data()
        z = ax.asarray(x, copy=True)
        z[1] = 1e-300
        z[z > 1.0] = 2.0 ** -40
        w = x.at[ax.asarray([0, 0, 3])].add(2.0 ** -30)
        return (x[1:3], x[::2], x[-1], m[1], m[:, 2], x[ax.asarray([0, 2, 7])], x[x > 0.5], m[m > 2.0], z, w,
                m[ax.asarray([True, False, True, False])], x[None, 2:5])
    step("indexing and in-place writes", indexing)
    def transposes():
        big = ax.reshape(ax.arange(300 * 500.0) + 2.0**-40, (300, 500))
        t = big.T  # a deferred transpose on jax (1.2 MB)
        return t[3, 7], ax.sum(t, axis=0), t @ ax.ones(300), ax.sin(t)[0], float(t[0, 1]) + ax.zeros(1), np.asarray(t)[5]
    step("deferred transposes", transposes)
    def exports():
        x, _ = data()
        back = pickle.loads(pickle.dumps(x))
        return np.from_dlpack(x), np.asarray(x), back, ax.from_dlpack(np.arange(3.0)), ax.asarray(x, device=x.device)
    step("export, pickle, dlpack", exports)
    def in_thread():
        box = []
        t = threading.Thread(target=lambda: box.append((ax.exp(data()[0]), ax.arange(3), ax.zeros(2))))
        t.start(); t.join()
        return box[0]
    step("other threads", in_thread)
    def lazy():
        x, m = data()
        with ax.lazy():
            y = ax.exp(x) * 2 + ax.sum(m)
        return y
    step("lazy", lazy)
    def sharding():
        mesh = ax.sharding.make_mesh((2,), ("x",), executor="jax")
        x = ax.device_put(ax.reshape(ax.arange(16.0) + 2.0**-40, (8, 2)), NamedSharding(mesh, P("x")))
        f = ax.shard_map(lambda b: ax.psum(ax.sum(b), "x"), mesh=mesh, in_specs=P("x"), out_specs=P())
        return (x, ax.jit(lambda v: ax.sin(v) + 1)(x), f(x), ax.jit(f)(x), ax.grad(f)(x),
                ax.pmap(lambda v: v * 2.0 + 2.0**-40)(ax.reshape(ax.arange(4.0), (2, 2))))
    step("sharding, shard_map, pmap", sharding, executors=("jax",))
    def user_jax_arrays():
        mine32 = jnp.asarray(np.arange(3.0), dtype=jnp.float32)  # the user's own float32 stays float32
        return ax.asarray(mine32), ax.asarray(mine32) * 2.0, ax.asarray(np.arange(3.0))
    step("a user's jax.Array", user_jax_arrays, executors=("jax",))
    report["steps"] = steps
    seen = []
    def look(v):  # the user's own code, called back by arrayx: it sees the user's JAX, not arrayx's
        seen.append([bool(jax.config.jax_enable_x64), str(jnp.asarray(np.ones(2)).dtype), str(v.dtype), float(v[1])])
    with ax.use_executor("jax"):
        x = ax.asarray([1.0, 1.0 + 2.0**-40])
    ax.debug.callback(look, x)
    ax.jit(lambda v: ax.debug.callback(look, v * 2) or v)(x)
    ax.vmap(lambda v: ax.debug.callback(look, v) or v)(ax.reshape(ax.concat([x, x]), (2, 2)))
    report["callbacks"] = seen
    report["end"] = user_state()
    print("REPORT" + json.dumps(report))
""")


def _run(env_extra: dict) -> dict:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", **env_extra)
    for k in ("ARRAYX_EXECUTOR", "JAX_ENABLE_X64"):
        if k not in env_extra:
            env.pop(k, None)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT")), None)
    assert proc.returncode == 0 and line is not None, proc.stderr[-4000:]
    return json.loads(line[len("REPORT"):])


def _values(h: dict) -> np.ndarray:
    re, im = np.asarray(h["re"]), np.asarray(h["im"])
    return (re + 1j * im if h["dtype"].startswith("complex") else re).reshape(h["shape"])


#: a user's JAX without 64-bit types, and with them (JAX_ENABLE_X64=1)
USER_32 = {"jax_enable_x64": False, "asarray(np.ones(3))": "float32", "arange(3)": "int32", "zeros(2)": "float32",
           "array(1.5) + 1": "float32", "jit(x * 2)(np.ones(2))": "float32"}
USER_64 = {"jax_enable_x64": True, "asarray(np.ones(3))": "float64", "arange(3)": "int64", "zeros(2)": "float64",
           "array(1.5) + 1": "float64", "jit(x * 2)(np.ones(2))": "float64"}

# what the jax-only steps give (the user's float32 array keeps its dtype)
JAX_ONLY = {
    "sharding, shard_map, pmap": lambda x=np.arange(16.0).reshape(8, 2) + 2.0**-40: [
        x, np.sin(x) + 1, np.sum(x), np.sum(x), np.ones((8, 2)), np.arange(4.0).reshape(2, 2) * 2 + 2.0**-40],
    "a user's jax.Array": lambda: [np.arange(3.0, dtype=np.float32), np.arange(3.0, dtype=np.float32) * 2,
                                   np.arange(3.0)],
}


_SETTINGS = {"user x64 off": {}, "user JAX_ENABLE_X64=1": {"JAX_ENABLE_X64": "1"},
             # each eager op as plain jax.numpy calls, not one jax.jit per op
             "user x64 off, ARRAYX_JAX_JIT_OPS=0": {"ARRAYX_JAX_JIT_OPS": "0"}}


@pytest.fixture(scope="module", params=list(_SETTINGS))
def report(request):
    return request.param, _run(_SETTINGS[request.param])


def test_user_jax_state_is_left_as_it_was(report):
    kind, rep = report
    user = USER_64 if "JAX_ENABLE_X64=1" in kind else USER_32
    assert rep["before_import"] == user
    for when in ("after_import", "after_executors", "end"):
        assert rep[when] == user, when
    for name, step in rep["steps"].items():
        assert step["user"] == user, name


def test_arrayx_keeps_64_bit_results_equal_to_the_numpy_executors(report):
    _, rep = report
    checked = 0
    for name, step in rep["steps"].items():
        got = step["jax"]
        assert not isinstance(got, str), f"{name}: {got}"
        if name in JAX_ONLY:
            want = [np.asarray(w) for w in JAX_ONLY[name]()]
            assert [g["dtype"] for g in got] == [str(w.dtype) for w in want], name
        else:
            ref = step["numpy"]
            assert not isinstance(ref, str), f"{name} (numpy): {ref}"
            assert [g["dtype"] for g in got] == [r["dtype"] for r in ref], name
            want = [_values(r) for r in ref]
        for i, (g, w) in enumerate(zip(got, want)):
            v = _values(g)
            assert v.shape == w.shape, (name, i)
            # 2**-40 offsets and 1e-300 elements: float32 anywhere on the way would show
            np.testing.assert_allclose(v, w, rtol=1e-9 if g["dtype"] in ("float64", "complex128") else 1e-6,
                                       atol=1e-305, err_msg=f"{name}, result {i}")
            checked += 1
    assert checked > 90
    kinds = {g["dtype"] for step in rep["steps"].values() for g in step["jax"]}
    assert {"float64", "int64", "complex128", "uint64", "float32"} <= kinds


# -- per thread, in this process ------------------------------------------------------------------------


def _x64():
    import jax

    return bool(jax.config.jax_enable_x64)


def test_a_callers_local_32_bit_setting_is_restored_after_each_call():
    import jax
    import jax.numpy as jnp

    x = ax.asarray(np.linspace(0.0, 1.0, 5) + 2.0**-40)
    f = ax.jit(lambda v: ax.exp(v) * 2)
    f(x)
    with jax.enable_x64(False):  # the user's own setting for this thread, whatever the process has
        assert not _x64()
        for got, want in [(x + 1, np.asarray(x) + 1), (ax.exp(x), np.exp(np.asarray(x))), (f(x), np.exp(np.asarray(x)) * 2),
                          (ax.sum(x), np.sum(np.asarray(x))), (x[1:3], np.asarray(x)[1:3]),
                          (ax.zeros(2), np.zeros(2)), (ax.arange(3), np.arange(3))]:
            assert not _x64()
            assert_same(got, want)
        (entry,) = f._cache.values()
        assert entry.fn._cache_size() == 1  # the program traced in 64 bits served the 32-bit caller
        assert jnp.asarray(np.ones(2)).dtype == np.float32
    with jax.enable_x64(True):
        assert_same(x * 2, np.asarray(x) * 2)
        assert _x64()


def test_the_setting_is_restored_when_arrayx_raises():
    import jax

    x = ax.asarray([1.0, 2.0])
    with jax.enable_x64(False):
        with pytest.raises(ValueError):
            ax.reshape(x, (3,))
        with pytest.raises(Exception):
            ax.jit(lambda v: ax.reshape(v, (5,)))(x)
        assert not _x64()


def test_compiled_programs_run_in_64_bits_from_a_32_bit_caller_without_retracing():
    import jax

    x = ax.asarray(np.arange(4.0) + 2.0**-40)
    g = ax.jit(lambda v: v * 3 + ax.sum(v))
    with jax.enable_x64(False):
        first = g(x)
    second = g(x)
    assert_same(first, second)
    assert_same(first, np.asarray(x) * 3 + np.sum(np.asarray(x)))
    (entry,) = g._cache.values()
    assert entry.fn._cache_size() == 1  # one trace, in 64 bits, served both callers


def test_other_threads_get_64_bit_arrayx_results_and_keep_their_own_setting():
    import jax

    x = ax.asarray(np.arange(3.0) + 2.0**-40)
    out, states = [], []

    def work():
        with jax.enable_x64(False):
            out.append((ax.exp(x), ax.arange(3), ax.asarray(np.ones(2))))
            states.append(_x64())

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert states == [False] * 3
    for e, a, o in out:
        assert_same(e, np.exp(np.asarray(x)))
        assert_same(a, np.arange(3))
        assert_same(o, np.ones(2))


def test_a_users_jax_array_keeps_its_dtype():
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(False):
        mine = jnp.asarray(np.arange(3.0))
    assert mine.dtype == np.float32
    a = ax.asarray(mine)
    assert a.dtype == ax.float32 and (a * 2.0).dtype == ax.float32
    assert_same(a + 1, np.arange(3.0, dtype=np.float32) + 1)
    with jax.enable_x64(True):
        wide = jnp.asarray(np.arange(3.0))
    assert ax.asarray(wide).dtype == ax.float64


def test_the_namespace_is_jax_numpy_in_64_bits():
    import jax
    import jax.numpy as jnp

    xp = base.get("jax").xp
    assert xp.__name__ == "jax.numpy" and xp.ndarray is jnp.ndarray and xp.float64 is jnp.float64
    with jax.enable_x64(False):
        assert xp.asarray(np.ones(2)).dtype == np.float64 and xp.linalg.inv(np.eye(2)).dtype == np.float64
        assert xp.arange(3).dtype == np.int64 and not _x64()


def test_debug_callbacks_run_the_users_code_at_the_users_setting(report):
    kind, rep = report
    on = "JAX_ENABLE_X64=1" in kind
    # the values arrive in float64, exact (2**-40 kept); the user's jnp has its own defaults there
    assert rep["callbacks"] == [[on, "float64" if on else "float32", "float64", 1.0 + 2.0**-40],
                                [on, "float64" if on else "float32", "float64", 2.0 + 2.0**-39],
                                [on, "float64" if on else "float32", "float64", 1.0 + 2.0**-40],
                                [on, "float64" if on else "float32", "float64", 1.0 + 2.0**-40]]
