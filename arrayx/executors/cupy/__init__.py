"""The CuPy executor (a GPU): ``executor`` holds :class:`CupyExecutor` and its table, ``fusion``
jit's regions as generated CUDA kernels (``ElementwiseKernel`` / ``ReductionKernel``); ``lax``,
``nn`` and ``random`` the table's entries for those primitives."""
from __future__ import annotations

from arrayx.executors.cupy.executor import CupyExecutor  # noqa: F401

__all__ = ["CupyExecutor"]
