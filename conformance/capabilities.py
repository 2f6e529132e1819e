"""What each executor runs natively, through another path, or not at all, read from its tables.

For a standard function served by a primitive of the same name (``sin``, ``linalg.inv`` ->
``inv``) the executor's lookup order (``Executor.resolve``) decides, without running anything:

``native``     the executor's namespace function (``jax.numpy.sin``), or a kernel it lists in
               ``executor_info()["native"]`` (Numba's)
``adapted``    an entry of the executor's ``overrides`` table (``executors/<name>/``): arrayx code
               on the executor's own library, named by its qualified name
``other``      computed elsewhere: an executor that lists native kernels runs the rest through the
               executor it extends (Numba -> NumPy), and an override whose name says it runs NumPy
               or the host (``_numpy_blockwise``, ``_numpy_reference``) is named as such
``generic``    the primitive's executor-independent impl (``arrayx.core.executor.GENERIC``)
``unsupported`` the table says None, or the namespace has no such function: NotImplementedError
``composite``  no primitive of that name: written in other arrayx operations (or an executor method
               such as ``asarray``), so it runs wherever those run

The parity matrix confirms the ``unsupported`` ones: an executor raising NotImplementedError shows
as a gap there.
"""
from __future__ import annotations

from arrayx.core import executor as _base
from arrayx.core.primitives import primitives

NATIVE, ADAPTED, OTHER, GENERIC, UNSUPPORTED, COMPOSITE = (
    "native", "adapted", "other", "generic", "unsupported", "composite")
#: words in an implementation's qualified name that say it computes on NumPy / the host
_ELSEWHERE_WORDS = ("numpy", "host")


def primitive_of(func: str):
    """The primitive serving standard function ``func`` (``"linalg.inv"`` -> ``inv``), or None."""
    if func in primitives:
        return primitives[func]
    for p in primitives.values():
        if p.impl_name == func:
            return p
    return None


def _name_of(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _parent_executor(ex) -> str | None:
    for cls in type(ex).__mro__[1:]:
        name = getattr(cls, "name", "?")
        if name not in ("?", ex.name):
            return name
    return None


def _operator_function(member: str) -> str | None:
    """The function an array operator runs: ``__add__`` and ``__iadd__`` -> ``add``."""
    from conformance.differential import functions as F

    table = {**F.OPERATORS, **F.UNARY_OPERATORS, "__matmul__": "matmul"}
    return table.get(member) or table.get(f"__{member[3:]}") if member.startswith("__i") else table.get(member)


def path(ex, func: str) -> tuple[str, str]:
    """``(kind, what)`` for standard function ``func`` on executor ``ex`` (kinds: module docstring)."""
    served = _operator_function(func[len("array."):]) if func.startswith("array.") else None
    if served:
        kind, what = path(ex, served)
        return kind, f"as {served}: {what}"
    prim = primitive_of(func)
    if prim is None:
        return COMPOSITE, "written in other arrayx operations"
    native_kernels = ex.executor_info().get("native")
    if isinstance(native_kernels, dict):  # an executor with its own kernel list runs the rest elsewhere
        parent = _parent_executor(ex)
        if prim.name in native_kernels:
            return NATIVE, f"{ex.name} kernel for {', '.join(native_kernels[prim.name])}; otherwise the {parent} executor's"
        base = _base.get(parent) if parent else None
        if base is not None:
            kind, what = path(base, func)
            if kind == UNSUPPORTED:
                return kind, what
            return OTHER, f"the {parent} executor's implementation ({kind}: {what})"
    if prim.name in ex.overrides:
        fn = ex.overrides[prim.name]
        if fn is None:
            return UNSUPPORTED, f"{ex.name}'s table marks {prim.name} unsupported"
        name = _name_of(fn)
        if any(w in getattr(fn, "__qualname__", "").lower() for w in _ELSEWHERE_WORDS):
            return OTHER, name
        return ADAPTED, name
    if _base.GENERIC.get(prim.name) is not None:
        return GENERIC, _name_of(_base.GENERIC[prim.name])
    target = ex.xp
    for part in prim.impl_name.split("."):
        target = getattr(target, part, None)
        if target is None:
            return UNSUPPORTED, f"{getattr(ex.xp, '__name__', ex.name)} has no {prim.impl_name}"
    return NATIVE, f"{getattr(ex.xp, '__name__', ex.name)}.{prim.impl_name}"


def table(executors: list[str], functions: list[str]) -> dict:
    """``{executor: {function: {"kind", "what"}}}`` plus each executor's ``capabilities()`` summary."""
    out = {}
    for name in executors:
        ex = _base.get(name)
        rows = {}
        for func in functions:
            try:
                kind, what = path(ex, func)
            except Exception as e:  # noqa: BLE001 - a table that cannot be read is itself a finding
                kind, what = UNSUPPORTED, f"reading the table raised {type(e).__name__}: {e}"
            rows[func] = {"kind": kind, "what": what}
        counts = {k: sum(1 for r in rows.values() if r["kind"] == k)
                  for k in (NATIVE, ADAPTED, OTHER, GENERIC, UNSUPPORTED, COMPOSITE)}
        out[name] = {"functions": rows, "counts": counts,
                     "flags": {k: _no_machine_path(v) for k, v in {**ex.capabilities(), **ex.executor_info()}.items()
                               if isinstance(v, (bool, int, str))}}
    return out


def _no_machine_path(value):
    """A folder of this machine (the kernel cache) as what it is: reports are shared and committed."""
    return "(a private folder)" if isinstance(value, str) and value.startswith(("/", "~")) else value
