"""The CuPy executor (a GPU): ``executor`` holds :class:`CupyExecutor` and its table, ``fusion``
jit's regions as generated CUDA kernels (``ElementwiseKernel`` / ``ReductionKernel``)."""
from __future__ import annotations

from arrayx.executors.cupy.executor import CupyExecutor  # noqa: F401

__all__ = ["CupyExecutor"]
