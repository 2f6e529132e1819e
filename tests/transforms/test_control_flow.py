"""cond, switch, while_loop, fori_loop, scan and map: eager, under jit and under grad, on every executor."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as ax


def _close(a, b, rtol=1e-12, atol=1e-13):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _program(x):
    y = ax.cond(ax.sum(x) > 1.0, lambda x: ax.sin(x) * 2.0, lambda x: ax.cos(x), x)
    c, ys = ax.scan(lambda c, xi: (c * xi + 1.0, ax.tanh(c)), ax.asarray(1.0), y)
    v = ax.fori_loop(0, 3, lambda i, v: v * 1.1 + i, c)
    return v + ax.sum(ys)


def _program_numpy(x):
    y = np.sin(x) * 2.0 if x.sum() > 1.0 else np.cos(x)
    c, ys = 1.0, []
    for xi in y:
        ys.append(np.tanh(c))
        c = c * xi + 1.0
    for i in range(3):
        c = c * 1.1 + i
    return c + sum(ys)


def _fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return out


@pytest.mark.parametrize("point", [[0.5, 1.5], [0.1, 0.2]], ids=["true-branch", "false-branch"])
def test_program_eager_jit_and_grads(executor, point):
    x = ax.asarray(point)
    want = _program_numpy(np.asarray(point))
    _close(_program(x), want)
    jf = ax.jit(_program)
    _close(jf(x), want)
    g_ref = _fd_grad(_program_numpy, point)
    for g in (ax.grad(_program)(x), ax.jit(ax.grad(_program))(x), ax.grad(jf)(x)):
        assert g.executor == executor
        _close(g, g_ref, rtol=1e-7, atol=1e-8)
    _close(ax.jvp(jf, (x,), (ax.ones(2),))[1], g_ref.sum(), rtol=1e-7)
    names = {e.prim.name for e in jf.trace(x).graph.equations}
    assert {"cond", "scan"} <= names


def test_switch_dispatch(executor):
    branches = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]
    x = ax.asarray([1.0, 2.0])
    f = ax.jit(lambda i, x: ax.switch(i, branches, x))
    for i, want in [(0, [2.0, 3.0]), (1, [10.0, 20.0]), (2, [-1.0, -2.0]), (7, [-1.0, -2.0]), (-3, [2.0, 3.0])]:
        _close(f(ax.asarray(i), x), want)
        _close(ax.switch(i, branches, x), want)
    assert f.trace_count == 1
    g = ax.grad(lambda x, i: ax.sum(ax.switch(i, branches, x) ** 2))
    _close(g(x, ax.asarray(1)), [200.0, 400.0])
    _close(ax.jit(g)(x, ax.asarray(1)), [200.0, 400.0])  # the index staged: all branches and a select


def test_while_loop_newton_solver(executor):
    def sqrt_newton(a):
        def cond_fun(c):
            x, it = c
            return (ax.max(ax.abs(x * x - a)) > 1e-12) & (it < 50)

        def body_fun(c):
            x, it = c
            return 0.5 * (x + a / x), it + 1

        return ax.while_loop(cond_fun, body_fun, (ax.ones_like(a), ax.asarray(0)))[0]

    a = ax.asarray([2.0, 9.0, 0.25])
    _close(sqrt_newton(a), np.sqrt([2.0, 9.0, 0.25]))
    _close(ax.jit(sqrt_newton)(a), np.sqrt([2.0, 9.0, 0.25]))
    # forward mode through the loop: d sqrt(a) / da = 1 / (2 sqrt(a))
    _, t = ax.jvp(ax.jit(sqrt_newton), (a,), (ax.ones(3),))
    _close(t, 0.5 / np.sqrt([2.0, 9.0, 0.25]), rtol=1e-8)
    with pytest.raises(TypeError, match=r"while_loop: reverse-mode differentiation.*fori_loop.*scan"):
        ax.grad(lambda a: ax.sum(sqrt_newton(a)))(a)


def test_fori_loop_accumulation(executor):
    def f(x):
        return ax.fori_loop(0, 5, lambda i, acc: acc + x * i, ax.zeros_like(x))

    x = ax.asarray([1.0, -2.0])
    _close(f(x), [10.0, -20.0])
    _close(ax.jit(f)(x), [10.0, -20.0])
    _close(ax.grad(lambda x: ax.sum(ax.jit(f)(x) ** 2))(x), 2 * 10.0 * np.array([10.0, -20.0]))
    # staged bounds: a while_loop
    g = ax.jit(lambda n, x: ax.fori_loop(0, n, lambda i, acc: acc + x, ax.zeros_like(x)))
    _close(g(ax.asarray(3), x), [3.0, -6.0])


def test_scan_rnn(executor):
    rng = np.random.default_rng(0)
    wh = ax.asarray(rng.standard_normal((4, 4)) * 0.5)
    wx = ax.asarray(rng.standard_normal((3, 4)) * 0.5)
    xs = ax.asarray(rng.standard_normal((6, 3)))

    def rnn(wh, wx, xs):
        def step(h, x):
            h = ax.tanh(h @ wh + x @ wx)
            return h, ax.sum(h)

        h, ys = ax.scan(step, ax.zeros(4), xs)
        return ax.sum(h) + ax.sum(ys * ys)

    def rnn_numpy(wh, wx, xs):
        h, total = np.zeros(4), 0.0
        for x in xs:
            h = np.tanh(h @ wh + x @ wx)
            total += h.sum() ** 2
        return h.sum() + total

    args = (wh, wx, xs)
    nargs = [np.asarray(a) for a in args]
    _close(rnn(*args), rnn_numpy(*nargs))
    _close(ax.jit(rnn)(*args), rnn_numpy(*nargs))
    g_ref = _fd_grad(lambda w: rnn_numpy(w.reshape(4, 4), *nargs[1:]), nargs[0].ravel()).reshape(4, 4)
    for grad_fn in (ax.grad(rnn), ax.jit(ax.grad(rnn)), ax.grad(ax.jit(rnn))):
        _close(grad_fn(*args), g_ref, rtol=1e-6, atol=1e-7)


def test_scan_reverse_length_and_map(executor):
    xs = ax.asarray([1.0, 2.0, 3.0])
    for f in (ax.scan, ax.jit(ax.scan, static_argnums=(0, 3, 4))):
        c, ys = f(lambda c, x: (c + x, c), ax.asarray(0.0), xs, None, True)
        _close(c, 6.0)
        _close(ys, [5.0, 3.0, 0.0])
    c, ys = ax.jit(lambda: ax.scan(lambda c, _: (c * 2, c), ax.asarray(1), None, length=4))()
    assert int(c) == 16
    _close(ys, [1, 2, 4, 8])
    _close(ax.map(lambda x: x * x, xs), [1.0, 4.0, 9.0])
    _close(ax.jit(lambda xs: ax.map(lambda x: {"a": x + 1}, xs)["a"])(xs), [2.0, 3.0, 4.0])


def test_carry_type_mismatch_names_the_path_and_both_types():
    with pytest.raises(TypeError, match=r"while_loop: .*same types; at \[1\] init is int64\[\] but body_fun output "
                                        r"is float64\[\]"):
        ax.jit(lambda x: ax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 0.5), (x, ax.asarray(0))))(ax.ones(2))
    with pytest.raises(TypeError, match=r"scan: .*same types; at \['h'\] init is float64\[2\] but f's carry output "
                                        r"is float64\[3\]"):
        ax.jit(lambda x: ax.scan(lambda c, x: ({"h": ax.ones(3)}, x), {"h": x}, x))(ax.ones(2))
    with pytest.raises(TypeError, match=r"cond: the branches' outputs must have the same types; at the value "
                                        r"false_fun output is float64\[2\] but true_fun output is float32\[2\]"):
        ax.jit(lambda p, x: ax.cond(p, lambda x: ax.astype(x, ax.float32), lambda x: x, x))(ax.asarray(True), ax.ones(2))


def test_python_if_on_a_staged_value_names_cond():
    def f(x):
        while ax.sum(x) < 10:
            x = x * 2
        return x

    with pytest.raises(TypeError, match=r"bool\(\).*arrayx.cond.*static_argnums"):
        ax.jit(f)(ax.ones(2))
    _close(ax.jit(lambda x: ax.while_loop(lambda x: ax.sum(x) < 10, lambda x: x * 2, x))(ax.ones(2)), [8.0, 8.0])


def test_eager_control_flow_is_plain_python():
    calls = []
    ax.cond(ax.asarray(False), lambda: calls.append("t"), lambda: calls.append("f"))
    assert calls == ["f"]  # only the branch taken runs
    assert ax.fori_loop(0, 3, lambda i, v: v + int(i), 0) == 3
