"""Transform rules, grouped by the standard's categories (mirroring ``arrayx/api``).

Importing this package registers every rule (``prim.jvp``, ``prim.transpose``,
``prim.abstract_eval``) on the primitives defined in ``arrayx.api``.  The helpers
rule modules use are re-exported here (see ``_define``); ``coverage()`` reports
which primitives still lack rules.

Adding rules for a new primitive ``foo_p`` of ``arrayx/api/<category>.py`` is a local
edit of ``rules/<category>.py``, for example::

    defjvp(foo_p, lambda t, out, x, y: t * y, lambda t, out, x, y: t * x)   # per operand
    defjvp_coef(bar_p, lambda out, x: 1.0 / x)                               # unary: t * coef
    defjvp_zero(argfoo_p)                                                    # no derivative
    deflinear(baz_p, lambda ct, x, *, axis: (baz_transpose(ct, axis),))      # linear
    defabstract(foo_p, lambda x, y: ShapeDtypeStruct(x.shape, x.dtype))     # staging

Rules are arrayx code (so they can be differentiated again); the one function
table (``conformance/differential/table/derivatives.py``) takes one line per new function.
"""
from __future__ import annotations

from arrayx.core.tracers import CallPrimitive
from arrayx.core.primitives import primitives
from arrayx.transforms.rules._define import (  # noqa: F401
    defabstract, defbilinear, defbroadcasting, defjvp, defjvp_coef, defjvp_zero, deflinear, is_undefined,
    py, unbroadcast, zeros_for,
)
from arrayx.transforms.rules import (  # noqa: F401,E402  (each module registers its rules)
    creation, data_types, elementwise, fft, indexing, internal, linalg, manipulation, searching, sets,
    sorting, statistical, utility,
)

__all__ = [
    "coverage", "defabstract", "defbilinear", "defbroadcasting", "defjvp", "defjvp_coef", "defjvp_zero",
    "deflinear", "unbroadcast", "zeros_for",
]

# Primitives that are internal to the transforms themselves and handled by their traces.
# (custom_vjp_lin refuses forward mode on purpose, as JAX does).
_HANDLED_BY_TRACES = {"custom_vjp_lin"}


def coverage() -> dict:
    """Which primitives lack rules: ``{"jvp": [...], "transpose": [...], "abstract_eval": [...]}``.

    ``jvp`` lists primitives that cannot be differentiated (neither a jvp rule nor a
    zero-derivative declaration); ``transpose`` lists primitives whose jvp rule
    produces them on tangents (they appear in linear graphs) but that have no transpose
    rule; ``abstract_eval`` lists primitives staged with the generic NumPy fallback.
    """
    missing_jvp = sorted(n for n, p in primitives.items() if p.jvp is None and n not in _HANDLED_BY_TRACES)
    missing_t = sorted(
        n for n, p in primitives.items()
        if p.transpose is None and getattr(p.jvp, "__name__", "").endswith(("_linear", "_bilinear"))
    )
    # call-like primitives (custom rules, checkpoint) take the abstract value of their function
    no_abstract = sorted(
        n for n, p in primitives.items() if p.abstract_eval is None and not isinstance(p, CallPrimitive)
    )
    data_dependent = sorted(n for n, p in primitives.items() if p.data_dependent is not None)
    linear = sorted(n for n, p in primitives.items() if p.transpose is not None)
    batch_loop = sorted(n for n, p in primitives.items() if p.batch is None and not p.call_like)
    return {"jvp": missing_jvp, "transpose": missing_t, "abstract_eval": no_abstract, "linear": linear,
            "batch_loop": batch_loop, "data_dependent": data_dependent}
