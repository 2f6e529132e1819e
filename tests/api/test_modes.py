"""The two modes: the default one accepts what NumPy 2 and JAX accept where the standard is silent,
``arrayx.strict()`` / ``ARRAYX_STRICT=1`` refuses exactly what array-api-strict refuses.

One table of cases, each a function of a namespace (arrayx, NumPy, jax.numpy, array_api_strict)
and its arguments.  Default mode: the result on every executor has NumPy's dtype (float32 where
NumPy picks float16, which the standard lacks) and values, eagerly, under jit and under vmap.
Strict mode: arrayx accepts a case exactly when array_api_strict does, with the same dtype.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import arrayx as xp
from tests.conftest import to_numpy, tolerance

# an argument: a Python scalar, or ("array", values, dtype name)
def A(values, dtype):  # noqa: N802 - reads as a constructor in the table
    return ("array", values, dtype)


F = A([0.5, 2.0, 3.0], "float64")
F32 = A([0.5, 2.0, 3.0], "float32")
I = A([1, 2, 3], "int64")  # noqa: E741
I32 = A([1, 2, 3], "int32")
I16 = A([1, 2, 3], "int16")
I8 = A([1, 2, 3], "int8")
U8 = A([1, 2, 3], "uint8")
U64 = A([1, 2, 3], "uint64")
B = A([True, False, True], "bool")
C = A([1 + 1j, 2.0, -1j], "complex128")

# (id, function name, arguments): ``getattr(namespace, name)(*arguments)``
CASES = [
    # Python scalars in functions that take arrays
    ("log(2.0)", "log", (2.0,)),
    ("exp(1)", "exp", (1,)),
    ("sqrt(4)", "sqrt", (4,)),
    ("abs(-3)", "abs", (-3,)),
    ("negative(2.5)", "negative", (2.5,)),
    ("add(1,2.5)", "add", (1, 2.5)),
    ("multiply(2,3)", "multiply", (2, 3)),
    ("maximum(1,2.0)", "maximum", (1, 2.0)),
    ("less(1,2)", "less", (1, 2)),
    ("sum(2.0)", "sum", (2.0,)),
    ("mean(3.0)", "mean", (3.0,)),
    # integer and bool input to the floating-point functions
    ("exp(int64)", "exp", (I,)),
    ("log(int32)", "log", (I32,)),
    ("sin(int16)", "sin", (I16,)),
    ("sqrt(int8)", "sqrt", (I8,)),
    ("tanh(uint8)", "tanh", (U8,)),
    ("cos(bool)", "cos", (B,)),
    ("log1p(uint64)", "log1p", (U64,)),
    ("atan2(int64,int64)", "atan2", (I, I)),
    ("hypot(int8,int8)", "hypot", (I8, I8)),
    ("atan2(int64,1)", "atan2", (I, 1)),
    ("divide(int64,int64)", "divide", (I, I)),
    ("divide(int8,2)", "divide", (I8, 2)),
    ("mean(int64)", "mean", (I,)),
    ("std(int32)", "std", (I32,)),
    ("var(bool)", "var", (B,)),
    # mixed bool / integer / float operands (NumPy 2's promotion)
    ("multiply(float64,bool)", "multiply", (F, B)),
    ("multiply(int8,float32)", "multiply", (I8, F32)),
    ("add(int64,float64)", "add", (I, F)),
    ("add(uint64,int64)", "add", (U64, I)),
    ("subtract(uint8,float32)", "subtract", (U8, F32)),
    ("multiply(int64,bool)", "multiply", (I, B)),
    ("bitwise_and(bool,int8)", "bitwise_and", (B, I8)),
    ("less(bool,float64)", "less", (B, F)),
    ("equal(bool,int64)", "equal", (B, I)),
    ("maximum(float64,bool)", "maximum", (F, B)),
    ("add(int64,1.5)", "add", (I, 1.5)),
    ("multiply(bool,1)", "multiply", (B, 1)),
    ("multiply(int64,True)", "multiply", (I, True)),
    ("add(complex128,int64)", "add", (C, I)),
    ("where(bool,1,2.5)", "where", (B, 1, 2.5)),
    ("where(bool,float64,int64)", "where", (B, F, I)),
    # what both modes accept (strict must not refuse more than array-api-strict)
    ("add(float64,1)", "add", (F, 1)),
    ("multiply(float32,float64)", "multiply", (F32, F)),
    ("add(int8,uint8)", "add", (I8, U8)),
    ("multiply(float64,1j)", "multiply", (F, 1j)),
    ("add(float32,complex128)", "add", (F32, C)),
    ("logical_and(bool,True)", "logical_and", (B, True)),
    ("atan2(float64,1)", "atan2", (F, 1)),
    ("pow(float64,2)", "pow", (F, 2)),
    ("mean(float32)", "mean", (F32,)),
    ("exp(float32)", "exp", (F32,)),
]
IDS = [c[0] for c in CASES]

# where the default mode differs from NumPy on purpose: float16 does not exist in the standard
_NUMPY_FLOAT16 = np.dtype("float16")


def _build(ns, dtypes_of, arg):
    if isinstance(arg, tuple):
        _, values, dtype = arg
        return ns.asarray(values, dtype=dtypes_of(dtype))
    return arg


def _call(ns, name, args, dtypes_of=None):
    dtypes_of = dtypes_of or (lambda n: getattr(ns, n))
    return getattr(ns, name)(*[_build(ns, dtypes_of, a) for a in args])


def _numpy_expected(name, args) -> np.ndarray:
    with np.errstate(all="ignore"):
        want = np.asarray(_call(np, name, args))
    if want.dtype == _NUMPY_FLOAT16:  # NumPy's float16 for bool/int8/uint8 -> float32 (as JAX)
        with np.errstate(all="ignore"):
            want = np.asarray(_call(np, name, [_as_float32(a) for a in args]))
    return want


def _as_float32(arg):
    return ("array", arg[1], "float32") if isinstance(arg, tuple) else arg


def _assert_result(got, want):
    g = to_numpy(got)
    assert g.dtype == want.dtype, f"dtype {g.dtype} != NumPy's {want.dtype}"
    assert g.shape == want.shape
    np.testing.assert_allclose(g, want, equal_nan=True, **tolerance(want.dtype))


# -- default mode: NumPy's result on every executor, eager == jit == vmap ------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_default_mode_matches_numpy(executor, case):
    _, name, args = case
    want = _numpy_expected(name, args)
    got = _call(xp, name, args)
    _assert_result(got, want)
    assert got.device == xp.asarray(0).device  # on the current executor


def _traceable(name, args):
    """(positions of the array arguments, every argument built, ``f(*arrays)`` calling ``xp.<name>`` with the scalars fixed)."""
    arrays = [i for i, a in enumerate(args) if isinstance(a, tuple)]
    built = [_build(xp, lambda n: getattr(xp, n), a) for a in args]

    def f(*arrs):
        full = list(built)
        for i, v in zip(arrays, arrs):
            full[i] = v
        return getattr(xp, name)(*full)

    return arrays, built, f


def _vmappable(case) -> bool:
    return any(isinstance(a, tuple) for a in case[2]) and case[1] not in ("sum", "mean", "std", "var")


_VMAP_TURN = {c[0]: i % 2 for i, c in enumerate(c for c in CASES if _vmappable(c))}


def _transforms(executor: str, case) -> tuple[bool, bool]:
    """(jit, vmap): both on every executor, except on jax in the ci profile (new XLA programs per case
    and transform there), where the cases vmap takes alternate between jit (even ones) and vmap (odd
    ones), and the others take jit: every case still runs transformed on jax, and each transform on
    half of the vmappable cases; the deep profile all."""
    from conformance import profile

    if not _vmappable(case):
        return True, False
    if executor != "jax" or not profile.current().sampled:
        return True, True
    return _VMAP_TURN[case[0]] == 0, _VMAP_TURN[case[0]] == 1


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_default_mode_jit_and_vmap_agree_with_eager(executor, case):
    _, name, args = case
    want = _numpy_expected(name, args)
    arrays, built, f = _traceable(name, args)
    jit, vmap = _transforms(executor, case)

    if jit:
        _assert_result(xp.jit(f)(*[built[i] for i in arrays]), want)
    if vmap:
        stacked = [xp.stack([built[i], built[i]]) for i in arrays]
        out = to_numpy(xp.vmap(f)(*stacked))
        _assert_result(out[0], want)
        _assert_result(out[1], want)


def test_default_mode_dtypes_agree_with_jax_x64():
    """jax.numpy (x64) gives NumPy's dtype on these cases (it differs elsewhere: int32 -> float32,
    mean(bool) -> float32; arrayx follows NumPy there)."""
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    agree = [c for c in CASES if c[0] in {
        "log(2.0)", "exp(1)", "sqrt(4)", "abs(-3)", "add(1,2.5)", "multiply(2,3)", "sum(2.0)",
        "exp(int64)", "sin(int16)", "sqrt(int8)", "tanh(uint8)", "cos(bool)", "atan2(int64,int64)",
        "divide(int64,int64)", "mean(int64)", "multiply(float64,bool)", "multiply(int8,float32)",
        "add(int64,float64)", "add(uint64,int64)", "multiply(int64,bool)", "bitwise_and(bool,int8)",
        "add(int64,1.5)", "multiply(bool,1)", "multiply(int64,True)", "maximum(float64,bool)"}]
    assert len(agree) == 25
    with jax.enable_x64(True):
        for cid, name, args in agree:
            # jax.numpy's dtype from an abstract evaluation: its rules, no XLA program compiled
            want = np.dtype(jax.eval_shape(lambda: _call(jnp, name, args)).dtype)
            got = _call(xp, name, args).dtype
            assert got == want, f"{cid}: arrayx {got}, jax.numpy {want}"


# -- strict mode: array-api-strict's accept / refuse ---------------------------------------------

def _strict_outcome(ns, name, args, dtypes_of=None):
    """("ok", dtype name) or ("refused", exception type name)."""
    try:
        out = _call(ns, name, args, dtypes_of)
    except (TypeError, ValueError, AttributeError) as e:
        return ("refused", type(e).__name__)
    return ("ok", str(np.dtype(str(out.dtype).rpartition(".")[2])))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_strict_mode_matches_array_api_strict(executor, case):
    aas = pytest.importorskip("array_api_strict")
    _, name, args = case
    want = _strict_outcome(aas, name, args)
    with xp.strict():
        got = _strict_outcome(xp, name, args)
    assert got[0] == want[0], f"arrayx strict: {got}, array_api_strict: {want}"
    if want[0] == "ok":
        assert got == want
    else:
        assert got[1] == "TypeError"  # arrayx refuses with a TypeError naming the function


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_strict_mode_refuses_under_jit(executor, case):
    aas = pytest.importorskip("array_api_strict")
    _, name, args = case
    if _strict_outcome(aas, name, args)[0] == "ok":
        return
    arrays, built, f = _traceable(name, args)

    with xp.strict(), pytest.raises(TypeError, match=name):
        xp.jit(f)(*[built[i] for i in arrays])


def test_strict_mode_messages_name_function_and_fix():
    with xp.strict():
        with pytest.raises(TypeError, match=r"multiply: float64 and bool cannot be promoted together in strict mode"):
            xp.asarray([1.0]) * xp.asarray([True])
        with pytest.raises(TypeError, match=r"exp: x must have a floating-point dtype, got int64 .*astype"):
            xp.exp(xp.arange(3))
        with pytest.raises(TypeError, match=r"log: x must be an arrayx array, got float.*strict mode"):
            xp.log(2.0)
        with pytest.raises(TypeError, match=r"add: Python float scalars can only be combined with floating-point"):
            xp.arange(3) + 1.5
        with pytest.raises(TypeError, match=r"add: x2 must be an arrayx array or a Python scalar.*ndarray"):
            xp.add(xp.ones(2), np.ones(2))  # array_api_strict refuses NumPy arrays too
    assert to_numpy(xp.add(xp.ones(2), np.ones(2))).tolist() == [2.0, 2.0]  # the default mode converts them


# -- the switch: nesting, threads, the environment variable ----------------------------------------

def test_strict_nests_and_restores():
    x = xp.arange(3)
    assert not xp.is_strict()
    with xp.strict():
        assert xp.is_strict()
        with pytest.raises(TypeError):
            xp.exp(x)
        with xp.strict(False):
            assert not xp.is_strict()
            assert to_numpy(xp.exp(x)).dtype == np.float64
        assert xp.is_strict()
    assert not xp.is_strict()
    assert to_numpy(xp.exp(x)).dtype == np.float64
    with pytest.raises(TypeError, match="strict: on must be True or False"):
        with xp.strict("yes"):
            pass


def test_strict_is_thread_local():
    seen = {}
    inside = threading.Event()
    done = threading.Event()

    def other():
        inside.wait()
        seen["other"] = xp.is_strict()
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with xp.strict():
        inside.set()
        done.wait()
        seen["here"] = xp.is_strict()
    t.join()
    assert seen == {"other": False, "here": True}


@pytest.mark.parametrize("value, strict", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_arrayx_strict_environment_variable(value, strict):
    env = dict(os.environ, ARRAYX_STRICT=value)
    code = "import arrayx as xp; print(xp.is_strict())\ntry:\n xp.exp(xp.arange(3)); print('ok')\nexcept TypeError: print('refused')"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(strict), "refused" if strict else "ok"]


def test_arrayx_strict_bad_value_fails_at_import():
    env = dict(os.environ, ARRAYX_STRICT="maybe")
    out = subprocess.run([sys.executable, "-c", "import arrayx"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0
    assert "ARRAYX_STRICT='maybe': not a yes/no value" in out.stderr


def test_strict_mode_applies_to_a_jit_function_traced_in_the_default_mode():
    g = xp.jit(lambda v: xp.exp(v))
    x = xp.arange(3)
    assert to_numpy(g(x)).dtype == np.float64
    with xp.strict(), pytest.raises(TypeError, match="exp: x must have a floating-point dtype"):
        g(x)
