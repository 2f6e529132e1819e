"""Collectives over a tuple of axis names (shard_map over a 2-D mesh, nested pmap/vmap), as JAX.

JAX numbers the members of a tuple of axes row-major in the tuple's order (the first name varies
slowest: over ("y", "x") of a (2, 4) mesh ("x", "y") member (i, j) is number ``j * 2 + i``):
``all_gather`` orders the blocks so, ``tiled=False`` adds ONE axis of the product of the sizes, and
``axis_index`` is that number.  ``psum``/``pmean``/``pmax``/``pmin`` reduce over every member of the
tuple (here of each member's block times 1 + its number).  Each case is checked against the values written out here, against the NumPy executor, and
against ``jax.lax`` under ``jax.shard_map`` (and ``jax.vmap`` with axis names for ``axis_index`` and
the reductions; JAX has neither nested ``pmap`` nor a multi-name ``all_gather`` under ``vmap``, where
the written-out values, the same as shard_map's, are the reference), in a subprocess with 8 host
devices where arrayx's jax executor runs too: eager and under jit, values, shapes and the gradient
through ``all_gather``.  The data are small integers in float32: every sum is exact in any order.
There the forms that are one jax program (JAX's references, arrayx's ``jit`` and its nested maps
lowered to ``jax.pmap``) take every case in one program, one output per case; arrayx's eager forms
(shard_map, vmap(vmap), the gradient) run each case on its own.

``local_device_count``: this process's devices (``jax.local_device_count()``) under many processes.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from arrayx.sharding import P, virtual_devices
from conformance import profile

from tests.sharding.conftest import jax_mesh_json, VIRTUAL  # noqa: F401  (and the vex fixture)

SIZES = {"x": 2, "y": 4}
TUPLES = [("x", "y"), ("y", "x")]
BLOCK = (2, 3)  # each member's block of the (16, 3) input, split over ("x", "y") along its rows

#: name -> (collective, names, tiled, axis)
CASES = {
    **{f"gather {''.join(n)} tiled={t} axis={a}": ("all_gather", n, t, a)  # untiled: new axis first, between, last
       for n in TUPLES for t in (True, False) for a in ((0, -1) if t else (0, 1, -1))},
    **{f"axis_index {''.join(n)}": ("axis_index", n, None, None) for n in TUPLES},
    **{f"{r} {''.join(n)}": (r, n, None, None) for r in ("psum", "pmean", "pmax", "pmin") for n in TUPLES},
}
ALL = list(CASES)
GATHERS = [k for k in ALL if CASES[k][0] == "all_gather"]


def _data() -> np.ndarray:
    n = 8 * BLOCK[0] * BLOCK[1]
    return ((np.arange(n) * 7) % 37 - 11).astype(np.float32).reshape(8 * BLOCK[0], BLOCK[1])


def _member_body(case):
    """The collective on one member's block ``b``; from ``lib`` (arrayx or jax.lax)."""
    kind, names, tiled, axis = CASES[case]

    def body(lib, b):
        if kind == "all_gather":
            return lib.all_gather(b, names, axis=axis, tiled=tiled)
        if kind == "axis_index":
            return lib.axis_index(names)
        weight = (1 + lib.axis_index(names)).astype(b.dtype)  # each member's own: the numbering matters
        return getattr(lib, kind)(b * weight, names)

    return body


# -- the values written out ------------------------------------------------------------------------------


def _number(names, i, j) -> int:
    """Member (i, j)'s number over ``names``, row-major in their order."""
    pos = 0
    for a in names:
        pos = pos * SIZES[a] + {"x": i, "y": j}[a]
    return pos


def _written_out(case) -> np.ndarray:
    """Each member's result (a leading axis of 8, members row-major over the mesh ("x", "y"))."""
    kind, names, tiled, axis = CASES[case]
    x = _data()
    blocks = [x[BLOCK[0] * m:BLOCK[0] * (m + 1)] for m in range(8)]  # member m = (m // 4, m % 4)
    members = [(m // 4, m % 4) for m in range(8)]
    if kind == "axis_index":
        return np.array([_number(names, i, j) for i, j in members], dtype=np.int32)
    if kind == "all_gather":
        order = sorted(range(8), key=lambda m: _number(names, *members[m]))
        parts = [blocks[m] for m in order]
        whole = np.concatenate(parts, axis=axis) if tiled else np.stack(parts, axis=axis)
        return np.stack([whole] * 8)
    stacked = np.stack([blocks[m] * (1 + _number(names, *members[m])) for m in range(8)])
    one = {"psum": stacked.sum(0), "pmean": stacked.sum(0) / 8, "pmax": stacked.max(0),
           "pmin": stacked.min(0)}[kind].astype(np.float32)
    return np.stack([one] * 8)


# -- arrayx --------------------------------------------------------------------------------------------------


def _mesh(ex):
    if ex == "jax":
        return ax.sharding.make_mesh((2, 4), ("x", "y"))
    return ax.sharding.make_mesh((2, 4), ("x", "y"), devices=virtual_devices(ex, 8))


def _shard_map(ex, case, jit=False):
    """Each member's result under arrayx's shard_map on ``ex`` (a leading axis of 8)."""
    body = _member_body(case)
    with ax.use_executor(ex):
        f = ax.shard_map(lambda b: body(ax, b)[None], mesh=_mesh(ex), in_specs=P(("x", "y")),
                         out_specs=P(("x", "y")))
        f = ax.jit(f) if jit else f
        return np.asarray(f(ax.asarray(_data())))


def _gather_grad(ex, case, jit=False):
    """The gradient of a weighted sum of every member's ``all_gather`` (member-dependent weights)."""
    _, names, tiled, axis = CASES[case]
    w = _grad_weights(case)
    with ax.use_executor(ex):
        def body(b):
            g = ax.all_gather(b, names, axis=axis, tiled=tiled)
            scale = ax.astype(1 + ax.axis_index("y"), b.dtype)
            return (ax.sum(g * ax.asarray(w)) * scale)[None]

        f = ax.shard_map(body, mesh=_mesh(ex), in_specs=P(("x", "y")), out_specs=P(("x", "y")))
        grad = ax.grad(lambda v: ax.sum(f(v)))
        return np.asarray((ax.jit(grad) if jit else grad)(ax.asarray(_data())))


def _grad_weights(case) -> np.ndarray:
    shape = _written_out(case).shape[1:]
    return (np.arange(int(np.prod(shape))) % 5 - 2).astype(np.float32).reshape(shape)


def _grad_written_out(case) -> np.ndarray:
    """Member m's block gets sum over members of (1 + y) times its slot of the weights: 20 times it."""
    kind, names, tiled, axis = CASES[case]
    w = _grad_weights(case)
    out = []
    for m in range(8):
        pos = _number(names, m // 4, m % 4)
        a = axis % w.ndim
        if tiled:
            slot = np.take(w, range(pos * BLOCK[a], (pos + 1) * BLOCK[a]), axis=a)
        else:
            slot = np.take(w, pos, axis=a)
        out.append(20 * slot)
    return np.concatenate(out).astype(np.float32)


@pytest.fixture
def eight(monkeypatch):
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")


@pytest.mark.parametrize("case", ALL)
def test_shard_map_values_and_shapes(vex, case, eight):
    want = _written_out(case)
    for jit in (False, True):
        got = _shard_map(vex, case, jit)
        assert got.shape == want.shape and got.dtype == want.dtype, (case, vex, jit, got.shape, got.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{case} on {vex}, jit={jit}")
    np.testing.assert_array_equal(got, _shard_map("numpy", case))


@pytest.mark.parametrize("case", GATHERS)
def test_gradient_through_a_tuple_gather(vex, case, eight):
    want = _grad_written_out(case)
    for jit in (False, True):
        np.testing.assert_array_equal(_gather_grad(vex, case, jit), want, err_msg=f"{case} on {vex}, jit={jit}")


# -- nested pmap / vmap with axis names ------------------------------------------------------------------------

NESTINGS = {
    "pmap(pmap)": lambda f: ax.pmap(ax.pmap(f, axis_name="y"), axis_name="x"),
    "pmap(vmap)": lambda f: ax.pmap(ax.vmap(f, axis_name="y"), axis_name="x"),
    "vmap(vmap)": lambda f: ax.vmap(ax.vmap(f, axis_name="y"), axis_name="x"),
    "jit(pmap(pmap))": lambda f: ax.jit(ax.pmap(ax.pmap(f, axis_name="y"), axis_name="x")),
}
#: the nestings that are one jax program on the jax executor (the child takes every case in one of each)
JAX_NESTINGS = ["pmap(pmap)", "pmap(vmap)", "jit(pmap(pmap))"]

# On the jax executor arrayx's eager forms compile programs per case (8 devices): in the ci profile its
# eager vmap(vmap) takes every other case (each kind over both orders of the names; every case still
# runs there in the three nestings above) and its gradient through all_gather takes eager and jit in
# turn along the gathers (each case once, each mode on tiled and untiled gathers over both orders);
# the deep profile (ARRAYX_TEST_PROFILE=deep) takes all of them.  The other executors take every cell.
_FULL = not profile.current().sampled
JAX_EAGER_NESTED = ALL if _FULL else GATHERS[::2] + [
    f"{kind} {['xy', 'yx'][k % 2]}" for k, kind in enumerate(("axis_index", "psum", "pmean", "pmax", "pmin"))]
JAX_GRAD_JIT = {c: (False, True) if _FULL else ((False,), (True,))[i % 2] for i, c in enumerate(GATHERS)}


def _nested(ex, case, nesting):
    """Each member's result under nested maps over ("x", "y") (2 x 4 members), as (8, ...)."""
    body = _member_body(case)
    with ax.use_executor(ex):
        x = ax.asarray(_data().reshape((2, 4) + BLOCK))
        out = np.asarray(NESTINGS[nesting](lambda b: body(ax, b))(x))
    return out.reshape((8,) + out.shape[2:])


@pytest.mark.parametrize("nesting", list(NESTINGS))
@pytest.mark.parametrize("case", ALL)
def test_nested_maps_with_axis_names(case, nesting):
    want = _written_out(case)
    for ex in ("numpy", "numba", "dask"):  # jax: the subprocess below (pmap needs 2 devices there)
        if not base.get(ex).available():
            continue
        got = _nested(ex, case, nesting)
        assert got.shape == want.shape and got.dtype == want.dtype, (case, nesting, ex, got.shape, got.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{case} under {nesting} on {ex}")


# -- against JAX (a subprocess with 8 host devices) --------------------------------------------------------


def _every_case(lib, b):
    """Every case's collective on one member's block, a tuple in the order of ``ALL``."""
    return tuple(_member_body(case)(lib, b) for case in ALL)


def _jax_program_of_every_case():
    """In the child below: each case's result under jax.shard_map, arrayx's ``jit(shard_map)`` on the
    jax executor and its jax programs of nested maps (JAX_NESTINGS), from ONE program each whose
    outputs are the cases (each output reads only its own collective: the same values as a program
    per case, a fifth of the compile time); arrayx's eager forms stay one call per case."""
    import jax

    jm = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    spec = jax.sharding.PartitionSpec(("x", "y"))
    x = _data()
    ref = jax.jit(jax.shard_map(lambda b: tuple(r[None] for r in _every_case(jax.lax, b)), mesh=jm,
                                in_specs=spec, out_specs=spec, check_vma=False))(x)
    with ax.use_executor("jax"):
        f = ax.shard_map(lambda b: tuple(r[None] for r in _every_case(ax, b)), mesh=_mesh("jax"),
                         in_specs=P(("x", "y")), out_specs=P(("x", "y")))
        jitted = ax.jit(f)(ax.asarray(x))
        blocks = ax.asarray(x.reshape((2, 4) + BLOCK))
        nested = {n: NESTINGS[n](lambda b: _every_case(ax, b))(blocks) for n in JAX_NESTINGS}
    out = {}
    for i, case in enumerate(ALL):
        out[case] = {"ref": np.asarray(ref[i]), "jit": np.asarray(jitted[i]),
                     "nested": {n: np.asarray(v[i]).reshape((8,) + tuple(v[i].shape[2:])) for n, v in nested.items()}}
    return out


@pytest.fixture(scope="module")
def jax_values():
    return jax_mesh_json("""
        from tests.sharding import test_tuple_axes as T
        out = {"counts": [ax.device_count("jax"), ax.local_device_count("jax"), jax.device_count(),
                          jax.local_device_count()]}
        x = T._data()
        programs = T._jax_program_of_every_case()
        reductions = [c for c in T.ALL if T.CASES[c][0] != "all_gather"]  # jax.vmap takes these over two names
        vmapped = jax.jit(jax.vmap(jax.vmap(lambda b: tuple(T._member_body(c)(jax.lax, b) for c in reductions),
                                            axis_name="y"), axis_name="x"))(x.reshape((2, 4) + T.BLOCK))  # one program
        gathers = [c for c in T.ALL if T.CASES[c][0] == "all_gather"]

        def gather_loss(case):
            _, names, tiled, axis = T.CASES[case]
            w = T._grad_weights(case)

            def member(b):
                g = jax.lax.all_gather(b, names, axis=axis, tiled=tiled)
                return ((g * w).sum() * (1 + jax.lax.axis_index("y")).astype(b.dtype))[None]

            f = jax.shard_map(member, mesh=jm, in_specs=JP(("x", "y")), out_specs=JP(("x", "y")), check_vma=False)
            return lambda v: f(v).sum()

        grad_refs = jax.jit(lambda v: tuple(jax.grad(gather_loss(c))(v) for c in gathers))(x)  # one program
        for case in T.ALL:
            p = programs[case]
            row = {"ref": p["ref"].tolist(), "dtype": str(p["ref"].dtype), "eager": T._shard_map("jax", case).tolist(),
                   "jit": p["jit"].tolist()}
            if case in reductions:
                v = np.asarray(vmapped[reductions.index(case)])
                row["vmap"] = v.reshape((8,) + v.shape[2:]).tolist()
            else:
                row["grad_ref"] = np.asarray(grad_refs[gathers.index(case)]).tolist()
                row["grad"] = [T._gather_grad("jax", case, j).tolist() for j in T.JAX_GRAD_JIT[case]]
            row["nested"] = {n: (p["nested"][n] if n in p["nested"] else T._nested("jax", case, n)).tolist()
                             for n in T.NESTINGS if n in T.JAX_NESTINGS or case in T.JAX_EAGER_NESTED}
            out[case] = row
        print(json.dumps(out))
    """)


@pytest.mark.parametrize("case", ALL)
def test_as_jax_on_every_executor(jax_values, case, eight):
    row = jax_values[case]
    ref = np.asarray(row["ref"], dtype=row["dtype"])
    np.testing.assert_array_equal(ref, _written_out(case))  # the rule written out here is JAX's
    assert ref.dtype == _written_out(case).dtype
    for how in ("eager", "jit"):  # arrayx on jax (jax.shard_map, jax.lax's collectives)
        np.testing.assert_array_equal(np.asarray(row[how], dtype=ref.dtype), ref, err_msg=f"{case} jax {how}")
    for nesting, got in row["nested"].items():
        np.testing.assert_array_equal(np.asarray(got, dtype=ref.dtype), ref, err_msg=f"{case} jax {nesting}")
    if "vmap" in row:
        np.testing.assert_array_equal(np.asarray(row["vmap"], dtype=ref.dtype), ref, err_msg=f"{case} jax.vmap")
    else:
        grad_ref = np.asarray(row["grad_ref"], dtype=np.float32)
        np.testing.assert_array_equal(grad_ref, _grad_written_out(case))
        for got in row["grad"]:
            np.testing.assert_array_equal(np.asarray(got, dtype=np.float32), grad_ref, err_msg=f"{case} jax grad")
    for ex in VIRTUAL:
        if base.get(ex).available():
            np.testing.assert_array_equal(_shard_map(ex, case), ref, err_msg=f"{case} on {ex}")


def test_device_counts_in_one_process(jax_values):
    count, local, jax_count, jax_local = jax_values["counts"]
    assert (count, local) == (jax_count, jax_local) == (8, 8)
    for ex in ("numpy", "numba", "dask"):
        if base.get(ex).available():
            assert ax.local_device_count(ex) == ax.device_count(ex) == 1  # members run in turn


# -- errors ----------------------------------------------------------------------------------------------


def test_errors_name_the_function(eight):
    mesh = _mesh("numpy")
    x = ax.asarray(_data())

    def run(body):
        return ax.shard_map(lambda b: body(b)[None], mesh=mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")))(x)

    for fn in (lambda b: ax.all_gather(b, ("x", "x")), lambda b: ax.psum(b, ("y", "y")),
               lambda b: ax.axis_index(("x", "x"))):
        with pytest.raises(ValueError, match=r"names an axis twice"):
            run(fn)
    with pytest.raises(ValueError, match=r"all_gather: axis 3 is out of range for a result of 3 dimension\(s\)"):
        run(lambda b: ax.all_gather(b, ("x", "y"), axis=3))
    with pytest.raises(NameError, match=r"axis_index: unbound axis name 'z'"):
        run(lambda b: ax.axis_index(("x", "z")))


# -- many processes (slow) ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_local_device_count_under_two_processes(tmp_path):
    pytest.importorskip("jax")
    from tests.sharding.test_multiprocess import _env, _localhost_refused, _results

    refused = _localhost_refused()
    if refused:
        pytest.skip(refused)
    program = tmp_path / "counts.py"
    program.write_text(textwrap.dedent("""
        import json
        import arrayx as ax
        ax.distributed.initialize()
        print("RESULT " + json.dumps({"process": ax.sharding.process_index(), "count": ax.device_count("jax"),
                                      "local": ax.local_device_count("jax"),
                                      "sharding": ax.sharding.local_device_count("jax")}), flush=True)
    """))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-m", "arrayx.sharding.launch", "-n", "2", "--devices-per-process", "2",
                           "--timeout", "200", str(program)], capture_output=True, text=True, cwd=root, env=_env(),
                          timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    results = _results(proc.stdout)
    assert [(r["process"], r["count"], r["local"], r["sharding"]) for r in results] == [(0, 4, 2, 2), (1, 4, 2, 2)]
