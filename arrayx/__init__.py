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

from arrayx import _config as _config  # noqa: E402
_config.check_environment()  # every ARRAYX_* variable that is set, before anything reads one

from arrayx.api._dtypes import (  # noqa: F401  data types
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128,
)
from arrayx.api._array import Array  # noqa: F401
from arrayx.executors import base as _executor_base
from arrayx import executors  # noqa: F401  (callable: arrayx.executors() lists the available ones)
from arrayx.executors.base import (  # noqa: F401
    Device, Executor, get_executor, register_executor, set_executor, use_executor,
)
from arrayx.api._modes import is_strict, strict  # noqa: F401,E402  (the two modes: default / strict)

# -- constants ----------------------------------------------------------------
import math as _math

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

# -- the standard, one block per spec category -----------------------------------
from arrayx.api.creation import *  # noqa: F401,F403,E402
from arrayx.api.data_types import *  # noqa: F401,F403,E402
from arrayx.api.elementwise import (  # noqa: F401,E402
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_left_shift,
    bitwise_invert, bitwise_or, bitwise_right_shift, bitwise_xor, ceil, clip, conj, copysign, cos,
    cosh, divide, equal, exp, expm1, floor, floor_divide, greater, greater_equal, hypot, imag,
    isfinite, isinf, isnan, less, less_equal, log, log1p, log2, log10, logaddexp, logical_and,
    logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative, nextafter,
    not_equal, positive, pow, real, reciprocal, remainder, round, sign, signbit, sin, sinh, square,
    sqrt, subtract, tan, tanh, trunc,
)
from arrayx.api.indexing import *  # noqa: F401,F403,E402
from arrayx.api.info import *  # noqa: F401,F403,E402
from arrayx.api.linalg import *  # noqa: F401,F403,E402  (matmul, matrix_transpose, tensordot, vecdot)
from arrayx.api.manipulation import *  # noqa: F401,F403,E402
from arrayx.api.searching import *  # noqa: F401,F403,E402
from arrayx.api.sets import *  # noqa: F401,F403,E402
from arrayx.api.sorting import *  # noqa: F401,F403,E402
from arrayx.api.statistical import *  # noqa: F401,F403,E402
from arrayx.api.utility import *  # noqa: F401,F403,E402

# -- extensions -------------------------------------------------------------------
from arrayx import fft, linalg  # noqa: E402,F401

# -- transforms, pytrees, random ------------------------------------------------------
from arrayx import pytree  # noqa: E402,F401
from arrayx import debug  # noqa: E402,F401  (debug.print / debug.callback)
from arrayx.transforms import *  # noqa: E402,F401,F403  (grad, jvp, vjp, vmap, jit, ...)
from arrayx import random  # noqa: E402,F401
from arrayx import sharding  # noqa: E402,F401  (Mesh, NamedSharding, P, ...)
from arrayx.sharding import device_put, devices, shard_map  # noqa: E402,F401

# submodules loaded on first access (they register primitives and rules when imported)
_LAZY_SUBMODULES = ("nn", "lax")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"arrayx.{name}")
    raise AttributeError(f"module 'arrayx' has no attribute {name!r}")

from arrayx.transforms import nan_checks as _nan_checks  # noqa: E402

_nan_checks.install_from_environment()  # ARRAYX_DEBUG_NANS / ARRAYX_DEBUG_INFS, last: nothing may reset it
