"""The standard's data types, their categories and the promotion table.

arrayx dtypes are NumPy dtype instances, so every executor (and every client
that passes NumPy dtypes) speaks them.  arrayx owns promotion: results get the
same dtype on every executor because the dtype is decided here, before any
executor is called.  Where the standard leaves a case undefined (mixed
signed/unsigned 64-bit, int with float arrays, bool with numbers, int ``/``)
the default mode follows NumPy 2 (NEP 50) on every executor, and strict mode
(``arrayx.strict()``) refuses it, as array-api-strict does.

Two extension floats sit beside the standard's dtypes: ``float16`` (NumPy's own) and ``bfloat16``
(``ml_dtypes``', the dtype JAX uses).  They count as "real floating" in every category, so the
standard's functions take them, but they are not in ``all_dtypes`` (the standard's list, which
``__array_namespace_info__().dtypes()`` enumerates).  Their promotion is JAX's lattice (integers
and bool promote to them; float16 with bfloat16 gives float32; a Python float keeps them).
``ml_dtypes`` costs ~0.5 s to import, so bfloat16 is registered on first use
(``load_bfloat16``): the attribute ``arrayx.bfloat16``, a dtype argument or an array of it.
"""
from __future__ import annotations

import builtins as _builtins
import sys as _sys
import threading as _threading

import numpy as np

builtins_bool = _builtins.bool

bool = np.dtype("bool")  # noqa: A001 - the standard's name
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
float16 = np.dtype("float16")  # extension dtypes (not the standard's); bfloat16: load_bfloat16()

DType = np.dtype

_signed = (int8, int16, int32, int64)
_unsigned = (uint8, uint16, uint32, uint64)
_real_float = (float32, float64)
_complex = (complex64, complex128)

all_dtypes = (bool,) + _signed + _unsigned + _real_float + _complex
numeric_dtypes = _signed + _unsigned + _real_float + _complex
#: the extension floats (float16, and bfloat16 once loaded): in the categories, not in all_dtypes
extension_dtypes: tuple = (float16,)


def _categories(ext: tuple) -> dict:
    """The categories, with the extension floats ``ext`` among the real floating dtypes."""
    real_float = _real_float + ext
    return {
        "bool": frozenset({bool}),
        "signed integer": frozenset(_signed),
        "unsigned integer": frozenset(_unsigned),
        "integral": frozenset(_signed + _unsigned),
        "real floating": frozenset(real_float),
        "complex floating": frozenset(_complex),
        "numeric": frozenset(numeric_dtypes + ext),
        # categories used by the elementwise functions' argument checks
        "all": frozenset(all_dtypes + ext),
        "integer or boolean": frozenset((bool,) + _signed + _unsigned),
        "floating-point": frozenset(real_float + _complex),
        "real numeric": frozenset(_signed + _unsigned + real_float),
        "real-valued": frozenset((bool,) + _signed + _unsigned + real_float),
    }


# The standard's dtype categories, as data (with the extension floats among the real floating
# ones; ``load_bfloat16`` replaces the values in place).  ``isdtype`` kinds use the same keys.
CATEGORIES: dict[str, frozenset] = _categories(extension_dtypes)

DEFAULT_INT = int64
DEFAULT_FLOAT = float64
DEFAULT_COMPLEX = complex128
DEFAULT_INDEX = int64

# complex <-> real counterparts (abs/real/imag of complex, complex from real)
REAL_OF = {complex64: float32, complex128: float64}
COMPLEX_OF = {float32: complex64, float64: complex128, float16: complex64}  # bfloat16 too (JAX)

# Array-with-array promotion, as two tables (data, not branches in the functions).
# PROMOTION, the default mode's "extended" table: NumPy 2's result_type on every pair (it is
# exactly the standard's table on the pairs the standard defines, and NEP 50 on the rest:
# bool with numbers, integer with float, uint64 with signed integers).
PROMOTION: dict[tuple, np.dtype] = {
    (a, b): np.result_type(a, b) for a in all_dtypes for b in all_dtypes
}


def _extension_result(ext, other) -> np.dtype:
    """JAX's lattice for an extension float ``ext`` with ``other``: bool and integers promote to
    ``ext``; float16 with bfloat16 meet at float32; float32/64 and complex are above both."""
    if other == ext:
        return ext
    if other in extension_dtypes:
        return float32
    return ext if other.kind in "biu" else other


def _extension_pairs(ext) -> dict:
    return {pair: _extension_result(ext, other) for other in all_dtypes + extension_dtypes
            for pair in ((ext, other), (other, ext))}

# The kinds the standard promotes among themselves: bools; integers (but uint64 with a signed
# integer is undefined); floating-point (real and complex).  Pairs across groups are absent.
# Strict mode promotes the extension floats with floating-point dtypes only.
_STANDARD_GROUPS = ((bool,), _signed + _unsigned, _real_float + _complex)


def _standard_pair(a, b) -> builtins_bool:
    if {a, b} & {uint64} and (a in _signed or b in _signed):
        return False
    groups = _STANDARD_GROUPS[:2] + (_real_float + _complex + extension_dtypes,)
    return any(a in g and b in g for g in groups)


for _ext in extension_dtypes:
    PROMOTION.update(_extension_pairs(_ext))

# STANDARD_PROMOTION, strict mode's table: only the pairs the standard defines.
STANDARD_PROMOTION: dict[tuple, np.dtype] = {
    pair: dt for pair, dt in PROMOTION.items() if _standard_pair(*pair)
}

# the dtype categories of the floating-point functions: in the default mode, bool and integer
# input to them is computed in the float dtype NumPy 2's ufuncs choose (INEXACT_OF), except that
# NumPy's float16 (bool, int8, uint8), which the standard lacks, becomes float32 (as JAX does).
# ``divide`` and the moments (mean, std, var) use the default float for every integer, as NumPy.
FLOAT_ONLY = frozenset({"floating-point", "real floating"})
INEXACT_OF: dict = {
    bool: float32, int8: float32, uint8: float32, int16: float32, uint16: float32,
    int32: float64, uint32: float64, int64: float64, uint64: float64,
}
DEFAULT_FLOAT_FUNCTIONS = frozenset({"divide", "mean", "std", "var"})


def inexact_of(dt: np.dtype, fname: str) -> np.dtype:
    """The float dtype function ``fname`` computes a bool/integer ``dt`` in (default mode)."""
    return DEFAULT_FLOAT if fname in DEFAULT_FLOAT_FUNCTIONS else INEXACT_OF[dt]

_kind_rank = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def kind_of(dt: np.dtype) -> str:
    """``dt.kind``, but "f" for bfloat16, whose NumPy kind is "V" (a user-defined dtype)."""
    k = dt.kind
    return "f" if k == "V" and dt in extension_dtypes else k


# which array kinds a Python scalar may meet in strict mode (the standard's rule): the scalar's
# type -> (the dtype kinds it promotes with, the text of the refusal)
STRICT_SCALAR_KINDS = {
    "bool": ("b", "Python bool scalars can only be combined with bool arrays"),
    "int": ("iufc", "Python int scalars cannot be combined with bool arrays"),
    "float": ("fc", "Python float scalars can only be combined with floating-point arrays"),
    "complex": ("fc", "Python complex scalars can only be combined with floating-point arrays"),
}


def strict_scalar_refusal(dt: np.dtype, scalar) -> str | None:
    """Why strict mode refuses ``array(dt) op scalar`` (None when the standard defines it)."""
    key = ("bool" if isinstance(scalar, (builtins_bool, np.bool_)) else "int" if isinstance(scalar, int)
           else "float" if isinstance(scalar, float) else "complex" if isinstance(scalar, complex)
           else type(scalar).__name__)  # np.float64 is a float, np.complex128 a complex
    kinds, text = STRICT_SCALAR_KINDS.get(key, ("", f"{key} is not a Python scalar"))
    return None if kind_of(dt) in kinds else text


def scalar_result_dtype(dt: np.dtype, scalar) -> np.dtype:
    """dtype of ``array(dt) op scalar`` for a Python scalar (the standard's rule, NEP 50 beyond)."""
    if isinstance(scalar, (builtins_bool, np.bool_)):
        return dt
    if isinstance(scalar, int):
        return DEFAULT_INT if dt == bool else dt
    if isinstance(scalar, float):
        return dt if kind_of(dt) in "fc" else DEFAULT_FLOAT
    if isinstance(scalar, complex):
        if dt.kind == "c":
            return dt
        return COMPLEX_OF[dt] if dt == float32 or dt in extension_dtypes else DEFAULT_COMPLEX
    raise TypeError(f"expected a Python scalar, got {type(scalar).__name__}")


def scalar_dtype(scalar) -> np.dtype:
    """Default dtype for a bare Python scalar (``asarray(3.0)``)."""
    if isinstance(scalar, (builtins_bool, np.bool_)):
        return bool
    if isinstance(scalar, int):
        return DEFAULT_INT
    if isinstance(scalar, float):
        return DEFAULT_FLOAT
    if isinstance(scalar, complex):
        return DEFAULT_COMPLEX
    raise TypeError(f"expected a Python scalar, got {type(scalar).__name__}")


def as_dtype(dtype, fname: str = "arrayx") -> np.dtype:
    """Normalise a dtype argument (arrayx/NumPy dtype or NumPy scalar type) or raise TypeError."""
    if isinstance(dtype, np.dtype):
        if dtype in CATEGORIES["all"] or is_known(dtype):
            return dtype
    elif dtype is not None:
        try:
            d = np.dtype(dtype)
        except TypeError:
            d = None
        if d is not None and is_known(d) and not isinstance(dtype, (str, int, float)):
            return d
    raise TypeError(
        f"{fname}: {dtype!r} is not a dtype of the array API standard; use one of "
        f"arrayx.bool, int8..int64, uint8..uint64, float32, float64, complex64, complex128 "
        f"(or the extension floats arrayx.float16, arrayx.bfloat16)"
    )


def is_known(dt: np.dtype) -> builtins_bool:
    """True for the standard's dtypes and the extension floats; an ml_dtypes bfloat16 (which
    exists only once ml_dtypes is imported) registers bfloat16 here on first sight."""
    if dt in CATEGORIES["all"]:
        return True
    if dt.kind == "V" and dt.name == "bfloat16" and "ml_dtypes" in _sys.modules:
        return load_bfloat16() == dt
    return False


#: hooks run once when bfloat16 is registered (modules that cache category sets rebuild them)
ON_BFLOAT16: list = []


def load_bfloat16() -> np.dtype:
    """bfloat16 (``numpy.dtype(ml_dtypes.bfloat16)``, JAX's), registered in the categories and the
    promotion tables on the first call.  ml_dtypes is imported here, not by ``import arrayx``."""
    global bfloat16, extension_dtypes
    dt = globals().get("bfloat16")
    if dt is not None:
        return dt
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError(
            "arrayx.bfloat16 needs the ml_dtypes package (JAX's own bfloat16); "
            "install it with `pip install ml_dtypes`"
        ) from None
    with _LOADING:  # once, whichever thread comes first
        if globals().get("bfloat16") is None:
            dt = np.dtype(ml_dtypes.bfloat16)
            extension_dtypes = extension_dtypes + (dt,)
            COMPLEX_OF[dt] = complex64
            pairs = _extension_pairs(dt)
            PROMOTION.update(pairs)
            STANDARD_PROMOTION.update({pair: out for pair, out in pairs.items() if _standard_pair(*pair)})
            CATEGORIES.update(_categories(extension_dtypes))  # last: a dtype in them has its table rows
            for hook in ON_BFLOAT16:
                hook()
            bfloat16 = dt
    return bfloat16


_LOADING = _threading.Lock()


def __getattr__(name: str):
    if name == "bfloat16":
        return load_bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
