"""Code written for JAX runs unchanged (JAX habits) and jit's cache is bounded:
Python scalars and NumPy arrays as jit arguments, the cache of the function, lower/compile,
block_until_ready, debug.breakpoint, set_executor(None), lax.top_k/collectives, pmap without a name,
make_graph's refusal of iterators; compared with jax.numpy on every executor."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayx as ax
from arrayx import lax
from arrayx.transforms import jitting
from tests.conftest import assert_same

jax = pytest.importorskip("jax")
jnp = jax.numpy

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield



def _jax_value(v):
    return np.asarray(jax.device_get(v))


# JAX's side of the comparisons, one jax.jit function each for the whole module: a new lambda per call
# (per executor's item, per loop pass) was a new function for jax.jit, traced and compiled again each time
_JAX_SIN = jax.jit(lambda v: jnp.sin(v))
_JAX_X_S_PLUS_S = jax.jit(lambda x, s: x * s + s)
_JAX_TWICE_PLUS = jax.jit(lambda a, b: a * 2.0 + b)
_JAX_GRAD_SUM_OF_SQUARES = jax.jit(jax.grad(lambda v: jnp.sum(v * v)))
_JAX_TOP_3 = jax.jit(lambda v: jax.lax.top_k(v, 3))
_JAX_COLLECTIVES = jax.jit(jax.vmap(
    lambda x: jax.lax.psum(x, "i") - jax.lax.pmax(x, "i") + jax.lax.pmean(x, "i") * jax.lax.axis_index("i"),
    axis_name="i"))
_JAX_GATHER_PLUS_MIN = jax.jit(jax.vmap(lambda x: jax.lax.all_gather(x, "i") + jax.lax.pmin(x, "i"),
                                        axis_name="i"))


# -- Python scalars and NumPy arrays as jit arguments --------------------------------------------


def test_python_scalar_argument_is_a_weakly_typed_input(executor):
    f = ax.jit(lambda v: ax.sin(v))
    got = f(2.0)
    assert got.executor == executor
    assert_same(got, _jax_value(_JAX_SIN(2.0)))
    g = ax.jit(lambda x, s: x * s + s)
    x32 = ax.asarray([1.0, 2.0], dtype=ax.float32)
    for s in (0.5, 1.5, -3.25, 1e-3):  # one trace for every value, float32 kept (weak typing)
        out = g(x32, s)
        want = _jax_value(_JAX_X_S_PLUS_S(np.asarray([1.0, 2.0], np.float32), s))
        assert out.dtype == ax.float32 == want.dtype
        assert_same(out, want)
    assert g.trace_count == 1
    if executor == "jax":  # the scalar reaches jax.jit weakly typed, as traced: one XLA compile
        (entry,) = g._cache.values()
        assert entry.fn._cache_size() == 1
    assert g(x32, 2).dtype == ax.float32 and g.trace_count == 2  # an int is another input type
    ints = ax.jit(lambda i, n: i + n)
    assert_same(ints(ax.asarray([1, 2], dtype=ax.int8), 3), np.asarray([4, 5], np.int8))


def test_ten_thousand_float_values_trace_once():
    f = ax.jit(lambda x, lr: x - lr * x)
    x = ax.ones(3)
    for i in range(2000):
        f(x, 1.0 / (i + 1))
    assert f.trace_count == 1 and len(f._cache) == 1
    assert_same(f(x, 0.25), np.full(3, 0.75))


def test_numpy_and_array_like_arguments_are_converted(executor):
    class OnlyArray:  # __array__ alone
        def __array__(self, dtype=None, copy=None):
            return np.arange(3.0)

    f = ax.jit(lambda a, b: a * 2.0 + b)
    a = np.asarray([1.0, 2.0, 3.0])
    got = f(a, OnlyArray())
    assert got.executor == executor
    assert_same(got, _jax_value(_JAX_TWICE_PLUS(a, np.arange(3.0))))
    mixed = f(ax.asarray(a), np.ones(3))  # converted onto the arrayx array's executor
    assert_same(mixed, a * 2.0 + 1.0)
    assert_same(ax.grad(lambda v: ax.sum(v * v))(a), _jax_value(_JAX_GRAD_SUM_OF_SQUARES(a)))
    assert_same(ax.vmap(lambda v: v * 2.0)(a), a * 2.0)
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): arguments must be .*got str"):
        f(a, "no")
    with pytest.raises(OverflowError, match="does not fit int64"):
        ax.jit(lambda n: n + 1)(1 << 70)


# -- the cache belongs to the function ------------------------------------------------------------


def test_jit_made_in_a_loop_traces_the_function_once(executor):
    staged = []

    def body(i):
        staged.append(1)
        return i + 1

    i = ax.asarray(0)
    for _ in range(20):
        i = ax.jit(body)(i)
    assert int(i) == 20 and len(staged) == 1
    for _ in range(5):  # other jit options: a cache of their own
        ax.jit(body, donate_argnums=0)(ax.asarray(0))
    assert len(staged) == 2


def test_cache_is_bounded_least_recently_used_first(monkeypatch):
    monkeypatch.setenv("ARRAYX_JIT_CACHE_SIZE", "4")
    f = ax.jit(lambda x: x + 1.0)
    first = ax.ones(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the retrace storm, tested below
        for n in range(1, 11):
            f(ax.ones(n))
            f(first)  # kept in use: never the least recently used
    assert len(f._cache) == 4 and len(f._store.fast) <= 4
    shapes = {k[3][0][0] for k in f._cache}
    assert (1,) in shapes and (10,) in shapes and (2,) not in shapes
    before = f.trace_count
    f(first)
    assert f.trace_count == before  # still cached
    f(ax.ones(2))
    assert f.trace_count == before + 1  # dropped, staged again
    assert_same(f(ax.ones(3)), np.full(3, 2.0))


@pytest.mark.parametrize("raw", ["abc", "0", "-5", "1.5"])
def test_bad_cache_size_is_refused_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("ARRAYX_JIT_CACHE_SIZE", raw)
    with pytest.raises(ValueError, match=r"ARRAYX_JIT_CACHE_SIZE=.*whole number"):
        ax.jit(lambda x: x * 3.0)(ax.ones(2))


def test_retrace_warning_names_the_argument_and_the_fix():
    def step(params, x):
        return params["w"] * x

    f = ax.jit(step)
    w = ax.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 12):
            f({"w": w}, ax.ones((n, 2)))
    (storm,) = [str(w.message) for w in caught if "retrace storm" in str(w.message)]
    assert "the shape of argument 'x' (position 1) keeps changing (float64[8, 2] -> float64[9, 2])" in storm
    assert "pad or bucket" in storm
    g = ax.jit(lambda p, lr: p * lr, static_argnames="lr")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(12):
            g(w, lr=0.1 * k)
    (storm,) = [str(w.message) for w in caught if "retrace storm" in str(w.message)]
    assert "static argument 'lr' keeps changing" in storm and "as an array" in storm


# -- lower / compile, block_until_ready --------------------------------------------------------------


def test_lower_compile_and_as_text(executor):
    f = ax.jit(lambda v: ax.sin(v) * 2.0)
    x = ax.asarray([0.5, 1.0])
    lowered = f.lower(x)
    assert "sin" in lowered.as_text() and "sin" in str(lowered)
    compiled = lowered.compile()
    assert_same(compiled(x), _jax_value(jax.jit(lambda v: jnp.sin(v) * 2.0).lower(np.asarray([0.5, 1.0]))
                                        .compile()(np.asarray([0.5, 1.0]))))
    assert isinstance(compiled.as_text(), str)
    with pytest.raises(TypeError, match=r"another signature.*shape"):
        compiled(ax.ones(3))
    assert f.trace(x).lower().compile()(x).shape == (2,)


def test_block_until_ready_returns_the_array(executor):
    x = ax.asarray([1.0, 2.0]) * 2.0
    assert x.block_until_ready() is x
    y = ax.jit(lambda v: v + 1.0)(x).block_until_ready()
    assert_same(y, np.asarray([3.0, 5.0]))


# -- debug.breakpoint ------------------------------------------------------------------------------


def test_debug_breakpoint_hands_runtime_values_to_the_debugger(executor, monkeypatch):
    seen = []
    monkeypatch.setattr(ax.debug, "DEBUGGER", lambda ns, where: seen.append((dict(ns), where)))

    def f(x):
        y = ax.sin(x) * 2.0
        ax.debug.breakpoint()
        return y + 1.0

    x = ax.asarray([0.25, 0.5])
    want = np.sin([0.25, 0.5]) * 2.0
    f(x)  # eagerly
    ax.jit(f)(x)  # compiled: each run
    ax.jit(f)(x * 2.0)
    assert len(seen) == 3
    for ns, where in seen[:2]:
        np.testing.assert_allclose(ns["y"], want, rtol=1e-12)
        np.testing.assert_allclose(ns["x"], [0.25, 0.5])
        assert "test_jit_habits.py" in where and "in f" in where
    np.testing.assert_allclose(seen[2][0]["y"], np.sin([0.5, 1.0]) * 2.0, rtol=1e-12)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ax.debug.breakpoint(nope=1)


# -- set_executor(None), lax ------------------------------------------------------------------------


def test_set_executor_none_restores_the_default(monkeypatch):
    monkeypatch.delenv("ARRAYX_EXECUTOR", raising=False)
    try:
        ax.set_executor("numpy")
        ax.set_executor(None)
        assert ax.get_executor().name == "numpy"
        assert ax.ones(2).executor == "numpy"
    finally:
        ax.set_executor(None)


def test_lax_top_k_gives_int32_indices_as_jax(executor):
    v = np.asarray([[3.0, 1.0, 3.0, 2.0], [0.0, 5.0, -1.0, 5.0]])
    values, indices = lax.top_k(ax.asarray(v), 3)
    jv, ji = _JAX_TOP_3(v)
    assert indices.dtype == ax.int32 == ji.dtype
    assert_same(values, _jax_value(jv))
    assert_same(indices, _jax_value(ji))


def test_lax_reexports_the_collectives(executor):
    for name in ("psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"):
        assert getattr(lax, name) is getattr(ax, name)
    v = np.arange(6.0).reshape(3, 2)

    def mine(x):
        return lax.psum(x, "i") - lax.pmax(x, "i") + lax.pmean(x, "i") * lax.axis_index("i")

    assert_same(ax.vmap(mine, axis_name="i")(ax.asarray(v)), _jax_value(_JAX_COLLECTIVES(v)))
    gathered = ax.vmap(lambda x: lax.all_gather(x, "i") + lax.pmin(x, "i"), axis_name="i")(ax.asarray(v))
    assert_same(gathered, _jax_value(_JAX_GATHER_PLUS_MIN(v)))


def test_pmap_without_an_axis_name(executor):
    v = np.arange(3.0).reshape(1, 3)  # one member: one device on the jax executor
    got = ax.pmap(lambda x: ax.sin(x) * 2.0)(ax.asarray(v))
    assert_same(got, _jax_value(jax.pmap(lambda x: jnp.sin(x) * 2.0)(v)))


# -- make_graph -------------------------------------------------------------------------------------


def test_make_graph_refuses_an_iterator_naming_the_argument():
    with pytest.raises(TypeError, match=r"make_graph\(<lambda>\): argument 0 is an iterator \(range_iterator\)"):
        ax.make_graph(lambda v: v)(iter(range(3)))
    with pytest.raises(TypeError, match=r"argument 1\['a'\]\[0\] is an iterator"):
        ax.make_graph(lambda a, b: a)(1.0, {"a": [iter([1])]})


def test_the_jit_module_documents_its_cache():
    assert jitting.cache_size() == jitting.CACHE_SIZE
    assert "ARRAYX_JIT_CACHE_SIZE" in jitting.cache_size.__doc__
