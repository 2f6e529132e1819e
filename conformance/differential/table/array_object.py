"""The array object: operators, in-place operators, indexing and ``mT``."""
from __future__ import annotations

import operator

from conformance.differential.table._core import add
from conformance.differential.table.elementwise import BINARY, UNARY


# the operators: the array object's dunders, each with the domain of its function
OPERATORS = {
    "__add__": "add", "__sub__": "subtract", "__mul__": "multiply", "__truediv__": "divide",
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow", "__and__": "bitwise_and",
    "__or__": "bitwise_or", "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
    "__rshift__": "bitwise_right_shift", "__eq__": "equal", "__ne__": "not_equal", "__lt__": "less",
    "__le__": "less_equal", "__gt__": "greater", "__ge__": "greater_equal",
}
UNARY_OPERATORS = {"__neg__": "negative", "__pos__": "positive", "__abs__": "abs", "__invert__": "bitwise_invert"}
INPLACE = ("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__", "__and__",
           "__or__", "__xor__", "__lshift__", "__rshift__")
#: dunder -> the operator module's function that calls it (reflected operands included)
OPERATOR_FUNCTIONS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul, "__truediv__": operator.truediv,
    "__floordiv__": operator.floordiv, "__mod__": operator.mod, "__pow__": operator.pow, "__and__": operator.and_,
    "__or__": operator.or_, "__xor__": operator.xor, "__lshift__": operator.lshift, "__rshift__": operator.rshift,
    "__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
    "__gt__": operator.gt, "__ge__": operator.ge, "__neg__": operator.neg, "__pos__": operator.pos,
    "__abs__": operator.abs, "__invert__": operator.invert, "__matmul__": operator.matmul,
    "__iadd__": operator.iadd, "__isub__": operator.isub, "__imul__": operator.imul,
    "__itruediv__": operator.itruediv, "__ifloordiv__": operator.ifloordiv, "__imod__": operator.imod,
    "__ipow__": operator.ipow, "__iand__": operator.iand, "__ior__": operator.ior, "__ixor__": operator.ixor,
    "__ilshift__": operator.ilshift, "__irshift__": operator.irshift, "__imatmul__": operator.imatmul,
}
for _dunder, _func in OPERATORS.items():
    _cat, _values = BINARY[_func]
    add(f"array.{_dunder}", "binary", _cat, **({"pair": _values} if _values else {}))
for _dunder, _func in UNARY_OPERATORS.items():
    add(f"array.{_dunder}", dtypes=UNARY[_func])
for _dunder in INPLACE:
    _cat, _values = BINARY[OPERATORS[_dunder]]
    add(f"array.__i{_dunder[2:]}", "inplace", _cat, **({"pair": _values} if _values else {}))
add("array.__matmul__", "matmul", "numeric", "bounded", tolerance="reduction")
add("array.__imatmul__", "matmul", "numeric", "bounded", tolerance="reduction")
add("array.__getitem__", "getitem", "any")
add("array.__getitem__[array]", "getitem_array", "any")
add("array.__setitem__", "setitem", "any")
add("array.mT", "matrix_rank2", "any", tolerance="exact")
