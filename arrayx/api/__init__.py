"""The standard's namespace: data types, constants, :class:`Array` and every function, by spec category.

One private module per spec category (``creation``, ``elementwise``, ``manipulation``, ...), each
holding the functions' signatures, argument checks and primitives; ``_array`` the array object's
methods, ``_dtypes`` the data types and the promotion table.  ``arrayx/__init__.py`` re-exports
this namespace (``__all__``) and adds the extensions, transforms, pytrees, random and sharding;
the layers above (rules, transforms, ``lax``, ``nn``, ``random``) write their code in these
functions (``from arrayx import api as ax``), never through the top ``arrayx`` module.

``arrayx.api`` builds on ``arrayx.core`` only.  What it needs from the layers above it gets
through ``_hooks``, which they fill when imported.

Import cycles: the categories call each other (``manipulation`` uses ``creation``,
``indexing``, ``elementwise`` and ``statistical`` reach ``manipulation`` ...; ``_checks``,
``_index_keys``, ``data_types``, ``searching``, ``linalg``, ``utility`` and ``_numpy_dispatch`` too),
and every one returns :class:`Array`, whose methods in ``_array`` route back through them (imported
at the end of ``_array``).  The categories are one layer (the standard) split by the spec's
chapters; each module imports the others' names at module level only where no cycle results and
inside the function otherwise.  ``indexing`` is split in three: ``indexing`` (the primitives,
``x[key]``, take), ``_views`` (views of arrays not written in place, which ``getitem`` makes and
whose writes go through ``_index_updates``) and ``_index_updates`` (``x[key] = v``, ``x.at[]``,
built on both); ``indexing`` imports ``_views`` at its end, ``_views`` ``_index_updates`` at its end.
``_fast_paths`` (the one-frame eager paths that decorate ``elementwise``'s functions and build
``_array``'s operators) reads ``elementwise``'s dtype tables on each call and is imported by both.
"""
from __future__ import annotations

import math as _math
import types as _types

from arrayx.api._dtypes import (  # noqa: F401  data types
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128,
    float16,  # extension float (NumPy's); bfloat16 is loaded on first use, see __getattr__
)
from arrayx.api._array import Array  # noqa: F401

# -- constants ----------------------------------------------------------------
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


def __getattr__(name: str):
    if name == "bfloat16":  # ml_dtypes is imported on first use (it costs ~0.5 s)
        from arrayx.api import _dtypes

        return _dtypes.load_bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: every name above (not the category modules): what ``arrayx`` re-exports
__all__ = sorted(n for n, v in globals().items()
                 if (not n.startswith("_") or n == "__array_namespace_info__") and n != "annotations"
                 and not isinstance(v, _types.ModuleType))
