"""Known gaps: functions an executor legitimately cannot run (it raises NotImplementedError).

One dict per executor: standard function name (as in ``cases.py``: ``"sin"``,
``"linalg.eigh"``, ``"array.at"``) -> the reason, in words a user can act on.  The
parity test fails on a NotImplementedError whose function is not listed here, and on
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


def reason(executor: str, func: str) -> str | None:
    """Why ``executor`` cannot run ``func``, or None when it is not a known gap."""
    return GAPS.get(executor, {}).get(func)
