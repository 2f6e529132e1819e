"""What several executors share: ``fusion`` (the fusible regions of a staged graph, the primitive
that stands for one fused region, and the rewrite loop), ``buffer_pool`` (NumPy/Numba's reused result memory),
``indexing`` (NumPy-like key handling), ``linalg`` (NaN for failing matrices), ``fft`` (NumPy/Numba's
transforms: pooled results, batches split between threads on Numba), ``heap`` (glibc's
malloc told to reuse freed large blocks: XLA's result buffers), ``libm`` (constants of
the inline transcendentals shared by Numba's kernels and arrayx.random)."""
