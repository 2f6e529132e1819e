"""Scalar math for the Numba executor's kernels (exp, expm1, tanh, sin, cos, fma, bit casts ...).

The definitions are in ``math_defs.py`` (read its docstring), run into this module's
namespace when one of its names is first read, which is when a kernel that calls them is
compiled.  Why not at import: Numba imports the module of every function a cached kernel
links in to rebuild its environment, so loading a fused kernel from the disk cache in a new
process imports this module; creating the ~30 dispatchers there cost 10-20 ms of that load.

Importing this module imports nothing; reading a name imports Numba.
"""
from __future__ import annotations

import pathlib

_defined = False


def _define() -> None:
    """Run ``math_defs.py`` here, once (its functions belong to this module)."""
    global _defined
    from numba.core.compiler_lock import global_compiler_lock

    # Numba's (reentrant) lock, which a thread typing a kernel holds: defining and typing never interleave
    with global_compiler_lock:
        if not _defined:
            path = pathlib.Path(__file__).with_name("math_defs.py")
            exec(compile(path.read_text(), str(path), "exec"), globals())  # noqa: S102 - our own file
            _defined = True
            # usually first read while Numba types a kernel, after it loaded the typing templates:
            # the intrinsics just made must be loaded too (else "Unknown attribute 'fma'")
            from numba.core.registry import cpu_target

            cpu_target.typing_context.refresh()
            cpu_target.target_context.refresh()


def __getattr__(name: str):
    if name.startswith("__") or _defined:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _define()
    return globals()[name] if name in globals() else __getattr__(name)
