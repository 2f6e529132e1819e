"""arrayx: the Python array API standard on pluggable executors, with composable transforms.

``import arrayx as xp`` gives the whole standard (2025.12, with the ``linalg``
and ``fft`` extensions).  Operations run on the executor of their arrays; new
arrays are created on the executor selected by ``device=``,
``with arrayx.use_executor(name)``, ``arrayx.set_executor(name)`` or the
``ARRAYX_EXECUTOR`` environment variable (default ``"numpy"``).
"""
from __future__ import annotations

__version__ = "0.1.0"
__array_api_version__ = "2025.12"

from arrayx.core import config as _config  # noqa: E402
_config.check_environment()  # every ARRAYX_* variable that is set, before anything reads one

from arrayx import executors  # noqa: F401  (callable: arrayx.executors() lists the available ones)
from arrayx.core.executor import (  # noqa: F401
    Device, Executor, get_executor, register_executor, set_executor, use_executor,
)

# -- the standard: data types, constants, Array, the functions by spec category (arrayx/api) --------
from arrayx.api import *  # noqa: F401,F403,E402
from arrayx.api._modes import is_strict, strict  # noqa: F401,E402  (the two modes: default / strict)
from arrayx.api._device_dtypes import tpu_64bit  # noqa: F401,E402  (64-bit data on a TPU: downcast, emulate, refuse)
from arrayx.core.precision import default_matmul_precision  # noqa: F401,E402  (float32 products on XLA)

# -- extensions -------------------------------------------------------------------
from arrayx import fft, linalg  # noqa: E402,F401

# -- transforms, pytrees, random ------------------------------------------------------
from arrayx import pytree  # noqa: E402,F401
from arrayx import debug  # noqa: E402,F401  (debug.print / debug.callback)
from arrayx.transforms import *  # noqa: E402,F401,F403  (grad, jvp, vjp, vmap, jit, ...)
from arrayx import random  # noqa: E402,F401
from arrayx import sharding  # noqa: E402,F401  (Mesh, NamedSharding, P, ...)
from arrayx import distributed  # noqa: E402,F401  (arrayx.distributed.initialize, as jax.distributed's)
from arrayx.sharding import block_until_ready, device_put, devices, shard_map  # noqa: E402,F401

# submodules loaded on first access (they register primitives and rules when imported)
_LAZY_SUBMODULES = ("nn", "lax", "special")


def __getattr__(name: str):
    if name == "bfloat16":  # the extension float of ml_dtypes, imported on first use (~0.5 s)
        from arrayx.api import _dtypes

        return _dtypes.load_bfloat16()
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"arrayx.{name}")
    raise AttributeError(f"module 'arrayx' has no attribute {name!r}")

from arrayx.core import float_checks as _nan_checks  # noqa: E402
from arrayx.api import _hooks as _api_hooks  # noqa: E402
import sys as _sys  # noqa: E402

_api_hooks.namespace = _sys.modules[__name__]  # x.__array_namespace__(), NumPy's protocols
_nan_checks.install_from_environment()  # ARRAYX_DEBUG_NANS / ARRAYX_DEBUG_INFS, last: nothing may reset it
