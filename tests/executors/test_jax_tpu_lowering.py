"""The jax executor's CNN programs as XLA:TPU receives them, checked on a CPU by lowering for the
platform "tpu" (no chip needed), and the TPU formulas' values checked here on the CPU.

On a TPU v5e the CNN step of benchmarks/bench_tpu.py (batch 256) did not compile within 100 s, in
arrayx and in JAX alike: XLA:TPU spends minutes on the 28x28-window convolution that is a 3x3
kernel's gradient (compiled for the chip ahead of time on a CPU with libtpu: JAX's own step took
39 s of CPU at batch 64 and 143 s at 256; with that convolution as products, 5-6 s).  So on a
TPU the jax executor computes a convolution with few output positions and a wide window as products
(``executors/jax/lax.py``: ``_position_products``), and the max pooling's cotangent as XLA's
select-and-scatter, JAX's own program there (``_select_and_scatter``).  Elsewhere XLA's convolution
and the masked copies stay.
"""
from __future__ import annotations

import collections
import re

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from tests import covering

pytestmark = [pytest.mark.jax, pytest.mark.skipif(not base.get("jax").available(), reason="jax is not installed")]


def _cnn(batch, size, dtype=np.float32):
    from benchmarks.bench_cnn import LEARNING_RATE, cnn_loss

    rng = np.random.default_rng(0)
    images = rng.normal(size=(batch, 1, size, size)).astype(dtype)
    labels = rng.integers(0, 10, size=batch).astype(np.int32)
    pooled = (size // 2) ** 2
    params = {"conv": (rng.normal(size=(16, 1, 3, 3)) * 0.3).astype(dtype), "bias": np.zeros(16, dtype),
              "dense": (rng.normal(size=(16 * pooled, 10)) * 0.01).astype(dtype)}
    loss = cnn_loss(ax, ax.lax.conv, lambda h: ax.lax.max_pool(h, (2, 2)), ax.nn.log_softmax,
                    lambda t, n: ax.nn.one_hot(t, n, dtype=ax.float32))

    def step(params, images, labels):  # bench_tpu.py's CNN row: value_and_grad plus the SGD update
        value, grads = ax.value_and_grad(loss)(params, images, labels)
        return value, ax.pytree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)

    return step, (params, images, labels)


def _lowered_text(step, args, platform: str) -> str:
    """The StableHLO of arrayx's compiled ``step`` as the jax executor hands it to XLA for ``platform``."""
    import jax

    ex = base.get("jax")
    with ax.use_executor("jax"):
        on_jax = ax.pytree.map(ax.asarray, args)
    graph = ax.jit(step).lower(*on_jax).graph
    program = ex.lower(graph)
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in graph.in_avals]

    def lower():  # traced with 64-bit types on, as the executor's compile does
        return jax.jit(program).trace(*avals).lower(lowering_platforms=(platform,)).as_text()

    try:
        return ex.scoped(lower)()
    except Exception as e:  # noqa: BLE001 - an installed JAX that cannot lower for the platform here
        pytest.skip(f"this JAX cannot lower for {platform!r} without the device: {type(e).__name__}: {e}"[:300])


def _on_jax(fn, **params):
    """``fn`` (one of the jax executor's implementations) with ``params``, as the executor's eager mode
    runs a primitive: one ``jax.jit`` program (eager.py's ``Jitted``), traced with 64-bit types on,
    taking and giving NumPy arrays (called op by op, its slices and pads would each compile a program)."""
    import functools

    import jax

    ex = base.get("jax")
    program = jax.jit(functools.partial(fn, **params))
    # jax.device_put: the same arrays as jax.numpy.asarray's (dtype kept, not weak), without the
    # "stage" program jax.numpy.asarray compiles for each new shape and dtype
    return ex.scoped(lambda *arrays: np.asarray(program(*map(jax.device_put, arrays))))


def _ops(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"stablehlo\.([a-z_]+)", text))


def _wide_windows(text: str) -> list:
    """The window sizes of the program's convolutions wider than 8 elements a side."""
    sizes = []
    for line in text.splitlines():
        if "stablehlo.convolution" in line:
            rhs = re.search(r": \(tensor<[^>]*>, tensor<([0-9x]+)x[a-z0-9]+>\) ->", line)
            dims = [int(d) for d in rhs.group(1).split("x")] if rhs else []
            sizes += [d for d in dims[2:] if d > 8]  # rhs layout [o, i, 0, 1] here: its spatial sizes
    return sizes


def _sixty_four_bit_values(text: str) -> list:
    """64-bit tensors among the program's values (the i64 attributes XLA's ops carry, padding and
    dimension lists, are left out: JAX's own program has them too)."""
    values = re.sub(r"dense<[^>]*> : tensor<[0-9x]*i64>|array<i64[^>]*>|: i64", "", text)
    return re.findall(r"tensor<[0-9x]*(?:f64|i64|ui64)>", values)


@pytest.mark.parametrize("batch", [16, 256])
def test_the_cnn_step_for_a_tpu_has_no_wide_window_convolution_and_jaxs_pooling_cotangent(batch):
    step, args = _cnn(batch, 28)
    tpu = _lowered_text(step, args, "tpu")
    ops = _ops(tpu)
    # the forward convolution only: the kernel's gradient (a 28x28 window) became one product
    assert ops["convolution"] == 1, ops
    assert _wide_windows(tpu) == []
    assert ops["select_and_scatter"] == 1, ops  # the max pool's cotangent, as in JAX's program
    for slow in ("scatter", "gather", "while", "sort", "custom_call", "dynamic_slice", "dynamic_update_slice"):
        assert ops[slow] == 0, (slow, ops)
    assert _sixty_four_bit_values(tpu) == []
    assert len(tpu) < 40_000  # nothing unrolled per image or per pixel (about 20k characters)


def test_the_cnn_step_for_a_cpu_keeps_xlas_convolution_and_the_masked_copies():
    step, args = _cnn(16, 28)
    cpu = _lowered_text(step, args, "cpu")
    ops = _ops(cpu)
    assert ops["convolution"] == 2 and ops["select_and_scatter"] == 0, ops
    assert _wide_windows(cpu) == [28, 28]
    assert _sixty_four_bit_values(cpu) == []


@pytest.fixture
def tpu_formulas_on_the_cpu(monkeypatch):
    """The TPU's formulas chosen on the CPU too, to check their values here; on a TPU machine the CPU
    made the jax executor's and JAX's default device for the test (the values are float64's; the chip's
    own runs of these formulas: tests/executors/test_tpu_chip.py)."""
    import jax

    from arrayx.api import _device_dtypes
    from arrayx.executors.jax import lax as jax_lax

    monkeypatch.setattr(jax_lax, "POSITION_PRODUCTS_ON", ("tpu", "cpu"))
    monkeypatch.setattr(jax_lax, "SELECT_AND_SCATTER_ON", ("tpu", "cpu"))
    ex = base.get("jax")
    cpu = next(d for d in ex.devices() if d.native.platform == "cpu")
    monkeypatch.setattr(ex, "_default", cpu)
    _device_dtypes.clear_caches()
    try:
        with jax.default_device(cpu.native):
            yield jax_lax
    finally:
        monkeypatch.undo()
        _device_dtypes.clear_caches()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_the_tpu_formulas_give_the_numpy_executors_cnn_gradient(tpu_formulas_on_the_cpu, compiled):
    step, args = _cnn(8, 12, np.float64)
    fn = ax.jit(step) if compiled else step

    def run(executor):
        with ax.use_executor(executor):
            value, params = fn(*ax.pytree.map(ax.asarray, args))
        return [np.asarray(v) for v in [value, *ax.pytree.leaves(params)]]

    for got, want in zip(run("jax"), run("numpy")):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    if compiled:  # the products and the select-and-scatter were in the program
        text = _lowered_text(step, args, "cpu")
        assert _ops(text)["select_and_scatter"] == 1 and _wide_windows(text) == []


# (lhs, rhs, strides, padding, rhs dilation, dimension numbers): kernel gradients of 1-3 spatial
# axes, strided, dilated, cropped, in permuted layouts
CONV_CASES = [
    ((1, 32, 28, 28), (16, 32, 28, 28), (1, 1), ((1, 1), (1, 1)), (1, 1), ((1, 0, 2, 3),) * 3),
    ((3, 5, 9, 8), (4, 5, 8, 8), (1, 1), ((0, 0), (2, 1)), (1, 1), ((0, 1, 2, 3),) * 3),
    ((2, 3, 17, 15), (4, 3, 8, 8), (2, 3), ((1, -1), (0, 2)), (1, 1), ((0, 3, 1, 2), (3, 2, 0, 1), (2, 0, 3, 1))),
    ((2, 3, 20, 19), (4, 3, 9, 8), (1, 1), ((0, 0), (1, 1)), (2, 2), ((0, 1, 2, 3),) * 3),
    ((2, 3, 100), (4, 3, 96), (1,), ((1, 1),), (1,), ((0, 1, 2),) * 3),
    ((2, 3, 6, 6, 6), (4, 3, 4, 4, 4), (1, 1, 1), ((0, 0),) * 3, (1, 1, 1), ((0, 1, 2, 3, 4),) * 3),
]


def _place(canonical, spec):
    out = [0] * len(spec)
    for n, a in zip(canonical, spec):
        out[a] = n
    return tuple(out)


@pytest.mark.parametrize("form", ["diagonal", "stacked", "per-position"])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c[1])))
def test_the_position_products_are_the_numpy_executors_convolution(tpu_formulas_on_the_cpu, monkeypatch, case,
                                                                   form):
    jax_lax = tpu_formulas_on_the_cpu
    if form != "diagonal":
        monkeypatch.setattr(jax_lax, "_DIAGONAL_BYTES", -1)
    if form == "per-position":
        monkeypatch.setattr(jax_lax, "_STACK_BYTES", 0)
    lhs_shape, rhs_shape, strides, padding, rhs_dilation, dn = case
    rng = np.random.default_rng(1)
    lhs, rhs = rng.standard_normal(_place(lhs_shape, dn[0])), rng.standard_normal(_place(rhs_shape, dn[1]))
    params = dict(strides=strides, padding=padding, lhs_dilation=(1,) * len(strides), rhs_dilation=rhs_dilation,
                  groups=1, dimension_numbers=dn)
    ex = base.get("jax")
    assert jax_lax._window_heavy(lhs, rhs, **params)
    assert (jax_lax._diagonal_extent(lhs, rhs, **params) is not None) == (form == "diagonal")
    got = _on_jax(ex.overrides["conv"], **params)(lhs, rhs)
    want = base.get("numpy").overrides["conv"](lhs, rhs, **params)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _conv_id(case) -> str:
    return "x".join(map(str, case[1]))


#: (case, dtype): every case in both dtypes in the deep profile; in the ci profile (a new XLA program
#: per case and dtype) each case in one dtype, float32 and float16 in turn (tests/covering.py)
@pytest.mark.parametrize("case, dtype", [pytest.param(c, d, id=f"{_conv_id(c)}-{d}") for c, d in covering.rotate(
    [(c, d) for c in CONV_CASES[:5] for d in ("float32", "float16")])])
def test_the_diagonal_products_keep_infinities_and_nans_where_the_numpy_executor_has_them(tpu_formulas_on_the_cpu,
                                                                                         case, dtype):
    """The diagonal form computes products of every input position with every last-axis window element
    and keeps the diagonal: the others' infinities and NaNs (inf * 0) must not reach an output."""
    jax_lax = tpu_formulas_on_the_cpu
    lhs_shape, rhs_shape, strides, padding, rhs_dilation, dn = case
    rng = np.random.default_rng(3)
    lhs = rng.integers(-3, 4, size=_place(lhs_shape, dn[0])).astype(dtype)  # integers: exact sums in any order
    rhs = rng.integers(-3, 4, size=_place(rhs_shape, dn[1])).astype(dtype)
    lhs.flat[:3] = np.inf, -np.inf, np.nan  # at a corner: the windows away from it stay finite
    params = dict(strides=strides, padding=padding, lhs_dilation=(1,) * len(strides), rhs_dilation=rhs_dilation,
                  groups=1, dimension_numbers=dn)
    ex = base.get("jax")
    assert jax_lax._diagonal_extent(lhs, rhs, **params) is not None
    got = _on_jax(ex.overrides["conv"], **params)(lhs, rhs)
    want = base.get("numpy").overrides["conv"](lhs.astype(np.float64), rhs.astype(np.float64), **params)
    assert got.dtype == lhs.dtype and got.shape == want.shape
    assert np.isnan(want).any() and np.isfinite(want).any()  # the case reaches both kinds of output
    np.testing.assert_array_equal(got, want.astype(dtype))


_GEOMETRIES = {"pool2x2": ((4, 3, 28, 28), (1, 1, 2, 2), (1, 1, 2, 2)), "overlapping": ((2, 9, 7), (1, 3, 2), (1, 2, 1)),
               "2d": ((6, 10), (2, 3), (2, 3))}


#: (geometry, dtype, kind): every triple in the deep profile; in the ci profile (a new XLA program per
#: triple) each geometry and kind in one dtype, float32, float64 and int32 in turn (tests/covering.py)
@pytest.mark.parametrize("geometry, dtype, kind", [
    pytest.param(_GEOMETRIES[g], d, k, id=f"{g}-{d}-{k}") for g, d, k in covering.rotate(
        [(g, d, k) for g in _GEOMETRIES for d in ("float32", "float64", "int32") for k in ("max", "min")], axis=1)])
def test_select_and_scatter_is_the_numpy_executors_pooling_cotangent(tpu_formulas_on_the_cpu, geometry, kind,
                                                                      dtype):
    jax_lax = tpu_formulas_on_the_cpu
    shape, window, strides = geometry
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 3, size=shape).astype(dtype)  # many ties: the first winner takes the cotangent
    if dtype != "int32":
        x.flat[5::23] = -np.inf if kind == "max" else np.inf
    params = dict(kind=kind, window=window, strides=strides, padding=((0, 0),) * len(shape),
                  window_dilation=(1,) * len(shape))
    jax_ex, np_ex = base.get("jax"), base.get("numpy")
    out = np_ex.overrides["reduce_window"](x, **params)
    ct = rng.integers(-4, 5, size=out.shape).astype(dtype)  # integer-valued: sums exact in any order
    assert jax_lax._scatter_as_jax(x, **params)
    scatter = _on_jax(jax_ex.overrides["window_scatter"], **params)
    got = scatter(x, ct)
    want = np_ex.overrides["window_scatter"](x, ct, **params)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if dtype != "int32":  # NaN never wins: the same positions as the masked copies the CPU runs
        x.flat[::17] = np.nan
        host = _on_jax(jax_lax._scatter_host_jnp, **params)
        np.testing.assert_array_equal(scatter(x, ct), host(x, ct))
