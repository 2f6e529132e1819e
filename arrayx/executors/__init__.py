"""Executors: where arrayx operations run.

``arrayx.executors()`` lists the executors available here; this package is
callable for that purpose and also exposes the registry
(``arrayx.executors.get("numba")``) and each executor's module
(``arrayx.executors.dask.connect(address)``).
"""
from __future__ import annotations

import sys
import types

from arrayx.core.executor import (  # noqa: F401
    Device,
    Executor,
    executors as _available_names,
    get,
    get_executor,
    register_executor,
    registered,
    resolve_device,
    set_executor,
    use_executor,
)
from arrayx.executors.numpy import NumpyExecutor

register_executor(NumpyExecutor())

# The other built-in executors.  Their modules import their libraries lazily
# (in ``Executor._load``), so registering them costs nothing and an executor
# whose library is missing reports itself unavailable with the reason.
_BUILTIN = (("numba", "NumbaExecutor"), ("jax", "JaxExecutor"), ("cupy", "CupyExecutor"),
            ("dask", "DaskExecutor"))


def _register_builtins() -> None:
    import importlib

    for module, cls in _BUILTIN:
        try:
            mod = importlib.import_module(f"arrayx.executors.{module}")
        except ModuleNotFoundError as e:
            if e.name == f"arrayx.executors.{module}":
                continue  # not written yet in this checkout
            raise
        register_executor(getattr(mod, cls)())


_register_builtins()


class _CallablePackage(types.ModuleType):
    def __call__(self) -> list[str]:
        """Names of the executors that can run on this machine."""
        return _available_names()


sys.modules[__name__].__class__ = _CallablePackage
