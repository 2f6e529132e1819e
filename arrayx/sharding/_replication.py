"""Which mesh axes each value of a shard_map member graph varies along (JAX's check_vma), decided
from the program alone, and the check of the outputs against ``out_specs``.

A member's block varies along the mesh axes its in_spec names, ``axis_index(a)`` along ``a``, a
constant (a captured value, a literal) along none; an operation's result varies along every axis
any of its operands varies along, except a collective over ``a`` (psum, pmax, pmin, all_gather),
whose result is the same on every member along ``a``; ppermute and psum_scatter over ``a`` give
each member its own block, so their results vary along ``a``.  Control flow follows vmap's batching rules
(a loop carry varies along what its body makes it vary along, to a fixed point; a branch or loop
whose choice varies makes every result vary).  An output whose out_spec leaves axis ``a`` out says
it is the same on every member along ``a``: it must not vary along ``a``.  The values are never
looked at: ``sum(b) * 0`` varies along the axes ``b`` is split over, as in JAX.
"""
from __future__ import annotations

from arrayx.core.graph import Graph, Var

__all__ = ["output_axes", "check_outputs", "unnamed_axes"]

_NONE = frozenset()


def output_axes(graph: Graph, input_axes) -> list:
    """The mesh axes (a frozenset each) every output of ``graph`` varies along, given its inputs'."""
    env = dict(zip(graph.inputs, input_axes))
    for eqn in graph.equations:
        ins = [env.get(a, _NONE) if a.__class__ is Var else _NONE for a in eqn.inputs]
        rule = RULES.get(eqn.prim.name, _union)
        env.update(zip(eqn.outputs, rule(ins, eqn)))
    return [env.get(o, _NONE) if o.__class__ is Var else _NONE for o in graph.outputs]


def _union(ins, eqn):
    """Any other operation (nested graphs of unknown layout too): every operand's axes."""
    axes = frozenset().union(*ins)
    return [axes] * len(eqn.outputs)


def _collective(ins, eqn):
    return [ins[0] - _names_of(eqn)]  # psum's axis_name may be a tuple of names


def _names_of(eqn) -> frozenset:
    name = eqn.params["axis_name"]
    return frozenset(name) if isinstance(name, tuple) else frozenset({name})


def _moved(ins, eqn):
    """ppermute, psum_scatter: each member gets a different block (or zeros): it varies along the axes."""
    return [ins[0] | _names_of(eqn)]


def _call(ins, eqn):
    graph = eqn.params.get("graph")
    if isinstance(graph, Graph) and len(graph.inputs) == len(ins) and len(graph.outputs) == len(eqn.outputs):
        return output_axes(graph, ins)
    return _union(ins, eqn)


def _cond(ins, eqn):
    index, ops = ins[0], ins[1:]
    outs = [output_axes(b, ops) for b in eqn.params["branches"]]
    return [index.union(*col) for col in zip(*outs)]


def _fixpoint(step, carry):
    """Carry axes grown by ``step`` until they stop growing (at most one axis per round)."""
    while True:
        new = [c | n for c, n in zip(carry, step(carry))]
        if new == carry:
            return carry
        carry = new


def _while(ins, eqn):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cc, bc, init = ins[:nc], ins[nc:nc + nb], list(ins[nc + nb:])

    def step(carry):
        (pred,) = output_axes(p["cond"], [*cc, *carry])
        return [o | pred for o in output_axes(p["body"], [*bc, *carry])]

    carry = _fixpoint(step, init)
    (pred,) = output_axes(p["cond"], [*cc, *carry])  # members that stop at different steps
    return [c | pred for c in carry]


def _scan(ins, eqn):
    p = eqn.params
    nc, k = p["num_consts"], p["num_carry"]
    consts, init, xs = ins[:nc], list(ins[nc:nc + k]), ins[nc + k:]
    carry = _fixpoint(lambda c: output_axes(p["body"], [*consts, *c, *xs])[:k], init)
    return [*carry, *output_axes(p["body"], [*consts, *carry, *xs])[k:]]


#: primitive name -> rule (operands' axes, equation) -> results' axes; any other: the union (custom
#: rules and checkpoint too: their vmap rules batch every result, and the vmaps under a transform
#: must agree with this analysis)
RULES = {"psum": _collective, "pmax": _collective, "pmin": _collective, "all_gather": _collective,
         "ppermute": _moved, "psum_scatter": _moved, "call": _call, "cond": _cond, "while": _while, "scan": _scan}


def unnamed_axes(mesh, spec) -> list:
    """The mesh axes ``spec`` does not split over (the result is replicated along them)."""
    return [a for a in mesh.axis_names if not any(a in spec.names_of(d) for d in range(len(spec)))]


def check_outputs(fname, mesh, axes, specs, paths) -> None:
    """Refuse an output that varies along a mesh axis its out_spec leaves out (JAX's check_vma)."""
    for vary, spec, path in zip(axes, specs, paths):
        bad = [a for a in unnamed_axes(mesh, spec) if a in vary]
        if not bad:
            continue
        a = bad[0]
        names = ", ".join(repr(b) for b in bad)
        where = f"out_specs{path}" if path else "out_specs"
        named = [n for d in range(len(spec)) for n in spec.names_of(d)]
        suggest = f"P({a!r})" if not named else f"P(({', '.join(repr(n) for n in named + [a])}))"
        raise ValueError(
            f"{fname}: {where} is {spec!r}, which does not name mesh axis {names} of {mesh!r}, so output{path} must "
            f"be the same on every member along {a!r}; but it varies along {a!r} (it depends on an argument split "
            f"over {a!r} or on axis_index({a!r}), with no psum/pmean/pmax/pmin/all_gather over {a!r} after that). "
            f"Reduce it over {a!r} in the body (e.g. arrayx.lax.psum(value, {a!r})) or name {a!r} in out_specs "
            f"(e.g. {suggest}: one block per member); check_rep=False skips this check and takes member 0's value "
            f"along {a!r}")
