"""The errors of the transforms: each names the problem and the fix."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax
from arrayx.core.primitives import ConcretizationError, UnexpectedTracerError


def test_grad_of_non_scalar_output_suggests_jacrev_or_sum():
    with pytest.raises(TypeError, match=r"scalar.*jacrev.*arrayx\.sum\(y\)") as info:
        ax.grad(ax.sin)(ax.asarray([1.0, 2.0]))
    assert ".sum()" not in str(info.value)  # arrays have no .sum() method


def test_grad_of_complex_or_integer_output():
    with pytest.raises(TypeError, match="holomorphic"):
        ax.grad(lambda x: ax.sum(ax.astype(x, ax.complex128)))(ax.asarray([1.0]))
    with pytest.raises(TypeError, match="real floating-point"):
        ax.grad(lambda x: ax.argmax(x))(ax.asarray([1.0, 2.0]))


def test_integer_inputs_need_allow_int():
    f = lambda x, n: ax.sum(x * ax.astype(n, ax.float64))  # noqa: E731
    x, n = ax.asarray([1.0, 2.0]), ax.asarray([3, 4])
    with pytest.raises(TypeError, match=r"int64.*allow_int"):
        ax.grad(f, argnums=1)(x, n)
    g = ax.grad(f, argnums=(0, 1), allow_int=True)(x, n)
    np.testing.assert_array_equal(np.asarray(g[0]), [3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(g[1]), [0, 0])
    with pytest.raises(TypeError, match="bool"):
        ax.grad(lambda b: ax.sum(ax.astype(b, ax.float64)))(ax.asarray([True]))


def test_argnums_out_of_range():
    with pytest.raises(ValueError, match="argnums"):
        ax.grad(lambda x: x, argnums=2)(ax.asarray(1.0))


def test_bool_of_staged_value_names_the_alternatives():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError, match=r"where.*cond.*static_argnums"):
        ax.make_graph(f)(ax.asarray(1.0))
    with pytest.raises(ConcretizationError):
        ax.eval_shape(lambda x: float(x), ax.ShapeDtypeStruct((), ax.float64))
    with pytest.raises(ConcretizationError):
        ax.make_graph(lambda x: int(x[0]))(ax.asarray([1.0]))


def test_python_control_flow_on_concrete_values_works_under_grad():
    def f(x):
        return x * x if x > 0 else -x

    assert float(ax.grad(f)(ax.asarray(3.0))) == 6.0
    assert float(ax.grad(f)(ax.asarray(-3.0))) == -1.0
    # a Python number would drop the gradient: float() raises, stop_gradient says "value only"
    with pytest.raises(TypeError, match=r"float\(\).*stop_gradient"):
        ax.grad(lambda x: x * float(x))(ax.asarray(2.0))
    assert float(ax.grad(lambda x: x * float(ax.stop_gradient(x)))(ax.asarray(2.0))) == 2.0


def test_escaped_tracer_fails_loudly():
    leaked = []

    def f(x):
        leaked.append(x * 2.0)
        return ax.sum(x)

    ax.grad(f)(ax.asarray([1.0, 2.0]))
    t = leaked[0]
    assert "finished" in repr(t)
    with pytest.raises(UnexpectedTracerError, match="escaped"):
        t + 1.0
    with pytest.raises(UnexpectedTracerError, match="escaped"):
        ax.sin(t)
    with pytest.raises(UnexpectedTracerError):
        bool(t[0] > 0)
    with pytest.raises(UnexpectedTracerError):
        ax.asarray([1.0, 1.0]) * t


def test_escaped_tracer_inside_another_transform():
    leaked = []
    ax.make_graph(lambda x: leaked.append(x) or x)(ax.asarray(1.0))
    with pytest.raises(UnexpectedTracerError):
        ax.grad(lambda y: y * leaked[0])(ax.asarray(2.0))


def test_numpy_conversion_of_a_tracer():
    with pytest.raises(TypeError, match="stop_gradient"):
        ax.grad(lambda x: ax.sum(x) * float(np.asarray(x).sum()))(ax.asarray([1.0]))
    # the documented way out works
    g = ax.grad(lambda x: ax.sum(x) * float(np.asarray(ax.stop_gradient(x)).sum()))(ax.asarray([2.0]))
    assert float(g[0]) == 2.0


def test_jvp_argument_checks():
    with pytest.raises(TypeError, match="tuples"):
        ax.jvp(ax.sin, ax.asarray(1.0), ax.asarray(1.0))
    with pytest.raises(ValueError, match="shape and dtype"):
        ax.jvp(ax.sin, (ax.asarray([1.0, 2.0]),), (ax.asarray([1.0]),))
    with pytest.raises(TypeError, match="structure"):
        ax.jvp(lambda a, b: a, (ax.asarray(1.0), ax.asarray(1.0)), (ax.asarray(1.0),))


def test_vjp_cotangent_checks():
    _, f_vjp = ax.vjp(ax.sin, ax.asarray([1.0, 2.0]))
    with pytest.raises(ValueError, match="shape"):
        f_vjp(ax.asarray([1.0]))
    with pytest.raises(TypeError, match="structured"):
        f_vjp((ax.asarray([1.0, 1.0]),))


def test_missing_rule_is_reported():
    from arrayx.core.executor import GENERIC
    from arrayx.core.primitives import Primitive
    from arrayx.transforms.rules import coverage

    # a primitive defined without rules (as a third party might) is reported, and grad names it
    noop_p = Primitive("test_rule_less_identity")
    GENERIC[noop_p.name] = lambda buf: buf
    try:
        assert "test_rule_less_identity" in coverage()["jvp"]
        x = ax.asarray([[2.0, 1.0], [1.0, 3.0]])
        with pytest.raises(NotImplementedError, match="test_rule_less_identity.*coverage"):
            ax.grad(lambda x: ax.sum(noop_p.bind(x)))(x)
    finally:
        from arrayx.core.primitives import primitives

        primitives.pop("test_rule_less_identity", None)
        GENERIC.pop("test_rule_less_identity", None)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match="pair"):
        ax.grad(lambda x: ax.sum(x), has_aux=True)(ax.asarray([1.0]))


def test_custom_vjp_bwd_must_return_a_tuple():
    @ax.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x: (x, None), lambda res, g: g)
    with pytest.raises(TypeError, match="one cotangent per"):
        ax.grad(lambda x: ax.sum(f(x)))(ax.asarray([1.0]))


def test_unknown_attribute_is_an_attribute_error():
    assert not hasattr(ax, "no_such_thing")
    with pytest.raises(AttributeError, match="no_such_thing"):
        ax.no_such_thing
