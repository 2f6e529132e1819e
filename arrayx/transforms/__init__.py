"""Transforms: grad, jvp, vjp, linearize, Jacobians, custom derivatives, checkpoint, staging, vmap.

The interpreters build on ``arrayx.core`` (primitives, bind, traces, tracers, the Graph IR,
``debug_nans``) and on ``arrayx.api``: ``staging`` (``make_graph``, ``eval_shape``), ``forward`` (forward mode:
jvp, linearize), ``transpose`` (reverse mode), ``custom`` (custom_jvp/custom_vjp/
stop_gradient), ``checkpointing`` (checkpoint/remat) and ``debug`` (check_grads); the
rules sit in ``rules/``, grouped like ``arrayx/api``.  (No module is named after a
public function: a submodule attribute would shadow the function of the same name.)

Import cycles: ``control_flow`` and ``control_flow_reverse``: the second holds the
transpose (reverse-mode) rules of ``cond``/``while_loop``/``scan`` and needs their primitives;
``control_flow`` imports it last so that importing the loops registers their rules.
``parallel`` and ``pmap_dask``: the second holds pmap's dask runner and reads the first's segments;
``parallel`` imports it last, into its table of runners.

The public names are loaded on first access: ``arrayx.api`` imports ``core`` while
the namespace is being built, and the transforms need the whole namespace.
"""
from __future__ import annotations

import importlib

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian",
    "stop_gradient", "custom_jvp", "custom_vjp", "checkpoint", "remat", "checkpoint_policies",
    "check_grads", "make_graph", "eval_shape", "ShapeDtypeStruct", "jit", "disable_jit",
    "lazy", "cond", "switch", "while_loop", "fori_loop", "scan", "map", "debug_nans", "debug_infs", "vmap",
    "pmap", "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index", "device_count", "local_device_count",
]

# public name -> module that defines it
_WHERE = {
    "grad": "transpose", "value_and_grad": "transpose", "vjp": "transpose", "jacfwd": "transpose",
    "jacrev": "transpose", "hessian": "transpose", "jvp": "forward", "linearize": "forward",
    "stop_gradient": "custom", "custom_jvp": "custom", "custom_vjp": "custom",
    "checkpoint": "checkpointing", "remat": "checkpointing", "checkpoint_policies": "checkpointing",
    "check_grads": "debug", "make_graph": "staging", "eval_shape": "staging",
    "ShapeDtypeStruct": "arrayx.core.tracers", "jit": "jitting", "disable_jit": "jitting",
    "cond": "control_flow", "switch": "control_flow", "while_loop": "control_flow", "fori_loop": "control_flow",
    "scan": "control_flow", "map": "control_flow", "debug_nans": "arrayx.core.float_checks", "debug_infs": "arrayx.core.float_checks",
    "vmap": "batching", "lazy": "laziness",
    **{name: "parallel" for name in ("pmap", "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index",
                                      "device_count", "local_device_count")},
}


def _load_rules() -> None:
    importlib.import_module("arrayx.transforms.rules")


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'arrayx.transforms' has no attribute {name!r}")
    _load_rules()
    value = getattr(importlib.import_module(module if "." in module else f"arrayx.transforms.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
