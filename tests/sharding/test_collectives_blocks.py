"""ppermute and psum_scatter inside shard_map move only the blocks each member needs (issue 42).

Values: bit for bit those of the earlier formulation over all_gather/psum (kept as
``_collectives.ppermute_gathered``/``psum_scatter_summed``), of the NumPy executor, and of
``jax.lax.ppermute``/``psum_scatter`` under ``jax.shard_map`` (a subprocess with 8 forced host
devices, where arrayx's jax executor calls them itself), for cycles, partial permutations (zeros
where nothing arrives), scatter dimensions, tiled or not, axis tuples; eager, under jit, grad and
vmap.  Traffic: the bytes each member receives (``record_transfers``) and, on dask, the input
blocks each result block's task graph reads.  The data are small integers in float32, so every
sum is exact and every order of addition gives the same bits."""
from __future__ import annotations


import numpy as np
import pytest

import arrayx as ax
from arrayx.core import executor as base
from arrayx.sharding import P, _collectives as C, virtual_devices

from tests.sharding.conftest import jax_mesh_json, VIRTUAL  # noqa: F401  (and the vex fixture)

#: name -> (axis_name, perm); block shape (2, 3) of a (4, 12) array over a (2, 4) mesh ("x", "y")
PERMS = {
    "cycle_y": ("y", [(i, (i + 1) % 4) for i in range(4)]),
    "partial_y": ("y", [(0, 2), (3, 1)]),  # members 0 and 3 receive nothing: zeros
    "swap_x": ("x", [(0, 1), (1, 0)]),
    "tuple_xy": (("x", "y"), [(0, 5), (5, 2), (3, 0)]),
    "tuple_yx_cycle": (("y", "x"), [(i, (i + 3) % 8) for i in range(8)]),  # numbered in mesh order
    "identity_x": ("x", [(0, 0), (1, 1)]),
}
#: name -> (axis_name, scatter_dimension, tiled, block shape)
SCATTERS = {
    "y_d1_tiled": ("y", 1, True, (2, 8)),
    "y_d1_untiled": ("y", 1, False, (2, 4)),
    "x_d0_untiled": ("x", 0, False, (2, 3)),
    "x_dm1_tiled": ("x", -1, True, (3, 4)),
    "xy_d1_tiled": (("x", "y"), 1, True, (2, 16)),
    "xy_d0_untiled": (("x", "y"), 0, False, (8, 2)),
    "yx_d1_tiled": (("y", "x"), 1, True, (1, 8)),
    "yx_d0_untiled": (("y", "x"), 0, False, (8, 1)),
}
CASES = [("ppermute", k) for k in PERMS] + [("psum_scatter", k) for k in SCATTERS]


def _data(block):
    shape = (2 * block[0], 4 * block[1])
    return (np.arange(np.prod(shape)) % 97 - 40).astype(np.float32).reshape(shape)


def _mesh(ex):
    return ax.sharding.make_mesh((2, 4), ("x", "y"), devices=virtual_devices(ex, 8))


def _mesh_order(names):
    names = names if isinstance(names, tuple) else (names,)
    return tuple(a for a in ("x", "y") if a in names)


def _body(kind, name, how="new"):
    """The member function of a case (``how``: "new", or "old" for the earlier formulation); the
    result gets two leading dimensions of 1, laid out along ("x", "y")."""
    if kind == "ppermute":
        axis, perm = PERMS[name]
        if how == "old":
            return lambda b: C.ppermute_gathered(b, _mesh_order(axis), tuple(map(tuple, perm)))[None, None]
        return lambda b: ax.lax.ppermute(b, axis, perm)[None, None]
    axis, d, tiled, _ = SCATTERS[name]
    if how == "old":
        return lambda b: C.psum_scatter_summed(b, axis, d % b.ndim, tiled)[None, None]
    return lambda b: ax.lax.psum_scatter(b, axis, scatter_dimension=d, tiled=tiled)[None, None]


def _input(kind, name):
    return _data((2, 3) if kind == "ppermute" else SCATTERS[name][3])


def _run(ex, kind, name, how="new", jit=False):
    with ax.use_executor(ex):
        f = ax.shard_map(_body(kind, name, how), mesh=_mesh(ex), in_specs=P("x", "y"), out_specs=P("x", "y"))
        f = ax.jit(f) if jit else f
        return np.asarray(f(ax.asarray(_input(kind, name))))


def _by_hand(kind, name):
    """The expected blocks, written out over the (2, 4) grid of blocks."""
    x = _input(kind, name)
    h, w = x.shape[0] // 2, x.shape[1] // 4
    blk = {(i, j): x[h * i:h * i + h, w * j:w * j + w] for i in range(2) for j in range(4)}
    out = {}
    if kind == "ppermute":
        axis, perm = PERMS[name]
        names = _mesh_order(axis)
        sizes = [{"x": 2, "y": 4}[a] for a in names]

        def lin(c):
            pos = 0
            for a, n in zip(names, sizes):
                pos = pos * n + c["xy".index(a)]
            return pos

        src = {d: s for s, d in perm}
        for c in blk:
            s = src.get(lin(c))
            match = [k for k in blk if lin(k) == s and all(k["xy".index(a)] == c["xy".index(a)]
                                                             for a in "xy" if a not in names)]
            out[c] = blk[match[0]] if s is not None else np.zeros_like(blk[c])
        return out
    axis, d, tiled, _ = SCATTERS[name]
    names = axis if isinstance(axis, tuple) else (axis,)
    n = int(np.prod([{"x": 2, "y": 4}[a] for a in names]))
    for c in blk:
        group = [k for k in blk if all(k["xy".index(a)] == c["xy".index(a)] for a in "xy" if a not in names)]
        total = sum(blk[k] for k in group)
        pos = 0
        for a in names:
            pos = pos * {"x": 2, "y": 4}[a] + c["xy".index(a)]
        d = d % 2
        if tiled:
            k = total.shape[d] // n
            out[c] = np.take(total, range(pos * k, pos * k + k), axis=d)
        else:
            out[c] = np.take(total, pos, axis=d)
    return out


@pytest.fixture
def eight(monkeypatch):
    monkeypatch.setenv("ARRAYX_VIRTUAL_DEVICES", "8")


@pytest.mark.parametrize("kind,name", CASES)
def test_values_as_before_as_numpy_and_as_written_out(vex, kind, name, eight):
    got = _run(vex, kind, name)
    for c, want in _by_hand(kind, name).items():
        np.testing.assert_array_equal(got[c], want, err_msg=f"{kind} {name} block {c} on {vex}")
    np.testing.assert_array_equal(got, _run("numpy", kind, name))
    np.testing.assert_array_equal(got, _run(vex, kind, name, jit=True))  # nested vmaps: the named rules
    if not (kind == "ppermute" and isinstance(PERMS[name][0], tuple)):  # the earlier one had no tuples
        np.testing.assert_array_equal(got, _run(vex, kind, name, "old"))


def test_grad_is_the_inverse_permutation_and_the_gather(vex, eight):
    mesh = _mesh(vex)
    x = ax.asarray(_data((2, 8)))
    w = ax.asarray(np.arange(1, 1 + 128, dtype=np.float32).reshape(4, 32) % 7)

    def loss(how):
        def body(b, c):
            if how == "new":
                p = ax.lax.ppermute(b, "y", [(0, 1), (1, 3), (3, 0)])
                s = ax.lax.psum_scatter(b * b, "x", scatter_dimension=1, tiled=True)
            else:
                p = C.ppermute_gathered(b, ("y",), ((0, 1), (1, 3), (3, 0)))
                s = C.psum_scatter_summed(b * b, ("x",), 1, True)
            return ax.psum(ax.sum(p * c) + ax.sum(s * c[:, :4]), ("x", "y"))

        f = ax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("x", "y")), out_specs=P())
        return lambda v: f(v, w)

    with ax.use_executor(vex):
        got = np.asarray(ax.grad(loss("new"))(x))
        np.testing.assert_array_equal(got, np.asarray(ax.grad(loss("old"))(x)))
        np.testing.assert_array_equal(got, np.asarray(ax.jit(ax.grad(loss("new")))(x)))


def test_under_vmap_with_axis_names():
    x = ax.asarray(np.arange(24.0, dtype=np.float32).reshape(2, 4, 3))
    perm = [(0, 5), (5, 2), (3, 0), (7, 7)]

    def inner(v):
        return ax.lax.ppermute(v, ("i", "j"), perm), ax.lax.psum_scatter(v, ("i", "j"), tiled=False)

    f = ax.vmap(ax.vmap(lambda v: inner(ax.broadcast_to(v[0:1], (8,)) + v[0]), axis_name="j"), axis_name="i")
    p, s = f(x)
    flat = np.asarray(x).reshape(8, 3)[:, 0]
    want_p = np.zeros((8, 8), np.float32)
    for src, dst in perm:
        want_p[dst] = 2 * flat[src]
    np.testing.assert_array_equal(np.asarray(p).reshape(8, 8), want_p)
    np.testing.assert_array_equal(np.asarray(s).reshape(8), 2 * flat.sum() * np.ones(8, np.float32))
    # inside pmap: the primitives too (tests/transforms/test_pmap_blocks.py), the same values
    g = ax.pmap(lambda v: ax.lax.ppermute(v, "i", [(0, 1), (1, 0)]), axis_name="i")
    np.testing.assert_array_equal(np.asarray(g(ax.asarray(np.arange(6.0).reshape(2, 3)))),
                                  np.arange(6.0).reshape(2, 3)[::-1])
    h = ax.pmap(lambda v: ax.lax.psum_scatter(v, "i", scatter_dimension=0, tiled=True), axis_name="i")
    v = np.arange(16.0).reshape(2, 8)
    np.testing.assert_array_equal(np.asarray(h(ax.asarray(v))), (v[0] + v[1]).reshape(2, 4))


def test_errors_name_the_function_and_the_fix(eight):
    mesh = _mesh("numpy")
    x = ax.asarray(_data((2, 3)))

    def run(body):
        return ax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))(x)

    with pytest.raises(ValueError, match=r"ppermute: pair \(0, 4\) is out of range for axis 'y' of size 4"):
        run(lambda b: ax.lax.ppermute(b, "y", [(0, 4)]))
    with pytest.raises(ValueError, match="ppermute: .* sends from or to a member twice"):
        run(lambda b: ax.lax.ppermute(b, "y", [(0, 1), (2, 1)]))
    with pytest.raises(ValueError, match=r"psum_scatter: dimension 1 of x \(shape \(2, 3\)\) has size 3, which the "
                                         r"size 4 of axis 'y' does not divide; with tiled=True"):
        run(lambda b: ax.lax.psum_scatter(b, "y", scatter_dimension=1, tiled=True))
    with pytest.raises(ValueError, match=r"psum_scatter: dimension 0 .* has size 2 but axis \('x', 'y'\) has 8 "
                                         r"members; with tiled=False"):
        run(lambda b: ax.lax.psum_scatter(b, ("x", "y")))
    with pytest.raises(ValueError, match="psum_scatter: scatter_dimension 2 is out of range"):
        run(lambda b: ax.lax.psum_scatter(b, "x", scatter_dimension=2))
    with pytest.raises(ValueError, match="ppermute: axis_name .* names an axis twice"):
        run(lambda b: ax.lax.ppermute(b, ("x", "x"), []))


# -- traffic -------------------------------------------------------------------------------------------------


def _transfers(ex, kind, name, how):
    with C.record_transfers() as t:
        _run(ex, kind, name, how)
    return t


def test_each_member_receives_only_what_it_needs(vex, eight):
    block = 2 * 3 * 4  # bytes of one (2, 3) float32 block
    # a cycle over 'y' (2 groups of 4): one block per member; all_gather gave each the 3 others
    assert _transfers(vex, "ppermute", "cycle_y", "new").bytes == 8 * block
    assert _transfers(vex, "ppermute", "cycle_y", "old").bytes == 8 * 3 * block
    new = _transfers(vex, "ppermute", "partial_y", "new")
    assert new.bytes == 4 * block and sorted(new.received()) == [1, 2, 5, 6]  # only the destinations
    assert _transfers(vex, "ppermute", "identity_x", "new").bytes == 0
    # psum_scatter over ('x', 'y') tiled, blocks (2, 16): over 'x' each member receives half of the
    # other's block, then over 'y' a quarter of that from each of 3: 7/8 of a block, against the
    # 7 whole blocks the psum over ('x', 'y') (one reduction over the 8 members) made each receive
    b = 2 * 16 * 4
    new = _transfers(vex, "psum_scatter", "xy_d1_tiled", "new")
    assert new.by_collective() == {"psum_scatter": 8 * (b // 2 + 3 * b // 8)}
    assert _transfers(vex, "psum_scatter", "xy_d1_tiled", "old").by_collective() == {"psum": 8 * 7 * b}
    b = 2 * 8 * 4  # over 'y' alone, blocks (2, 8): a quarter from each of 3 members, against 3 blocks
    assert _transfers(vex, "psum_scatter", "y_d1_tiled", "new").bytes == 8 * 3 * (b // 4)
    assert _transfers(vex, "psum_scatter", "y_d1_tiled", "old").bytes == 8 * 3 * b


def _input_blocks_read(arr, x) -> dict:
    """{output chunk key: the chunk positions of ``x`` its task graph reads} (a delayed argument's
    graph holds renamed copies of the chunks, ``name-<token>``: the same positions)."""
    from dask.core import get_dependencies

    graph = dict(arr.__dask_graph__())
    inputs = {k for k in graph if isinstance(k, tuple) and isinstance(k[0], str)
              and (k[0] == x.name or k[0].startswith(x.name + "-"))}
    out = {}
    for key in _flat_keys(arr):
        seen, todo = set(), [key]
        while todo:
            k = todo.pop()
            for dep in get_dependencies(graph, k):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        out[key] = {k[1:] for k in seen & inputs}
    return out


def _flat_keys(arr):
    keys = arr.__dask_keys__()
    while keys and isinstance(keys[0], list):
        keys = [k for sub in keys for k in sub]
    return keys


@pytest.mark.skipif(not base.get("dask").available(), reason="dask unavailable")
def test_dask_result_blocks_read_only_their_sources(eight):
    with ax.use_executor("dask"):
        mesh = _mesh("dask")
        x = ax.device_put(ax.asarray(_data((2, 3))), ax.sharding.NamedSharding(mesh, P("x", "y")))
        xs = x._buf
        assert xs.numblocks == (2, 4)
        # result block (i, j) reads input block (i, j - 1) alone (the earlier formulation's task read
        # the all_gather of its group: 4 blocks)
        f = ax.shard_map(_body("ppermute", "cycle_y"), mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
        out = f(x)._buf
        reads = _input_blocks_read(out, xs)
        assert len(reads) == 8
        for key, r in reads.items():
            assert r == {(key[1], (key[2] - 1) % 4)}, (key, r)
        # a partial permutation: the members nothing is sent to read no input at all (zeros)
        f = ax.shard_map(_body("ppermute", "partial_y"), mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
        reads = _input_blocks_read(f(x)._buf, xs)
        assert {key[1:3]: r for key, r in reads.items() if key[1] == 0} == {
            (0, 0): set(), (0, 1): {(0, 3)}, (0, 2): {(0, 0)}, (0, 3): set()}
        # psum_scatter: each result block's task adds 2 parts of half a block (no cluster: all the
        # sources on one "worker", one cutting task per destination)
        f = ax.shard_map(_body("psum_scatter", "x_dm1_tiled"), mesh=mesh, in_specs=P("x", "y"),
                         out_specs=P("x", "y"))
        out = f(ax.asarray(_data((3, 4))))._buf
        graph = dict(out.__dask_graph__())
        sums = [k for k in graph if isinstance(k, str) and "-sum-" in k]
        cuts = [k for k in graph if isinstance(k, str) and "-parts-" in k]
        assert len(sums) == 8 and len(cuts) == 8  # 4 groups of 2 members
        import dask

        for k in cuts:
            assert [p.shape for p in dask.get(graph, k)] == [(3, 2), (3, 2)]  # half a (3, 4) block each


# -- against jax.lax under jax.shard_map (a subprocess with 8 host devices) ------------------------------------


@pytest.fixture(scope="module")
def jax_values():
    return jax_mesh_json("""
        from tests.sharding import test_collectives_blocks as T

        def lax_body(kind, name):
            if kind == "ppermute":
                axis, perm = T.PERMS[name]
                return lambda b: jax.lax.ppermute(b, axis, perm)[None, None]
            axis, d, tiled, _ = T.SCATTERS[name]
            return lambda b: jax.lax.psum_scatter(b, axis, scatter_dimension=d % b.ndim, tiled=tiled)[None, None]

        # jax.lax's and arrayx's jit: one program each, every case's shard_map one of its outputs (each
        # output reads its own input only: the values of a program per case); arrayx eager: each case
        inputs = [T._input(kind, name) for kind, name in T.CASES]
        refs = jax.jit(lambda xs: tuple(
            jax.shard_map(lax_body(*case), mesh=jm, in_specs=JP("x", "y"), out_specs=JP("x", "y"))(x)
            for case, x in zip(T.CASES, xs)))(inputs)
        with ax.use_executor("jax"):
            mesh = ax.sharding.make_mesh((2, 4), ("x", "y"))
            fs = [ax.shard_map(T._body(kind, name), mesh=mesh, in_specs=ax.sharding.P("x", "y"),
                               out_specs=ax.sharding.P("x", "y")) for kind, name in T.CASES]
            xs = [ax.asarray(x) for x in inputs]
            jitted = ax.jit(lambda *a: tuple(f(x) for f, x in zip(fs, a)))(*xs)
            eager = [f(x) for f, x in zip(fs, xs)]
        out = {f"{kind} {name}": [np.asarray(v).tolist() for v in (refs[i], eager[i], jitted[i])]
               for i, (kind, name) in enumerate(T.CASES)}
        print(json.dumps(out))
    """)


@pytest.mark.parametrize("kind,name", CASES)
def test_jax_lax_values_on_every_executor(jax_values, kind, name, eight):
    ref, eager, jitted = (np.asarray(v, dtype=np.float32) for v in jax_values[f"{kind} {name}"])
    np.testing.assert_array_equal(eager, ref)  # arrayx on jax: jax.lax's own collective
    np.testing.assert_array_equal(jitted, ref)
    for ex in VIRTUAL:
        if base.get(ex).available():
            np.testing.assert_array_equal(_run(ex, kind, name), ref, err_msg=f"{kind} {name} on {ex}")
