"""jit's fused CUDA kernels on the CuPy executor (arrayx/executors/cupy/fusion.py).

Without a GPU the generated kernels are still run: ``cuda_on_cpu.CpuKernels`` compiles the same code
(prelude, region functions, operations and map/reduce/post expressions) with the C compiler and runs
it in CuPy's loop shapes, so every fusion pattern below is the lowering's own output compared with
the NumPy executor (glue on the NumPy executor, regions in C).  ``cxx_syntax_check`` compiles the
same code as C++ with the prelude's CUDA branch, ``nvrtc_check`` with NVRTC itself where it is installed.  On a machine with a GPU the same patterns run
under ``jit`` on the cupy executor, with NVRTC, and must fuse without a compile failure.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import arrayx as xp
from arrayx import pytree
from arrayx import random as xr
from arrayx.api import _internal as I
from arrayx.executors.cupy import fusion as F
from arrayx.core import executor as base
from tests.conftest import assert_same, on_numpy
from tests.executors import cuda_on_cpu

CUPY = base.get("cupy")
needs_gpu = pytest.mark.skipif(not CUPY.available(), reason=f"executor 'cupy' unavailable: {CUPY.unavailable_reason}")
needs_cc = pytest.mark.skipif(cuda_on_cpu.CC is None, reason="no C compiler (cc/gcc) on PATH to run the kernels on the CPU")

RNG = np.random.default_rng(14)


def normal(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def ints(dtype, *shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    return RNG.integers(info.min if lo is None else lo, info.max if hi is None else hi, shape, dtype=dtype, endpoint=True)


def selu(x):
    return 1.0507009873554805 * xp.where(x > 0, x, 1.6732632423543772 * (xp.exp(x) - 1))


def softmax(x):
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e308, -1e-310, 2.0, -3.5, 0.5] * 3)


def _patterns() -> dict:
    """id -> (function, NumPy inputs, regions it fuses into or None)."""
    x32, x64 = normal(37, 29, dtype=np.float32), normal(37, 29)
    cube = normal(5, 6, 7)
    big = np.array([2**31 - 1, -2**31, 2**30, 7, -1, 65537] * 5, dtype=np.int32)
    i8, u8, u16 = ints(np.int8, 40), ints(np.uint8, 40), ints(np.uint16, 40)
    i64 = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0, 3] * 4, dtype=np.int64)
    counts = np.array([0, 1, 3, 7, 8, 31, 32, 40, 63, 64, 70, 2, -3, -1] * 3)
    key = np.asarray(xr.key(42))
    p = {
        "selu-f32": (selu, [x32], 1),
        "selu-f64": (selu, [x64], 1),
        "chain-f64": (lambda x: ((x * 2 + 1) * x - 0.5) * x + 3, [x64], 1),
        "transcendentals-f32": (lambda x: xp.tanh(x) * xp.expm1(x) + xp.sqrt(xp.abs(x)) - xp.log1p(x * x) ** 2
                                + xp.sin(x) * xp.cos(x) - xp.atan2(x, x + 1) + xp.hypot(x, 2.0), [x32], 1),
        "transcendentals-f64": (lambda x: xp.asinh(x) + xp.acosh(xp.abs(x) + 1) + xp.atanh(x / 10) + xp.log2(xp.abs(x))
                                - xp.log10(xp.abs(x) + 1) * xp.cosh(x) / xp.sinh(x + 7) + xp.pow(xp.abs(x), x)
                                + xp.tan(x) - xp.asin(x / 5) * xp.acos(x / 5) + xp.atan(x), [x64], 1),
        "rounding": (lambda x: (xp.round(x * 2.5), xp.floor(x), xp.ceil(x), xp.trunc(x * 3), xp.sign(x),
                                xp.signbit(x), xp.copysign(x, -x), 1 / x, xp.reciprocal(x) + xp.square(x)),
                     [np.concatenate([SPECIAL, [0.5, 1.5, 2.5, -0.5, -2.5]])], 1),
        "clip": (lambda x, lo, hi: (xp.clip(x, -0.5, 0.5) + xp.clip(x, min=0.1) * xp.clip(x, max=0.2),
                                    xp.clip(x, lo, hi)), [SPECIAL, np.full(30, -1.0), np.r_[np.full(29, 1.0), np.nan]], 1),
        "clip-int": (lambda a: xp.clip(a, -3, 100) + xp.clip(a, max=7), [i8], 1),
        "broadcast": (lambda x, r, c: x * r + c - 1.0, [x32, normal(29, dtype=np.float32),
                                                          normal(37, 1, dtype=np.float32)], 1),
        "broadcast-3d": (lambda x, s: x + s, [cube, normal(1, 6, 1)], 1),
        "broadcast-two-ways": (lambda v: I.broadcast_in_dim(v, (29, 29), (0,)) - I.broadcast_in_dim(v, (29, 29), (1,)) * v,
                               [normal(29)], 1),
        "zero-d-operand": (lambda x, s: x * s, [x64, np.float64(3.0)], 1),
        "mixed-dtypes": (lambda a, b, x: (xp.astype(a, xp.int32) * xp.astype(b, xp.int32) + 1,
                                          a * x + xp.astype(a > 0, xp.float32), xp.astype(x, xp.bool) | (x > 1)),
                         [i8, u8, normal(40, dtype=np.float32)], 1),
        "casts": (lambda x, a: (xp.astype(x, xp.float32) * 2, xp.astype(a, xp.int8), xp.astype(a, xp.bool),
                                xp.astype(a > 0, xp.float64) + x, xp.astype(a, xp.uint8) + 1),
                  [np.r_[SPECIAL, 1e39, -1e39, 3e38, 1.0], np.r_[big, 255, 256, -129, 128].astype(np.int64)], 1),
        "literals": (lambda a, b, x: (a + 100, b * 3 - 7, x * 1.5 + 0.25, (a & 5) ^ (a | 3), b > 200),
                     [i8, u8, normal(40, dtype=np.float32)], 1),
        "overflow": (lambda a, b, c, d: (a * 3 + (2**31 - 1), -b - 1, c * c + c, -d, xp.abs(d), d * 3 + 5,
                                         xp.abs(a), ~b, ~a),
                     [big, u8, u16, i64], None),
        "int8-abs-negate": (lambda a: (xp.abs(a), -a, a * a, a - 127), [np.r_[ints(np.int8, 20), -128, 127].astype(np.int8)], 1),
        "shifts": (lambda a, b, c, d: ((a << b) ^ (a >> b), (c << d) | (c >> d), (a << 3) + (a >> 70)),
                   [ints(np.int8, 42, lo=-100, hi=100), counts.astype(np.int8),
                    ints(np.uint32, 42), (counts % 64).astype(np.uint32)], None),
        "shifts-64": (lambda a, b: (a << b) ^ (a >> b), [i64[:14].repeat(3), counts.astype(np.int64)], 1),
        "nan-inf": (lambda x: (xp.exp(x) * x - xp.tanh(x) + xp.where(x > 1, x, -x), xp.isnan(x), xp.isinf(x),
                               xp.isfinite(x), xp.maximum(x, 0.5), xp.minimum(x, x[::-1]), xp.log(x), x / 0.0),
                    [SPECIAL], 1),
        "logic": (lambda a, b: (xp.logical_and(a, b), xp.logical_or(a, b), xp.logical_xor(a, ~b) == a,
                                xp.logical_not(a) & b), [RNG.random(40) > 0.5, RNG.random(40) > 0.3], 1),
        "several-outputs": (lambda x: (x + 1, x * 2 > 1, xp.exp(x), xp.sum(x * 3)), [x64], 1),
        # values stored by the reduction's map while it reduces the first axis (written in place)
        "stored-and-columns": (lambda x: (xp.exp(x) + 1, xp.max(xp.exp(x) + 1, axis=0), xp.mean(x * 3, axis=0), x * 3 > 1),
                               [cube], 1),
        "sum-axes": (lambda x: (xp.sum(x * 2.0 + 1.0), xp.sum(x, axis=0), xp.sum(x * x, axis=(1, 2), keepdims=True)),
                     [cube], 3),
        "moments": (lambda x: (xp.mean(x * x, axis=1, keepdims=True), xp.std(xp.exp(x), axis=1),
                               xp.var(x - 1.0, axis=1, correction=1), xp.prod(x * 0.5 + 1.0, axis=1)), [cube], 1),
        "max-min-any-all": (lambda x: (xp.max(xp.abs(x), axis=-1), xp.min(x, axis=-1), xp.any(x > 2.0, axis=-1),
                                       xp.all(x > -3.0, axis=-1)), [cube], 1),
        "var-large-mean": (lambda x: (xp.var(x), xp.mean(x), xp.std(x, correction=1)), [normal(30, 200) * 10 + 1e3], 1),
        "var-f32": (lambda x: (xp.var(x, axis=1), xp.sum(x, axis=1), xp.mean(x)),
                    [(normal(4, 100) * 10 + 1e3).astype(np.float32)], 2),
        # five variances over one axis: an accumulator over ACC_BYTES_MAX, so the region runs op by op
        "many-moments": (lambda x: tuple(xp.var(x * k, axis=1) for k in (1.0, 2.0, 3.0, 4.0, 5.0)), [cube], 0),
        "two-pass-var": (lambda x: xp.sum((x - xp.mean(x)) ** 2), [x64], 2),
        "softmax-f32": (softmax, [x32], 3),
        "softmax-f64": (softmax, [x64], 3),
        "special-reductions": (lambda x: (xp.sum(x), xp.max(x), xp.min(x), xp.mean(x)), [SPECIAL], 1),
        "nan-in-max": (lambda x: (xp.max(x * 1.0, axis=1), xp.min(x * 1.0, axis=1), xp.any(x != 0, axis=1),
                                  xp.all(x == x, axis=1)),
                       [np.array([[1.0, np.nan, 3.0, 9.0, 2.0], [-np.inf] * 5, [2.0, 2.0, np.inf, 1.0, 0.0],
                                  [np.nan] + [1.0] * 4])], 1),
        "int-reductions": (lambda a, b, c, n: (xp.sum(a * a), xp.sum(a, dtype=xp.int32), xp.prod(a), xp.max(b + 1),
                                               xp.min(b), xp.sum(c), xp.sum(b > 128), xp.any(b == 3), xp.max(n),
                                               xp.min(-n), xp.max(n, axis=0), xp.min(-n, axis=1)),
                           [big, u8, ints(np.int8, 40), -ints(np.int16, 8, 5, lo=1, hi=30000)], 5),
        "reduce-broadcast": (lambda c: xp.sum(I.broadcast_in_dim(c, (6, 7), (0,)), axis=1), [normal(6)], 1),
        "creation": (lambda x: (x * I.iota(xp.float32, (37, 29), 0) + xp.astype(I.iota(xp.int32, (37, 29), 1), xp.float32)
                                - xp.eye(37, 29, k=2, dtype=xp.float32) + xp.full((37, 29), 0.5, dtype=xp.float32),
                                I.iota(xp.int32, (37, 29), 1), xp.eye(37, 29, k=2, dtype=xp.float32)), [x32], 1),
        "arange": (lambda v: (v * xp.astype(xp.arange(3, 3 + 2 * 30, 2, dtype=xp.int64), xp.float64)
                              + xp.astype(xp.arange(-7.0, 30 - 7.0, dtype=xp.float32), xp.float64),
                              xp.arange(3, 63, 2, dtype=xp.int64) * 2), [normal(30)], 1),
        "index-in-reduction": (lambda m: (xp.sum(m * I.iota(xp.float64, (6, 7), 1), axis=0),
                                          xp.max(m + I.iota(xp.float64, (6, 7), 0), axis=1)), [normal(6, 7)], 2),
        "full-like": (lambda x: xp.where(x > 0, xp.zeros_like(x), xp.full_like(x, 2.5)) + x, [x64], 1),
        "glue-between": (lambda x: xp.tanh(xp.exp(x) @ x.mT) * 2 - 1, [x64], 2),
        "non-contiguous": (lambda x, y: (x * 2 + y, xp.sum(x * y, axis=0)), [x64.T[:, :14], x64[::2].T[:, :14]], None),
        "size-1": (lambda x, y: (x * 2 + 1, xp.sum(y * y), xp.mean(y, axis=0), xp.exp(y) - 1),
                   [np.array([3.0]), np.array([[0.5]])], None),
        "size-0": (lambda x: (x * 2 + 1, xp.sum(x * x, axis=0), xp.max(x, axis=1)), [np.zeros((0, 3))], 0),
        # threefry (uint32 arithmetic, rotations) and the float conversions
        "random-bits": (lambda k: xr.bits(k, (300,), dtype=xp.uint32), [key], None),
        "random-uniform": (lambda k: xr.uniform(k, (300,), dtype=xp.float32, minval=-2.0, maxval=3.0), [key], None),
        "random-normal": (lambda k: xr.normal(k, (300,), dtype=xp.float64), [key], None),
        # a view of a region's output between two regions (no lowering writes into it)
        "view-between-regions": (lambda x: (lambda a: (a.T, a[::2], xp.reshape(a, (-1,)), a + 1.0))(x * 2.0 - 0.5),
                                 [x64], 2),
    }
    return p


PATTERNS = _patterns()
NUMPY = base.get("numpy")


def _buffers(args):
    leaves, _ = pytree.flatten(args)
    return [leaf._buf for leaf in leaves if isinstance(leaf, xp.Array)]


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    """Every pattern lowered by the CuPy lowering onto the NumPy executor + the CPU kernels,
    compiled in one call of the C compiler."""
    if cuda_on_cpu.CC is None:
        pytest.skip("no C compiler (cc/gcc) on PATH to run the kernels on the CPU")
    folder = tmp_path_factory.mktemp("cuda_on_cpu")
    cpu = cuda_on_cpu.CpuKernels(folder)
    out = {}
    with xp.use_executor("numpy"):
        for name, (fn, arrays, _) in PATTERNS.items():
            args = [xp.asarray(a) for a in arrays]
            traced = xp.jit(fn).trace(*args)
            out[name] = (F.fuse(NUMPY, traced.graph, kernels=cpu, min_size=0), args, traced.out_tree)
    cpu.build([r for compiled, _, _ in out.values() for r in compiled.regions])
    assert cpu.compiles <= 1
    return cpu, out, folder


@needs_cc
@pytest.mark.parametrize("name", list(PATTERNS))
def test_kernels_on_the_cpu_match_the_numpy_executor(lowered, name):
    cpu, out, _ = lowered
    compiled, args, out_tree = out[name]
    fn, _, regions = PATTERNS[name]
    before = cpu.compiles
    got = compiled(*_buffers(args))
    assert cpu.compiles == before  # every kernel came from the one build
    want = pytree.flatten(on_numpy(fn, *args))[0]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(xp.asarray(g), w)
    if regions is not None:
        assert len(compiled.regions) == regions, [s.code for r in compiled.regions for s in r.specs]
    assert all(r.ran == 1 and r.failed is None for r in compiled.regions)


@needs_cc
def test_integer_results_are_exact_and_float32_stays_float32(lowered):
    """Integers wrap bit for bit; float32 regions call the float32 math functions (expf, not exp),
    float64 regions the float64 ones, and no float32 region converts through double except its
    reductions' accumulators."""
    _, out, _ = lowered
    for name in ("overflow", "int8-abs-negate", "shifts", "shifts-64", "int-reductions", "literals"):
        compiled, args, _ = out[name]
        want = pytree.flatten(on_numpy(PATTERNS[name][0], *args))[0]
        for g, w in zip(compiled(*_buffers(args)), want):
            assert g.dtype == np.asarray(w).dtype and np.array_equal(g, np.asarray(w)), name
    code32 = "".join(s.code for r in out["selu-f32"][0].regions for s in r.specs)[len(F.PRELUDE):]
    code64 = "".join(s.code for r in out["selu-f64"][0].regions for s in r.specs)[len(F.PRELUDE):]
    assert "expf(" in code32 and "ax_f64" not in code32
    assert "exp(" in code64 and "expf(" not in code64
    trans = "".join(s.code for r in out["transcendentals-f32"][0].regions for s in r.specs)
    for fn in ("tanhf(", "expm1f(", "sqrtf(", "fabsf(", "log1pf(", "sinf(", "cosf(", "atan2f(", "hypotf("):
        assert fn in trans, fn


@needs_cc
def test_bit_for_bit_where_numpy_is_exact(lowered):
    """Without fused multiply-adds, arithmetic, creation values and random draws (whose float code
    emulates exact arithmetic) equal the eager ones exactly."""
    _, out, _ = lowered
    for name in ("chain-f64", "creation", "arange", "broadcast", "clip", "full-like", "random-bits",
                 "random-uniform", "random-normal"):
        compiled, args, _ = out[name]
        want = pytree.flatten(on_numpy(PATTERNS[name][0], *args))[0]
        assert compiled.regions, name
        for g, w in zip(compiled(*_buffers(args)), want):
            assert g.dtype == np.asarray(w).dtype, name
            np.testing.assert_array_equal(g.view(f"u{g.itemsize}"), np.asarray(w).view(f"u{g.itemsize}"), err_msg=name)


@pytest.mark.skipif(cuda_on_cpu.CXX is None, reason="no C++ compiler on PATH for the CUDA-branch syntax check")
@pytest.mark.skipif(cuda_on_cpu.nvrtc_library() is not None,
                    reason="NVRTC is installed: test_kernel_code_compiles_with_nvrtc compiles the CUDA branch itself")
def test_kernel_code_is_valid_cuda_cpp(lowered):
    """All patterns' code and kernels as C++ with the prelude's CUDA branch (what NVRTC reads)."""
    _, out, folder = lowered
    cuda_on_cpu.cxx_syntax_check([r for compiled, _, _ in out.values() for r in compiled.regions], folder)


@pytest.mark.skipif(cuda_on_cpu.nvrtc_library() is None,
                    reason="no NVRTC library (pip install nvidia-cuda-nvrtc-cu12) for the CUDA compile check")
def test_kernel_code_compiles_with_nvrtc(lowered):
    """All patterns' code and kernels compile with NVRTC (CUDA's runtime compiler, the one CuPy calls)
    to PTX for sm_90 without a warning, and --fmad=false keeps arithmetic uncontracted."""
    _, out, _ = lowered
    ptx, log = cuda_on_cpu.nvrtc_check([r for compiled, _, _ in out.values() for r in compiled.regions],
                                       F.NVRTC_OPTIONS)
    assert ptx.count(".entry") == sum(len(r.specs) for compiled, _, _ in out.values() for r in compiled.regions)
    assert "warning" not in log, log
    chain = out["chain-f64"][0].regions  # ((x * 2 + 1) * x - 0.5) * x + 3: three multiply-adds
    assert "fma.rn" not in cuda_on_cpu.nvrtc_check(chain, F.NVRTC_OPTIONS)[0]
    assert "fma.rn" in cuda_on_cpu.nvrtc_check(chain, ["--fmad=true"])[0]  # (the check can fail)


_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*")  # (not the suffixes of numbers: 0x7f8, 1LL)
_OURS = re.compile(r"ax[0-9a-f]{16}_\w+|ax_\w+|AX_\w+|[avsrgoxe]\d+|_[rs]\d+")
#: the words the generated code is made of (C, the prelude's and CUDA's names, this module's tables)
_WORDS = set("""
void typedef struct return if const bool true false int long short signed unsigned char float double
defined define ifndef endif else include math h stdbool INFINITY __CUDACC__ __HIPCC__ __device__ __forceinline__
__int_as_float __longlong_as_double static inline n mean m2 t d w v x y e i b c a xe xn
""".split()) | {f"{f}{s}" for f in (*F._MATH1, *F._MATH2, "fabs", "rint") for s in ("", "f")}


def test_generated_code_holds_no_user_strings(tmp_path):
    """Hostile names (dict keys, the function's name, a static string argument) never reach the code:
    every identifier in it is C's, the prelude's, a hash-named function, or a position (a3, v7)."""
    hostile = 'evil"); system("rm -rf /"); /*'

    def f(d, tag):
        return xp.sum(d[hostile] * 2 + 1) + xp.astype(d["*/ x"] > 0, xp.float64)

    f.__name__ = hostile.replace(" ", "_")
    d = {hostile: xp.asarray(normal(20)), "*/ x": xp.asarray(normal(20))}
    with xp.use_executor("numpy"):
        graph = xp.jit(f, static_argnums=1).trace(d, hostile).graph
        compiled = F.fuse(NUMPY, graph, kernels=cuda_on_cpu.CpuKernels(tmp_path), min_size=0)
    specs = [s for r in compiled.regions for s in r.specs]
    assert specs
    for spec in specs:
        text = " ".join([spec.code, spec.name, *(v for v in spec[3:] if isinstance(v, str))])
        assert "evil" not in text and "system" not in text and "rm -rf" not in text
        assert re.fullmatch(r"ax[0-9a-f]{16}_[er]", spec.name)
        for word in _IDENTIFIER.findall(re.sub(r"/\*.*?\*/", "", text)):  # (the comments are the prelude's)
            assert word in _WORDS or _OURS.fullmatch(word), word


def test_a_kernel_that_does_not_compile_runs_op_by_op_and_is_recorded(tmp_path, monkeypatch):
    """NVRTC refusing a kernel is not silent: the region runs op by op (same values) and the reason
    is kept in the runner and the executor's ``failed`` (capabilities' "compile failures")."""
    class Refused(Exception):
        pass

    class Refusing(cuda_on_cpu.CpuKernels):
        compile_errors = (Refused,)

        def elementwise(self, spec, args, outs):
            raise Refused("fused.cu(3): error: identifier is undefined")

    monkeypatch.setattr(NUMPY, "failed", {}, raising=False)
    x = normal(50)
    with xp.use_executor("numpy"):
        a = xp.asarray(x)
        compiled = F.fuse(NUMPY, xp.jit(selu).trace(a).graph, kernels=Refusing(tmp_path), min_size=0)
        for _ in range(2):
            assert_same(xp.asarray(compiled(a._buf)[0]), on_numpy(selu, a))
    (runner,) = compiled.regions
    assert runner.failed == "Refused: fused.cu(3): error: identifier is undefined" and runner.ran == 0
    assert NUMPY.failed == {("fused region", "elementwise"): runner.failed}


def test_lowering_is_wired_into_the_cupy_executor():
    """compile() of the cupy executor is the fused lowering (checked without a GPU: the source)."""
    import inspect

    from arrayx.executors.cupy import CupyExecutor

    assert "cupy.fusion import fuse" in inspect.getsource(CupyExecutor.compile)
    assert CupyExecutor().fusion_min_size >= 1


# -- with a GPU ---------------------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("name", list(PATTERNS))
def test_jit_on_cupy_fuses_and_matches_numpy(name):
    fn, arrays, regions = PATTERNS[name]
    with xp.use_executor("cupy"):
        args = [xp.asarray(a) for a in arrays]
        jf = xp.jit(fn)
        got = pytree.flatten(jf(*args))[0]
        graph = jf.trace(*args).graph
    want = pytree.flatten(on_numpy(fn, *args))[0]
    for g, w in zip(got, want):
        assert_same(g, w)
    fns = [c for key, c in graph.derived.items() if isinstance(key, tuple) and key[:2] == ("compiled", "cupy")]
    assert len(fns) == 1
    runners = fns[0].regions
    if regions is not None and CUPY.fusion_min_size <= 1:
        assert len(runners) == regions
    assert all(r.failed is None and r.ran >= 1 for r in runners), [r.failed for r in runners]
