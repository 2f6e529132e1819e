"""Known gaps: functions an executor legitimately cannot run (it raises NotImplementedError).

One dict per executor: standard function name (as in the table: ``"sin"``,
``"linalg.eigh"``, ``"array.at"``), or one hand-picked example's id (``"repeat[array]"``) when only
that use is missing, -> the reason, in words a user can act on.  The eager sweep
(``test_differential.py``) fails on a NotImplementedError whose function is not listed here, and on
a listed function that no longer raises (so this table never goes stale).
"""
from __future__ import annotations

GAPS: dict[str, dict[str, str]] = {
    "numpy": {},
    "numba": {},
    "jax": {},
    "dask": {},
    "cupy": {},
}


def reason(executor: str, func: str, case_id: str | None = None) -> str | None:
    """Why ``executor`` cannot run ``func`` (or the case ``case_id``), or None when it is not a known gap."""
    table = GAPS.get(executor, {})
    return table.get(case_id) or table.get(func) if case_id else table.get(func)
