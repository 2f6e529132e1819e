"""benchmarks/tpu_cnn_forms.py and tpu_aot_rows.py's kernel count: the chip measurement's forms of the
kernel gradient compute the numpy executor's convolution (so its sides compare the same step), the
form switch leaves the library as it was, and the kernels of an optimized HLO module are counted from
its entry computation only."""
from __future__ import annotations

import numpy as np
import pytest

from arrayx.core import executor as base

# the slow tier (CI runs it): these check a benchmark's alternative forms (~10 s of CPU); the library's own
# form of the kernel gradient is checked in the default tier (tests/test_conv_kernel_gradient_host.py)
pytestmark = [pytest.mark.jax, pytest.mark.slow,
              pytest.mark.skipif(not base.get("jax").available(), reason="jax is not installed")]

HLO = """HloModule m

%region_0.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.1 = f32[] add(%a, %b)
}

%fused_computation (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %neg.1 = f32[8]{0} negate(%p)
}

ENTRY %main.2 (x: f32[8]) -> (f32[], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %copy-start = (f32[8]{0}, f32[8]{0}, u32[]) copy-start(%x)
  %copy-done = f32[8]{0} copy-done(%copy-start)
  %fusion = f32[8]{0} fusion(%copy-done), kind=kLoop, calls=%fused_computation
  %bitcast.1 = f32[2,4]{1,0} bitcast(%fusion)
  %copy.1 = f32[2,4]{0,1} copy(%bitcast.1)
  %constant.1 = f32[] constant(0)
  %reduce.1 = f32[] reduce(%fusion, %constant.1), dimensions={0}, to_apply=%region_0.1
  ROOT %tuple.1 = (f32[], f32[8]{0}) tuple(%reduce.1, %fusion)
}
"""


def test_kernels_are_the_entry_computations_launches():
    from benchmarks.tpu_aot_rows import diff, hlo_counts

    counts = hlo_counts(HLO)
    assert counts["kernels"] == {"copy": 1, "fusion": 1, "reduce": 1} and counts["kernel count"] == 3
    assert counts["ops"]["parameter"] == 3  # the reducer's two and the entry's one: not the program's inputs
    assert counts["fused ops"] == {"negate": 1, "parameter": 1} and counts["fusion kinds"] == {"kLoop": 1}
    fewer = {**counts, "kernels": {"fusion": 1, "reduce": 1}, "kernel count": 2}
    d = diff(counts, fewer)
    assert d["kernel count arrayx - jax"] == 1 and d["kernels arrayx - jax"] == {"copy": 1}


# (lhs, rhs, strides, padding, rhs dilation, dimension numbers): a 3x3 kernel's gradient as bench_cnn's
# step has it (input batch-major, cotangent as the window), a cropped strided one, a dilated one, 1-d
_CASES = [
    ((1, 6, 12, 12), (16, 6, 12, 12), (1, 1), ((1, 1), (1, 1)), (1, 1), ((1, 0, 2, 3),) * 3),
    ((2, 3, 17, 15), (4, 3, 8, 8), (2, 3), ((1, -1), (0, 2)), (1, 1), ((0, 3, 1, 2), (3, 2, 0, 1), (2, 0, 3, 1))),
    ((2, 3, 20, 19), (4, 3, 9, 8), (1, 1), ((0, 0), (1, 1)), (2, 2), ((0, 1, 2, 3),) * 3),
    ((2, 3, 100), (4, 3, 96), (1,), ((1, 1),), (1,), ((0, 1, 2),) * 3),
]


def _place(canonical, spec):
    out = [0] * len(spec)
    for n, a in zip(canonical, spec):
        out[a] = n
    return tuple(out)


@pytest.mark.parametrize("form", ["diagonal", "stacked", "rows", "xla-conv"])
@pytest.mark.parametrize("case", _CASES, ids=lambda c: "x".join(map(str, c[1])))
def test_each_form_is_the_numpy_executors_convolution(case, form):
    from benchmarks.tpu_cnn_forms import form as using

    lhs_shape, rhs_shape, strides, padding, rhs_dilation, dn = case
    rng = np.random.default_rng(4)
    lhs, rhs = rng.standard_normal(_place(lhs_shape, dn[0])), rng.standard_normal(_place(rhs_shape, dn[1]))
    params = dict(strides=strides, padding=padding, lhs_dilation=(1,) * len(strides), rhs_dilation=rhs_dilation,
                  groups=1, dimension_numbers=dn)
    ex = base.get("jax")
    ex.xp  # noqa: B018 - JAX loaded before its scope is taken
    conv = ex.scoped(lambda a, b: np.asarray(ex.overrides["conv"](ex.xp.asarray(a), ex.xp.asarray(b), **params)))
    with using(form, cpu=True):  # the TPU's formulas chosen on this CPU
        got = conv(lhs, rhs)
    want = base.get("numpy").overrides["conv"](lhs, rhs, **params)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_form_switch_puts_the_library_back_and_names_the_forms_on_a_typo():
    from arrayx.executors.jax import lax as jl
    from benchmarks.tpu_cnn_forms import form as using

    kept = (jl.POSITION_PRODUCTS_ON, jl.SELECT_AND_SCATTER_ON, jl._DIAGONAL_BYTES, jl._position_products)
    with using("rows", cpu=True):
        assert jl._position_products is not kept[3] and "cpu" in jl.POSITION_PRODUCTS_ON
    with pytest.raises(ValueError, match="unknown form 'row'; the forms are"):
        with using("row", cpu=False):
            pass
    assert (jl.POSITION_PRODUCTS_ON, jl.SELECT_AND_SCATTER_ON, jl._DIAGONAL_BYTES, jl._position_products) == kept
