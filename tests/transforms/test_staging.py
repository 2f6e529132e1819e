"""make_graph, eval_shape and the Graph IR."""
from __future__ import annotations

import numpy as np

import arrayx as ax
from arrayx.core.graph import Graph


def test_make_graph_prints_one_equation_per_primitive():
    g = ax.make_graph(lambda x, y: ax.sum(ax.sin(x) * y, axis=0))(ax.ones((2, 3)), ax.ones(3))
    assert isinstance(g, Graph)
    assert str(g) == (
        "graph(a:f64[2,3], b:f64[3]) {\n"
        "  c:f64[2,3] = sin a\n"
        "  d:f64[2,3] = broadcast_to[shape=(2, 3)] b\n"
        "  e:f64[2,3] = multiply c d\n"
        "  f:f64[3] = sum[axis=(0,), dtype=float64, keepdims=False] e\n"
        "  return f\n"
        "}"
    )


def test_make_graph_constants_literals_and_folding():
    c = ax.asarray([1.0, 2.0, 3.0], dtype=ax.float32)
    g = ax.make_graph(lambda x: x * 2.0 + ax.exp(c))(ax.ones(3, dtype=ax.float32))
    text = str(g)
    assert "consts(b:f32[3])" in text          # exp(c) was computed while tracing: one constant
    assert "multiply a 2.0:f32" in text        # the Python scalar took x's dtype
    assert "exp" not in text
    assert len(g.equations) == 2


def test_graph_evaluates_like_the_function(executor):
    def f(x, y):
        z = x @ y
        z = ax.where(z > 0, z, 0.1 * z)
        return ax.mean(z, axis=1), ax.max(z)

    x = ax.asarray(np.arange(6.0).reshape(2, 3) - 2.0)
    y = ax.asarray(np.ones((3, 4)))
    g = ax.make_graph(f)(x, y)
    out = g(x, y)
    want = f(x, y)
    for a, b in zip(out, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))
    # a graph can be differentiated like any function
    gx = ax.grad(lambda x: ax.sum(g(x, y)[0]))(x)
    gx_ref = ax.grad(lambda x: ax.sum(f(x, y)[0]))(x)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(gx_ref))


def test_make_graph_pytrees_static_args_and_shape_structs():
    def f(params, n):
        return {"y": params["w"] * n, "z": ax.sum(params["b"])}

    g = ax.make_graph(f, static_argnums=1)(
        {"w": ax.ShapeDtypeStruct((2,), ax.float32), "b": ax.ShapeDtypeStruct((3,), ax.float64)}, 3)
    assert [v.aval for v in g.inputs] == [ax.ShapeDtypeStruct((3,), ax.float64), ax.ShapeDtypeStruct((2,), ax.float32)]
    assert "multiply b 3.0:f32" in str(g)


def test_eval_shape():
    out = ax.eval_shape(
        lambda x, y: {"mm": x @ y, "s": ax.sum(x, axis=1), "i": ax.argmax(y)},
        ax.ShapeDtypeStruct((2, 3), ax.float32), ax.ones((3, 4), dtype=ax.float32),
    )
    assert out == {
        "mm": ax.ShapeDtypeStruct((2, 4), ax.float32),
        "s": ax.ShapeDtypeStruct((2,), ax.float32),
        "i": ax.ShapeDtypeStruct((), ax.int64),
    }
    assert repr(out["mm"]) == "ShapeDtypeStruct(shape=(2, 4), dtype=float32)"


def test_eval_shape_of_linalg_and_fft_uses_abstract_rules():
    s = ax.ShapeDtypeStruct((5, 3), ax.float64)
    assert ax.eval_shape(lambda x: ax.linalg.svd(x, full_matrices=False), s) == (
        ax.ShapeDtypeStruct((5, 3), ax.float64), ax.ShapeDtypeStruct((3,), ax.float64),
        ax.ShapeDtypeStruct((3, 3), ax.float64))
    assert ax.eval_shape(lambda x: ax.fft.rfft(x, axis=0), s) == ax.ShapeDtypeStruct((3, 3), ax.complex128)
    sq = ax.ShapeDtypeStruct((4, 4), ax.float32)
    assert ax.eval_shape(lambda a: ax.linalg.solve(a, a[:, 0]), sq) == ax.ShapeDtypeStruct((4,), ax.float32)


def test_staged_inplace_update_is_recorded():
    def f(x):
        x[0] = 1.0
        x += 1.0
        return x

    g = ax.make_graph(f)(ax.ones(3))
    names = [e.prim.name for e in g.equations]
    assert names == ["slice_update", "add"]
    np.testing.assert_allclose(np.asarray(g(ax.asarray([5.0, 6.0, 7.0]))[0]), [2.0, 7.0, 8.0])


def test_make_graph_of_grad_is_a_linear_backward_program():
    g = ax.make_graph(ax.grad(lambda x: ax.sum(ax.sin(x))))(ax.ones(3))
    names = [e.prim.name for e in g.equations]
    assert "cos" in names and "sin" in names
    np.testing.assert_allclose(np.asarray(g(ax.asarray([0.0, 1.0, 2.0]))[0]), np.cos([0.0, 1.0, 2.0]))


def test_tracer_repr_and_attributes():
    seen = {}

    def f(x):
        seen["repr"] = repr(x)
        seen["device"] = x.device
        seen["shape"] = x.shape
        seen["dtype"] = x.dtype
        return x

    ax.make_graph(f)(ax.ones((2, 3)))
    assert seen["repr"].startswith("StagingTracer<f64[2,3]>(make_graph")
    assert seen["shape"] == (2, 3) and seen["dtype"] == ax.float64
    assert seen["device"] == ax.ones(1).device
    ax.grad(lambda x: f(x)[0])(ax.asarray([1.0]))
    assert "JVPTracer<f64[1]>" in seen["repr"] and "primal=" in seen["repr"]
