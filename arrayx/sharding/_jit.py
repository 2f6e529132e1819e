"""``jit(f, in_shardings=..., out_shardings=...)``: the arguments placed, the results constrained.

The arguments are ``device_put`` as ``in_shardings`` says before the call and constrained to it
inside the staged function; the results are constrained to ``out_shardings`` inside it, so on jax
XLA compiles the layouts into the program (as ``jax.jit``'s own shardings); elsewhere they set the
results' shardings.  ``None`` (whole, or for a leaf) leaves that value as it comes.
"""
from __future__ import annotations

import functools

from arrayx import pytree
from arrayx.sharding._mesh import PartitionSpec
from arrayx.sharding._shardings import Sharding


def _is_leaf(v) -> bool:
    return v is None or isinstance(v, (Sharding, PartitionSpec))


def _apply(what, values, shardings, fname):
    from arrayx.sharding._api import device_put
    from arrayx.sharding._constraint import with_sharding_constraint

    if shardings is None:
        return values
    if isinstance(shardings, Sharding):
        targets = [shardings] * len(pytree.leaves(values))
    else:
        targets = pytree.broadcast_prefix(shardings, values, is_leaf=_is_leaf, prefix_name=what,
                                          full_name="the arguments" if what == "in_shardings" else "the results",
                                          who=fname)
    leaves, tree = pytree.flatten(values)
    out = []
    for v, s in zip(leaves, targets):
        if s is None:
            out.append(v)
        elif isinstance(s, PartitionSpec):
            raise TypeError(f"{fname}: {what} holds a bare PartitionSpec {s!r}; pass NamedSharding(mesh, spec)")
        else:
            out.append(device_put(v, s) if what == "in_shardings" and v.__class__.__name__ == "Array"
                       else with_sharding_constraint(v, s))
    return pytree.unflatten(tree, out)


def jit_with_shardings(fun, in_shardings, out_shardings, **jit_kwargs):
    from arrayx.transforms.jitting import JitFunction

    name = getattr(fun, "__name__", "f")
    fname = f"jit({name})"

    @functools.wraps(fun)
    def constrained(*args, **kwargs):
        args = _apply("in_shardings", args, in_shardings, fname) if in_shardings is not None else args
        return _apply("out_shardings", fun(*args, **kwargs), out_shardings, fname)

    inner = JitFunction(constrained, jit_kwargs["static_argnums"], jit_kwargs["static_argnames"],
                        jit_kwargs["donate_argnums"], jit_kwargs["donate_argnames"])

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if in_shardings is not None:
            args = _apply("in_shardings", args, in_shardings, fname)
        return inner(*args, **kwargs)

    call.trace = inner.trace if hasattr(inner, "trace") else None
    return call


def _install() -> None:
    from arrayx.transforms import jitting

    jitting.with_shardings_hook = jit_with_shardings  # jit(..., in_shardings=...) comes here


_install()
