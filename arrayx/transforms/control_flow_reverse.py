"""Reverse mode of ``cond`` and ``scan`` under ``linearize``: each staged call splits into a primal
call, bound now (its residuals come out as extra outputs), and a linear call over those residuals,
recorded into the linear graph; the linear calls transpose into calls too.

So under ``jit(grad(f))`` a cond whose index is staged still runs only the taken branch (in the
forward and in the backward pass), and a scan is not unrolled: the forward scan stacks the
residuals of every step, the backward pass is one reverse scan of the transposed step.
"""
from __future__ import annotations

from arrayx.transforms.control_flow import _restage, cond_p, scan_p
from arrayx.core.tracers import bind_with
from arrayx.transforms.call_primitive import _transpose_graph, _zeros, partial_eval_graph
from arrayx.core.tracers import ShapeDtypeStruct, UndefinedPrimal, aval_of

__all__ = ["cond_partial_eval", "scan_partial_eval"]


# -- cond ---------------------------------------------------------------------------------------------


def cond_partial_eval(trace, index, rest, branches, mask):
    """The index is staged further out (``jit(grad)``): split every branch into its primal part,
    bound now as one cond (so only the taken branch runs), and its linear part, recorded as a
    second cond over the residuals, which transposes into a cond too."""
    known = tuple(not m for m in mask)
    splits = [partial_eval_graph(b, known) for b in branches]
    n_out = len(branches[0].outputs)
    out_known = tuple(all(s[2][j] for s in splits) for j in range(n_out))
    # per branch: residual slots = its residuals, then its outputs known here but not in every branch
    slots = []
    for kg, _, ok in splits:
        n_k = sum(ok)
        pass_through = [j for j in range(n_out) if ok[j] and not out_known[j]]
        k_index = {j: i for i, j in enumerate(jj for jj in range(n_out) if ok[jj])}
        slots.append((n_k, [kg.out_avals[n_k + r] for r in range(len(kg.outputs) - n_k)],
                      [(j, kg.out_avals[k_index[j]]) for j in pass_through], k_index))
    all_slot_avals = [a for _, res, passed, _ in slots for a in (*res, *(av for _, av in passed))]
    known_avals = [aval_of(x) for x, k in zip(rest, known) if k]
    unknown_avals = [aval_of(x) for x, k in zip(rest, known) if not k]
    known_graphs, unknown_graphs = [], []
    for b, ((kg, ug, ok), (n_k, res_avals, passed, k_index)) in enumerate(zip(splits, slots)):
        before = sum(len(r) + len(p) for _, r, p, _ in slots[:b])
        after = len(all_slot_avals) - before - len(res_avals) - len(passed)

        def known_fn(*xs, kg=kg, n_k=n_k, passed=passed, k_index=k_index, before=before, after=after):
            res = kg(*xs)
            outs = [res[k_index[j]] for j in range(n_out) if out_known[j]]
            mine = [*res[n_k:], *(res[k_index[j]] for j, _ in passed)]
            return [*outs, *(_zeros(a) for a in all_slot_avals[:before]), *mine,
                    *(_zeros(a) for a in all_slot_avals[len(all_slot_avals) - after:])]

        def unknown_fn(*xs, ug=ug, ok=ok, res_n=len(res_avals), passed=passed, before=before):
            own = xs[before:before + res_n]
            passed_vals = dict(zip((j for j, _ in passed), xs[before + res_n:before + res_n + len(passed)]))
            it = iter(ug(*own, *xs[len(all_slot_avals):]))
            return [passed_vals[j] if ok[j] else next(it) for j in range(n_out) if not out_known[j]]

        known_graphs.append(_restage(known_fn, known_avals, "cond primal"))
        unknown_graphs.append(_restage(unknown_fn, [*all_slot_avals, *unknown_avals], "cond linear"))
    computed = bind_with(trace.parent, cond_p, [index, *(x for x, k in zip(rest, known) if k)],
                         {"branches": tuple(known_graphs), "tangent_mask": None})
    n_kout = sum(out_known)
    recorded = trace.record(cond_p, (index, *computed[n_kout:], *(x for x, k in zip(rest, known) if not k)),
                            {"branches": tuple(unknown_graphs), "tangent_mask": None})
    it_k, it_u = iter(computed[:n_kout]), iter(recorded)
    return tuple(next(it_k) if k else next(it_u) for k in out_known)


def _cond_transpose(cts, index, *args, branches, tangent_mask):
    linear = tuple(a.__class__ is UndefinedPrimal for a in args)
    has_ct = tuple(c is not None for c in cts)
    graphs = tuple(_transpose_graph(b, linear, has_ct) for b in branches)
    out = iter(cond_p.bind(index, *(a for a, lin in zip(args, linear) if not lin), *(c for c in cts if c is not None),
                           branches=graphs, tangent_mask=None))
    return [None, *(next(out) if lin else None for lin in linear)]




cond_p.transpose = _cond_transpose


# -- scan ---------------------------------------------------------------------------------------------


def _stacked(aval, length):
    return ShapeDtypeStruct._trusted((length, *aval.shape), aval.dtype, aval.weak_type)


def scan_partial_eval(trace, args, params):
    """Split a linearized scan (its jvp, primal operands known, tangents staged by ``trace``) into a
    primal scan computed now, whose ys include every step's residuals, and a linear scan recorded
    over the stacked residuals.  None if a known carry is computed from tangents (not a linearized scan)."""
    body, nc, k, length = params["body"], params["num_consts"], params["num_carry"], params["length"]
    known = tuple(not m for m in params["tangent_mask"])
    kg, ug, out_known = partial_eval_graph(body, known)
    ny = len(body.outputs) - k
    carry_known = known[nc:nc + k]
    if any(ck and not ok for ck, ok in zip(carry_known, out_known[:k])):
        return None  # a known carry computed from tangents: not a linearized scan
    passed = [j for j in range(k) if out_known[j] and not carry_known[j]]  # e.g. a tangent reset to zero
    n_kout = sum(out_known)
    k_index = {j: i for i, j in enumerate(j for j in range(k + ny) if out_known[j])}
    res_avals = kg.out_avals[n_kout:]
    x_avals = [ShapeDtypeStruct._trusted(tuple(a.shape[1:]), a.dtype) for a in map(aval_of, args[nc + k:])]
    in_avals = [*map(aval_of, args[:nc + k]), *x_avals]

    def primal_step(*xs):
        res = kg(*xs)
        return [*(res[k_index[j]] for j in range(k) if carry_known[j]),
                *(res[k_index[j]] for j in range(k, k + ny) if out_known[j]),
                *res[n_kout:], *(res[k_index[j]] for j in passed)]

    part = {"consts": (0, nc), "carry": (nc, nc + k), "xs": (nc + k, len(args))}

    def pick(name, want):
        lo, hi = part[name]
        return [i for i in range(lo, hi) if known[i] == want]

    primal_body = _restage(primal_step, [in_avals[i] for i in range(len(args)) if known[i]], "scan primal step")
    computed = bind_with(trace.parent, scan_p, [a for a, kn in zip(args, known) if kn], {
        **params, "body": primal_body, "num_consts": len(pick("consts", True)), "num_carry": len(pick("carry", True)),
        "tangent_mask": None})
    n_kc = len(pick("carry", True))
    n_ky = sum(out_known[k:])
    residuals = computed[n_kc + n_ky:]
    cu, cru, xu = pick("consts", False), pick("carry", False), pick("xs", False)
    n_res, n_pass = len(res_avals), len(passed)

    def linear_step(*zs):
        c, cr = zs[:len(cu)], zs[len(cu):len(cu) + len(cru)]
        rest = zs[len(cu) + len(cru):]
        res, pas, x = rest[:n_res], rest[n_res:n_res + n_pass], rest[n_res + n_pass:]
        outs = iter(ug(*res, *c, *cr, *x))
        passed_vals = dict(zip(passed, pas))
        carry = [passed_vals[j] if j in passed_vals else next(outs) for j in range(k) if not carry_known[j]]
        return [*carry, *(next(outs) for j in range(k, k + ny) if not out_known[j])]

    lin_avals = [*(in_avals[i] for i in (*cu, *cru)), *res_avals, *(in_avals[nc + j] for j in passed),
                 *(in_avals[i] for i in xu)]
    linear_body = _restage(linear_step, lin_avals, "scan linear step")
    recorded = trace.record(scan_p, (*(args[i] for i in (*cu, *cru)), *residuals, *(args[i] for i in xu)), {
        **params, "body": linear_body, "num_consts": len(cu), "num_carry": len(cru), "tangent_mask": None})
    known_out = iter([*computed[:n_kc + n_ky]])
    unknown_out = iter(recorded)
    carry_out = [next(known_out) if carry_known[j] else next(unknown_out) for j in range(k)]
    ys_out = [next(known_out) if out_known[j] else next(unknown_out) for j in range(k, k + ny)]
    return (*carry_out, *ys_out)


def _scan_transpose(cts, *args, body, num_consts, num_carry, length, reverse, unroll, tangent_mask):
    """A linear scan (every carry linear) transposed: one scan the other way over the transposed step,
    carrying the cotangents of the carry and the sums of the linear consts' cotangents."""
    nc, k = num_consts, num_carry
    undefined = tuple(a.__class__ is UndefinedPrimal for a in args)
    # the carry of a linear scan (made by scan_partial_eval) is all tangents: linear, even where its
    # initial value is a known zero (an input without a tangent)
    lin = (*undefined[:nc], *(True,) * k, *undefined[nc + k:])
    ny = len(body.outputs) - k
    out_avals = body.out_avals
    ct_carry = [_zeros(a) if c is None else c for c, a in zip(cts[:k], out_avals[:k])]
    ct_ys = [_zeros(_stacked(a, length)) if c is None else c for c, a in zip(cts[k:], out_avals[k:])]
    step_t = _transpose_graph(body, lin, (True,) * (k + ny))
    consts_n = [a for a, ln in zip(args[:nc], lin[:nc]) if not ln]
    xs_n = [a for a, ln in zip(args[nc + k:], lin[nc + k:]) if not ln]
    lc_avals = [a.aval for a, ln in zip(args[:nc], lin[:nc]) if ln]
    args = [UndefinedPrimal(aval_of(a)) if ln and a.__class__ is not UndefinedPrimal else a for a, ln in zip(args, lin)]
    n_n, n_lc, n_xn = len(consts_n), len(lc_avals), len(xs_n)

    def step(*zs):  # consts: non-linear consts | carry: (sums for linear consts, carry ct) | xs: (non-linear xs, ys ct)
        c_n, acc, cc = zs[:n_n], zs[n_n:n_n + n_lc], zs[n_n + n_lc:n_n + n_lc + k]
        x_n, cy = zs[n_n + n_lc + k:n_n + n_lc + k + n_xn], zs[n_n + n_lc + k + n_xn:]
        out = step_t(*c_n, *x_n, *cc, *cy)
        return [*(a + c for a, c in zip(acc, out[:n_lc])), *out[n_lc:n_lc + k], *out[n_lc + k:]]

    x_n_avals = [ShapeDtypeStruct._trusted(tuple(a.shape[1:]), a.dtype) for a in map(aval_of, xs_n)]
    step_avals = [*map(aval_of, consts_n), *lc_avals, *out_avals[:k], *x_n_avals, *out_avals[k:]]
    step_graph = _restage(step, step_avals, "transposed scan step")
    outs = scan_p.bind(*consts_n, *(_zeros(a) for a in lc_avals), *ct_carry, *xs_n, *ct_ys, body=step_graph,
                       num_consts=n_n, num_carry=n_lc + k, length=length, reverse=not reverse, unroll=unroll,
                       tangent_mask=None)
    it_c, it_carry, it_x = iter(outs[:n_lc]), iter(outs[n_lc:n_lc + k]), iter(outs[n_lc + k:])
    result = [next(it_c) if ln else None for ln in lin[:nc]]
    result += [next(it_carry) if undefined[nc + j] else None for j in range(k)]
    result += [next(it_x) if ln else None for ln in lin[nc + k:]]
    return result


scan_p.transpose = _scan_transpose
