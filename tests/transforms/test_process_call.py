"""Call-like primitives through every trace (``Trace.process_call``): custom rules and checkpoint
survive staging as one equation holding a closed sub-graph."""
from __future__ import annotations

import numpy as np

import arrayx as ax
from arrayx.core.tracers import Tracer
from arrayx.core.graph import Graph


def _custom_vjp_sin():
    @ax.custom_vjp
    def f(x):
        return ax.sin(x)

    f.defvjp(lambda x: (ax.sin(x), x), lambda res, g: (100.0 * g,))
    return f


def _params_hold_no_tracers(graph: Graph) -> None:
    for eqn in graph.equations:
        for v in eqn.params.values():
            assert not isinstance(v, Tracer), (eqn.prim.name, v)
            if isinstance(v, Graph):
                assert not any(isinstance(c, Tracer) for c in v.consts)
                _params_hold_no_tracers(v)


def test_grad_of_a_staged_custom_vjp_uses_the_custom_rule(executor):
    f = _custom_vjp_sin()
    x = ax.asarray(0.5)
    graph = ax.make_graph(f)(x)
    assert [e.prim.name for e in graph.equations] == ["custom_vjp_call"]
    assert float(ax.grad(lambda x: graph(x)[0])(x)) == 100.0  # not cos(0.5) = 0.8776
    np.testing.assert_allclose(np.asarray(graph(x)[0]), np.sin(0.5))


def test_custom_jvp_survives_make_graph_with_a_captured_constant(executor):
    @ax.custom_jvp
    def h(x):
        return ax.sin(x)

    @h.defjvp
    def h_jvp(primals, tangents):
        return h(primals[0]), 7.0 * tangents[0]

    c = ax.asarray(2.0)
    x = ax.asarray(0.5)
    graph = ax.make_graph(lambda x: h(x * c) * 3.0)(x)
    names = [e.prim.name for e in graph.equations]
    assert names == ["multiply", "custom_jvp_call", "multiply"]
    assert float(ax.grad(lambda x: graph(x)[0])(x)) == 42.0  # 3 * 7 * 2
    assert float(ax.jvp(lambda x: graph(x)[0], (x,), (ax.asarray(1.0),))[1]) == 42.0
    np.testing.assert_allclose(np.asarray(graph(x)[0]), 3 * np.sin(1.0))


def test_checkpoint_survives_make_graph_and_captured_values_become_operands(executor):
    c = ax.asarray(1.5)
    block = ax.checkpoint(lambda x: ax.sin(ax.sin(x) * c))
    x = ax.asarray(0.3)
    graph = ax.make_graph(block)(x)
    (eqn,) = graph.equations
    assert eqn.prim.name == "checkpoint" and eqn.params["num_consts"] == 1
    sub = eqn.params["fun"]
    assert isinstance(sub, Graph) and not sub.consts and len(sub.inputs) == 2  # c is an explicit input
    want = float(ax.grad(block)(x))
    np.testing.assert_allclose(want, np.cos(np.sin(0.3) * 1.5) * 1.5 * np.cos(0.3), rtol=1e-12)
    assert float(ax.grad(lambda x: graph(x)[0])(x)) == want
    t = ax.jvp(lambda x: graph(x)[0], (x,), (ax.asarray(1.0),))[1]
    np.testing.assert_allclose(float(t), want, rtol=1e-12)


def test_tracers_of_an_enclosing_transform_are_hoisted_to_operands():
    f = _custom_vjp_sin()

    def outer(y):
        # make_graph inside grad: the inner function captures grad's tracer y
        graph = ax.make_graph(lambda x: f(x * y))(ax.asarray(1.0))
        _params_hold_no_tracers(graph)
        (eqn,) = [e for e in graph.equations if e.prim.name == "custom_vjp_call"]
        assert not eqn.params["fun"].consts
        return ax.sum(y * 2.0)

    assert float(ax.grad(outer)(ax.asarray(3.0))) == 2.0


def test_checkpoint_reverse_mode_records_one_linear_equation():
    block = ax.checkpoint(lambda x: ax.sin(ax.cos(x)))
    x = ax.asarray([0.1, 0.2])
    from arrayx.transforms.forward import linearize_flat

    lin = linearize_flat(lambda x: [block(x)], [x])
    assert [e.prim.name for e in lin.graph.equations] == ["checkpoint_lin"]
    # forward mode differentiates the body directly
    _, t = ax.jvp(block, (x,), (ax.ones(2),))
    np.testing.assert_allclose(np.asarray(t), np.cos(np.cos([0.1, 0.2])) * -np.sin([0.1, 0.2]), rtol=1e-12)


def test_printer_shows_sub_graphs():
    f = _custom_vjp_sin()
    text = str(ax.make_graph(lambda x: f(x) + 1.0)(ax.ones(3)))
    assert text == (
        "graph(a:f64[3]) {\n"
        "  b:f64[3] = custom_vjp_call[fun=<graph>, fwd=flat_fwd, bwd=flat_bwd, store=<output tree>, n_res=None] a\n"
        "    fun = graph(c:f64[3]) {\n"
        "      d:f64[3] = sin c\n"
        "      return d\n"
        "    }\n"
        "  e:f64[3] = add b 1.0:f64\n"
        "  return e\n"
        "}"
    )
