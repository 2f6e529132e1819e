"""The width of the fused kernels' vector loops: 512-bit registers where the CPU runs them at full speed.

LLVM vectorises loops for AVX-512 CPUs with 256-bit registers unless a function asks for more
(its X86 tuning ``prefer-256-bit``), because the first AVX-512 server cores (Skylake-SP, Cascade
Lake, Cooper Lake) lower their clock while 512-bit instructions run.  Later cores do not, and
there twice the lanes per instruction pay: measured on this project's machine (an AVX-512 Xeon
that LLVM names ``rocketlake``), jitted 1e6-element SELU float32 on two threads took 196 us with
512-bit loops against 345 us with 256-bit ones, chain6 float32 398 against 475, SELU float64 540
against 709, chain6 float64 882 against 1119 (``jax.jit``: 419 / 486 / 903 / 1323).

So a fused kernel asks for 512-bit vectors (the function attribute ``prefer-vector-width``) where
the host has AVX-512F and is not one of ``_CLOCK_THROTTLING_CPUS``; ``ARRAYX_NUMBA_VECTOR_WIDTH``
(``256`` or ``512``) overrides the choice.  Results do not depend on it: kernels round every
operation as written (no reassociation), and float reductions fold in explicit lanes
(``numba.fusion.fold``), whatever the register width.  The choice is part of the kernel's source (the
call below is there or not), so cached kernels of either width never mix.

Importing this module imports Numba: only the Numba lowering and the generated kernels import it.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm
from numba import types
from numba.extending import intrinsic

from arrayx.core import config as _config

__all__ = ["vector_width", "prefer_512", "kernel_line"]

#: LLVM's names of AVX-512 CPUs that lower their clock while 512-bit instructions run
_CLOCK_THROTTLING_CPUS = frozenset({"skylake-avx512", "cascadelake", "cooperlake", "knl", "knm"})


@functools.lru_cache(maxsize=None)
def vector_width() -> int:
    """512 where the fused kernels use 512-bit vector loops on this CPU, else 256 (LLVM's choice)."""
    forced = _config.get("ARRAYX_NUMBA_VECTOR_WIDTH")  # "256" or "512"
    if forced is not None:
        return int(forced)
    features = llvm.get_host_cpu_features()
    if not features.get("avx512f") or llvm.get_host_cpu_name() in _CLOCK_THROTTLING_CPUS:
        return 256
    return 512


def kernel_line() -> str:
    """A generated kernel's first line (``vec.prefer_512()``) where its loops use 512-bit vectors, else nothing."""
    return "    vec.prefer_512()\n" if vector_width() == 512 else ""


@intrinsic
def prefer_512(typingctx):
    """Asks LLVM to vectorise the calling function's loops with 512-bit registers."""
    def codegen(context, builder, sig, args):
        # llvmlite lists only attributes without values; this one is LLVM's "key"="value" form
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()
    return types.void(), codegen
