"""What bench files share with the runner (``python -m benchmarks``): peer detection and waiting for results."""
from __future__ import annotations

import importlib


def installed(name: str) -> bool:
    """Whether the peer library ``name`` imports here (a peer that does not is left out)."""
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - ImportError, or a broken install: not a peer here
        return False
    return True


def block(out):
    """``out`` once its values exist: JAX dispatches asynchronously and Dask is lazy."""
    import arrayx

    for leaf in arrayx.pytree.leaves(out):
        buf = leaf._buf if isinstance(leaf, arrayx.Array) else leaf
        if hasattr(buf, "block_until_ready"):
            buf.block_until_ready()
        elif hasattr(buf, "dask") and hasattr(buf, "compute"):
            buf.compute()
    return out
