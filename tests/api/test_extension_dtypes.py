"""The extension floats ``arrayx.bfloat16`` and ``arrayx.float16`` (issue #41, point 4).

On every executor: creation, elementwise functions, reductions, matmul, astype, grad, vmap and jit,
compared with the NumPy executor and with ``jax.numpy``; the promotion rules against JAX's
(``jnp.promote_types``/``jnp.result_type``); the standard's own dtype lists unchanged.
"""
from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest

import arrayx as xp
from conformance import profile
from tests.conftest import on_numpy, to_numpy

ml_dtypes = pytest.importorskip("ml_dtypes", reason="arrayx.bfloat16 needs ml_dtypes")

EXT = ("bfloat16", "float16")
STANDARD = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64", "complex64", "complex128")
RTOL = {"bfloat16": 1e-2, "float16": 2e-3}  # a few units in the last place of each


def _jnp():
    pytest.importorskip("jax", reason="the reference is jax.numpy")
    import jax.numpy as jnp  # (its answers for 16-bit floats do not depend on x64)

    return jnp


def _grad_f(v, np_):
    return np_.sum(np_.sin(v) * v) + np_.sum(v @ v.T if np_ is not xp else v @ v.mT)


@functools.cache
def _jax_reference():
    """The composite jax references, each one ``jax.jit`` program made once for the module (compiled once
    per dtype and reused by every executor's test), not op by op as eager jax runs them (a program per
    operation: 5-6 times the compile time for test_grad's)."""
    import jax
    import jax.numpy as jnp

    def jmax(v):
        return jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "SAME")

    return {
        "max_pool": jax.jit(jmax),
        "grad max_pool": jax.jit(jax.grad(lambda v: jnp.sum(jmax(v) ** 2))),
        "tanh*2+x": jax.jit(lambda v: jnp.tanh(v) * 2.0 + v),
        "sum(tanh*x)": jax.jit(lambda v: jnp.sum(jnp.tanh(v) * v)),
    }


_JNAME = {"pow": "power", "atan2": "arctan2"}
_REDUCTIONS = (("sum", {}), ("sum", {"axis": 0}), ("mean", {"axis": 1}), ("var", {}), ("std", {"axis": 0}),
               ("max", {"axis": 1}), ("min", {}), ("prod", {"axis": 1}))


@functools.cache
def _data_references(name: str) -> dict:
    """jax.numpy's values of the elementwise functions, reductions, contractions and test_grad's
    derivatives of ``_DATA`` in dtype ``name``: one ``jax.jit`` program per dtype, made once for the module (eager jax compiled a program per
    function and dtype in the first executor's test).  Each value is one jax.numpy call on the
    program's arguments (``|x| + 0.5`` and ``round(x)`` are exact in both dtypes, so they are arguments
    too): the values eager jax gives."""
    import jax
    import jax.numpy as jnp

    def refs(jx, jy, jr):
        out = {}
        for f in _UNARY:
            out[f] = getattr(jnp, _JNAME.get(f, f))(jy if f in ("sqrt", "log1p") else jx)
        for f in _BINARY:
            out[f] = getattr(jnp, _JNAME.get(f, f))(jy, jx if f != "pow" else jr)
        out["where"] = jnp.where(jx > 0, jx, 0.0)
        out["x*2+1.5"] = jx * 2 + 1.5
        for f, kw in _REDUCTIONS:
            out[f + repr(kw)] = getattr(jnp, f)(jx, **kw)
        out["cumsum"] = jnp.cumsum(jx, axis=1)
        out["x@x.T"] = jx @ jx.T
        out["sum(x*x,1)"] = jnp.sum(jx * jx, axis=1)
        out["x@x[0]"] = jx @ jx[0]
        out["cos"] = jnp.cos(jx)
        out["2x"] = 2 * jx
        out["grad"] = jax.grad(lambda v: _grad_f(v, jnp))(jx)
        out["grad mean+max"] = jax.grad(lambda v: jnp.mean(jnp.exp(v)) + jnp.max(v))(jx)
        out["sum(exp*2+x)"] = jnp.sum(jnp.exp(jx) * 2.0 + jx, axis=1)
        return out

    data = np.asarray(_DATA)
    # NumPy arrays of the dtype as the program's arguments: a transfer (jnp.asarray(v, name) is the same
    # conversion on the host, then an XLA program per shape and dtype)
    args = [np.asarray(v, dtype=getattr(xp, name)) for v in (data, np.abs(data) + 0.5, np.round(data))]
    return {k: np.asarray(v) for k, v in jax.jit(refs)(*args).items()}


def _close(got, want, name):
    """``got`` (arrayx) has dtype ``name`` and ``want``'s values within the dtype's tolerance."""
    assert got.dtype == getattr(xp, name), (got.dtype, name)
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), np.asarray(want, dtype=np.float64),
                               rtol=RTOL[name], atol=RTOL[name])


def _same_as_numpy_executor(fn, *args):
    got = fn(*args)
    want = on_numpy(fn, *args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), to_numpy(want).astype(np.float64),
                               rtol=RTOL.get(want.dtype.name, 1e-6), atol=RTOL.get(want.dtype.name, 1e-6))
    return got


# -- the dtype objects ---------------------------------------------------------------------------

def test_extension_dtypes_are_numpy_dtypes():
    assert xp.float16 == np.dtype("float16")
    assert xp.bfloat16 == np.dtype(ml_dtypes.bfloat16)
    assert xp.api.bfloat16 is xp.bfloat16
    assert xp.asarray([1.0], dtype=ml_dtypes.bfloat16).dtype == xp.bfloat16  # the scalar type works as dtype=


def test_bfloat16_is_jaxs():
    jnp = _jnp()
    assert xp.bfloat16 == jnp.bfloat16 and xp.float16 == jnp.float16


def test_standard_dtype_lists_unchanged():
    info = xp.__array_namespace_info__()
    assert tuple(info.dtypes()) == STANDARD
    assert tuple(info.dtypes(kind="real floating")) == ("float32", "float64")
    assert tuple(info.dtypes(kind="numeric")) == STANDARD[1:]
    assert len(xp.api._dtypes.all_dtypes) == 13


@pytest.mark.parametrize("name", EXT)
def test_isdtype_kinds(name):
    dt = getattr(xp, name)  # JAX's answers: the extension floats are real floating (and numeric)
    assert xp.isdtype(dt, "real floating") and xp.isdtype(dt, "numeric")
    assert not xp.isdtype(dt, "complex floating") and not xp.isdtype(dt, "integral")
    assert xp.isdtype(dt, dt) and not xp.isdtype(dt, xp.float32)


def test_finfo():
    b = xp.finfo(xp.bfloat16)
    assert (b.bits, b.eps, b.max, b.smallest_normal) == (16, 2.0 ** -7, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),
                                                         2.0 ** -126)
    assert b.dtype == xp.bfloat16 and b.min == -b.max
    h = xp.finfo(xp.float16)
    assert (h.bits, h.eps, h.max, h.dtype) == (16, 2.0 ** -10, 65504.0, xp.float16)
    assert xp.finfo(xp.ones(2, dtype=xp.bfloat16)).eps == 2.0 ** -7


def test_can_cast():
    for name in EXT:
        dt = getattr(xp, name)
        assert xp.can_cast(dt, xp.float32) and xp.can_cast(dt, xp.complex64) and xp.can_cast(dt, dt)
        assert not xp.can_cast(xp.float32, dt) and not xp.can_cast(dt, xp.int64)
    assert not xp.can_cast(xp.bfloat16, xp.float16) and not xp.can_cast(xp.float16, xp.bfloat16)


# -- promotion: JAX's lattice for every pair involving an extension float ----------------------

_PAIRS = [(a, b) for a in EXT + STANDARD for b in EXT + STANDARD if a in EXT or b in EXT]


@pytest.mark.parametrize("a,b", _PAIRS)
def test_promotion_matches_jax(a, b):
    jnp = _jnp()
    want = np.dtype(jnp.promote_types(a, b))
    assert xp.result_type(getattr(xp, a), getattr(xp, b)) == want
    assert xp.api._dtypes.PROMOTION[getattr(xp, a), getattr(xp, b)] == want


@pytest.mark.parametrize("name", EXT)
@pytest.mark.parametrize("scalar", [True, 2, 1.5, 1j])
def test_weak_scalar_promotion_matches_jax(name, scalar):
    jnp = _jnp()
    dt = getattr(xp, name)
    want = np.dtype(jnp.result_type(jnp.ones(2, name), scalar))
    assert xp.result_type(dt, scalar) == want
    assert (xp.ones(2, dtype=dt) + scalar).dtype == want
    assert (scalar * xp.ones(2, dtype=dt)).dtype == want
    assert xp.jit(lambda v, s: v + s)(xp.ones(2, dtype=dt), scalar).dtype == want


@pytest.mark.parametrize("name", EXT)
def test_array_promotion_on_every_executor(executor, name):
    dt = getattr(xp, name)
    x = xp.asarray([1.5, 2.5], dtype=dt)
    with xp.tpu_64bit("emulate"):  # the 64-bit operands as they are on a TPU too (nothing changes elsewhere)
        for other, want in ((xp.float32, xp.float32), (xp.float64, xp.float64), (xp.int64, dt),
                            (xp.uint8, dt), (xp.bool, dt), (xp.complex64, xp.complex64)):
            got = x + xp.asarray([1, 0], dtype=other)
            assert got.dtype == want, (name, other, got.dtype)
    other = xp.float16 if name == "bfloat16" else xp.bfloat16
    assert (x * xp.ones(2, dtype=other)).dtype == xp.float32


def test_strict_mode_promotes_floats_only():
    with xp.strict():
        assert (xp.ones(2, dtype=xp.bfloat16) + xp.ones(2, dtype=xp.float32)).dtype == xp.float32
        assert (xp.ones(2, dtype=xp.float16) * 2.0).dtype == xp.float16
        with pytest.raises(TypeError, match="strict mode"):
            xp.ones(2, dtype=xp.bfloat16) + xp.ones(2, dtype=xp.int8)


# -- creation, elementwise, reductions, matmul, astype on every executor -------------------------

_DATA = [[0.5, -1.25, 2.0], [3.5, 0.75, -0.125]]


@pytest.mark.parametrize("name", EXT)
def test_creation(executor, name):
    dt = getattr(xp, name)
    for make, want in ((lambda: xp.zeros((2, 3), dtype=dt), np.zeros((2, 3))),
                       (lambda: xp.ones(3, dtype=dt), np.ones(3)),
                       (lambda: xp.full(2, 1.5, dtype=dt), [1.5, 1.5]),
                       (lambda: xp.arange(0, 2, 0.5, dtype=dt), [0, 0.5, 1, 1.5]),
                       (lambda: xp.linspace(0, 1, 5, dtype=dt), [0, 0.25, 0.5, 0.75, 1]),
                       (lambda: xp.eye(2, dtype=dt), np.eye(2)),
                       (lambda: xp.asarray(_DATA, dtype=dt), _DATA),
                       (lambda: xp.asarray(np.asarray(_DATA, dtype=dt)), _DATA),
                       (lambda: xp.zeros_like(xp.ones(2, dtype=dt)), [0, 0])):
        _close(make(), want, name)


_UNARY = ("exp", "sin", "tanh", "log1p", "sqrt", "abs", "negative", "floor", "round", "square", "expm1")
_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "pow", "atan2", "hypot")


def _takes(executor: str, name: str, i: int) -> bool:
    """Whether the ``i``-th function of a list runs in a test of dtype ``name``: all of them, except on
    the jax executor in the ci profile, where the 16-bit dtypes share the list (bfloat16 the even
    functions, float16 the odd: every function reaches jax's programs in one 16-bit float there, each
    a new compile per dtype); the deep profile all."""
    return executor != "jax" or not profile.current().sampled or i % 2 == EXT.index(name)


@pytest.mark.parametrize("name", EXT)
def test_elementwise(executor, name):
    _jnp()
    ref = _data_references(name)
    dt = getattr(xp, name)
    x = xp.asarray(_DATA, dtype=dt)
    y = xp.abs(x) + 0.5
    for i, f in enumerate(_UNARY):
        if not _takes(executor, name, i):
            continue
        got = _same_as_numpy_executor(getattr(xp, f), y if f in ("sqrt", "log1p") else x)
        _close(got, ref[f], name)
    for i, f in enumerate(_BINARY):
        if not _takes(executor, name, i):
            continue
        got = _same_as_numpy_executor(getattr(xp, f), y, x if f != "pow" else xp.round(x))
        _close(got, ref[f], name)
    assert xp.all(xp.equal(x < 1.0, xp.asarray(np.asarray(_DATA) < 1.0)))
    _close(xp.where(x > 0, x, 0.0), ref["where"], name)
    _close(x * 2 + 1.5, ref["x*2+1.5"], name)
    assert xp.isnan(xp.asarray([float("nan")], dtype=dt))[0]


@pytest.mark.parametrize("name", EXT)
def test_every_elementwise_function_keeps_the_dtype(executor, name):
    # NumPy computes some functions of bfloat16 in float32 (clip had no bfloat16 loop): the result
    # must still have the dtype promotion gives, on every executor, and match the NumPy executor
    from arrayx.api.elementwise import BINARY, UNARY

    dt = getattr(xp, name)
    takes = xp.api._dtypes.CATEGORIES
    # _DATA's shape (2, 3), and test_elementwise's dtype for each of its functions on jax in the ci
    # profile: the jax executor reuses the programs test_elementwise compiled (one per function, shape
    # and dtype) instead of compiling them again for another shape
    x = xp.asarray([[0.25, 0.5, 2.0], [1.5, 0.75, 3.0]], dtype=dt)

    def runs(i, fname, shared):
        return _takes(executor, name, shared.index(fname) if fname in shared else i)

    for i, (fname, category) in enumerate(sorted(UNARY.items())):
        if dt in takes[category] and runs(i, fname, _UNARY):
            got = _same_as_numpy_executor(getattr(xp, fname), x)
            want = xp.bool if fname in ("isfinite", "isinf", "isnan", "signbit") else dt
            assert got.dtype == want, (fname, got.dtype)
    for i, (fname, category) in enumerate(sorted(BINARY.items())):
        if dt in takes[category] and runs(i, fname, _BINARY):
            got = _same_as_numpy_executor(getattr(xp, fname), x, xp.flip(x))
            want = xp.bool if got.dtype == xp.bool else dt
            assert got.dtype == want and (want == dt or fname in ("equal", "not_equal", "greater",
                                                                  "greater_equal", "less", "less_equal")), fname
    for got, want in ((xp.clip(x, 0.3, 1.0), [[float(dt.type(0.3)), 0.5, 1.0], [1.0, 0.75, 1.0]]),
                      (xp.clip(x, xp.zeros_like(x), xp.ones_like(x)), [[0.25, 0.5, 1.0], [1.0, 0.75, 1.0]])):
        assert got.dtype == dt and to_numpy(got).astype(float).tolist() == want
    for fn in (xp.nn.softmax, xp.nn.logsumexp, xp.nn.relu, xp.nn.sigmoid):
        assert _same_as_numpy_executor(fn, x).dtype == dt


@pytest.mark.parametrize("name", EXT)
def test_reductions(executor, name):
    _jnp()
    ref = _data_references(name)
    dt = getattr(xp, name)
    x = xp.asarray(_DATA, dtype=dt)
    for f, kw in _REDUCTIONS:
        got = _same_as_numpy_executor(lambda v: getattr(xp, f)(v, **kw), x)
        _close(got, ref[f + repr(kw)], name)
    _close(xp.cumulative_sum(x, axis=1), ref["cumsum"], name)
    assert int(xp.argmax(x)) == 3


@pytest.mark.parametrize("name", EXT)
def test_sums_accumulate_in_float32(executor, name):
    # NumPy accumulates bfloat16 sums in bfloat16 (4096 ones sum to 256) and float16 running
    # sums in float16 (2048); JAX (XLA) accumulates both in float32, and so does arrayx
    dt = getattr(xp, name)
    ones = xp.ones(4096, dtype=dt)
    assert float(xp.sum(ones)) == 4096.0
    assert float(xp.mean(ones)) == 1.0
    assert float(xp.cumulative_sum(ones)[-1]) == 4096.0
    assert float(xp.vecdot(ones, ones)) == 4096.0
    assert float(ones @ ones) == 4096.0
    assert float(xp.jit(xp.sum)(ones)) == 4096.0
    assert xp.sum(ones).dtype == dt and xp.sum(ones, dtype=xp.float32).dtype == xp.float32


@pytest.mark.parametrize("name", EXT)
def test_matmul_and_contractions(executor, name):
    _jnp()
    ref = _data_references(name)
    dt = getattr(xp, name)
    x = xp.asarray(_DATA, dtype=dt)
    _close(_same_as_numpy_executor(lambda a: a @ a.mT, x), ref["x@x.T"], name)
    _close(_same_as_numpy_executor(lambda a: xp.tensordot(a, a, axes=([1], [1])), x), ref["x@x.T"], name)
    _close(_same_as_numpy_executor(lambda a: xp.vecdot(a, a), x), ref["sum(x*x,1)"], name)
    _close(_same_as_numpy_executor(lambda a: xp.matmul(a, a[0]), x), ref["x@x[0]"], name)
    assert (x @ xp.ones((3, 2), dtype=xp.float32)).dtype == xp.float32


@pytest.mark.parametrize("name", EXT)
def test_astype(executor, name):
    with xp.tpu_64bit("emulate"):  # float64 and int64 as they are on a TPU too (nothing changes elsewhere)
        _astype(name)


def _astype(name):
    dt = getattr(xp, name)
    x = xp.asarray([1.75, -2.5, 300.0], dtype=xp.float64)
    b = xp.astype(x, dt)
    _close(b, np.asarray([1.75, -2.5, 300.0]).astype(dt), name)
    assert xp.astype(b, xp.float32).dtype == xp.float32
    assert xp.astype(b, xp.complex64).dtype == xp.complex64
    assert to_numpy(xp.astype(b, xp.int16)).tolist() == [1, -2, 300]
    assert to_numpy(xp.astype(xp.asarray([float("nan"), 1e4], dtype=dt), xp.int64)).tolist() == [
        np.iinfo(np.int64).min, 9984 if name == "bfloat16" else 10000]
    other = xp.float16 if name == "bfloat16" else xp.bfloat16
    assert xp.astype(b, other).dtype == other


@pytest.mark.parametrize("name", EXT)
def test_indexing_and_manipulation(executor, name):
    dt = getattr(xp, name)
    x = xp.asarray(_DATA, dtype=dt)
    ref = np.asarray(_DATA, dtype=dt)
    got = x.at[xp.asarray([0, 5])].get(mode="fill")  # out of range: NaN, as for every float
    assert got.dtype == dt and np.isnan(to_numpy(got)[1]).all() and to_numpy(got)[0].tolist() == ref[0].tolist()
    assert to_numpy(x[1, ::2]).tolist() == ref[1, ::2].tolist()
    assert to_numpy(x[x > 1.0]).tolist() == ref[ref > 1.0].tolist()
    y = xp.asarray(x, copy=True)
    y[0, 1] = 9.0
    assert float(y[0, 1]) == 9.0 and y.dtype == dt
    for got, want in ((xp.concat([x, x]), np.concatenate([ref, ref])), (xp.stack([x, x]), np.stack([ref, ref])),
                      (xp.reshape(x, (3, 2)), ref.reshape(3, 2)), (xp.flip(x, axis=1), ref[:, ::-1]),
                      (xp.sort(x, axis=1), np.sort(ref.astype(np.float32), axis=1).astype(dt))):
        assert got.dtype == dt and to_numpy(got).tolist() == want.tolist()


def test_linalg_decompositions_refuse_them(executor):
    x = xp.eye(2, dtype=xp.bfloat16)
    with pytest.raises(TypeError, match=r"inv: x has dtype bfloat16.*astype\(x, arrayx.float32\)"):
        xp.linalg.inv(x)
    with pytest.raises(TypeError, match="cholesky: x has dtype float16"):
        xp.linalg.cholesky(xp.eye(2, dtype=xp.float16))


# -- grad, vmap, jit ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", EXT)
def test_grad(executor, name):
    _jnp()
    dt = getattr(xp, name)
    x = xp.asarray(_DATA, dtype=dt)

    def f(v):
        return _grad_f(v, xp)

    ref = _data_references(name)
    want = ref["grad"]
    _close(xp.grad(f)(x), want, name)
    _close(xp.jit(xp.grad(f))(x), want, name)
    # through a cast to float32 and back: the cotangent comes back as the input's dtype
    h = xp.grad(lambda v: xp.sum(xp.astype(v, xp.float32) ** 2))(x)
    _close(h, ref["2x"], name)
    m = xp.grad(lambda v: xp.mean(xp.exp(v)) + xp.max(v))(x)
    _close(m, ref["grad mean+max"], name)


@pytest.mark.parametrize("name", EXT)
def test_pooling_and_its_gradient(executor, name):
    """max_pool/avg_pool keep the dtype (max's padding value is -inf for bfloat16, NumPy kind "V",
    too: it raised ValueError on every executor) and their gradients match jax's."""
    _jnp()
    ref = _jax_reference()

    data = (np.arange(48.0).reshape(1, 1, 6, 8) * 0.37) % 5.0 - 2.0
    x = xp.asarray(data, dtype=getattr(xp, name))
    jx = np.asarray(data, dtype=getattr(xp, name))  # (the jitted references take it as it is: no program)

    _close(xp.lax.max_pool(x, (2, 2), padding="SAME"), ref["max_pool"](jx), name)
    _close(xp.lax.avg_pool(x, (2, 2)), np.asarray(data.reshape(1, 1, 3, 2, 4, 2).mean(axis=(3, 5)), dtype=getattr(xp, name)),
           name)
    _close(xp.grad(lambda v: xp.sum(xp.lax.max_pool(v, (2, 2), padding="SAME") ** 2))(x),
           ref["grad max_pool"](jx), name)


@pytest.mark.parametrize("name", EXT)
def test_vmap_and_jit(executor, name):
    _jnp()
    dt = getattr(xp, name)
    x = xp.asarray(_DATA, dtype=dt)
    _close(xp.vmap(lambda r: xp.sum(r * r))(x), _data_references(name)["sum(x*x,1)"], name)
    _close(xp.vmap(lambda r: r @ x.mT)(x), _data_references(name)["x@x.T"], name)
    f = xp.jit(lambda v: xp.sum(xp.exp(v) * 2.0 + v, axis=1))
    ref = _jax_reference()
    _close(f(x), _data_references(name)["sum(exp*2+x)"], name)
    big = xp.linspace(-1, 1, 1 << 17, dtype=dt)  # past the Numba executor's fusion size
    jbig = to_numpy(big)  # (the jitted references take the NumPy array: a transfer, no program)
    _close(xp.jit(lambda v: xp.tanh(v) * 2.0 + v)(big), ref["tanh*2+x"](jbig), name)
    _close(xp.jit(lambda v: xp.sum(xp.tanh(v) * v))(big), ref["sum(tanh*x)"](jbig), name)
    _close(xp.jit(xp.vmap(xp.grad(lambda r: xp.sum(xp.sin(r)))))(x), _data_references(name)["cos"], name)


def test_dask_chunks_accumulate_in_float32():
    pytest.importorskip("dask", reason="the Dask executor needs dask")
    from arrayx.executors import dask as xd

    saved = xd.get_chunks()
    xd.set_chunks(1000)  # several chunks: Dask's own reductions and contractions, not one task
    try:
        with xp.use_executor("dask"):
            ones = xp.ones(4096, dtype=xp.bfloat16)
            assert float(xp.sum(ones)) == 4096.0 and float(xp.mean(ones)) == 1.0
            assert float(ones @ ones) == 4096.0
            assert (ones @ ones).dtype == xp.bfloat16
    finally:
        xd.set_chunks(saved)


@pytest.mark.parametrize("name", EXT)
def test_debug_nans_sees_them(executor, name):
    x = xp.asarray([-1.0, 4.0], dtype=getattr(xp, name))
    with xp.debug_nans(), pytest.raises(FloatingPointError, match="debug_nans: sqrt produced a NaN"):
        xp.sqrt(x)
    with xp.debug_nans(), pytest.raises(FloatingPointError, match="debug_nans: sqrt produced a NaN"):
        xp.jit(xp.sqrt)(x)


@pytest.mark.parametrize("name", EXT)
def test_numba_runs_them_on_numpy(name):
    # no Numba kernel takes a 16-bit float: the executor says so, and runs NumPy's (widened) functions
    pytest.importorskip("numba", reason="the Numba executor needs numba")
    from arrayx.core.executor import get

    ex = get("numba")
    if not ex.available():
        pytest.skip(f"the Numba executor is unavailable: {ex.unavailable_reason}")
    big = np.ones(1 << 22, dtype=getattr(xp, name))
    assert f"dtype {name} is not run natively" in ex.explain("exp", big)
    assert f"dtype {name} is not run natively" in ex.explain("add", big, big)
    with xp.use_executor("numba"):
        assert float(xp.sum(xp.asarray(big[:4096]))) == 4096.0


def test_bfloat16_is_loaded_on_first_use():
    # ml_dtypes takes ~0.5 s to import: ``import arrayx`` leaves it alone
    code = (
        "import sys, arrayx\n"
        "assert 'ml_dtypes' not in sys.modules, 'import arrayx imported ml_dtypes'\n"
        "import ml_dtypes, numpy as np\n"
        "x = arrayx.asarray(np.ones(3, ml_dtypes.bfloat16))\n"  # an array of it registers it
        "assert x.dtype == arrayx.bfloat16 and (x + 1.0).dtype == arrayx.bfloat16\n"
        "assert arrayx.isdtype(x.dtype, 'real floating')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_formatting_a_traced_bfloat16_raises_the_conversion_error():
    """f"{t:.2f}" of a traced value is float(t): the same error for bfloat16 as for float32 (was a
    KeyError on bfloat16's NumPy kind "V")."""
    import arrayx as ax

    for dt in (ax.float32, ax.bfloat16):
        x = ax.asarray(np.ones(3, np.float32), dtype=dt)
        assert f"{x[0]:.2f}" == "1.00"
        with pytest.raises(TypeError) as err:
            ax.jit(lambda v: f"{v[0]:.2f}" and v)(x)
        assert "float()" in str(err.value) or "traced" in str(err.value).lower(), str(err.value)
