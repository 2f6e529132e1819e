"""Out-of-range indices (NumPy's IndexError, eagerly, on every executor) and ``x.at[key]`` with
JAX's modes, compared with ``jax.numpy``'s own ``.at`` values and ``jax.grad`` derivatives."""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import assert_same

jax = pytest.importorskip("jax")

@pytest.fixture(autouse=True, scope="module")
def _jax_peer(jax_peer_in_64_bits_module):  # JAX, the peer here, in 64 bits (tests/conftest.py)
    yield

jnp = jax.numpy

A = np.arange(1.0, 25.0).reshape(2, 3, 4)
V = np.array([3.0, -1.0, 4.0, 1.5, 5.0])


# -- out-of-range indices raise, naming the index and the size ------------------------------------

OUT_OF_RANGE = [
    (lambda x: x[xp.asarray([0, 10])], "index 10 is out of bounds for axis 0 with size 5"),
    (lambda x: x[xp.asarray([-6, 1])], "index -6 is out of bounds for axis 0 with size 5"),
    (lambda x: x[xp.asarray(7)], "index 7 is out of bounds for axis 0 with size 5"),
    (lambda x: xp.take(x, xp.asarray([10])), "take: index 10 is out of bounds for axis 0 with size 5"),
    (lambda x: xp.take_along_axis(x, xp.asarray([1, 5])), "take_along_axis: index 5 is out of bounds for axis 0 with size 5"),
    (lambda x: x.at[xp.asarray([5])].get(), "index 5 is out of bounds"),
    (lambda x: x.at[xp.asarray([5])].add(1.0), "at\\[...\\].add: index 5 is out of bounds for axis 0 with size 5"),
    (lambda x: x.at[xp.asarray([-9])].set(1.0), "index -9 is out of bounds"),
    (lambda x: x.at[7].set(1.0), "index 7 is out of bounds for axis 0 with size 5"),
]


@pytest.mark.parametrize("call, match", OUT_OF_RANGE, ids=range(len(OUT_OF_RANGE)))
def test_out_of_range_indices_raise(executor, call, match):
    x = xp.asarray(V)
    with pytest.raises(IndexError, match=match):
        call(x)


def test_out_of_range_in_more_dimensions_and_setitem(executor):
    x = xp.asarray(A)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x[:, xp.asarray([0, 3])]
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 2 with size 4"):
        x[xp.asarray([0]), 1, xp.asarray([4])]
    with pytest.raises(IndexError, match="take: index -5 is out of bounds for axis 2 with size 4"):
        xp.take(x, xp.asarray([-5]), axis=2)
    with pytest.raises(IndexError, match="__setitem__: index 9 is out of bounds for axis 0 with size 2"):
        x[xp.asarray([9])] = 0.0
    assert_same(x, A)  # nothing was written
    # in range, negatives included: NumPy's values
    assert_same(x[xp.asarray([-1, 0]), :, xp.asarray([-4, 3])], A[[-1, 0], :, [-4, 3]])
    assert_same(xp.take_along_axis(x, xp.asarray(np.full((2, 3, 1), -1)), axis=2), A[..., -1:])


def test_out_of_range_under_grad_raises_too(executor):
    x = xp.asarray(V)
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        xp.grad(lambda x: xp.sum(x[xp.asarray([1, 5])]))(x)


# -- .at[key] with modes, against jax.numpy -----------------------------------------------------

def _rotated_on_jax(cases: list) -> list:
    """``executor, *case`` parameters: every case on every executor, except on jax (new XLA programs per
    key, mode and operation), where the ci profile takes one case of each row of the other fields, its
    last field (the mode; apply's function) in turn along the rows (tests/covering.py: every mode and
    function still runs on jax); every case in the deep profile."""
    from tests import covering

    return covering.on_executors(cases)


IDX = np.array([-6, -5, -1, 0, 4, 5, 7])  # on 5 elements: two out of range low, two high
KEYS_1D = {
    "out of range": IDX,
    "in range, negatives, repeats": np.array([-1, 0, 2, 0, -5]),
}
KEYS_ND = {
    "array then slice": lambda k: (k, slice(1, None)),
    "slice then array": lambda k: (slice(None), k),
    "int, slice, array (index dims first)": lambda k: (0, slice(None), k),
    "two arrays": lambda k: (k, slice(None), k[::-1]),
    "ellipsis and array": lambda k: (Ellipsis, k),
}


def _frozen(v):
    """A hashable stand-in for an argument of a reference (arrays by dtype, shape and bytes)."""
    if isinstance(v, (np.ndarray, jax.Array)):
        v = np.asarray(v)
        return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, *map(_frozen, v))
    if isinstance(v, dict):
        return ("dict", *sorted((k, _frozen(x)) for k, x in v.items()))
    return (type(v).__name__, repr(v))


_REFERENCES: dict = {}


def _jax_at(a, key, op, *args, **kwargs):
    """``jnp.asarray(a).at[key].<op>(*args, **kwargs)`` as a NumPy array, computed once per module for
    each distinct call (every executor's test compares with the same reference)."""
    memo = _frozen((a, key, op, args, kwargs))
    if memo not in _REFERENCES:
        _REFERENCES[memo] = _jax_at_once(a, key, op, *args, **kwargs)
    return _REFERENCES[memo]


def _put(v):
    """``v`` (a NumPy array) on jax's device by a transfer: ``jnp.asarray`` of a NumPy array compiles an
    identity program (``stage``) per new shape and dtype; the values are the same."""
    return jax.device_put(v)


def _is_array(v) -> bool:
    return isinstance(v, (np.ndarray, jax.Array))


def _jax_at_once(a, key, op, *args, **kwargs):
    """One ``jax.jit`` program for the whole call (eager jax compiles a program per operation inside
    ``.at``: broadcasts, squeezes, the gather or scatter); the arrays (operand, index arrays, values)
    are its arguments, not constants, so nothing is folded at compile time and the values are eager's."""
    parts = list(key) if isinstance(key, tuple) else [key]
    arrays = [_put(v) for v in [*parts, *args] if _is_array(v)]

    def call(ja, *dynamic):
        it = iter(dynamic)
        filled = [next(it) if _is_array(v) else v for v in [*parts, *args]]
        jkey = tuple(filled[:len(parts)]) if isinstance(key, tuple) else filled[0]
        return getattr(ja.at[jkey], op)(*filled[len(parts):], **kwargs)

    return np.asarray(jax.jit(call)(_put(a), *arrays))


def _prefill(calls) -> None:
    """The references of ``calls`` (``(a, key, op, args, kwargs)`` as ``_jax_at`` takes them) not yet made,
    all in one ``jax.jit`` program (a test's whole grid: one compile, not one per case), its arguments
    the arrays (nothing folded: each value is what the call alone gives); a grid jax refuses to stage
    as one program is left to ``_jax_at``, call by call."""
    todo = {}
    for call in calls:
        todo.setdefault(_frozen(call), call)
    todo = {m: c for m, c in todo.items() if m not in _REFERENCES}
    if not todo:
        return
    leaves, layout = [], []
    for a, key, op, args, kwargs in todo.values():
        parts = list(key) if isinstance(key, tuple) else [key]
        items = [a, *parts, *args]
        leaves += [_put(v) for v in items if _is_array(v)]
        layout.append((items, len(parts), isinstance(key, tuple), op, kwargs))

    def program(*dynamic):
        it = iter(dynamic)
        outs = []
        for items, n_parts, is_tuple, op, kwargs in layout:
            filled = [next(it) if _is_array(v) else v for v in items]
            jkey = tuple(filled[1:1 + n_parts]) if is_tuple else filled[1]
            outs.append(getattr(filled[0].at[jkey], op)(*filled[1 + n_parts:], **kwargs))
        return outs

    try:
        results = jax.jit(program)(*leaves)
    except Exception:  # noqa: BLE001 - _jax_at then makes (and reports) each one alone
        return
    for memo, r in zip(todo, results):
        _REFERENCES[memo] = np.asarray(r)


_FILLED: set = set()


def _prefill_once(name: str, grid) -> None:
    """``_prefill(grid())`` the first time a test named ``name`` runs in this process."""
    if name not in _FILLED:
        _FILLED.add(name)
        _prefill(grid())


def _ax_key(key):
    if isinstance(key, tuple):
        return tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
    return xp.asarray(key)


GET_ARRAYS_1D = (V, np.arange(5, dtype=np.int32) * 3, np.arange(5, dtype=np.uint8))


def _get_modes_grid():
    return [c for mode in ["clip", "fill"] for key in KEYS_1D.values()
            for c in [*((a, key, "get", (), {"mode": mode}) for a in GET_ARRAYS_1D),
                      (V, key, "get", (), {"mode": "fill", "fill_value": -7.0})]]


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("name", list(KEYS_1D))
def test_at_get_modes_match_jax(executor, mode, name):
    _prefill_once("get modes", _get_modes_grid)
    key = KEYS_1D[name]
    for a in GET_ARRAYS_1D:
        got = xp.asarray(a).at[_ax_key(key)].get(mode=mode)
        assert_same(got, _jax_at(a, key, "get", mode=mode))
    got = xp.asarray(V).at[_ax_key(key)].get(mode="fill", fill_value=-7.0)
    assert_same(got, _jax_at(V, key, "get", mode="fill", fill_value=-7.0))


ND_INDEX_ARRAYS = (np.array([1, -3, 2, 3, -4]), np.array([[0, 2], [-1, 1]]))


def _get_modes_nd_grid():
    return [(A, make(k), "get", (), {"mode": mode, "fill_value": -1.0 if mode == "fill" else None})
            for mode in ["clip", "fill"] for make in KEYS_ND.values() for k in ND_INDEX_ARRAYS]


@pytest.mark.parametrize("executor, name, mode", _rotated_on_jax(
    [(name, mode) for mode in ["clip", "fill"] for name in KEYS_ND]), indirect=["executor"])
def test_at_get_modes_in_more_dimensions_match_jax(executor, mode, name):
    _prefill_once("get modes nd", _get_modes_nd_grid)
    for k in ND_INDEX_ARRAYS:
        key = KEYS_ND[name](k)
        got = xp.asarray(A).at[_ax_key(key)].get(mode=mode, fill_value=-1.0 if mode == "fill" else None)
        assert_same(got, _jax_at(A, key, "get", mode=mode, fill_value=-1.0 if mode == "fill" else None))


UPDATES = ["set", "add", "multiply", "min", "max"]
UPDATE_MODES = [None, "clip", "drop", "fill", "promise_in_bounds"]


def _update_key(name, op):
    """(the key test_at_updates_match_jax writes through, whether it has indices out of range)."""
    key = KEYS_1D[name]
    out_of_range = bool((key < -5).any() or (key >= 5).any())
    if op == "set":  # which of repeated writes wins is unspecified: use distinct positions
        key = np.unique(np.where(key < 0, key + 5, key)) if not out_of_range else np.array([-6, -1, 0, 5, 7])
    return key, out_of_range


def _updates_grid():
    calls = []
    for mode in UPDATE_MODES:
        for op in UPDATES:
            for name in KEYS_1D:
                key, out_of_range = _update_key(name, op)
                if not (out_of_range and mode in (None, "promise_in_bounds")):
                    values = np.linspace(-2.0, 3.0, len(key))
                    calls += [(V, key, op, (values,), {"mode": mode}), (V, key, op, (2.5,), {"mode": mode})]
    return calls


@pytest.mark.parametrize("executor, name, op, mode", _rotated_on_jax(
    [(name, op, mode) for mode in UPDATE_MODES for op in UPDATES for name in KEYS_1D]), indirect=["executor"])
def test_at_updates_match_jax(executor, op, mode, name):
    _prefill_once("updates", _updates_grid)
    key, out_of_range = _update_key(name, op)
    if out_of_range and mode in (None, "promise_in_bounds"):
        if mode is None:
            with pytest.raises(IndexError, match="out of bounds"):
                getattr(xp.asarray(V).at[_ax_key(key)], op)(2.0, mode=mode)
        return
    values = np.linspace(-2.0, 3.0, len(key))
    x = xp.asarray(V)
    got = getattr(x.at[_ax_key(key)], op)(xp.asarray(values), mode=mode, indices_are_sorted=False,
                                          unique_indices=False)
    assert_same(got, _jax_at(V, key, op, values, mode=mode))
    got = getattr(x.at[_ax_key(key)], op)(2.5, mode=mode)  # a scalar broadcasts
    assert_same(got, _jax_at(V, key, op, 2.5, mode=mode))
    assert_same(x, V)  # functional


@pytest.mark.parametrize("executor, name, op, mode", _rotated_on_jax(
    [(name, op, mode) for mode in ["clip", "drop"] for op in ["set", "add", "max"] for name in KEYS_ND]),
    indirect=["executor"])
def test_at_updates_in_more_dimensions_match_jax(executor, op, mode, name):
    _prefill_once("updates nd", _updates_nd_grid)
    key, values = _update_nd_case(name, op)
    got = getattr(xp.asarray(A).at[_ax_key(key)], op)(xp.asarray(values), mode=mode)
    assert_same(got, _jax_at(A, key, op, values, mode=mode))


def _update_nd_case(name, op):
    """(key, values) of test_at_updates_in_more_dimensions_match_jax: values of the clipped region's shape."""
    k = np.array([1, -3, 2, 3, -4]) if op != "set" else np.array([1, -4, 3])
    key = KEYS_ND[name](k)
    region = _jax_at(A, key, "get", mode="clip")
    return key, np.arange(region.size, dtype=np.float64).reshape(region.shape) - 4.0


def _updates_nd_grid():
    ops = ["set", "add", "max"]
    _prefill([(A, KEYS_ND[name](np.array([1, -3, 2, 3, -4]) if op != "set" else np.array([1, -4, 3])), "get", (),
               {"mode": "clip"}) for op in ops for name in KEYS_ND])  # the regions first
    return [(A, key, op, (values,), {"mode": mode}) for mode in ["clip", "drop"] for op in ops for name in KEYS_ND
            for key, values in [_update_nd_case(name, op)]]


def test_at_subtract_divide_power_with_repeats_match_jax(executor):
    key = np.array([0, 2, 0, -1])
    values = np.array([2.0, 0.5, 4.0, 3.0])
    for op in ("subtract", "divide", "power"):
        got = getattr(xp.asarray(V).at[xp.asarray(key)], op)(xp.asarray(values))
        assert_same(got, _jax_at(V, key, op, values))


def test_at_mode_errors():
    x = xp.asarray(V)
    with pytest.raises(ValueError, match="at\\[...\\].get: unknown mode 'wrap'"):
        x.at[xp.asarray([0])].get(mode="wrap")
    with pytest.raises(ValueError, match="at\\[...\\].add: unknown mode 'wrap'"):
        x.at[xp.asarray([0])].add(1.0, mode="wrap")


# -- modes for integer (and slice) keys, .at[...].apply ---------------------------------------------

INT_KEYS = {  # keys of A (2, 3, 4) with Python integers out of range, and one in range
    "int high": 11,
    "int low": -3,
    "int, slice": (5, slice(1, 3)),
    "slice, int": (slice(None), 7),
    "ellipsis, int": (Ellipsis, -9),
    "int, none, int": (1, None, 4),
    "int among index arrays": (np.array([0, 1]), 6),
    "in range": (1, 2),
    "slices past the end": (slice(1, 9), slice(-9, 2)),
}


def _jax_key(key):
    return tuple(jnp.asarray(k) if isinstance(k, np.ndarray) else k for k in key) if isinstance(key, tuple) else key


def _ax_int_key(key):
    return tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key) if isinstance(key, tuple) else key


@pytest.mark.parametrize("executor, name, mode", _rotated_on_jax(
    [(name, mode) for mode in ["clip", "fill", "drop"] for name in INT_KEYS]), indirect=["executor"])
def test_at_get_modes_for_integer_keys_match_jax(executor, mode, name):
    _prefill_once("int keys get", lambda: [
        c for m in ["clip", "fill", "drop"] for k in INT_KEYS.values()
        for c in [*((a, k, "get", (), {"mode": m}) for a in (A, (A * 3).astype(np.int32))),
                  (A, k, "get", (), {"mode": m, "fill_value": float("nan")})]])
    key = INT_KEYS[name]
    for a in (A, (A * 3).astype(np.int32)):
        got = xp.asarray(a).at[_ax_int_key(key)].get(mode=mode)
        assert_same(got, _jax_at(a, key, "get", mode=mode))
    got = xp.asarray(A).at[_ax_int_key(key)].get(mode=mode, fill_value=float("nan"))
    assert_same(got, _jax_at(A, key, "get", mode=mode, fill_value=float("nan")))


@pytest.mark.parametrize("executor, name, op, mode", _rotated_on_jax(
    [(name, op, mode) for mode in ["clip", "drop", "fill"] for op in ["set", "add", "min"] for name in INT_KEYS]),
    indirect=["executor"])
def test_at_updates_for_integer_keys_match_jax(executor, op, mode, name):
    key = INT_KEYS[name]
    if name == "int among index arrays" and op == "set" and mode == "clip":
        pytest.skip("two writes to one element after clipping: which one wins is unspecified")
    _prefill_once("int keys updates", lambda: [
        (A, k, o, (99.0,), {"mode": m}) for m in ["clip", "drop", "fill"] for o in ["set", "add", "min"]
        for n, k in INT_KEYS.items() if not (n == "int among index arrays" and o == "set" and m == "clip")])
    got = getattr(xp.asarray(A).at[_ax_int_key(key)], op)(99.0, mode=mode)
    assert_same(got, _jax_at(A, key, op, 99.0, mode=mode))


def test_issue_26_examples(executor):
    x = xp.arange(10.0)
    assert_same(x.at[11].get(mode="fill", fill_value=float("nan")), np.array(np.nan))
    assert_same(x.at[11].get(mode="clip"), np.array(9.0))
    assert_same(x.at[11].get(mode="drop"), np.array(np.nan))
    assert_same(xp.arange(10).at[11].set(99, mode="drop"), np.arange(10))
    assert_same(xp.arange(10).at[11].set(99, mode="clip"), np.r_[np.arange(9), 99])
    with pytest.raises(IndexError, match="index 11 is out of bounds for axis 0 with size 10"):
        x.at[11].get()  # no mode: NumPy's error, as before


APPLY_KEYS = {
    "int": 1,
    "slice": (slice(None), slice(1, 3)),
    "index array, repeats": np.array([0, 1, 0, 0]),
    "two index arrays, repeats": (np.array([1, 1, 0]), slice(None), np.array([3, 3, 0])),
    "int out of range": (0, 5),
}


@pytest.mark.parametrize("executor, name, mode, fn", _rotated_on_jax(
    [(name, mode, fn) for fn in ["sin", "negative", "square"] for mode in [None, "clip", "drop"]
     for name in APPLY_KEYS]), indirect=["executor"])
def test_at_apply_matches_jax(executor, name, fn, mode):
    key = APPLY_KEYS[name]
    a = A / 10.0
    _prefill_once("apply", lambda: [
        (a, k, "apply", (getattr(jnp, f),), {"mode": m}) for f in ["sin", "negative", "square"]
        for m in [None, "clip", "drop"] for n, k in APPLY_KEYS.items() if not (n == "int out of range" and m is None)])
    if name == "int out of range" and mode is None:
        with pytest.raises(IndexError, match="out of bounds"):
            xp.asarray(a).at[_ax_int_key(key)].apply(getattr(xp, fn))
        return
    want = _jax_at(a, key, "apply", getattr(jnp, fn), mode=mode)
    got = xp.asarray(a).at[_ax_int_key(key)].apply(getattr(xp, fn), mode=mode)
    assert_same(got, want)
    # staged: the repeat counts are symbolic (a while loop applies fn up to the largest count)
    jkey = _ax_int_key(key)
    arrays = [k for k in (jkey if isinstance(jkey, tuple) else (jkey,)) if isinstance(k, xp.Array)]

    def f(x, *idx):
        it = iter(idx)
        k = tuple(next(it) if isinstance(e, xp.Array) else e for e in jkey) if isinstance(jkey, tuple) \
            else (next(it) if isinstance(jkey, xp.Array) else jkey)
        return x.at[k].apply(getattr(xp, fn), mode=mode)

    assert_same(xp.jit(f)(xp.asarray(a), *arrays), want)


def test_at_apply_errors(executor):
    x = xp.asarray(V)
    with pytest.raises(TypeError, match="at\\[...\\].apply: fn must be a unary function"):
        x.at[0].apply(3.0)
    with pytest.raises(ValueError, match="at\\[...\\].apply: unknown mode 'wrap'"):
        x.at[0].apply(xp.sin, mode="wrap")
    with xp.strict(), pytest.raises(TypeError, match="cannot store float64 values into an int32 array"):
        xp.asarray([1, 2], dtype=xp.int32).at[0].apply(lambda v: xp.astype(v, xp.float64) * 0.5)
    # the default mode stores as NumPy does: truncated toward zero
    assert xp.asarray([3, 2], dtype=xp.int32).at[0].apply(lambda v: v / 2).tolist() == [1, 2]


# -- derivatives, against jax.grad ------------------------------------------------------------------

W = np.arange(1.0, 6.0)


def _grads_ax(op, key, mode, u, unique=False):
    w = xp.asarray(W)

    def f(x, u):
        return xp.sum(getattr(x.at[_ax_key(key)], op)(u, mode=mode, unique_indices=unique) * w)

    return xp.grad(f, argnums=(0, 1))(xp.asarray(V), xp.asarray(u))


def _grads_jax(op, key, mode, u, unique=False):
    """``jax.grad``'s derivatives (NumPy arrays), computed once per module for each distinct case."""
    memo = _frozen(("grads", op, key, mode, u, unique))
    if memo not in _REFERENCES:
        _REFERENCES[memo] = tuple(np.asarray(g) for g in _grads_jax_once(op, key, mode, u, unique))
    return _REFERENCES[memo]


def _grad_u(op):
    """The updates of test_at_update_grads_match_jax's case of ``op``."""
    if op == "min":
        return np.array([3.0, 3.0, 0.5])  # x[0] = 3: a three-way tie at index 0
    return np.array([3.0, 1.5, 3.0]) if op == "max" else np.array([0.5, -2.0, 4.0])


def _prefill_grads() -> None:
    """jax.grad's derivatives of every GRAD_CASES case in one ``jax.jit`` program (the keys, updates and
    weights its arguments), once per module: one compile, not one per case."""
    if "grads" in _FILLED:
        return
    _FILLED.add("grads")
    cases = [(op, key, mode, _grad_u(op), unique) for op, key, mode, unique in GRAD_CASES]

    def program(x, w, *per_case):
        outs = []
        for (op, _, mode, _, unique), (u, k) in zip(cases, zip(per_case[::2], per_case[1::2])):
            def f(x, u, op=op, mode=mode, unique=unique, k=k):
                return jnp.sum(getattr(x.at[k], op)(u, mode=mode, unique_indices=unique) * w)
            outs.append(jax.grad(f, argnums=(0, 1))(x, u))
        return outs

    args = [_put(v) for _, key, _, u, _ in cases for v in (u, key)]
    for case, grads in zip(cases, jax.jit(program)(_put(V), _put(W), *args)):
        _REFERENCES[_frozen(("grads", *case))] = tuple(np.asarray(g) for g in grads)


def _grads_jax_once(op, key, mode, u, unique=False):
    def f(x, u, k, w):
        return jnp.sum(getattr(x.at[k], op)(u, mode=mode, unique_indices=unique) * w)

    # one jitted program (the key and weights its arguments: nothing folded), not eager's one per operation
    return jax.jit(jax.grad(f, argnums=(0, 1)))(_put(V), _put(u), _put(key), _put(W))


GRAD_CASES = [
    ("set", np.array([0, 3, -1]), None, False),
    ("set", np.array([0, 3, 0]), None, False),           # a repeated write: the kept one gets the gradient
    ("set", np.array([-6, 1, 5]), "drop", False),
    ("set", np.array([-6, 1, 9]), "clip", False),
    ("add", np.array([0, 3, 0]), None, False),
    ("add", np.array([7, 3, -1]), "drop", False),
    ("add", np.array([7, 3, -8]), "clip", False),
    ("multiply", np.array([4, 1, 2]), None, True),
    ("multiply", np.array([4, 1, 9]), "drop", True),
    ("min", np.array([0, 0, 1]), None, False),           # ties between x and two updates
    ("max", np.array([2, 4, 2]), None, False),
    ("max", np.array([2, 7, 2]), "drop", False),
]


@pytest.mark.parametrize("op, key, mode, unique", GRAD_CASES, ids=range(len(GRAD_CASES)))
def test_at_update_grads_match_jax(executor, op, key, mode, unique):
    _prefill_grads()
    u = _grad_u(op)
    gx, gu = _grads_ax(op, key, mode, u, unique)
    jx, ju = _grads_jax(op, key, mode, u, unique)
    assert_same(gx, np.asarray(jx))
    assert_same(gu, np.asarray(ju))


def test_multiply_grad_needs_unique_indices(executor):
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        _grads_ax("multiply", np.array([0, 0, 1]), None, np.array([1.0, 2.0, 3.0]))
    # unique values without the promise: known indices are checked
    gx, gu = _grads_ax("multiply", np.array([0, 2, 1]), None, np.array([1.0, 2.0, 3.0]))
    jx, ju = _grads_jax("multiply", np.array([0, 2, 1]), None, np.array([1.0, 2.0, 3.0]), True)
    assert_same(gx, np.asarray(jx))
    assert_same(gu, np.asarray(ju))


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_at_get_grads_match_jax(executor, mode):
    key = np.array([-6, 0, 4, 4, 9])
    w = np.arange(1.0, 6.0)
    g = xp.grad(lambda x: xp.sum(x.at[xp.asarray(key)].get(mode=mode, fill_value=0.0) * xp.asarray(w)))(xp.asarray(V))
    memo = ("get grads", mode)
    if memo not in _REFERENCES:  # once per module, one jitted program (the key and weights its arguments)
        _REFERENCES[memo] = np.asarray(jax.jit(jax.grad(
            lambda x, k, w: jnp.sum(x.at[k].get(mode=mode, fill_value=0.0) * w)))(
            _put(V), _put(key), _put(w)))
    assert_same(g, _REFERENCES[memo])


def test_indexing_mixes_grads_match_jax(executor):
    def f(m):
        def g(a):
            return m.sum(a[0, :, m.asarray([1, 3, 1])] * 2.0) + m.sum(a[m.asarray([1, 0]), 1:] ** 2) \
                + m.sum(a[None, ..., m.asarray([-1])] * a[:, None, 2, m.asarray([0])])
        return g

    g = xp.grad(f(xp))(xp.asarray(A))
    if "mixes grads" not in _REFERENCES:  # once per module, one jitted program
        _REFERENCES["mixes grads"] = np.asarray(jax.jit(jax.grad(f(jnp)))(_put(A)))
    assert_same(g, _REFERENCES["mixes grads"])


def test_dask_bounds_check_computes_only_the_index_min_and_max():
    pytest.importorskip("dask")
    from dask.callbacks import Callback

    if not xp.executors.get("dask").available():
        pytest.skip("dask executor unavailable")
    with xp.use_executor("dask"):
        x = xp.exp(xp.arange(1000.0))  # a graph that must not run for the check
        i = xp.asarray([3, 999, -1]) + 0
        x_keys = set(x._buf.__dask_graph__())
        graphs = []

        class Record(Callback):
            def _start(self, dsk):
                graphs.append(set(dsk))

        with Record():
            y = x[i]
            with pytest.raises(IndexError, match="index 1000 is out of bounds for axis 0 with size 1000"):
                x[i + 1]
        assert len(graphs) == 2 and not any(g & x_keys for g in graphs)
        assert type(y._buf).__module__.startswith("dask")  # the gather itself stays lazy
        assert_same(y, np.exp(np.arange(1000.0))[[3, 999, -1]])
