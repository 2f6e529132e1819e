"""The Graph IR: weak types, the device, keyword arguments as inputs, dead-code elimination
and the type-check pass (which the test suite runs on every staged graph, see conftest)."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.core.graph import Equation, Graph, GraphTypeError, Var, dce, eval_graph
from arrayx.transforms.staging import check_graph


def test_graph_records_the_device_and_weak_inputs(executor):
    x = ax.ones(3, dtype=ax.float32)
    g = ax.make_graph(lambda x, s: x * s)(x, 2.0)
    assert g.device == x.device
    assert [a.weak_type for a in g.in_avals] == [False, True]
    assert "b:~f64[]" in str(g)  # a weakly typed input prints with "~"
    out = eval_graph(g, [x, ax.asarray(2.0)])[0]
    assert out.dtype == ax.float32 and np.asarray(out).tolist() == [2.0, 2.0, 2.0]


def test_keyword_arguments_are_inputs_not_constants():
    def f(x, *, scale, mode="double"):
        return x * scale * (2.0 if mode == "double" else 1.0)

    x = ax.asarray([1.0, 2.0])
    g = ax.make_graph(f)(x, scale=ax.asarray(3.0))
    assert len(g.inputs) == 2 and not g.constvars  # the string stays a Python value
    np.testing.assert_allclose(np.asarray(eval_graph(g, [x, ax.asarray(5.0)])[0]), [10.0, 20.0])


def test_dead_code_elimination_keeps_what_outputs_need():
    c = ax.asarray([1.0, 2.0])

    def f(x):
        unused = ax.sin(x) + c  # dead, and its constant with it
        return ax.exp(x)

    g = ax.make_graph(f)(ax.asarray([0.0, 1.0]))
    assert [e.prim.name for e in g.equations] == ["sin", "add", "exp"] and len(g.consts) == 1
    d = dce(g)
    assert [e.prim.name for e in d.equations] == ["exp"] and d.consts == ()
    check_graph(d)
    np.testing.assert_allclose(np.asarray(d(ax.asarray([0.0, 1.0]))[0]), np.exp([0.0, 1.0]))


def test_typecheck_rejects_malformed_graphs():
    g = ax.make_graph(lambda x: ax.sin(x) * 2.0)(ax.ones(3, dtype=ax.float32))
    check_graph(g)
    sin_eqn, mul_eqn = g.equations
    wrong = Var(ax.ShapeDtypeStruct((3,), ax.float64))  # sin of f32 is not f64
    bad_type = Graph(g.inputs, (), (), [Equation(sin_eqn.prim, sin_eqn.inputs, sin_eqn.params, (wrong,))],
                     (wrong,))
    with pytest.raises(GraphTypeError, match="equation 0 .sin.: outputs are typed"):
        check_graph(bad_type)
    use_before_def = Graph(g.inputs, (), (), [mul_eqn, sin_eqn], g.outputs)
    with pytest.raises(GraphTypeError, match="used before it is defined"):
        check_graph(use_before_def)
    twice = Graph(g.inputs, (), (), [sin_eqn, sin_eqn, mul_eqn], g.outputs)
    with pytest.raises(GraphTypeError, match="defined twice"):
        check_graph(twice)


def test_printer_shows_sub_graphs():
    @ax.custom_jvp
    def f(x):
        return ax.sin(x)

    f.defjvp(lambda primals, tangents: (ax.sin(primals[0]), ax.cos(primals[0]) * tangents[0]))
    text = str(ax.make_graph(f)(ax.ones(2)))
    assert text.count("graph(") == 2 and "sin" in text  # the call's function printed nested
