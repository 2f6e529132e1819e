"""jit's cache-hit path (transforms/_jit_fast.py): the generated reader of the arguments' structure,
the generated wrapping of the outputs, and the jax program's 64-bit scope entered inline give what
the slow path gives, on every executor, and step aside where they do not apply."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as _base
from arrayx.transforms import jitting
from tests.executors.platform_tolerances import assert_close

Pair = collections.namedtuple("Pair", "first second")


def _close(a, b):
    # condition 4: exp of a product amplifies the product's relative error by the exponent (up to ~4
    # here); a TPU's default float32 products are one bfloat16 pass (1.4% seen on the chip, session 23)
    assert_close(a, b, rtol=1e-12, atol=1e-13, uses=("matmul", "exp"), condition=4)


def _f(params, x):
    (w, b), (v, c) = params["layers"]
    h = ax.exp(x @ w + b) * params["scale"]
    return {"out": h @ v + c, "parts": [ax.sum(h), (h[0], None)], "n": params["scale"] * 2.0}


def _want(params, x):
    (w, b), (v, c) = params["layers"]
    h = np.exp(x @ w + b) * params["scale"]
    return {"out": h @ v + c, "parts": [h.sum(), (h[0], None)], "n": params["scale"] * 2.0}


def _params(rng, scale=1.5):
    return {"layers": [(rng.standard_normal((3, 4)), rng.standard_normal(4)),
                       (rng.standard_normal((4, 2)), rng.standard_normal(2))], "scale": np.float64(scale)}


def _on(tree):
    return ax.pytree.map(ax.asarray, tree)


def _check(got, want):
    assert got["parts"][1][1] is None and isinstance(got["parts"], list) and isinstance(got["parts"][1], tuple)
    for a, b in zip(ax.pytree.leaves(got), ax.pytree.leaves(want)):
        assert isinstance(a, ax.Array)
        _close(a, np.asarray(b))


def test_reader_path_gives_the_slow_paths_values_and_structures(executor):
    rng = np.random.default_rng(0)
    jf = ax.jit(lambda p, x: _f(p, x))  # a function of its own: its own cache
    x = rng.standard_normal((5, 3))
    for scale in (1.0, 2.0, 0.5, 3.0):  # new arrays each call, as in a training loop
        p = _params(rng, scale)
        _check(jf(_on(p), ax.asarray(x)), _want(p, x))
    assert jf.trace_count == 1
    store = jf._store
    assert store.reader is not None and len(store.read) == 1  # the later calls were read by it
    with ax.disable_jit():  # the function itself, for the output structure
        plain = _f(_on(p), ax.asarray(x))
    got = jf(_on(p), ax.asarray(x))
    assert ax.pytree.structure(got) == ax.pytree.structure(plain)


def test_reader_steps_aside_for_other_structures_dtypes_and_leaves(executor):
    rng = np.random.default_rng(1)
    jf = ax.jit(lambda p, x: _f(p, x))  # a function of its own: its own cache
    x = rng.standard_normal((5, 3))
    p = _params(rng)
    _check(jf(_on(p), ax.asarray(x)), _want(p, x))
    _check(jf(_on(p), ax.asarray(x)), _want(p, x))
    # another dict key order (the same keys): the same entry, values by key
    q = _on(p)
    reordered = {"scale": q["scale"], "layers": q["layers"]}
    _check(jf(reordered, ax.asarray(x)), _want(p, x))
    assert jf.trace_count == 1
    # a tuple where a list was, an extra key, another length: staged again, right values
    as_tuple = {"layers": tuple(q["layers"]), "scale": q["scale"]}
    _check(jf(as_tuple, ax.asarray(x)), _want(p, x))
    assert jf.trace_count == 2
    extra = {**q, "unused": ax.asarray(0.0)}
    _check(jf(extra, ax.asarray(x)), _want(p, x))
    assert jf.trace_count == 3
    # another dtype of one leaf: another entry
    p32 = {"layers": q["layers"], "scale": ax.asarray(p["scale"], dtype=ax.float32)}
    jf(p32, ax.asarray(x))
    assert jf.trace_count == 4
    # a Python scalar and a NumPy array as leaves: the slow path converts them, same values
    _check(jf({"layers": q["layers"], "scale": float(p["scale"])}, ax.asarray(x)), _want(p, x))
    _check(jf(q, x), _want(p, x))
    # back to the first structure: still the cache-hit path's values
    _check(jf(_on(p), ax.asarray(x)), _want(p, x))


def test_reader_refuses_arrays_of_two_executors(executor):
    if executor == "numpy":
        pytest.skip("needs a second executor")
    rng = np.random.default_rng(2)
    jf = ax.jit(lambda p, x: _f(p, x))  # a function of its own: its own cache
    p, x = _params(rng), rng.standard_normal((5, 3))
    jf(_on(p), ax.asarray(x))
    jf(_on(p), ax.asarray(x))
    with pytest.raises(TypeError, match="different executors"):
        jf(_on(p), ax.asarray(x, device="numpy"))


def test_generated_output_wrapping_keeps_every_structure(executor):
    def f(x):
        return (x + 1.0,), [x * 2.0, {"b": x - 1.0, "a": None}], Pair(x, -x), {"k": (x,)}

    x = ax.asarray(np.arange(4.0))
    jf = ax.jit(f)
    for _ in range(3):
        got = jf(x)
        assert isinstance(got, tuple) and isinstance(got[0], tuple) and isinstance(got[1], list)
        assert got[1][1]["a"] is None and type(got[2]) is Pair and isinstance(got[3]["k"], tuple)
        want = f(x)
        assert list(got[1][1]) == list(want[1][1]) == ["b", "a"]  # the function's own key order
        assert ax.pytree.structure(got) == ax.pytree.structure(want)
        for a, b in zip(ax.pytree.leaves(got), ax.pytree.leaves(want)):
            assert a.__class__ is ax.Array and a.device == x.device
            _close(a, np.asarray(b))


def test_jax_program_keeps_its_64_bit_scope_on_the_cache_hit_path():
    jx = _base.get("jax")
    if not jx.available():
        pytest.skip("jax executor unavailable")
    if jx._has_tpu:
        pytest.skip("a TPU's default float is float32 (and its float64 programs may run in 32 bits)")
    with ax.use_executor("jax"):
        f = ax.jit(lambda x, y: (x * y + 1.0, ax.sum(ax.astype(x, ax.int32), dtype=ax.int64)))
        x64 = ax.asarray(np.linspace(0.0, 3.5, 8))
        for _ in range(4):
            a, b = f(x64, x64)
            assert a.dtype == ax.float64 and b.dtype == ax.int64 and int(b) == 12
            _close(a, np.linspace(0.0, 3.5, 8) ** 2 + 1.0)
        x32 = ax.asarray(np.linspace(0.0, 3.5, 8), dtype=ax.float32)
        for _ in range(3):
            a, b = f(x32, x32)
            assert a.dtype == ax.float32 and b.dtype == ax.int64
        entries = list(f._store.cache.values())
        assert len(entries) == 2
        for entry in entries:
            assert entry.inner is not None  # the scope entered inline
            assert entry.inner._cache_size() == 1  # traced once, with 64-bit types: never again in 32 bits
        with ax.default_matmul_precision("highest"):  # a named precision: the program's own path
            a, _ = f(x64, x64)
        assert a.dtype == ax.float64
        _close(a, np.linspace(0.0, 3.5, 8) ** 2 + 1.0)


def test_transposed_jax_buffer_takes_the_key_path():
    if not _base.get("jax").available():
        pytest.skip("jax executor unavailable")
    rng = np.random.default_rng(3)
    m = rng.standard_normal((512, 512))
    with ax.use_executor("jax"):
        f = ax.jit(lambda a, b: a @ b[:, :1])
        a, b = ax.asarray(m), ax.asarray(m)
        for _ in range(3):
            _close(f([a][0], b), m @ m[:, :1])
        t = ax.asarray(m).T  # a deferred transpose's buffer: not the class the reader was made for
        _close(f(t, b), m.T @ m[:, :1])
        _close(f(a, t), m @ m.T[:, :1])
        assert f.trace_count == 1


def test_generated_code_holds_no_dict_key_of_the_user(executor, monkeypatch):
    """The reader and the output wrapping are generated Python: the dict keys of the arguments and of
    the results (the user's strings) are bound as names, never written into the source."""
    from arrayx.transforms import _jit_fast

    sources = []
    real_compile = compile

    def spy(source, filename, mode, *a, **k):
        if filename.startswith("<arrayx jit"):
            sources.append(source)
        return real_compile(source, filename, mode, *a, **k)

    monkeypatch.setattr(_jit_fast, "compile", spy, raising=False)
    odd = ["'); import os; ('", 'a"b', "line\nbreak", "\\x00", "{s0}"]
    jf = ax.jit(lambda d: {k: v * 2.0 for k, v in d.items()})
    for step in range(3):
        args = {k: ax.asarray(np.full(2, float(i + step))) for i, k in enumerate(odd)}
        got = jf(args)
        assert list(got) == odd
        for i, k in enumerate(odd):
            _close(got[k], np.full(2, 2.0 * (i + step)))
    assert len(sources) == 3 and jf.trace_count == 1  # a reader, an output builder and a whole call
    for source in sources:
        for k in odd:
            assert k not in source and repr(k) not in source


def _g(p, x):
    return {"y": ax.exp(x @ p["w"]) + p["b"], "n": ax.sum(x)}


def _g_want(p, x):
    return {"y": np.exp(x @ p["w"]) + p["b"], "n": x.sum()}


def _check_g(got, p, x):
    want = _g_want(p, x)
    assert sorted(got) == ["n", "y"]
    _close(got["y"], want["y"])
    _close(got["n"], np.asarray(want["n"]))


def test_generated_call_steps_aside_where_mode_executor_or_shapes_differ(executor):
    """The generated whole call (the store's ``hit``) answers only calls of the key it was made for:
    another mode, another executor for new arrays, other shapes take the tables or stage again, and
    every answer holds the function's values."""
    rng = np.random.default_rng(4)
    jf = ax.jit(lambda p, x: _g(p, x))  # a function of its own: its own cache
    p = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = {n: rng.standard_normal((n, 3)) for n in (4, 6)}
    for _ in range(3):
        _check_g(jf(_on(p), ax.asarray(xs[4])), p, xs[4])
    first = jf._store.hit
    assert first is not None and jf.trace_count == 1
    for n in (6, 4, 6, 4, 6):  # two shapes in turn: two entries, each call right
        _check_g(jf(_on(p), ax.asarray(xs[n])), p, xs[n])
    assert jf.trace_count == 2
    with ax.strict():  # the mode is in the key: staged again, right values
        _check_g(jf(_on(p), ax.asarray(xs[4])), p, xs[4])
        _check_g(jf(_on(p), ax.asarray(xs[4])), p, xs[4])
    assert jf.trace_count == 3
    _check_g(jf(_on(p), ax.asarray(xs[4])), p, xs[4])  # out of the block: the first entry again
    assert jf.trace_count == 3
    if jitting.sharding_hook is None:  # (once arrayx.sharding has placed arrays, its hook takes the tables)
        assert jf._store.hit is first
    other = "numpy" if executor != "numpy" else next(
        (n for n in ("jax", "numba", "dask") if _base.get(n).available()), None)
    if other is not None:
        pa, xa = _on(p), ax.asarray(xs[4])  # arrays of this test's executor
        with ax.use_executor(other):  # new arrays' executor is in the key
            _check_g(jf(pa, xa), p, xs[4])
            _check_g(jf(pa, xa), p, xs[4])
        assert jf.trace_count == 4
    _check_g(jf(_on(p), ax.asarray(xs[4])), p, xs[4])


def test_generated_call_leaves_with_its_entry(executor, monkeypatch):
    """An entry dropped from the cache (least recently used) takes its generated call with it: the next
    call of its signature stages again, with right values."""
    monkeypatch.setenv("ARRAYX_JIT_CACHE_SIZE", "1")
    rng = np.random.default_rng(5)
    jf = ax.jit(lambda p, x: _g(p, x))  # a function of its own: its own cache
    p = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    x4, x6 = rng.standard_normal((4, 3)), rng.standard_normal((6, 3))
    for _ in range(2):
        _check_g(jf(_on(p), ax.asarray(x4)), p, x4)
    hit4 = jf._store.hit
    assert hit4 is not None
    _check_g(jf(_on(p), ax.asarray(x6)), p, x6)  # x4's entry dropped (one entry kept)
    assert len(jf._store.cache) == 1 and jf._store.hit is not hit4
    from arrayx.transforms._jit_fast import MISS

    assert hit4((_on(p), ax.asarray(x4))) is MISS  # kept by someone: it still steps aside (its entry left)
    _check_g(jf(_on(p), ax.asarray(x4)), p, x4)
    assert jf.trace_count == 3
    jf.clear_cache()
    assert jf._store.hit is None
    _check_g(jf(_on(p), ax.asarray(x4)), p, x4)


def test_generated_call_runs_the_program_once_a_call_and_not_when_made(executor):
    """Making the generated call runs nothing (a debug callback counts the program's runs), and a
    function with static arguments has none (its calls take the slow path), with right values."""
    seen = []
    jf = ax.jit(lambda x: (ax.debug.callback(lambda v: seen.append(float(v.sum())), x), x * 2.0)[1])
    x = ax.asarray(np.arange(3.0))
    for i in range(4):
        _close(jf(x), np.arange(3.0) * 2.0)
        assert seen == [3.0] * (i + 1)
    assert jf._store.hit is not None
    js = ax.jit(lambda x, k: x * k, static_argnums=1)
    for k in (2.0, 3.0, 2.0):
        _close(js(x, k), np.arange(3.0) * k)
    assert js._store.hit is None and js.trace_count == 2
