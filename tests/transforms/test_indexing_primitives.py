"""The indexing primitives (slice, slice_update, gather, scatter, dynamic_slice,
dynamic_update_slice, boolean_mask) on every executor, their executor-free shapes, and
indexing under staging: traced slice starts, clamped and dropped symbolic indices."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import arrayx as xp
from arrayx.api import indexing as ix
from tests.conftest import assert_matches_numpy, assert_same

A = np.arange(1.0, 25.0).reshape(2, 3, 4)
V = np.array([3.0, -1.0, 4.0, 1.5, 5.0])


@pytest.fixture(autouse=True)
def _jax_peer(jax_peer_in_64_bits):  # JAX, the peer some tests here compare with, in 64 bits (tests/conftest.py)
    yield


def _i(v):
    return xp.asarray(np.asarray(v, dtype=np.int64))


PRIMITIVE_CALLS = {
    "slice": lambda a: ix.slice_p.bind(a, key=(1, (None, None, -1), (1, 3, None))),
    "slice_update": lambda a: ix.slice_update_p.bind(a, xp.ones((3, 2)) * -1.0, key=(1, (None, None, None), (0, 4, 2))),
    "slice_update scalar": lambda a: ix.slice_update_p.bind(a, np.float64(7.0), key=((None, None, None), 0)),
    "gather adjacent": lambda a: ix.gather_p.bind(a, _i([[0, 1], [1, 0]]), _i([[2, -1], [0, 0]]), axes=(0, 1)),
    "gather apart": lambda a: ix.gather_p.bind(a, _i([1, 0, 1]), _i([3, -4, 0]), axes=(0, 2)),
    "gather 0-d": lambda a: ix.gather_p.bind(a, _i(2), axes=(2,)),
    "dynamic_slice": lambda a: ix.dynamic_slice_p.bind(a, 1, _i(2), _i(-3), sizes=(1, 2, 3)),
    "dynamic_slice clamped": lambda a: ix.dynamic_slice_p.bind(a, 0, _i(9), 2, sizes=(2, 2, 2)),
    "dynamic_update_slice": lambda a: ix.dynamic_update_slice_p.bind(a, xp.zeros((1, 2, 2)), _i(5), 1, _i(1)),
    "boolean_mask": lambda a: ix.boolean_mask_p.bind(a, xp.asarray(np.array([[True, False, True], [False, False, True]])), axis=0),
    "boolean_mask inner": lambda a: ix.boolean_mask_p.bind(a, xp.asarray(np.array([True, False, True, True])), axis=2),
}


@pytest.mark.parametrize("name", list(PRIMITIVE_CALLS))
def test_primitive_on_every_executor(executor, name):
    assert_matches_numpy(PRIMITIVE_CALLS[name], xp.asarray(A))


def test_primitive_values():
    a = xp.asarray(A)
    assert_same(PRIMITIVE_CALLS["gather apart"](a), A[[1, 0, 1], :, [3, -4, 0]])
    assert_same(PRIMITIVE_CALLS["dynamic_slice clamped"](a), A[0:2, 1:3, 2:4])  # start 9 clamped to 1
    want = A.copy()
    want[1:2, 1:3, 1:3] = 0.0  # start 5 on axis 0 clamped to 1
    assert_same(PRIMITIVE_CALLS["dynamic_update_slice"](a), want)


@pytest.mark.parametrize("kind", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("mode", ["promise_in_bounds", "drop"])
def test_scatter_on_every_executor(executor, kind, mode):
    idx = [1, -1, 0, 1] if mode == "promise_in_bounds" or kind == "set" else [1, 7, -1, -9, 1]
    if kind == "set":
        idx = [1, -1, 0] if mode == "promise_in_bounds" else [1, 7, -3, -9]
    u = xp.reshape(xp.arange(len(idx) * 2 * 4, dtype=xp.float64), (2, len(idx), 4)) - 5.0

    def call(a, u):
        return ix.scatter_p.bind(a, u, _i(idx), axes=(1,), kind=kind, mode=mode, unique_indices=False)

    out = assert_matches_numpy(call, xp.asarray(A), u)
    # against NumPy's own unbuffered updates
    want = A.copy()
    keep = [j for j, i in enumerate(idx) if -3 <= i < 3]
    un = np.asarray(u)[:, keep]
    sel = np.array(idx)[keep]
    if kind == "set":
        want[:, sel] = un
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[kind].at(want, (slice(None), sel), un)
    assert_same(out, want)


# -- abstract evaluation: the shapes staging uses, without running an executor ---------------------

SHAPE_CASES = [
    lambda a: a[1, ::-1, 1:3],
    lambda a: a[None, ..., None, 0],
    lambda a: a[:, _i([[0, 1], [2, 2]])],
    lambda a: a[_i([1, 0]), :, _i([0, 3])],
    lambda a: a[0, :, _i([1, 2, 3])],
    lambda a: a[_i([1]), None, _i([0])],
    lambda a: a[True, 0],
    lambda a: a[False],
    lambda a: a.at[_i([0, 1]), 1].set(2.0),
    lambda a: a.at[..., _i([3, -1])].max(xp.ones((2, 3, 2))),
    lambda a: a.at[1:, ::2].multiply(3.0),
    lambda a: xp.take(a, _i([2, 0]), axis=1),
    lambda a: xp.take_along_axis(a, _i(np.zeros((2, 3, 2))), axis=2),
]


@pytest.mark.parametrize("case", range(len(SHAPE_CASES)))
def test_staged_shapes_match_eager(case):
    fn = SHAPE_CASES[case]
    a = xp.asarray(A)
    eager = fn(a)
    assert xp.eval_shape(fn, a) == xp.ShapeDtypeStruct(eager.shape, eager.dtype)
    graph = xp.make_graph(fn)(a)
    assert_same(graph(a)[0], eager)


def test_indexing_primitives_have_every_rule():
    from arrayx.transforms.rules import coverage

    c = coverage()
    names = {"slice", "slice_update", "gather", "scatter", "dynamic_slice", "dynamic_update_slice",
             "boolean_mask", "take_along_axis"}
    assert not names & set(c["jvp"]) and not names & set(c["transpose"])
    assert not (names - {"boolean_mask"}) & set(c["abstract_eval"])  # a data-dependent size (as nonzero)
    assert names <= set(c["linear"])


def test_executors_do_not_parse_an_arrayx_key_format():
    root = pathlib.Path(xp.__file__).parent / "executors"
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "api.indexing" not in text and "decode_key" not in text, path.name


# -- staging: traced starts, clamped and dropped symbolic indices ----------------------------------


def _jax64():
    jax = pytest.importorskip("jax")
    return jax


def test_traced_slice_start_is_a_dynamic_slice(executor):
    jax = _jax64()
    x = xp.asarray(V)
    graph = xp.make_graph(lambda x, i: x[i:i + 2] * 2.0)(x, xp.asarray(1))
    assert "dynamic_slice" in [e.prim.name for e in graph.equations]
    for i in (-3, 0, 2, 3, 4, 10):
        want = 2.0 * np.asarray(jax.lax.dynamic_slice(np.asarray(V), (i,), (2,)))  # clamped as in JAX
        assert_same(graph(x, xp.asarray(i))[0], want)
    # a window along one axis of a 3-D array, with other entries static
    g3 = xp.make_graph(lambda a, i: a[1, i:i + 2, ::2])(xp.asarray(A), xp.asarray(0))
    assert_same(g3(xp.asarray(A), xp.asarray(2))[0], A[1, 1:3, ::2])


def test_traced_slice_start_updates_and_gradients(executor):
    jax = _jax64()

    def f(x, i):
        x[i:i + 3] = x[i:i + 3] * 10.0
        return x

    graph = xp.make_graph(f)(xp.asarray(V), xp.asarray(0))
    assert "dynamic_update_slice" in [e.prim.name for e in graph.equations]
    for i in (1, 4):
        s = min(i, 2)
        want = V.copy()
        want[s:s + 3] *= 10.0
        assert_same(graph(xp.asarray(V), xp.asarray(i))[0], want)
    # grad through the staged window, against jax.grad of lax.dynamic_slice
    w = np.array([1.0, -2.0, 0.5])
    g = xp.grad(lambda x: xp.sum(graph(x, xp.asarray(3))[0][1:4] * xp.asarray(w)))(xp.asarray(V))
    assert_same(g, _jax_grad_of_the_window(jax, w.tobytes()))


_JAX_GRADS: dict = {}


def _jax_grad_of_the_window(jax, w: bytes):
    """jax.grad of the window update at V as one jax.jit program, computed once per module (every
    executor's item compares with it; eagerly each JAX operation compiled a program of its own)."""
    if w not in _JAX_GRADS:
        weights = np.frombuffer(w)

        def jf(x):
            out = jax.lax.dynamic_update_slice(x, jax.lax.dynamic_slice(x, (3,), (3,)) * 10.0, (3,))
            return (out[1:4] * weights).sum()

        _JAX_GRADS[w] = np.asarray(jax.jit(jax.grad(jf))(jax.numpy.asarray(V)))
    return _JAX_GRADS[w]


def test_traced_stop_without_a_static_size_names_dynamic_slice():
    x = xp.asarray(V)
    with pytest.raises(IndexError, match="dynamic_slice"):
        xp.make_graph(lambda x, i, j: x[i:j])(x, xp.asarray(0), xp.asarray(2))
    with pytest.raises(IndexError, match="dynamic_slice"):
        xp.make_graph(lambda x, i: x[i:])(x, xp.asarray(0))
    with pytest.raises(IndexError, match="dynamic_slice"):
        xp.make_graph(lambda x, i: x[1:i])(x, xp.asarray(3))


def test_symbolic_indices_are_clamped_and_updates_dropped(executor):
    x = xp.asarray(V)
    get = xp.make_graph(lambda x, i: x[i])(x, xp.asarray([0, 0, 0, 0, 0]))
    assert_same(get(x, xp.asarray([-9, -1, 2, 5, 40]))[0], V[[0, 4, 2, 4, 4]])  # clamped, as in JAX
    take = xp.make_graph(lambda x, i: xp.take(x, i))(x, xp.asarray([0, 0]))
    assert_same(take(x, xp.asarray([7, -2]))[0], V[[4, 3]])
    put = xp.make_graph(lambda x, i: x.at[i].add(100.0))(x, xp.asarray([0, 0, 0, 0]))
    want = V.copy()
    want[[1, 4]] += 100.0  # 9 and -6 are dropped
    assert_same(put(x, xp.asarray([1, 9, -1, -6]))[0], want)
    # explicit modes stage too
    fill = xp.make_graph(lambda x, i: x.at[i].get(mode="fill", fill_value=0.0))(x, xp.asarray([0, 0]))
    assert_same(fill(x, xp.asarray([1, 5]))[0], np.array([V[1], 0.0]))


def test_staged_boolean_masks():
    x = xp.asarray(V)
    # a known mask has a known size, and updates through a symbolic mask are selects
    g = xp.make_graph(lambda x: x[xp.asarray(V > 2)] * 2.0)(x)
    assert_same(g(x)[0], V[V > 2] * 2.0)

    def clip_negative(x):
        x[x < 0] = 0.0
        return x

    g = xp.make_graph(clip_negative)(x)
    assert "boolean_mask" not in [e.prim.name for e in g.equations]
    assert_same(g(x)[0], np.maximum(V, 0.0))


def test_indexing_under_jit_clamps_and_drops_symbolic_indices(executor):
    x = xp.asarray(V)
    window = xp.jit(lambda x, i: x[i:i + 2] * 2.0)
    assert_same(window(x, xp.asarray(4)), 2.0 * V[3:5])  # the start is clamped so the window fits
    assert_same(window(x, xp.asarray(-2)), 2.0 * V[3:5])  # a negative start counts from the end
    assert_same(xp.jit(lambda x, i: x[i])(x, xp.asarray([-9, 2, 40])), V[[0, 2, 4]])
    assert_same(xp.jit(lambda x, i: xp.take(x, i))(x, xp.asarray([7, -2])), V[[4, 3]])
    want = V.copy()
    want[1] += 100.0
    assert_same(xp.jit(lambda x, i: x.at[i].add(100.0))(x, xp.asarray([1, 9, -6])), want)

    def scale_window(x, i):
        x[i:i + 3] = x[i:i + 3] * 10.0
        return x

    want = V.copy()
    want[1:4] *= 10.0
    assert_same(xp.jit(scale_window)(x, xp.asarray(1)), want)
    g = xp.grad(lambda x: xp.sum(window(x, xp.asarray(3))))(x)
    assert_same(g, np.array([0.0, 0.0, 0.0, 2.0, 2.0]))
    # known indices are still checked when the function is staged
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        xp.jit(lambda x: x[xp.asarray([5])])(x)
