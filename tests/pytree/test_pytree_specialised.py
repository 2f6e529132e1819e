"""The flatten/unflatten generated for structures that keep coming back (pytree/_specialise.py).

Every test makes a structure specialised (flattening it repeatedly), then checks that the
generated path returns exactly what optree/JAX semantics give, and that any difference in a
later tree -- a container type, a length, a dict key or its order, a leaf type -- sends the
flatten back to optree instead of returning something wrong.
"""
from __future__ import annotations

import collections
import enum
import pickle

import numpy as np
import optree
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arrayx.pytree as pt
from arrayx.pytree import _specialise, _treedef


@pytest.fixture(autouse=True)
def fresh_caches(monkeypatch):
    monkeypatch.setattr(_specialise, "MIN_LEAVES", 1)  # small trees too, so tests stay small
    monkeypatch.setattr(_specialise, "SPECIALISE_AFTER", 3)
    _treedef.clear_caches()
    yield
    _treedef.clear_caches()


def specialised(tree):
    """Flatten ``tree`` until its structure is specialised; the treedef of the last flatten."""
    for _ in range(_specialise.SPECIALISE_AFTER + 2):
        leaves, treedef = pt.flatten(tree)
    assert _specialise.lookup(tree) is not None, "the structure was not specialised"
    return treedef


def optree_view(tree):
    """What flatten must return: optree's leaves and spec with JAX's leaves (deques, struct sequences)."""
    return optree.tree_flatten(tree, _treedef._with_jax_leaves(None), none_is_leaf=False, namespace="arrayx")


def check_same_as_optree(tree):
    leaves, treedef = pt.flatten(tree)
    want_leaves, want_spec = optree_view(tree)
    assert len(leaves) == len(want_leaves) and all(a is b for a, b in zip(leaves, want_leaves))
    assert treedef._spec == want_spec
    fresh = [("leaf", i) for i in range(len(leaves))]
    rebuilt = pt.unflatten(treedef, fresh)
    assert repr(rebuilt) == repr(want_spec.unflatten(fresh))  # container types and key order
    return leaves, treedef


def params(n_layers=3, leaf=None):
    leaf = np.zeros(2) if leaf is None else leaf
    return {f"layer{i}": {"w": [leaf, leaf], "b": leaf, "opt": (leaf, None, {"m": leaf})}
            for i in range(n_layers)}


def test_specialised_flatten_and_unflatten_match_optree():
    tree = params()
    treedef = specialised(tree)
    assert treedef._build is not None
    leaves, treedef = check_same_as_optree(tree)
    assert pt.unflatten(treedef, leaves) == tree
    assert pt.map(lambda x: x + 1, tree)["layer1"]["opt"][2]["m"][0] == 1.0
    assert pickle.loads(pickle.dumps(treedef)) == treedef
    assert pt.structure(tree) == treedef and hash(pt.structure(tree)) == hash(treedef)


def test_specialised_path_keeps_the_flattened_dicts_key_order():
    tree = {"b": [1.0, 2.0], "a": {"y": 3.0, "x": 4.0}}
    specialised(tree)
    reordered = {"a": {"x": 4.0, "y": 3.0}, "b": [1.0, 2.0]}  # same keys, other insertion order
    assert _specialise.lookup(reordered) is None
    _, treedef = check_same_as_optree(reordered)
    assert list(pt.unflatten(treedef, [0, 1, 2, 3])) == ["a", "b"]


class Key(str, enum.Enum):
    W = "w"


Point = collections.namedtuple("Point", "x y")


class Dense:  # registered as a node below, after being a leaf
    def __init__(self, w):
        self.w = w


def _mutations():
    leaf = np.zeros(2)
    base = params(2, leaf)

    def changed(f):
        tree = {k: {kk: (list(vv) if type(vv) is list else vv) for kk, vv in v.items()} for k, v in base.items()}
        f(tree)
        return tree

    return {
        "leaf -> list": changed(lambda t: t["layer0"].__setitem__("b", [leaf, leaf])),
        "leaf -> tuple": changed(lambda t: t["layer0"].__setitem__("b", (leaf,))),
        "leaf -> dict": changed(lambda t: t["layer0"].__setitem__("b", {"q": leaf})),
        "leaf -> None": changed(lambda t: t["layer0"].__setitem__("b", None)),
        "leaf -> namedtuple": changed(lambda t: t["layer0"].__setitem__("b", Point(leaf, leaf))),
        "leaf -> deque (a JAX leaf)": changed(lambda t: t["layer0"].__setitem__("b", collections.deque([leaf]))),
        "leaf -> new leaf type": changed(lambda t: t["layer0"].__setitem__("b", 3.0)),
        "None -> leaf": changed(lambda t: t["layer1"].__setitem__("opt", (leaf, leaf, {"m": leaf}))),
        "list longer": changed(lambda t: t["layer0"]["w"].append(leaf)),
        "list -> tuple": changed(lambda t: t["layer0"].__setitem__("w", (leaf, leaf))),
        "dict -> OrderedDict": changed(lambda t: t.__setitem__("layer1", collections.OrderedDict(t["layer1"]))),
        "dict -> defaultdict": changed(lambda t: t.__setitem__("layer1", collections.defaultdict(int, t["layer1"]))),
        "dict key renamed": changed(lambda t: t["layer0"].__setitem__("c", t["layer0"].pop("b"))),
        "dict key order": changed(lambda t: t["layer0"].__setitem__("w", t["layer0"].pop("w"))),
        "str key -> StrEnum member": changed(lambda t: t.__setitem__(
            "layer0", {(Key.W if k == "w" else k): v for k, v in t["layer0"].items()})),
        "root key added": changed(lambda t: t.__setitem__("extra", leaf)),
    }


MUTATIONS = _mutations()


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_any_difference_falls_back_to_optree(name):
    specialised(params(2))
    tree = MUTATIONS[name]
    if name == "str key -> StrEnum member":  # equal keys, but the tree's own key object must come back
        leaves, treedef = pt.flatten(tree)
        assert any(type(k) is Key for k in pt.unflatten(treedef, leaves)["layer0"])
    assert _specialise.lookup(tree) is None
    check_same_as_optree(tree)


def test_a_mismatch_never_iterates_the_users_object():
    specialised({"a": [1.0, 2.0], "b": 3.0})
    consumed = []

    def gen():
        consumed.append(True)
        yield 1.0

    g = gen()
    leaves, _ = pt.flatten({"a": g, "b": 3.0})
    assert leaves == [g, 3.0] and consumed == []


def test_leaf_types_grow_when_a_structure_comes_back_with_new_ones():
    specialised(params(2, np.zeros(2)))
    other = params(2, 1.5)
    for _ in range(_specialise.SPECIALISE_AFTER + 1):
        check_same_as_optree(other)
    assert _specialise.lookup(other) is not None  # re-specialised with float leaves too
    assert _specialise.lookup(params(2, np.zeros(2))) is not None


def test_registering_a_leaf_type_as_a_node_drops_specialisations():
    tree = {"a": [Dense(1.0), Dense(2.0)], "b": 3.0}
    specialised(tree)
    assert pt.leaves(tree)[0].__class__ is Dense
    pt.register_node(Dense, lambda d: ((d.w,), None), lambda _, children: Dense(*children))
    assert pt.leaves(tree) == [1.0, 2.0, 3.0]


@pytest.mark.skipif(not hasattr(optree.registry, "__GLOBAL_NAMESPACE"), reason="optree's global namespace marker moved")
def test_optree_global_registrations_drop_specialisations():
    everywhere = getattr(optree.registry, "__GLOBAL_NAMESPACE")

    class Box:
        def __init__(self, v):
            self.v = v

    tree = {"a": [Box(1.0), Box(2.0)], "b": 3.0}
    specialised(tree)
    optree.register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, c: Box(*c), namespace=everywhere)
    try:
        assert pt.leaves(tree) == [1.0, 2.0, 3.0]
    finally:
        optree.unregister_pytree_node(Box, namespace=everywhere)


def test_is_leaf_calls_never_use_the_specialised_path():
    tree = {"a": [1.0, 2.0], "b": (3.0, 4.0)}
    specialised(tree)
    leaves, treedef = pt.flatten(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [1.0, 2.0, (3.0, 4.0)]


def test_structures_of_other_node_types_are_not_specialised():
    for tree in ({"p": Point(1.0, 2.0)}, collections.OrderedDict(a=1.0), {1: 1.0, 2: 2.0}):
        for _ in range(_specialise.SPECIALISE_AFTER + 2):
            leaves, treedef = pt.flatten(tree)
        assert _specialise.lookup(tree) is None and treedef._build is None
        assert pt.unflatten(treedef, leaves) == tree


def test_deep_trees_extract_but_build_with_optree():
    deep = 1.0
    for _ in range(_specialise.MAX_BUILD_DEPTH + 5):
        deep = [deep, 2.0]
    treedef = specialised(deep)
    assert treedef._build is None  # too deep for nested displays
    check_same_as_optree(deep)


_leaf = st.one_of(st.floats(allow_nan=False, width=16), st.integers(-3, 3), st.none(),
                  st.sampled_from([np.float32(1), "s"]))
_key = st.text("abcxyz", min_size=1, max_size=2)
_plain = st.recursive(
    _leaf,
    lambda children: st.one_of(st.lists(children, max_size=4), st.lists(children, max_size=3).map(tuple),
                               st.dictionaries(_key, children, max_size=4)),
    max_leaves=20)
_anything = st.recursive(
    _leaf,
    lambda children: st.one_of(st.lists(children, max_size=3), st.lists(children, max_size=3).map(tuple),
                               st.dictionaries(_key, children, max_size=3),
                               st.tuples(children, children).map(lambda t: Point(*t)),
                               st.dictionaries(_key, children, max_size=3).map(collections.OrderedDict)),
    max_leaves=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_plain, _anything)
def test_generated_trees_after_specialisation_match_optree(first, second):
    _treedef.clear_caches()
    for _ in range(_specialise.SPECIALISE_AFTER + 2):
        pt.flatten(first)
    check_same_as_optree(first)
    check_same_as_optree(second)  # any other tree: through the specialisation's checks or optree
    assert pt.map(lambda x: ("m", x), second) == optree.tree_map(
        lambda x: ("m", x), second, none_is_leaf=False, namespace="arrayx")


def test_reordered_dict_of_leaves_is_not_mistaken_for_the_specialised_one():
    specialised({"a": 1.0, "b": 2.0, "c": 3.0})
    check_same_as_optree({"c": 30.0, "a": 10.0, "b": 20.0})


def _reversed_dicts(tree, counter=None):
    """``tree`` with every dict's insertion order reversed and every leaf a new, distinct
    object of the same type (so a mix-up of leaves shows)."""
    counter = [0] if counter is None else counter
    if type(tree) is dict:
        return {k: _reversed_dicts(tree[k], counter) for k in reversed(list(tree))}
    if type(tree) in (list, tuple):
        return type(tree)(_reversed_dicts(c, counter) for c in tree)
    if tree is None:
        return None
    counter[0] += 1
    fresh = {float: lambda i: i + 0.25, int: lambda i: 10**30 + i, str: lambda i: f"leaf{i}",
             np.float32: lambda i: np.float32(i)}
    return fresh[type(tree)](counter[0])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_plain)
def test_generated_trees_with_reordered_dicts_match_optree(tree):
    _treedef.clear_caches()
    for _ in range(_specialise.SPECIALISE_AFTER + 2):
        pt.flatten(tree)
    check_same_as_optree(_reversed_dicts(tree))


def test_generated_code_holds_no_dict_key_of_the_user(monkeypatch):
    """The generated flatten and unflatten bind the user's dict keys as names; no key (quotes, a newline,
    code) is written into their source."""
    sources = []
    real_compile = compile

    def spy(source, filename, mode, *a, **k):
        sources.append(source)
        return real_compile(source, filename, mode, *a, **k)

    monkeypatch.setattr(_specialise, "compile", spy, raising=False)
    odd = ["'); import os; ('", 'a"b', "line\nbreak", "{S0}"]
    tree = {k: [float(i), {k: float(i) + 0.5}] for i, k in enumerate(odd)}
    treedef = specialised(tree)
    assert treedef._build is not None and len(sources) == 2  # a flatten and an unflatten were generated
    leaves, treedef = check_same_as_optree(tree)
    assert pt.unflatten(treedef, leaves) == tree
    for source in sources:
        for k in odd:
            assert k not in source and repr(k) not in source
