"""jit on the Numba executor: exact fused multiply-add emulations become one hardware fma.

``arrayx.random`` gives jax.random's bits by emulating XLA's fused multiply-adds with
error-free transformations (``_random_math._fma_halves``: Dekker's product of Veltkamp halves,
Knuth's or Dekker's two-sum, ~20 float64 operations per fma, 23 of them per normal value).
Where the CPU has FMA, a staged graph's emulations are recognised here and replaced by one
``numba_fma`` equation, which a fused kernel computes with LLVM's ``llvm.fma`` (one
``vfmadd`` instruction, rounded once: what the emulation computes, and what XLA computes, by
definition).  What is recognised is the emulation's exact structure, float64 only:

    total + (rounding + error)     total = a * b + c,  p = a * b (the rounded product)
    rounding = (p - (total - bv)) + (c - bv), bv = total - p     (or p - (total - c))
    error = ((ah * bh - p) + ah * bl + al * bh) + al * bl        (ah, al: Veltkamp halves)

with the halves of ``a`` and ``b`` computed from them (``x * 134217729``, ``t - (t - x)``,
``x - high``; or, for a Python float, equal to its halves).  Where the CPU has no FMA
(``hardware_fma()``: the CPU Numba compiles for, or ``ARRAYX_NUMBA_FMA=0``) nothing is
replaced: ``llvm.fma`` would be a slow library call there, and the emulation stays exact.
"""
from __future__ import annotations

import functools

import numpy as np

from arrayx.core import config as _config
from arrayx.core.tracers import ShapeDtypeStruct
from arrayx.core.primitives import Primitive
from arrayx.core.graph import Equation, Graph, Literal, Var, dce

__all__ = ["contract_fmas", "hardware_fma", "fma_p"]

_VELTKAMP = 134217729.0  # 2**27 + 1 (_random_math's split constant)
_F64 = np.dtype(np.float64)


@functools.lru_cache(maxsize=None)
def hardware_fma() -> bool:
    """Whether the CPU that Numba compiles for has fused multiply-add instructions."""
    if not _config.get("ARRAYX_NUMBA_FMA"):
        return False
    from numba.core import config

    if config.CPU_NAME and config.CPU_NAME != "host":  # a named target: its feature string decides
        return "+fma" in (config.CPU_FEATURES or "").split(",")
    import llvmlite.binding as llvm

    return bool(llvm.get_host_cpu_features().get("fma", False))


def _fma_buffers(a, b, c):
    """a * b + c rounded once, elementwise (NumPy buffers or scalars): the hardware fma, outside kernels."""
    from arrayx.executors.numba import math as nm

    a, b, c = np.broadcast_arrays(*(np.asarray(v, _F64) for v in (a, b, c)))
    out = np.empty(a.shape, _F64)
    nm.fma_into(np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1),
                np.ascontiguousarray(c).reshape(-1), out.reshape(-1))
    return out


#: fma(a, b, c) with one rounding, staged only by contract_fmas (so only on the Numba executor)
fma_p = Primitive("numba_fma")
fma_p.abstract_eval = lambda a, b, c: ShapeDtypeStruct(np.broadcast_shapes(*(np.shape(v) for v in (a, b, c))), _F64)
fma_p.lowerings["numba"] = lambda executor, params: _fma_buffers
# its batch rule (vectorized, like the emulation it stands for) is registered in transforms/rules/internal.py


# -- recognising the emulation ----------------------------------------------------------------------
# A pattern is a name (binds an atom, or must be the atom already bound), ("as", name, pattern),
# ("lit", value), ("high"|"low", name) (a Veltkamp half of the atom bound to name), or
# (primitive, pattern, pattern); add and multiply match either order of their operands.

def _halves_of(x: float) -> tuple:
    t = x * _VELTKAMP
    high = t - (t - x)
    return high, x - high


_PRODUCT = ("as", "p", ("multiply", "a", "b"))
_TOTAL = ("as", "s", ("add", _PRODUCT, "c"))
_TWO_SUM = ("add", ("subtract", "p", ("subtract", "s", ("as", "bv", ("subtract", "s", "p")))),
            ("subtract", "c", ("as", "bv", ("subtract", "s", "p"))))
_FAST_TWO_SUM = ("subtract", "p", ("subtract", "s", "c"))  # _fma_halves(small=True)
_AH, _AL, _BH, _BL = (("as", n, (k, n[0])) for n, k in (("ah", "high"), ("al", "low"), ("bh", "high"), ("bl", "low")))
_ERROR = ("add", ("add", ("add", ("subtract", ("multiply", _AH, _BH), "p"), ("multiply", _AH, _BL)),
                  ("multiply", _AL, _BH)), ("multiply", _AL, _BL))
_COMMUTATIVE = frozenset({"add", "multiply"})


def _bits(v) -> bytes | None:
    try:
        return np.asarray(v, _F64).tobytes() if np.asarray(v).dtype.kind == "f" else None
    except (TypeError, ValueError):
        return None


def _same(u, v) -> bool:
    if u is v:
        return True
    return u.__class__ is Literal and v.__class__ is Literal and _bits(u.value) is not None and _bits(u.value) == _bits(v.value)


def _match(pat, atom, env: dict, defs: dict):
    """Every extension of ``env`` under which ``atom`` is ``pat`` (a generator: it backtracks)."""
    if pat.__class__ is str:
        if pat not in env:
            yield {**env, pat: atom}
        elif _same(env[pat], atom):
            yield env
        return
    kind = pat[0]
    if kind == "as":
        if pat[1] in env:
            if _same(env[pat[1]], atom):
                yield env
            return
        for found in _match(pat[2], atom, env, defs):
            yield {**found, pat[1]: atom}
        return
    if kind == "lit":
        if atom.__class__ is Literal and _bits(atom.value) == _bits(pat[1]):
            yield env
        return
    if kind in ("high", "low"):
        x = env.get(pat[1])
        if x.__class__ is Literal:  # a Python float's halves were computed in Python
            if atom.__class__ is Literal and _bits(x.value) is not None:
                half = _halves_of(float(x.value))[kind == "low"]
                if _bits(atom.value) == _bits(half):
                    yield env
            return
        t = pat[1] + "t"
        high = ("subtract", ("as", t, ("multiply", pat[1], ("lit", _VELTKAMP))), ("subtract", t, pat[1]))
        yield from _match(high if kind == "high" else ("subtract", pat[1], ("as", pat[1] + "h", high)), atom, env, defs)
        return
    eqn = defs.get(atom) if atom.__class__ is Var else None
    if eqn is None or eqn.prim.name != kind or len(eqn.inputs) != 2 or eqn.outputs[0].aval.dtype != _F64:
        return
    for ins in (eqn.inputs, eqn.inputs[::-1]) if kind in _COMMUTATIVE else (eqn.inputs,):
        envs = [env]
        for p, a in zip(pat[1:], ins):
            envs = [found for e in envs for found in _match(p, a, e, defs)]
        yield from envs


def _float64_operand(v) -> bool:
    if v.__class__ is Var:
        return v.aval.dtype == _F64
    return v.__class__ is Literal and isinstance(v.value, (float, np.floating)) and _bits(v.value) is not None


def _fma_operands(eqn: Equation, defs: dict) -> tuple | None:
    """(a, b, c) when ``eqn`` is the last addition of an exact fma emulation, else None."""
    if eqn.prim.name != "add" or eqn.outputs[0].aval.dtype != _F64 or len(eqn.inputs) != 2:
        return None
    for total, tail in (eqn.inputs, eqn.inputs[::-1]):
        for env in _match(_TOTAL, total, {}, defs):
            if not all(_float64_operand(env[k]) for k in "abc") or env["b"].__class__ is not Var:
                continue
            for rounding in (_TWO_SUM, _FAST_TWO_SUM):
                for _ in _match(("add", rounding, _ERROR), tail, env, defs):
                    return env["a"], env["b"], env["c"]
    return None


def contract_fmas(graph: Graph) -> Graph:
    """``graph`` with its exact fma emulations replaced by ``numba_fma`` (unchanged without FMA)."""
    if not hardware_fma():
        return graph
    defs = {o: e for e in graph.equations for o in e.outputs}
    equations, found = [], 0
    for eqn in graph.equations:
        operands = _fma_operands(eqn, defs) if eqn.prim.name == "add" else None
        if operands is None:
            equations.append(eqn)
            continue
        equations.append(Equation(fma_p, operands, {}, eqn.outputs))
        found += 1
    if not found:
        return graph
    return dce(Graph(graph.inputs, graph.constvars, graph.consts, equations, graph.outputs, device=graph.device))
