"""The function table of the differential suite: every function of the standard and the operators.

Each ``Fn`` says how its arguments are drawn: ``signature`` names a strategy of SIGNATURES
(the positional arguments), ``dtypes`` the dtype category of the array inputs, ``values``
the value kind (``strategies.VALUE_KINDS``), ``kw`` the keyword arguments as names of
DOMAINS (each draws valid values for the input it is given: axes in range, keepdims, dtypes,
...), ``tolerance`` the comparison class (``runner.TOLERANCES``) and ``view`` the unique
quantities compared for results that are unique only up to sign or phase (VIEWS).

The entries and their argument strategies live in ``table/``, one module per spec category
(``table/_core.py`` holds ``Fn``, the keyword domains and the shared strategies); importing
this module assembles the table in the order below.  The table's hand-picked examples are
``table/examples.py`` and its derivative examples ``table/derivatives.py``.
"""
from __future__ import annotations

from hypothesis import strategies as st

from conformance.differential.table import (  # noqa: F401 - each module adds its entries to TABLE
    elementwise, array_object, creation, data_types, indexing, linalg, manipulation, searching, statistical, fft)
from conformance.differential.table._core import DOMAINS, OMIT, SIGNATURES, TABLE, VIEWS, Fn, add  # noqa: F401
from conformance.differential.table.array_object import (  # noqa: F401
    INPLACE, OPERATOR_FUNCTIONS, OPERATORS, UNARY_OPERATORS)
from conformance.differential.table.elementwise import BINARY, UNARY  # noqa: F401

BY_NAME = {f.name: f for f in TABLE}
assert len(BY_NAME) == len(TABLE), "duplicate names in the differential table"


def standard_name(fn: Fn) -> str:
    """The standard function (or array member) an entry exercises: ``array.__getitem__[array]`` -> ``array.__getitem__``."""
    return fn.name.split("[")[0]


@st.composite
def examples(draw, fn: Fn):
    """``(args, kwargs)`` for one call of ``fn``."""
    args, kw = SIGNATURES[fn.signature](draw, fn)
    kw = dict(kw)
    for domain in fn.kw:
        kw.update(DOMAINS[domain](draw, args[0] if args else None))
    return tuple(args), kw
