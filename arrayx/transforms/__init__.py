"""Transforms: grad, jvp, vjp, vmap, jit, control flow and friends (see core.py for the machinery)."""
__all__: list = []
