"""The JAX executor: buffers are ``jax.Array``, the namespace is ``jax.numpy``.

- ``executor``: :class:`JaxExecutor` and its table (``overrides``: where ``jax.numpy`` differs
  from the standard), which takes in the entries of
- ``lax``: ``conv`` (XLA's convolution), ``reduce_window`` (XLA's reduce-window) and its
  derivative (``window_select``/``window_scatter`` in jax.numpy);
- ``nn``: ``erf``/``erfc``/``erfinv`` (``jax.scipy.special``);
- ``random``: ``libm_log`` and the ``xla_*`` operations (XLA's fma, log1p, log, erf, erf_inv, so
  that ``arrayx.random`` gives jax.random's bits);
- ``parallel``: the collectives (``jax.lax.psum`` ... inside a ``jax.pmap``);
- ``sharding``: ``with_sharding_constraint`` (``jax.lax.with_sharding_constraint``).
- ``x64``: the 64-bit types of arrayx's own calls into JAX, per call and per thread, never the
  process-wide ``jax_enable_x64`` (the user's JAX keeps its setting).
"""
from __future__ import annotations

from arrayx.executors.jax.executor import JaxExecutor  # noqa: F401

__all__ = ["JaxExecutor"]
