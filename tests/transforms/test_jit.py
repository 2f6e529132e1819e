"""jit: staged once per signature, run as each executor's compiled graph, composed with grad."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayx as ax
from arrayx.core.primitives import ConcretizationError, DataDependentShapeError
from conformance import profile
from tests.conftest import assert_same
from tests.executors.platform_tolerances import assert_close
from conformance.differential.table.derivatives import CASES, make_inputs


def _close(a, b, rtol=1e-12, atol=1e-13, *, uses=(), condition=1.0):
    """``a`` (an arrayx result) equals ``b``: within ``rtol``/``atol`` where it is 64-bit (every CPU
    device), else within the accuracy of its dtype on the device that computed it for the functions
    ``uses`` (a TPU's float32 transcendentals and products), times ``condition``
    (``tests/executors/platform_tolerances.py``)."""
    assert_close(a, b, rtol=rtol, atol=atol, uses=uses, condition=condition)


#: the derivative examples (compositions) under jit: a seeded sample in the ci profile, all in the deep one;
#: every table function under jit on every executor is conformance/test_transforms_quick.py's
JIT_CASES = profile.sample("jit compositions", CASES, 40)


@pytest.mark.parametrize("case", JIT_CASES, ids=[c.name for c in JIT_CASES])
def test_jit_equals_the_function_for_every_case(case, executor):
    if executor in case.executors:
        pytest.skip(f"{case.name} is not supported by {executor}")
    xs = [ax.asarray(x) for x in make_inputs(case)]

    def f(*a):
        return case.fn(ax, *a)

    try:
        want = f(*xs)
    except (NotImplementedError, TypeError) as e:
        pytest.skip(f"{executor} cannot run {case.name}: {e}")
    if case.name == "getitem_mask":  # a data-dependent shape: staging refuses it on every executor
        with pytest.raises(DataDependentShapeError, match=r"^boolean_mask: the size of its result depends .*where\("):
            ax.jit(f)(*xs)
        return
    got = ax.jit(f)(*xs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        assert g.executor == executor and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12, err_msg=case.name)


def _mlp_params(rng, sizes):
    return [{"w": ax.asarray(rng.standard_normal((m, n)) / np.sqrt(m)), "b": ax.asarray(np.zeros(n))}
            for m, n in zip(sizes[:-1], sizes[1:])]


def _mlp_loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = ax.tanh(h @ layer["w"] + layer["b"])
    logits = h @ params[-1]["w"] + params[-1]["b"]
    logp = logits - ax.logsumexp(logits, axis=1, keepdims=True) if hasattr(ax, "logsumexp") else (
        logits - ax.log(ax.sum(ax.exp(logits), axis=1, keepdims=True)))
    return -ax.mean(ax.sum(logp * y, axis=1))


def _sgd_step(params, x, y, lr):
    loss, grads = ax.value_and_grad(_mlp_loss)(params, x, y)
    new = [{k: p[k] - lr * g[k] for k in p} for p, g in zip(params, grads)]
    return new, loss


def test_mlp_training_step(executor):
    rng = np.random.default_rng(0)
    params = _mlp_params(rng, [6, 8, 8, 3])
    x = ax.asarray(rng.standard_normal((5, 6)))
    y = ax.asarray(np.eye(3)[rng.integers(0, 3, 5)])
    step = ax.jit(_sgd_step, static_argnums=3)
    p_eager, p_jit = params, params
    uses = ("matmul", "tanh", "exp", "log")
    for _ in range(3):
        p_eager, l_eager = _sgd_step(p_eager, x, y, 0.1)
        p_jit, l_jit = step(p_jit, x, y, 0.1)
        _close(l_jit, l_eager, rtol=1e-11, uses=uses)
    for a, b in zip(ax.pytree.leaves(p_jit), ax.pytree.leaves(p_eager)):
        assert a.executor == executor
        _close(a, b, rtol=1e-11, uses=uses)
    assert step.trace_count == 1


def test_grad_of_jit_and_jit_of_grad(executor):
    w = ax.asarray(np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.7]]))

    def loss(x, w):
        return ax.sum(ax.tanh(x @ w) ** 2) + ax.sum(ax.exp(x) * 0.1)

    x = ax.asarray(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
    want = ax.grad(loss)(x, w)
    jl = ax.jit(loss)
    uses = ("matmul", "tanh", "exp")  # on a TPU: float32, products in one bfloat16 pass (JAX's default)
    _close(ax.grad(jl)(x, w), want, uses=uses)
    _close(ax.grad(lambda x: jl(x, w))(x), want, uses=uses)  # w is a constant of the outer function
    _close(ax.jit(ax.grad(loss))(x, w), want, uses=uses)
    _close(ax.jit(ax.grad(jl))(x, w), want, uses=uses)
    # second order through jit
    h = ax.grad(lambda x: ax.sum(ax.grad(jl)(x, w)))(x)
    _close(h, ax.grad(lambda x: ax.sum(ax.grad(loss)(x, w)))(x), rtol=1e-10, uses=uses)
    t = ax.jvp(lambda x: jl(x, w), (x,), (ax.ones_like(x),))[1]
    _close(t, ax.sum(want), uses=uses)


def test_custom_rules_and_checkpoint_under_jit(executor):
    @ax.custom_vjp
    def scaled(x):
        return ax.sin(x)

    scaled.defvjp(lambda x: (ax.sin(x), None), lambda res, g: (100.0 * g,))
    block = ax.checkpoint(lambda x: ax.sin(ax.cos(x)))
    x = ax.asarray(np.array([0.2, 0.4]))
    f = ax.jit(lambda x: ax.sum(scaled(x) + block(x)))
    want = 100.0 + np.cos(np.cos([0.2, 0.4])) * -np.sin([0.2, 0.4])
    _close(ax.grad(f)(x), want, uses=("sin", "cos"))
    _close(ax.jit(ax.grad(f))(x), want, uses=("sin", "cos"))
    _close(f(x), np.sum(np.sin([0.2, 0.4]) + np.sin(np.cos([0.2, 0.4]))), uses=("sin", "cos"))
    names = {e.prim.name for e in f.trace(x).graph.equations}
    assert {"custom_vjp_call", "checkpoint"} <= names


def test_random_inside_jit_is_bit_identical_to_eager(executor):
    def draw(key):
        k1, k2 = ax.random.split(key)
        return ax.random.normal(k1, (4,)), ax.random.uniform(k2, (3,), dtype=ax.float32)

    key = ax.random.key(42)
    for a, b in zip(ax.jit(draw)(key), draw(key)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_cache_hits_and_misses():
    calls = []

    def f(x, n):
        calls.append(1)  # a Python side effect: runs when staged, not on every call
        return x * n

    jf = ax.jit(f, static_argnums=1)
    x = ax.ones(3)
    jf(x, 2)
    jf(x, 2)
    jf(ax.zeros(3), 2)
    assert jf.trace_count == 1 and len(calls) == 1
    jf(x, 3)  # a new static value
    assert jf.trace_count == 2
    jf(ax.ones(4), 3)  # a new shape
    jf(ax.ones(4, dtype=ax.float32), 3)  # a new dtype
    assert jf.trace_count == 4
    g = ax.jit(lambda x, s: x * s)
    x32 = ax.ones(3, dtype=ax.float32)
    assert g(x32, 2.0).dtype == ax.float32  # a Python scalar stays weakly typed
    assert g(x32, 2).dtype == ax.float32
    assert g.trace_count == 2  # float and int scalars are different keys
    assert g(ax.ones(3, dtype=ax.int8), 3).dtype == ax.int8


def test_arrays_in_containers_take_the_cache_hit_path_with_the_right_entry(executor):
    # parameters in a list of tuples, a dict: repeated calls find their entry by structure, shapes and
    # dtypes; another structure (other keys, another length) or another dtype is another entry
    calls = []

    def f(params, x):
        calls.append(1)
        (w, b), = params["layers"]
        return {"y": x @ w + b, "n": params["scale"] * ax.sum(x)}

    jf = ax.jit(f)
    rng = np.random.default_rng(0)
    w, b, x = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((4, 3))
    for scale in (1.0, 2.0, 3.0):
        params = {"layers": [(ax.asarray(w), ax.asarray(b))], "scale": ax.asarray(scale)}
        got = jf(params, ax.asarray(x))
        _close(got["y"], x @ w + b, uses=("matmul",))  # float32 products on a TPU, float64's elsewhere
        _close(got["n"], scale * x.sum())
    assert jf.trace_count == 1 and len(calls) == 1
    assert len(jf._store.fast) == 1  # the calls after the first took the cache-hit path
    other = {"layers": [(ax.asarray(w), ax.asarray(b))], "scale": ax.asarray(1.0), "extra": ax.asarray(0.0)}
    _close(jf(other, ax.asarray(x))["y"], x @ w + b, uses=("matmul",))
    assert jf.trace_count == 2 and len(calls) == 2  # another structure: staged again
    # another dtype (float16 here: every device holds it, and none takes host float64 data as it)
    params16 = {"layers": [(ax.asarray(w, dtype=ax.float16), ax.asarray(b, dtype=ax.float16))],
                "scale": ax.asarray(2.0, dtype=ax.float16)}
    got = jf(params16, ax.asarray(x, dtype=ax.float16))
    assert got["y"].dtype == ax.float16
    assert jf.trace_count == 3
    # the same structure with a Python scalar leaf, then a NumPy array: the slow path converts them
    params = {"layers": [(ax.asarray(w), ax.asarray(b))], "scale": 5.0}
    _close(jf(params, ax.asarray(x))["n"], 5.0 * x.sum())
    _close(jf({"layers": [(w, ax.asarray(b))], "scale": ax.asarray(1.0)}, ax.asarray(x))["y"], x @ w + b,
           uses=("matmul",))


def test_namedtuples_and_registered_nodes_in_the_cache_hit_path(executor):
    # a node registered with arrayx only (JAX's flatten, which the cache-hit key uses once JAX is
    # loaded, sees it as a leaf) and a namedtuple: the same values as the function, every call
    import collections

    Pair = collections.namedtuple("Pair", "scale shift")

    class Box:  # arrayx knows it, JAX does not: its leaf order is the reverse of its fields
        def __init__(self, a, b):
            self.a, self.b = a, b

    ax.pytree.register_node(Box, lambda t: ((t.b, t.a), None), lambda _, ch: Box(ch[1], ch[0]))
    jf = ax.jit(lambda p, box, x: p.scale * x + p.shift - box.a * box.b)
    rng = np.random.default_rng(1)
    for _ in range(3):
        s, t, a, b, x = (rng.standard_normal(3) for _ in range(5))
        got = jf(Pair(ax.asarray(s), ax.asarray(t)), Box(ax.asarray(a), ax.asarray(b)), ax.asarray(x))
        _close(got, s * x + t - a * b)
    assert jf.trace_count == 1
    assert len(jf._store.fast) == 1  # the calls after the first took the cache-hit path


def test_arrays_of_two_executors_in_a_container_are_refused_by_name():
    jf = ax.jit(lambda p: p[0] + p[1])
    a = ax.ones(3)
    assert float(ax.sum(jf([a, a]))) == 6.0
    with ax.use_executor("numpy"):
        b = ax.ones(3)
    other = next((n for n in ("jax", "numba", "dask") if n in ax.executors()), None)
    if other is None:
        pytest.skip("only the numpy executor is available")
    with ax.use_executor(other):
        c = ax.ones(3)
    with pytest.raises(TypeError, match="executors"):
        jf([b, c])


def test_jitted_function_runs_on_the_inputs_executor(executor):
    f = ax.jit(lambda x: ax.exp(x) + ax.zeros(3))
    y = f(ax.asarray([0.0, 1.0, 2.0]))
    assert y.executor == executor
    _close(y, np.exp([0.0, 1.0, 2.0]), uses=("exp",))


def test_static_argnames_kwargs_and_decorator_forms():
    @ax.jit(static_argnames="axis")
    def total(x, *, axis):
        return ax.sum(x, axis=axis)

    x = ax.asarray(np.arange(6.0).reshape(2, 3))
    _close(total(x, axis=0), [3.0, 5.0, 7.0])
    _close(total(x, axis=1), [3.0, 12.0])
    assert total.trace_count == 2

    @ax.jit
    def pair(a, b=None):
        return {"s": a + b, "d": a - b}

    out = pair(x, b=x)
    _close(out["s"], 2 * np.asarray(x))
    _close(out["d"], 0 * np.asarray(x))


def test_unhashable_static_argument_is_refused_with_the_reason():
    f = ax.jit(lambda x, shape: ax.reshape(x, shape), static_argnums=1)
    with pytest.raises(TypeError, match=r"static argument 1 is static.*must be hashable.*list.*tuple"):
        f(ax.ones(6), [2, 3])
    _close(f(ax.ones(6), (2, 3)), np.ones((2, 3)))


def test_non_array_argument_is_refused():
    with pytest.raises(TypeError, match=r"jit\(<lambda>\): arguments must be arrayx arrays.*static_argnums"):
        ax.jit(lambda x: x)("a string")


def test_python_control_flow_on_a_staged_value_names_the_alternatives():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError, match=r"bool\(\).*where.*cond.*static_argnums"):
        ax.jit(f)(ax.asarray(1.0))
    with ax.disable_jit():
        assert float(ax.jit(f)(ax.asarray(-2.0))) == 2.0


SHAPE_FROM_ARGUMENT = [
    ("zeros(n)", lambda n: ax.zeros(n), "zeros: shape"),
    ("zeros((n,2))", lambda n: ax.zeros((n, 2)), "zeros: shape"),
    ("reshape", lambda n: ax.reshape(ax.ones(4), (n, -1)), "reshape: shape"),
    ("broadcast_to", lambda n: ax.broadcast_to(ax.ones(1), (n,)), "broadcast_to: shape"),
    ("sum axis", lambda n: ax.sum(ax.ones((2, 2)), axis=n), "sum: axis"),
]


@pytest.mark.parametrize("case", SHAPE_FROM_ARGUMENT, ids=[c[0] for c in SHAPE_FROM_ARGUMENT])
def test_traced_shape_points_at_static_argnums(executor, case):
    """A Python int argument is traced by jit, so using it as a shape fails: the error names the
    function and the argument and points at static_argnums (JAX's advice); marked static it works."""
    _, f, where = case
    with pytest.raises(ConcretizationError, match=rf"^{where} must be known when the function is traced.*static_argnums"):
        ax.jit(f)(1)
    with pytest.raises(ConcretizationError, match=rf"^{where} must be known"):
        ax.vmap(f)(ax.asarray([1, 1]))
    assert_same(ax.jit(f, static_argnums=0)(1), f(1))


def test_disable_jit_is_scoped():
    calls = []
    f = ax.jit(lambda x: calls.append(1) or x + 1)
    with ax.disable_jit():
        f(ax.ones(2))
        f(ax.ones(2))
    assert len(calls) == 2 and f.trace_count == 0
    f(ax.ones(2))
    f(ax.ones(2))
    assert len(calls) == 3 and f.trace_count == 1


def test_eval_shape_and_make_graph_through_jit():
    inner = ax.jit(lambda x, y: ax.tanh(x @ y))
    s = ax.eval_shape(lambda x, y: inner(x, y) * 2.0, ax.ShapeDtypeStruct((2, 3), ax.float32),
                      ax.ShapeDtypeStruct((3, 4), ax.float32))
    assert s == ax.ShapeDtypeStruct((2, 4), ax.float32)
    g = ax.make_graph(lambda x: inner(x, x) + 1.0)(ax.ones((2, 2)))
    assert [e.prim.name for e in g.equations] == ["call", "add"]
    text = str(g)
    assert "graph = graph(" in text and "tanh" in text and "matmul" in text


def test_jit_inside_jit_and_captured_tracers():
    inner = ax.jit(lambda x: ax.sin(x) * 2.0)
    outer = ax.jit(lambda x: inner(x) + inner(x * 3.0))
    x = ax.asarray([0.1, 0.2])
    _close(outer(x), 2 * np.sin([0.1, 0.2]) + 2 * np.sin([0.3, 0.6]))

    def g(y):  # the jitted function closes over grad's tracer y: it becomes an explicit operand
        return ax.sum(ax.jit(lambda x: x * y)(x))

    _close(ax.grad(g)(ax.asarray(2.0)), 0.30000000000000004)


def test_retrace_storm_warns_once_with_what_changed():
    f = ax.jit(lambda x, n: x * n, static_argnums=1)
    x = ax.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(12):
            f(x, n)
    storms = [w for w in caught if "retrace storm" in str(w.message)]
    assert len(storms) == 1
    message = str(storms[0].message)  # names the argument, its values and the fix
    assert "static argument 'n' (position 1) keeps changing (last 7 -> 8)" in message, message
    assert "as an array" in message


def test_donation_keeps_values_right(executor):
    f = ax.jit(lambda x, y: x * 2.0 + y, donate_argnums=0)
    y = ax.ones(3)
    out = f(ax.asarray([1.0, 2.0, 3.0]), y)
    _close(out, [3.0, 5.0, 7.0])
    _close(y, np.ones(3))


def test_jit_on_the_numpy_executor_generates_straight_line_code():
    f = ax.jit(lambda x, y: ax.sin(x) * y + 1.0)
    x = ax.ones(3)
    f(x, x)
    (entry,) = f._cache.values()
    src = entry.fn.source
    assert src.splitlines()[0] == "def compiled(a0, a1):"
    assert "f0(a0)" in src and "sin" not in src  # implementations are bound by index, not by name
    assert_same(f(x, x), np.sin(np.ones(3)) + 1.0)


def test_debug_print_and_callback_run_with_runtime_values(executor, capsys):
    seen = []

    def f(x):
        ax.debug.print("x = {} (n={n})", x, n=3)
        y = ax.scan(lambda c, v: (c + v, None), ax.asarray(0.0), x)[0]
        ax.debug.callback(lambda v, tag: seen.append((tag, float(v))), y, "sum")
        return y * 2.0

    jf = ax.jit(f)
    jf(ax.asarray([1.0, 2.0]))
    jf(ax.asarray([3.0, 4.0]))  # a cache hit still prints: the callback is part of the compiled graph
    assert jf.trace_count == 1
    assert capsys.readouterr().out == "x = [1. 2.] (n=3)\nx = [3. 4.] (n=3)\n"
    assert seen == [("sum", 3.0), ("sum", 7.0)]
    g = ax.grad(lambda x: ax.sum(jf(x)))(ax.asarray([0.5, 0.5]))  # the callbacks see primal values
    _close(g, [2.0, 2.0])
    assert seen[-1] == ("sum", 1.0)
    assert "debug_callback[fn=show] a" in str(jf.trace(ax.asarray([1.0, 2.0])).graph)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_debug_nans_and_infs_name_the_first_primitive(executor):
    f = ax.jit(lambda x: ax.sqrt(ax.log(x) - 1.0) * 2.0)
    x = ax.asarray([0.5, 3.0])
    assert np.isnan(np.asarray(f(x))[0])  # off by default
    for fn in (f, f.fun):  # under jit and eagerly
        with ax.debug_nans(), pytest.raises(FloatingPointError, match=r"debug_nans: sqrt produced a NaN"):
            fn(x)
    with ax.debug_infs(), pytest.raises(FloatingPointError, match=r"debug_infs: log produced an infinity"):
        ax.grad(lambda x: ax.sum(ax.log(x)))(ax.asarray([0.0, 1.0]))
    with ax.debug_nans():
        # log(3) - 1 cancels: the result's relative error is log's times 0.5 * log(3) / (log(3) - 1) = 5.6
        _close(f(ax.asarray([3.0, 4.0])), 2 * np.sqrt(np.log([3.0, 4.0]) - 1.0), uses=("log", "sqrt"), condition=8)
        with ax.debug_nans(False):
            f(x)  # switched off again inside


def test_debug_nans_environment_flag():
    import os
    import subprocess
    import sys

    code = ("import arrayx as ax, warnings; warnings.simplefilter('ignore')\n"
            "try:\n    ax.jit(lambda x: ax.log(x) * 2)(ax.asarray(-1.0))\n"
            "except FloatingPointError as e:\n    print(e)\n")
    env = {**os.environ, "ARRAYX_DEBUG_NANS": "1", "ARRAYX_EXECUTOR": "numpy"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert "debug_nans: log produced a NaN" in out.stdout, out.stderr
