"""Python scalars in every function, integer/bool input to the floating-point functions, bool
input to abs/floor/ceil/trunc/round/sign: the default mode against jax.numpy (x64) or NumPy 2,
strict mode against array-api-strict, on every executor.

The default mode's rule (issue #26): a Python scalar where the standard takes an array is a 0-d
array of its default dtype, weakly typed beside other arrays as in JAX (``stack([float32, 2.0])``
is float32; NumPy gives float64 there, and arrayx follows JAX as the issue asks).  Where jax.numpy
and NumPy 2 differ on integer input (linalg and fft: JAX computes int8 in float32/complex64, NumPy
in float64/complex128; ``searchsorted`` returns int32 in JAX), the reference is NumPy 2, by the
design rule "follow NumPy 2 where the standard is silent": those cases say ``ref="numpy"``.
Strict mode (``arrayx.strict()``) refuses a case exactly when array-api-strict does, with a
TypeError naming the function.  Every case's result dtype is the reference's on every executor,
so the executors agree with each other in both modes.
"""
from __future__ import annotations

import numpy as np
import pytest

import arrayx as xp
from arrayx.api import _dtypes
from arrayx.api.elementwise import BINARY, UNARY
from tests.api.test_modes import A, _assert_result  # an array argument; dtype, shape and values as the reference's
from tests.conftest import ALL_EXECUTORS, to_numpy


F32 = A([0.5, 2.0, 3.0], "float32")
F64 = A([0.5, 2.0, 3.0], "float64")
F32_0D = A(1.5, "float32")
I64 = A([3, 1, 2], "int64")
I8V = A([3, -1, 2], "int8")
M_I8 = A([[4, 1], [1, 3]], "int8")  # symmetric positive definite
M_I64 = A([[4, 1], [1, 3]], "int64")
M_I32 = A([[2, 1, 0], [1, 3, 1], [0, 1, 2]], "int32")
B = A([True, False, True], "bool")

# (id, function path, positional arguments, keyword arguments, reference, which output)
# reference: "jax" (jax.numpy with x64), "numpy" (NumPy 2; float16 read as float32), or a callable
CASES = [
    # -- Python scalars where the standard takes an array --------------------------------------
    ("flip(3.0)", "flip", (3.0,), {}, "jax", None),
    ("roll(3.0,1)", "roll", (3.0, 1), {}, "jax", None),
    ("broadcast_to(3.0)", "broadcast_to", (3.0, (2,)), {}, "jax", None),
    ("expand_dims(3.0)", "expand_dims", (3.0,), {"axis": 0}, "jax", None),
    ("reshape(3.0)", "reshape", (3.0, (1,)), {}, "jax", None),
    ("repeat(3.0,2)", "repeat", (3.0, 2), {}, "jax", None),
    ("tile(3,(2,))", "tile", (3, (2,)), {}, "jax", None),
    ("permute_dims(2.5,())", "permute_dims", (2.5, ()), {}, "jax", None),
    ("squeeze(2.5,())", "squeeze", (2.5, ()), {}, "jax", None),
    ("stack([1.0,2])", "stack", ([1.0, 2],), {}, "jax", None),
    ("stack([float32,2.0])", "stack", ([F32_0D, 2.0],), {}, "jax", None),  # weak: float32 (NumPy: float64)
    ("concat([float32,2.0],None)", "concat", ([F32, 2.0],), {"axis": None}, "jax", None),
    ("broadcast_arrays(1.0,float32)", "broadcast_arrays", (1.0, F32), {}, "jax", 0),
    ("zeros_like(3)", "zeros_like", (3,), {}, "jax", None),
    ("ones_like(2.5)", "ones_like", (2.5,), {}, "jax", None),
    ("full_like(True,False)", "full_like", (True, False), {}, "jax", None),
    ("all(1)", "all", (1,), {}, "jax", None),
    ("any(0.0)", "any", (0.0,), {}, "jax", None),
    ("argmax(3.0)", "argmax", (3.0,), {}, "jax", None),
    ("count_nonzero(3)", "count_nonzero", (3,), {}, "jax", None),
    ("where(True,float32,2.0)", "where", (True, F32, 2.0), {}, "jax", None),
    ("searchsorted(float32,2.5)", "searchsorted", (F32, 2.5), {}, "numpy", None),  # JAX: int32
    ("unique_values(3)", "unique_values", (3,), {}, "jax", None),
    ("isin(1,int64)", "isin", (1, I64), {}, "jax", None),
    ("max(3)", "max", (3,), {}, "jax", None),
    ("prod(3)", "prod", (3,), {}, "jax", None),
    ("std(2.0)", "std", (2.0,), {}, "jax", None),
    ("var(1)", "var", (1,), {}, "jax", None),
    ("diff(float32,prepend=0.0)", "diff", (F32,), {"prepend": 0.0}, "jax", None),  # weak: float32 (NumPy: float64)
    ("vector_norm(3.0)", "linalg.vector_norm", (-3.0,), {}, "jax", None),
    ("tensordot(2.0,float32,0)", "tensordot", (2.0, F32), {"axes": 0}, "jax", None),  # weak: float32
    ("fftshift(3.0)", "fft.fftshift", (3.0,), {}, "jax", None),  # NumPy fails on a 0-d input
    ("sort(numpy array)", "sort", (np.asarray([3, 1, 2]),), {}, "jax", None),
    ("astype(3,float32)", "astype", (3, ("dtype", "float32")), {}, "jax", None),  # NumPy's np.astype refuses a scalar
    ("lax.dynamic_slice(3.0)", "lax.dynamic_slice", (3.0, (), ()), {}, lambda: np.asarray(3.0), None),
    # -- integer and bool input to the floating-point functions --------------------------------
    ("inv(int8)", "linalg.inv", (M_I8,), {}, "numpy", None),  # JAX: float32
    ("det(int64)", "linalg.det", (M_I64,), {}, "numpy", None),
    ("solve(int8,int64)", "linalg.solve", (M_I8, A([1, 2], "int64")), {}, "numpy", None),
    ("cholesky(int64)", "linalg.cholesky", (M_I64,), {}, "numpy", None),
    ("eigvalsh(int32)", "linalg.eigvalsh", (M_I32,), {}, "numpy", None),
    ("svdvals(int32)", "linalg.svdvals", (M_I32,), {}, "numpy", None),
    ("pinv(int8)", "linalg.pinv", (M_I8,), {}, "numpy", None),
    ("slogdet(int32)", "linalg.slogdet", (M_I32,), {}, "numpy", 1),
    ("matrix_rank(int8)", "linalg.matrix_rank", (M_I8,), {}, "numpy", None),
    ("matrix_norm(int64)", "linalg.matrix_norm", (M_I64,), {}, "numpy", None),
    ("vector_norm(int8)", "linalg.vector_norm", (I8V,), {}, "numpy", None),
    ("matrix_power(int8,3)", "linalg.matrix_power", (M_I8, 3), {}, "jax", None),  # integer kept (NumPy too)
    ("matrix_power(int8,-1)", "linalg.matrix_power", (M_I8, -1), {}, "numpy", None),
    ("fft(int64)", "fft.fft", (I64,), {}, "numpy", None),  # JAX: complex64 for small integers
    ("rfft(int8)", "fft.rfft", (I8V,), {}, "numpy", None),
    ("ifft(bool)", "fft.ifft", (B,), {}, "numpy", None),
    ("irfft(int64)", "fft.irfft", (I64,), {}, "numpy", None),
    ("hfft(int8)", "fft.hfft", (I8V,), {}, "numpy", None),
    ("fftn(int32)", "fft.fftn", (M_I32,), {}, "numpy", None),
    ("mean(int8)", "mean", (I8V,), {}, "numpy", None),
    ("std(int64)", "std", (I64,), {}, "numpy", None),
    ("var(bool)", "var", (B,), {}, "numpy", None),
    # -- bool input to the numeric functions NumPy 2 computes on bools -------------------------
    ("abs(bool)", "abs", (B,), {}, "jax", None),
    ("floor(bool)", "floor", (B,), {}, "jax", None),
    ("ceil(bool)", "ceil", (B,), {}, "jax", None),
    ("trunc(bool)", "trunc", (B,), {}, "jax", None),
    ("round(bool)", "round", (B,), {}, "numpy", None),  # NumPy's float16 read as float32; JAX refuses
    # -- accepted in both modes (strict must not refuse these) ---------------------------------
    ("where(bool,float32,2.0)", "where", (B, F32, 2.0), {}, "jax", None),
    ("inv(float32)", "linalg.inv", (A([[2.0, 1.0], [1.0, 3.0]], "float32"),), {}, "jax", None),
    ("concat([float32,float64])", "concat", ([F32, F64],), {}, "jax", None),
    # -- a float fill of an integer or bool array (unspecified): truncation, as NumPy/JAX/strict -
    ("full_like(2,1.5)", "full_like", (2, 1.5), {}, "jax", None),
    ("full_like(int64,2.9)", "full_like", (I64, 2.9), {}, "jax", None),
    ("full_like(int8,-2.5)", "full_like", (I8V, -2.5), {}, "jax", None),
    ("full_like(bool,0.5)", "full_like", (B, 0.5), {}, "jax", None),
    ("full((2,),-2.7,int64)", "full", ((2,), -2.7), {"dtype": ("dtype", "int64")}, "jax", None),
    ("full((2,),0.25,bool)", "full", ((2,), 0.25), {"dtype": ("dtype", "bool")}, "jax", None),
]
IDS = [c[0] for c in CASES]


def _resolve(ns, path):
    if ns is xp and path.startswith("lax."):
        return getattr(xp.lax, path[4:])
    if path.startswith("lax."):
        import jax

        return getattr(jax.lax, path[4:])
    out = ns
    for part in path.split("."):
        out = getattr(out, part)
    return out


def _build(ns, arg):
    if isinstance(arg, tuple) and arg and arg[0] == "array":
        return ns.asarray(arg[1], dtype=getattr(ns, arg[2]))
    if isinstance(arg, tuple) and arg[:1] == ("dtype",):
        return getattr(ns, arg[1])
    if isinstance(arg, list):
        return [_build(ns, a) for a in arg]
    return arg


def _call(ns, case):
    _, path, args, kwargs, _, pick = case
    out = _resolve(ns, path)(*[_build(ns, a) for a in args], **{k: _build(ns, v) for k, v in kwargs.items()})
    return out if pick is None else out[pick]


def _expected(case) -> np.ndarray:
    ref = case[4]
    if callable(ref):
        return ref()
    if ref == "numpy":
        with np.errstate(all="ignore"):
            want = np.asarray(_call(np, case))
        # NumPy's float16 (bool, int8, uint8 input), which the standard lacks, is float32 here
        return want.astype(np.float32) if want.dtype == np.float16 else want
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    batch = _jax_references()
    if case[0] in batch:
        return batch[case[0]]
    with jax.enable_x64(True):
        return np.asarray(_call(jnp, case))


def _leaves(arg):
    """The arrays of an argument (table arrays and NumPy arrays), in ``_staged``'s order."""
    if _is_array(arg) or isinstance(arg, np.ndarray):
        return [arg]
    if isinstance(arg, list):
        return [leaf for a in arg for leaf in _leaves(a)]
    return []


def _staged(jnp, arg, it):
    """``_build(jnp, arg)`` with each array taken from ``it`` (a traced argument of the program)."""
    if _is_array(arg) or isinstance(arg, np.ndarray):
        return next(it)
    if isinstance(arg, list):
        return [_staged(jnp, a, it) for a in arg]
    return _build(jnp, arg)


_BATCH: dict = {}


def _jax_references() -> dict:
    """jax.numpy's (x64) results of the cases whose reference is "jax", made once for the module in one
    ``jax.jit`` program (eager jax compiled one to three programs per case), the arrays its arguments
    (nothing folded at compile time: each value is the eager call's); a case jax cannot stage (a
    data-dependent shape: unique_values) is left out, and ``_expected`` calls it eagerly."""
    if _BATCH:
        return _BATCH
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        staged, leaves = [], []
        for case in CASES:
            if case[4] != "jax":
                continue
            _, path, args, kwargs, _, pick = case
            # jax.device_put: a transfer, no program (jnp.asarray of a NumPy array or a Python scalar compiles
            # an identity program, ``stage``, per new shape and dtype); the same dtype and weak type
            mine = [jax.device_put(np.asarray(v[1], dtype=v[2]) if _is_array(v) else v)
                    for a in [*args, *kwargs.values()] for v in _leaves(a)]

            def one(*arrays, path=path, args=args, kwargs=kwargs, pick=pick):
                it = iter(arrays)
                built = [_staged(jnp, a, it) for a in args]
                out = _resolve(jnp, path)(*built, **{k: _staged(jnp, v, it) for k, v in kwargs.items()})
                return out if pick is None else out[pick]

            try:
                jax.eval_shape(one, *mine)
            except Exception:  # noqa: BLE001 - not stageable: eagerly, in _expected
                continue
            staged.append((case[0], one, len(mine)))
            leaves += mine

        def program(*arrays):
            outs, at = {}, 0
            for cid, one, n in staged:
                outs[cid] = one(*arrays[at:at + n])
                at += n
            return outs

        _BATCH.update({cid: np.asarray(v) for cid, v in jax.jit(program)(*leaves).items()})
    return _BATCH


def _is_array(a):
    return isinstance(a, tuple) and a[:1] == ("array",)


ARRAY_CASES = [c for c in CASES if any(_is_array(a) for a in c[2])]


def _split_on_jax(cases: list, jitted: bool) -> list:
    """``executor, case`` parameters: every case on every executor, except on jax in the ci profile, where
    the cases with array arguments alternate between the eager test (even ones) and the jitted one (odd
    ones), each a new XLA program per case there: every case still runs on jax, eagerly or under jit, the
    eager and traced paths each on half of them; the deep profile all."""
    from conformance import profile

    turn = {id(c): i % 2 for i, c in enumerate(ARRAY_CASES)}
    params = []
    for ex in ALL_EXECUTORS:
        for case in cases:
            if ex == "jax" and profile.current().sampled and id(case) in turn and turn[id(case)] != jitted:
                continue
            params.append(pytest.param(ex, case, id=f"{ex}-{case[0]}"))
    return params


@pytest.mark.parametrize("executor, case", _split_on_jax(CASES, jitted=False), indirect=["executor"])
def test_default_mode_matches_reference(executor, case):
    want = _expected(case)
    got = _call(xp, case)
    _assert_result(got, want)
    assert got.device == xp.asarray(0).device  # made on the current executor


@pytest.mark.parametrize("executor, case", _split_on_jax(ARRAY_CASES, jitted=True), indirect=["executor"])
def test_default_mode_under_jit(executor, case):
    """The array arguments traced, the Python scalars closed over: the eager result."""
    _, path, args, kwargs, _, pick = case
    arrays = [i for i, a in enumerate(args) if _is_array(a)]
    built = [_build(xp, a) for a in args]

    def f(*arrs):
        full = list(built)
        for i, v in zip(arrays, arrs):
            full[i] = v
        out = _resolve(xp, path)(*full, **kwargs)
        return out if pick is None else out[pick]

    _assert_result(xp.jit(f)(*[built[i] for i in arrays]), _expected(case))


def _strict_outcome(ns, case):
    """("ok", dtype name) or ("refused", exception type name, message)."""
    try:
        out = _call(ns, case)
    except (TypeError, ValueError, AttributeError) as e:
        return ("refused", type(e).__name__, str(e))
    return ("ok", str(np.dtype(str(out.dtype).rpartition(".")[2])))


def _strict_reference(case):
    if case[1].startswith("lax."):  # not in the standard: strict mode takes arrays only
        return ("refused",)
    aas = pytest.importorskip("array_api_strict")
    return _strict_outcome(aas, case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_strict_mode_matches_array_api_strict(executor, case):
    want = _strict_reference(case)
    with xp.strict():
        got = _strict_outcome(xp, case)
    assert got[0] == want[0], f"arrayx strict: {got}, array_api_strict: {want}"
    if want[0] == "ok":
        assert got == want
    else:  # a TypeError naming the function and the fix
        fname = case[1].rpartition(".")[2]
        assert got[1] == "TypeError" and got[2].startswith(f"{fname}:"), got
        assert "astype" in got[2] or "asarray" in got[2], got


# -- every floating-point elementwise function takes integer input in the default mode ----------

FLOAT_FUNCTIONS = sorted([(n, 1) for n, c in UNARY.items() if c in _dtypes.FLOAT_ONLY]
                         + [(n, 2) for n, c in BINARY.items() if c in _dtypes.FLOAT_ONLY] + [("divide", 2)])


def _float_function_cases() -> list:
    """``executor, name, arity, dtype`` parameters: every function in every input dtype on every executor,
    except on jax in the ci profile (a new XLA program per function and dtype there), where each function
    takes one of the dtypes in turn (tests/covering.py: every function and every dtype still runs on jax);
    the deep profile all."""
    from tests import covering

    return covering.on_executors([(n, a, d) for n, a in FLOAT_FUNCTIONS for d in ["int16", "uint32", "bool"]])


@pytest.mark.parametrize("executor, name, arity, dtype", _float_function_cases(), indirect=["executor"])
def test_every_float_function_takes_integer_and_bool_input(executor, name, arity, dtype):
    values = [True, False, True] if dtype == "bool" else [1, 2, 3]
    arg = A(values, dtype)
    np_name = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
               "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}.get(name, name)
    x = np.asarray(values, dtype=dtype)
    # NumPy 2's dtype; its float16 (bool input) is float32 here, and NumPy's integer reciprocal (an
    # integer division) is the standard's 1/x in that float
    inexact = np.float32 if dtype == "bool" else np.result_type(x.dtype, np.float16)
    with np.errstate(all="ignore"):
        if name == "reciprocal":
            want = 1 / x.astype(inexact)
        else:
            want = np.asarray(getattr(np, np_name)(*[x] * arity))
            if want.dtype == np.float16:
                want = np.asarray(getattr(np, np_name)(*[x.astype(np.float32)] * arity))
    got = getattr(xp, name)(*[_build(xp, arg)] * arity)
    _assert_result(got, want)
    with xp.strict(), pytest.raises(TypeError, match=f"{name}: .*{dtype}"):
        getattr(xp, name)(*[_build(xp, arg)] * arity)


def test_sign_of_bool_is_refused_in_both_modes(executor):
    """NumPy 2 and jax.numpy refuse sign(bool): so does arrayx, saying how to cast."""
    b = xp.asarray([True, False])
    for strict in (False, True):
        with xp.strict(strict), pytest.raises(TypeError, match=r"sign: x must have a numeric dtype, got bool.*astype"):
            xp.sign(b)
    with pytest.raises(TypeError):
        np.sign(np.asarray([True, False]))


def test_bool_results_are_new_arrays(executor):
    """abs/floor/ceil/trunc of bool give a new array (as NumPy), not the argument itself."""
    b = xp.asarray([True, False])
    for f in (xp.abs, xp.floor, xp.ceil, xp.trunc):
        out = f(b)
        assert out is not b and to_numpy(out).tolist() == [True, False]


def test_strict_mode_refuses_mixed_kinds_in_joins_and_result_type(executor):
    """array-api-strict refuses int8 with float32 in concat, stack and result_type; the default mode promotes."""
    i8, f32 = xp.asarray([1], dtype=xp.int8), xp.asarray([1.0], dtype=xp.float32)
    assert xp.concat([i8, f32]).dtype == xp.float32
    assert xp.result_type(i8, f32) == xp.float32
    with xp.strict():
        for call in (lambda: xp.concat([i8, f32]), lambda: xp.stack([i8, f32]), lambda: xp.result_type(i8, f32)):
            with pytest.raises(TypeError, match=r"int8 and float32 cannot be promoted together in strict mode"):
                call()
