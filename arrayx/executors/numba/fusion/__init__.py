"""jit's fused kernels on the Numba executor.

``lowering`` cuts the staged graph into regions (``arrayx.executors.common.fusion``) and generates
one ``@njit`` kernel per region; ``run`` calls a region's kernel (``RegionRunner``), ``contract``
recognises fused multiply-adds, ``fold`` and ``pointers`` are kernel pieces.
"""
