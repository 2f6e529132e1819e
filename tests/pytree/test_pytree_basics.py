"""arrayx.pytree without JAX: flatten/unflatten rules, treedefs, keys, transforms of trees."""
from __future__ import annotations

import collections
import copy
import operator
import pickle
import time

import pytest

import arrayx.pytree as pt
from arrayx.pytree import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

Point = collections.namedtuple("Point", ["x", "y"])


class Pair:
    """Custom node registered without keys (module level, so treedefs pickle)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.b) == (other.a, other.b)


pt.register_node(Pair, lambda p: ((p.a, p.b), "pair"), lambda aux, ch: Pair(*ch))


class Tagged:
    """Custom node whose metadata (the tag) varies between instances."""

    def __init__(self, tag, value):
        self.tag, self.value = tag, value


pt.register_node(Tagged, lambda t: ((t.value,), t.tag), lambda tag, ch: Tagged(tag, *ch))


# ---------------------------------------------------------------------------------------
# flatten / unflatten


@pytest.mark.parametrize(
    "tree, leaves, text",
    [
        (1, [1], "*"),
        (None, [], "None"),
        ((), [], "()"),
        ([], [], "[]"),
        ({}, [], "{}"),
        ((1,), [1], "(*,)"),
        ([1, None, (2, 3)], [1, 2, 3], "[*, None, (*, *)]"),
        ({"b": 1, "a": 2}, [2, 1], "{'a': *, 'b': *}"),
        ({2: "x", 1: "y"}, ["y", "x"], "{1: *, 2: *}"),
        (collections.OrderedDict(b=1, a=2), [1, 2], "CustomNode(OrderedDict[('b', 'a')], [*, *])"),
        (collections.defaultdict(list, b=1, a=2), [2, 1],
         "CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *])"),
        (Point(1, (2,)), [1, 2], "CustomNode(namedtuple[Point], [*, (*,)])"),
        (Pair(1, [2]), [1, 2], "CustomNode(Pair[pair], [*, [*]])"),
        ([None, [None], {"a": None}], [], "[None, [None], {'a': None}]"),
    ],
)
def test_flatten_known_trees(tree, leaves, text):
    got_leaves, treedef = pt.flatten(tree)
    assert got_leaves == leaves
    assert repr(treedef) == f"PyTreeDef({text})"
    assert treedef.num_leaves == len(leaves)
    rebuilt = pt.unflatten(treedef, got_leaves)
    assert rebuilt == tree and type(rebuilt) is type(tree)


def test_leaves_keep_identity():
    a, b = object(), object()
    got = pt.leaves({"x": [a], "y": (b,)})
    assert got[0] is a and got[1] is b


def test_defaultdict_keeps_factory_and_sorted_leaf_order():
    d = collections.defaultdict(int, {"z": 1, "a": 2})
    rebuilt = pt.map(lambda v: v * 10, d)
    assert type(rebuilt) is collections.defaultdict
    assert rebuilt.default_factory is int
    assert dict(rebuilt) == {"z": 10, "a": 20}
    assert pt.leaves(d) == [2, 1]


def test_ordered_dict_insertion_order():
    d = collections.OrderedDict([("z", 1), ("a", 2)])
    assert pt.leaves(d) == [1, 2]
    rebuilt = pt.map(str, d)
    assert type(rebuilt) is collections.OrderedDict and list(rebuilt) == ["z", "a"]


def test_dict_subclass_and_list_subclass_are_leaves():
    class D(dict):
        pass

    class L(list):
        pass

    d, lst = D(a=1), L([1])
    assert pt.leaves([d, lst]) == [d, lst]


def test_deque_and_struct_sequence_are_leaves_like_jax():
    dq = collections.deque([1, 2])
    st = time.gmtime(0)
    leaves, treedef = pt.flatten({"d": dq, "s": st, "n": [collections.deque([{"x": 1}])]})
    assert leaves[0] is dq and leaves[2] is st
    assert repr(treedef) == "PyTreeDef({'d': *, 'n': [*], 's': *})"
    assert pt.leaves(dq, is_leaf=lambda x: False) == [dq]


def test_is_leaf_stops_descent_and_sees_none():
    tree = [1, [2, 3], None]
    assert pt.leaves(tree, is_leaf=lambda x: isinstance(x, list) and len(x) == 2) == [1, [2, 3]]
    assert pt.leaves(tree, is_leaf=lambda x: x is None) == [1, 2, 3, None]
    assert pt.leaves(tree, is_leaf=lambda x: True) == [tree]


def test_unsortable_dict_keys_raise_type_error_naming_keys():
    with pytest.raises(TypeError, match=r"cannot sort the dict keys \[1, 'b'\]"):
        pt.flatten({1: "a", "b": 2})
    with pytest.raises(TypeError, match="OrderedDict"):
        pt.map(str, [{"k": {(1,): 0, "s": 1}}])
    # every later call fails the same way (the verdict is memoised)
    with pytest.raises(TypeError, match="cannot sort"):
        pt.leaves({1: "a", "b": 2})
    with pytest.raises(TypeError, match="cannot sort"):
        pt.leaves(collections.defaultdict(list, {1: "a", "b": 2}))
    # an OrderedDict keeps insertion order, so mixed keys are fine there
    assert pt.leaves(collections.OrderedDict([(1, "a"), ("b", 2)])) == ["a", 2]


def test_unflatten_wrong_leaf_count():
    treedef = pt.structure({"a": [0, 0], "b": 0})
    with pytest.raises(ValueError, match=r"expects 3 leaves but got 2"):
        pt.unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match=r"expects 3 leaves but got 4"):
        treedef.unflatten(iter([1, 2, 3, 4]))
    with pytest.raises(TypeError, match="PyTreeDef"):
        pt.unflatten("not a treedef", [1])


def test_unflatten_accepts_any_iterable():
    treedef = pt.structure((0, [0, 0]))
    assert treedef.unflatten(iter("abc")) == ("a", ["b", "c"])
    assert pt.unflatten(treedef, (x for x in range(3))) == (0, [1, 2])


# ---------------------------------------------------------------------------------------
# treedefs


def test_treedef_equality_and_hash():
    a = pt.structure({"a": 1, "b": [2, 3]})
    b = pt.structure({"b": [0, 0], "a": 0})
    c = pt.structure({"a": 1, "b": (2, 3)})
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert pt.structure([1]) != pt.structure((1,))
    assert pt.structure(Pair(1, 2)) == pt.structure(Pair(3, 4))
    assert pt.structure(collections.defaultdict(list, a=1)) != pt.structure(
        collections.defaultdict(int, a=1))
    assert pt.structure({"a": 1}) != pt.structure(collections.OrderedDict(a=1))
    cache = {a: "hit"}
    assert cache[b] == "hit"
    assert (a == "x") is False


def test_treedef_properties_and_children():
    treedef = pt.structure([1, (2, None), {"k": 3}])
    assert treedef.num_leaves == 3
    assert treedef.num_nodes == 7  # list, 1, tuple, 2, None, dict, 3
    assert [repr(c) for c in treedef.children()] == [
        "PyTreeDef(*)", "PyTreeDef((*, None))", "PyTreeDef({'k': *})"]
    assert pt.structure(5).children() == [] and pt.structure(5).is_leaf()
    assert pt.structure(None).children() == [] and not pt.structure(None).is_leaf()


def test_treedef_cannot_be_constructed_directly():
    with pytest.raises(TypeError):
        pt.PyTreeDef()


@pytest.mark.parametrize("tree", [
    {"a": [1, None], "b": collections.OrderedDict(z=1, y=2)},
    collections.defaultdict(list, {"q": (1, 2)}),
    Point(1, [2]),
    [Pair(1, {"x": 2})],
    7,
    None,
])
def test_treedef_pickles(tree):
    treedef = pt.structure(tree)
    restored = pickle.loads(pickle.dumps(treedef))
    assert restored == treedef and hash(restored) == hash(treedef)
    assert repr(restored) == repr(treedef)
    leaves = pt.leaves(tree)
    assert restored.unflatten(leaves) == tree
    assert copy.deepcopy(treedef) is treedef


def test_treedef_compose_and_flatten_up_to():
    outer, inner = pt.structure([0, 0]), pt.structure({"a": 0, "b": 0})
    assert outer.compose(inner) == pt.structure([{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    assert outer.flatten_up_to([(1, 2), None]) == [(1, 2), None]
    with pytest.raises(ValueError, match=r"has a tuple at the root but the treedef has a list"):
        outer.flatten_up_to((1, 2))


# ---------------------------------------------------------------------------------------
# keys and paths


def test_key_classes():
    assert (str(SequenceKey(0)), str(DictKey("a")), str(GetAttrKey("w")), str(FlattenedIndexKey(2))) == (
        "[0]", "['a']", ".w", "[<flat index 2>]")
    assert repr(DictKey(1)) == "DictKey(key=1)"
    assert SequenceKey(1).idx == 1 and DictKey("k").key == "k" and GetAttrKey("n").name == "n"
    assert FlattenedIndexKey(3).key == 3
    assert SequenceKey(0) == SequenceKey(0) and hash(SequenceKey(0)) == hash(SequenceKey(0))
    assert SequenceKey(0) != FlattenedIndexKey(0)
    assert DictKey("a") != "a"
    with pytest.raises(AttributeError):
        SequenceKey(0).idx = 2
    assert pickle.loads(pickle.dumps(DictKey(("t", 1)))) == DictKey(("t", 1))
    match GetAttrKey("x"):
        case GetAttrKey(name):
            assert name == "x"


def test_keystr():
    path = (DictKey("p"), SequenceKey(1), GetAttrKey("w"), FlattenedIndexKey(0))
    assert pt.keystr(path) == "['p'][1].w[<flat index 0>]"
    assert pt.keystr(path, simple=True, separator="/") == "p/1/w/0"
    assert pt.keystr(()) == ""


def test_paths_for_every_node_kind():
    tree = {
        "l": [1, (2,)],
        "o": collections.OrderedDict(z=3),
        "d": collections.defaultdict(list, k=4),
        "n": Point(5, 6),
        "c": Pair(7, 8),
        "none": None,
    }
    got = [(pt.keystr(p), x) for p, x in pt.leaves_with_path(tree)]
    assert got == [
        ("['c'][<flat index 0>]", 7), ("['c'][<flat index 1>]", 8),
        ("['d']['k']", 4),
        ("['l'][0]", 1), ("['l'][1][0]", 2),
        ("['n'].x", 5), ("['n'].y", 6),
        ("['o']['z']", 3),
    ]
    pairs, treedef = pt.flatten_with_path(tree)
    assert treedef == pt.structure(tree)
    assert [x for _, x in pairs] == pt.leaves(tree)
    assert pt.leaves_with_path(3) == [((), 3)]
    assert pt.leaves_with_path(None) == []


def test_map_with_path():
    out = pt.map_with_path(lambda p, x, y: (pt.keystr(p), x + y), {"a": [1]}, {"a": [10]})
    assert out == {"a": [("['a'][0]", 11)]}


# ---------------------------------------------------------------------------------------
# map, reduce, all, transpose, broadcast


def test_map_one_and_many_trees():
    assert pt.map(lambda x: x + 1, [1, (2, None)]) == [2, (3, None)]
    assert pt.map(operator.add, {"a": 1, "b": 2}, {"b": 20, "a": 10}) == {"a": 11, "b": 22}
    # later trees may be deeper: the first tree's leaves meet whole subtrees
    assert pt.map(lambda x, s: (x, s), [1, 2], [[0, 0], {"k": 0}]) == [(1, [0, 0]), (2, {"k": 0})]
    assert pt.map(lambda x: x, None) is None


def test_map_mismatch_messages_name_path_and_both_structures():
    with pytest.raises(ValueError) as info:
        pt.map(lambda a, b: a, [0, {"w": [1, 2]}], [0, {"w": {"a": 1}}])
    msg = str(info.value)
    assert msg.startswith("pytree.map: tree 1 has a dict at [1]['w'] but tree 0 has a list")
    assert "tree 0: PyTreeDef([*, {'w': [*, *]}])" in msg
    assert "tree 1: PyTreeDef([*, {'w': {'a': *}}])" in msg

    with pytest.raises(ValueError, match=r"tree 2 has a list of length 3 at the root but tree 0 has a list of length 2"):
        pt.map(lambda *a: a, [1, 2], [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"tree 1 has a dict with keys \['a', 'c'\] at \[0\] but tree 0 has a dict with keys \['a', 'b'\]"):
        pt.map(lambda *a: a, [{"a": 1, "b": 2}], [{"a": 1, "c": 2}])
    with pytest.raises(ValueError, match=r"tree 1 has a leaf of type int at \[1\] but tree 0 has None"):
        pt.map(lambda *a: a, [1, None], [1, 2])
    with pytest.raises(ValueError, match=r"tree 1 has a tuple at \['k'\] but tree 0 has a namedtuple Point"):
        pt.map(lambda *a: a, {"k": Point(1, 2)}, {"k": (1, 2)})
    with pytest.raises(ValueError, match=r"tree 1 has a Tagged with metadata 'b' and 1 children at "
                                         r"\['k'\] but tree 0 has a Tagged with metadata 'a' and 1 children"):
        pt.map(lambda *a: a, {"k": Tagged("a", 1)}, {"k": Tagged("b", 1)})


def test_map_same_custom_nodes_match():
    assert pt.map(operator.add, Pair(1, 2), Pair(10, 20)) == Pair(11, 22)


def test_map_with_path_mismatch_message():
    with pytest.raises(ValueError, match=r"^pytree.map_with_path: tree 1 has a tuple at \[0\]"):
        pt.map_with_path(lambda p, a, b: a, [[1]], [(1,)])


def test_reduce_and_all():
    assert pt.reduce(operator.add, {"a": 1, "b": [2, 3]}) == 6
    assert pt.reduce(operator.add, [], 10) == 10
    assert pt.reduce(lambda acc, x: acc + [x], [1, (2,)], []) == [1, 2]
    with pytest.raises(TypeError):
        pt.reduce(operator.add, [])
    assert pt.all([1, {"a": True}]) and not pt.all([1, (0,)]) and pt.all([None, ()])
    assert pt.reduce(operator.add, [[1], [2]], is_leaf=lambda x: isinstance(x, list) and len(x) == 1) == [1, 2]


def test_transpose():
    outer, inner = pt.structure([0, 0, 0]), pt.structure({"a": 0, "b": 0})
    tree = [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    assert pt.transpose(outer, inner, tree) == {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert pt.transpose(outer, None, tree) == {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert pt.transpose(pt.structure([]), pt.structure((0, 0)), []) == ([], [])
    with pytest.raises(TypeError, match="transpose"):
        pt.transpose(outer, pt.structure((0, 0)), tree)


def test_broadcast():
    assert pt.broadcast([0, 1], [{"a": "x", "b": "y"}, ("z",)]) == [{"a": 0, "b": 0}, (1,)]
    assert pt.broadcast(5, {"a": [1, 2]}) == {"a": [5, 5]}
    assert pt.broadcast([0, None], [(1, 2), [3]], is_leaf=lambda x: x is None) == [(0, 0), [None]]
    assert pt.broadcast([0, None], [(1, 2), None]) == [(0, 0), None]
    assert pt.broadcast_prefix({"a": 1, "b": 2}, {"a": (0, 0), "b": 0}) == [1, 1, 2]


def test_broadcast_errors_name_path_and_sides():
    with pytest.raises(ValueError) as info:
        pt.broadcast([0, {"a": 1}], [(1, 2), [3, 4]])
    msg = str(info.value)
    assert msg.startswith("pytree.broadcast: prefix_tree has a dict at [1] but full_tree has a list")
    assert "prefix_tree: PyTreeDef([*, {'a': *}])" in msg
    assert "full_tree: PyTreeDef([(*, *), [*, *]])" in msg
    with pytest.raises(ValueError, match=r"^vmap: in_axes has a dict at \[1\] but the argument has a list"):
        pt.broadcast_prefix((0, {"a": 0}), (1, [2]), prefix_name="in_axes",
                            full_name="the argument", who="vmap")
    with pytest.raises(ValueError, match=r"prefix_tree has None at \[0\] but full_tree has a leaf of type int"):
        pt.broadcast([None], [3])


# ---------------------------------------------------------------------------------------
# compatibility helpers


def test_nested_map_and_zip():
    assert pt.nested_map(lambda x: x * 2, {"a": [1, (2,)], "n": None}) == {"a": [2, (4,)], "n": None}
    assert pt.nested_map(lambda x: "N" if x is None else x, [None, 1], ignore_nones=False) == ["N", 1]
    assert pt.nested_zip([(1, {"k": 2}), (3, {"k": 4}), (5, {"k": 6})]) == ((1, 3, 5), {"k": (2, 4, 6)})
    with pytest.raises(ValueError, match="at least one"):
        pt.nested_zip([])
    with pytest.raises(ValueError, match="tree 1 has a tuple"):
        pt.nested_zip([[1], (1,)])


def test_nested_stack():
    arrayx = pytest.importorskip("arrayx")
    if not hasattr(arrayx, "stack"):
        pytest.skip("arrayx.stack is not available yet")
    import numpy as np

    objs = [{"w": arrayx.asarray([1.0, 2.0]), "b": (arrayx.asarray(0.0),)},
            {"w": arrayx.asarray([3.0, 4.0]), "b": (arrayx.asarray(1.0),)}]
    out = pt.nested_stack(objs)
    np.testing.assert_array_equal(np.asarray(out["w"]), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(out["b"][0]), [0.0, 1.0])
    out1 = pt.nested_stack([{"w": o["w"]} for o in objs], axis=1)
    np.testing.assert_array_equal(np.asarray(out1["w"]), [[1.0, 3.0], [2.0, 4.0]])


def test_structure_memo_eviction_keeps_results_right(monkeypatch):
    from arrayx.pytree import _treedef

    monkeypatch.setattr(_treedef, "_MEMO_MAX_SPECS", 2)
    monkeypatch.setattr(_treedef, "_MEMO_MAX_NODES", 10)
    n = 3
    trees = [[1] * k for k in range(1, 8)] + [{1: 0, "x": 1}, [collections.deque([n])] * n]
    for _ in range(2):
        for tree in trees[:-2]:
            assert pt.leaves(tree) == tree
            assert len(pt.leaves_with_path(tree)) == len(tree)
        with pytest.raises(TypeError, match="cannot sort"):
            pt.leaves(trees[-2])
        assert len(pt.leaves(trees[-1])) == n
    assert len(_treedef._SEEN) <= 2
