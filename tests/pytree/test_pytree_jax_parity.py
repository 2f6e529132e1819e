"""arrayx.pytree against jax.tree_util: same leaves, order, treedef text, key paths, round trips.

Skipped (with a reason) when JAX is not installed.
"""
from __future__ import annotations

import collections
import dataclasses
import operator
import pickle

import pytest

jax = pytest.importorskip("jax", reason="JAX is needed only for the parity comparison")
jtu = pytest.importorskip("jax.tree_util")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import arrayx.pytree as pt  # noqa: E402

# ---------------------------------------------------------------------------------------
# node types registered identically in both libraries

Point = collections.namedtuple("Point", ["x", "y"])
Empty = collections.namedtuple("Empty", [])


class Pair:
    """Plain custom node (children without keys), metadata is a tuple."""

    def __init__(self, a, b, tag=("t", 1)):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.b, self.tag) == (other.a, other.b, other.tag)

    def __repr__(self):
        return f"Pair({self.a!r}, {self.b!r}, {self.tag!r})"


def _pair_flatten(p):
    return (p.a, p.b), p.tag


def _pair_unflatten(tag, children):
    return Pair(*children, tag=tag)


pt.register_node(Pair, _pair_flatten, _pair_unflatten)
jtu.register_pytree_node(Pair, _pair_flatten, _pair_unflatten)


class Named:
    """Custom node with keys: GetAttrKey for both children."""

    def __init__(self, first, second):
        self.first, self.second = first, second

    def __eq__(self, other):
        return type(other) is Named and (self.first, self.second) == (other.first, other.second)

    def __repr__(self):
        return f"Named({self.first!r}, {self.second!r})"


pt.register_node_with_keys(
    Named,
    lambda n: (((pt.GetAttrKey("first"), n.first), (pt.GetAttrKey("second"), n.second)), None),
    lambda _, ch: Named(*ch))
jtu.register_pytree_with_keys(
    Named,
    lambda n: (((jtu.GetAttrKey("first"), n.first), (jtu.GetAttrKey("second"), n.second)), None),
    lambda _, ch: Named(*ch))


@dataclasses.dataclass
class Params:
    w: object
    b: object
    kind: str = dataclasses.field(default="dense", metadata={"static": True})


pt.register_dataclass(Params)
jtu.register_dataclass(Params)


class Box:
    """Registered through the ``tree_flatten``/``tree_unflatten`` class protocol."""

    def __init__(self, items, label):
        self.items, self.label = items, label

    def tree_flatten(self):
        return tuple(self.items), self.label

    @classmethod
    def tree_unflatten(cls, label, children):
        return cls(list(children), label)

    def __eq__(self, other):
        return type(other) is Box and (self.items, self.label) == (other.items, other.label)

    def __repr__(self):
        return f"Box({self.items!r}, {self.label!r})"


pt.register_node_class(Box)
jtu.register_pytree_node_class(Box)


class Flag(str):
    """Static node: no children, the value lives in the treedef."""


pt.register_static(Flag)
jtu.register_static(Flag)

# ---------------------------------------------------------------------------------------
# a fixed zoo of trees

ZOO = [
    0,
    "leaf",
    None,
    (),
    [],
    {},
    [[]],
    ((),),
    {"a": {}},
    [None, None],
    (None,),
    {"a": None, "b": [None, 1]},
    [1, [2, [3, [4, [5]]]]],
    {"b": 1, "a": 2, "c": {"z": 3, "y": (4, 5)}},
    {3: "x", 1: "y", 2: [None]},
    {(1, 2): "t", (0, 5): "u"},
    {1.5: 1, -2: 2},
    collections.OrderedDict([("z", 1), ("a", 2), ("m", [3])]),
    collections.OrderedDict(),
    collections.defaultdict(list, {"z": 1, "a": (2, 3)}),
    collections.defaultdict(int),
    Point(1, (2, None)),
    Point(Point(1, 2), [3]),
    Empty(),
    Pair(1, [2, 3]),
    Pair(None, Pair(1, 2, tag=None), tag="outer"),
    Named(1, {"k": [2]}),
    Params(w=[1, 2], b=3),
    Params(w=None, b=(), kind="conv"),
    Box([1, (2,)], "lbl"),
    Box([], "empty"),
    Flag("static"),
    [Flag("a"), 1, {"f": Flag("b")}],
    {"everything": [Point(1, 2), Pair(3, 4), Named(5, 6), Params(7, 8), Box([9], "x"),
                    collections.OrderedDict(b=10, a=11), collections.defaultdict(set, q=12),
                    None, (), Flag("s")]},
]


def _ids(tree):
    return repr(tree)[:40]


def _check_parity(tree, is_leaf=None):
    leaves, treedef = pt.flatten(tree, is_leaf=is_leaf)
    j_leaves, j_treedef = jtu.tree_flatten(tree, is_leaf=is_leaf)
    assert len(leaves) == len(j_leaves)
    assert all(a is b for a, b in zip(leaves, j_leaves)), (leaves, j_leaves)
    assert repr(treedef) == repr(j_treedef)
    assert treedef.num_leaves == j_treedef.num_leaves
    assert treedef.num_nodes == j_treedef.num_nodes
    assert [repr(c) for c in treedef.children()] == [repr(c) for c in j_treedef.children()]

    rebuilt = pt.unflatten(treedef, leaves)
    j_rebuilt = jtu.tree_unflatten(j_treedef, j_leaves)
    assert rebuilt == j_rebuilt
    assert pt.structure(rebuilt, is_leaf=is_leaf) == treedef
    assert repr(pt.structure(rebuilt, is_leaf=is_leaf)) == repr(jtu.tree_structure(j_rebuilt, is_leaf=is_leaf))

    paths = pt.leaves_with_path(tree, is_leaf=is_leaf)
    j_paths = jtu.tree_leaves_with_path(tree, is_leaf=is_leaf)
    assert [pt.keystr(p) for p, _ in paths] == [jtu.keystr(p) for p, _ in j_paths]
    assert [pt.keystr(p, simple=True, separator="/") for p, _ in paths] == [
        jtu.keystr(p, simple=True, separator="/") for p, _ in j_paths]
    assert [tuple(map(repr, p)) for p, _ in paths] == [tuple(map(repr, p)) for p, _ in j_paths]
    assert all(a is b for (_, a), (_, b) in zip(paths, j_paths))

    tagged = pt.map(lambda x: ("seen", x), tree, is_leaf=is_leaf)
    j_tagged = jtu.tree_map(lambda x: ("seen", x), tree, is_leaf=is_leaf)
    assert tagged == j_tagged
    with_path = pt.map_with_path(lambda p, x: pt.keystr(p), tree, is_leaf=is_leaf)
    j_with_path = jtu.tree_map_with_path(lambda p, x: jtu.keystr(p), tree, is_leaf=is_leaf)
    assert with_path == j_with_path

    assert pickle.loads(pickle.dumps(treedef)) == treedef


@pytest.mark.parametrize("tree", ZOO, ids=_ids)
def test_zoo_parity(tree):
    _check_parity(tree)


@pytest.mark.parametrize("tree", ZOO, ids=_ids)
def test_zoo_parity_with_none_as_leaf(tree):
    _check_parity(tree, is_leaf=lambda x: x is None)


def test_treedef_equality_matches_jax():
    trees = [t for t in ZOO if not isinstance(t, str)] + [
        {"a": 1, "b": 2}, {"b": 1, "a": 2}, [1, 2], (1, 2), Point(1, 2), Pair(1, 2, tag="other"),
        collections.defaultdict(int, {"z": 1, "a": (2, 3)}), collections.OrderedDict([("a", 2), ("z", 1)]),
        Params(1, 2, kind="other"), Flag("static2"),
    ]
    ours = [pt.structure(t) for t in trees]
    theirs = [jtu.tree_structure(t) for t in trees]
    for i in range(len(trees)):
        for j in range(len(trees)):
            assert (ours[i] == ours[j]) == (theirs[i] == theirs[j]), (trees[i], trees[j])
            if ours[i] == ours[j]:
                assert hash(ours[i]) == hash(ours[j])


def test_map_multi_tree_and_prefix_parity():
    a = {"x": [1, 2], "y": (3, Point(4, 5))}
    b = {"x": [10, 20], "y": (30, Point(40, 50))}
    assert pt.map(operator.add, a, b) == jtu.tree_map(operator.add, a, b)
    deep = {"x": [[1], {"k": 2}], "y": ((3,), Point([4], (5,)))}
    assert pt.map(lambda u, v: (u, v), a, deep) == jtu.tree_map(lambda u, v: (u, v), a, deep)


def test_reduce_all_transpose_broadcast_parity():
    tree = {"a": [1, 2, 3], "b": (4, None)}
    assert pt.reduce(operator.add, tree) == jtu.tree_reduce(operator.add, tree)
    assert pt.reduce(operator.add, tree, 100) == jtu.tree_reduce(operator.add, tree, 100)
    assert pt.all(tree) == jtu.tree_all(tree)
    assert pt.all([1, 0]) == jtu.tree_all([1, 0])

    rows = [{"a": 1, "b": (2, 3)}, {"a": 4, "b": (5, 6)}]
    ours = pt.transpose(pt.structure([0, 0]), pt.structure({"a": 0, "b": (0, 0)}), rows)
    theirs = jtu.tree_transpose(jtu.tree_structure([0, 0]), jtu.tree_structure({"a": 0, "b": (0, 0)}), rows)
    assert ours == theirs
    assert pt.transpose(pt.structure([0, 0]), None, rows) == jtu.tree_transpose(
        jtu.tree_structure([0, 0]), None, rows)

    for prefix, full, is_leaf in [
        ([0, 1], [{"a": 1, "b": 2}, (3,)], None),
        (0, {"a": [1, 2], "b": None}, None),
        ([0, None], [(1, 2), [3]], lambda x: x is None),
        ({"p": Point(0, 1)}, {"p": Point([1, 2], {"q": 3})}, None),
    ]:
        assert pt.broadcast(prefix, full, is_leaf) == jax.tree.broadcast(prefix, full, is_leaf)


@pytest.mark.parametrize("first, second", [
    ([1, 2], (1, 2)),
    ({"a": 1}, {"b": 1}),
    ([1, None], [1, 2]),
    (Point(1, 2), (1, 2)),
    ([1, [2, 3]], [1, [2]]),
    (Pair(1, 2), Pair(1, 2, tag="other")),
    ({"a": 1}, [1]),
])
def test_map_mismatches_fail_in_both(first, second):
    with pytest.raises(ValueError):
        jtu.tree_map(lambda *a: a, first, second)
    with pytest.raises(ValueError, match="^pytree.map: tree 1 has"):
        pt.map(lambda *a: a, first, second)


# ---------------------------------------------------------------------------------------
# hypothesis-generated trees

_leaf = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=False, width=16),
    st.text("ab", max_size=2),
    st.booleans(),
    st.none(),
    st.sampled_from([Flag("f1"), Flag("f2")]),
)
_str_key = st.text("abcxyz", min_size=1, max_size=2)
_int_key = st.integers(-3, 3)


def _containers(children, dict_kinds=True):
    small = dict(max_size=4)
    dict_of = lambda keys: st.dictionaries(keys, children, **small)  # noqa: E731
    other_dicts = [
        dict_of(_str_key).map(collections.OrderedDict),
        dict_of(_str_key).map(lambda d: collections.defaultdict(list, d)),
    ] if dict_kinds else []
    return st.one_of(
        st.lists(children, **small),
        st.lists(children, **small).map(tuple),
        dict_of(_str_key),
        dict_of(_int_key),
        *other_dicts,
        st.tuples(children, children).map(lambda t: Point(*t)),
        st.tuples(children, children, st.sampled_from([None, "t", (1, 2)])).map(lambda t: Pair(*t)),
        st.tuples(children, children).map(lambda t: Named(*t)),
        st.tuples(children, children, st.sampled_from(["dense", "conv"])).map(lambda t: Params(*t)),
        st.tuples(st.lists(children, max_size=3), st.sampled_from(["p", "q"])).map(lambda t: Box(*t)),
    )


trees = st.recursive(_leaf, _containers, max_leaves=24)
# Without OrderedDict/defaultdict: map() is deliberately lenient about dict *kinds* in the
# later trees (see test_map_dict_kind_leniency), so pairs are drawn from plain dicts only.
plain_trees = st.recursive(_leaf, lambda c: _containers(c, dict_kinds=False), max_leaves=24)

_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(trees)
def test_generated_trees_match_jax(tree):
    _check_parity(tree)


@_settings
@given(trees)
def test_generated_trees_match_jax_none_leaf(tree):
    _check_parity(tree, is_leaf=lambda x: x is None)


@_settings
@given(trees, trees)
def test_generated_treedef_equality_agreement(a, b):
    assert (pt.structure(a) == pt.structure(b)) == (jtu.tree_structure(a) == jtu.tree_structure(b))


@_settings
@given(plain_trees, plain_trees)
def test_generated_map_agreement(a, b):
    try:
        expected = jtu.tree_map(lambda x, y: (x, y), a, b)
    except ValueError:
        expected = ValueError
    if expected is ValueError:
        with pytest.raises(ValueError):
            pt.map(lambda x, y: (x, y), a, b)
    else:
        assert pt.map(lambda x, y: (x, y), a, b) == expected


@_settings
@given(plain_trees)
def test_generated_map_against_restructured_copy(a):
    """A copy whose leaves were replaced by subtrees is accepted by both (prefix rule)."""
    b = jtu.tree_map(lambda x: [x, {"k": x}], a)
    assert pt.map(lambda x, y: (x, y), a, b) == jtu.tree_map(lambda x, y: (x, y), a, b)


def test_map_dict_kind_leniency():
    """Documented difference: later trees may use another dict kind with the same keys.

    JAX raises; arrayx (via optree) pairs the values by key.  The first tree fixes the
    result's types.
    """
    first = {"a": 1, "b": 2}
    other = collections.OrderedDict([("b", 20), ("a", 10)])
    with pytest.raises(ValueError):
        jtu.tree_map(operator.add, first, other)
    assert pt.map(operator.add, first, other) == {"a": 11, "b": 22}
    dd = collections.defaultdict(list, {"a": 1})
    assert pt.map(operator.add, dd, collections.defaultdict(int, {"a": 1})) == {"a": 2}
