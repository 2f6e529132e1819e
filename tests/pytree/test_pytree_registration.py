"""Custom node registration (no JAX needed)."""
from __future__ import annotations

import dataclasses
import pickle

import pytest

import arrayx.pytree as pt


@pt.register_dataclass
@dataclasses.dataclass
class Layer:
    w: object
    b: object
    act: str = dataclasses.field(default="relu", metadata={"static": True})


@dataclasses.dataclass
class Explicit:
    x: object
    y: object
    name: str


pt.register_dataclass(Explicit, data_fields=["y", "x"], meta_fields=["name"])


@pt.register_dataclass(data_fields=["value"], meta_fields=["unit"])
class Quantity:
    def __init__(self, value, unit):
        self.value, self.unit = value, unit


@pt.register_node_class
class Scaled:
    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


class Vec:
    def __init__(self, x, y):
        self.x, self.y = x, y


pt.register_node_with_keys(
    Vec,
    lambda v: (((pt.GetAttrKey("x"), v.x), (pt.GetAttrKey("y"), v.y)), None),
    lambda _, ch: Vec(*ch),
    flatten=lambda v: ((v.x, v.y), None),
)


class Table:
    """Keyed custom node with DictKey entries and metadata."""

    def __init__(self, cols):
        self.cols = dict(cols)


pt.register_node_with_keys(
    Table,
    lambda t: (tuple((pt.DictKey(k), t.cols[k]) for k in sorted(t.cols)), tuple(sorted(t.cols))),
    lambda keys, ch: Table(zip(keys, ch)),
)


@pt.register_static
class Mode(str):
    pass


def test_dataclass_inferred_fields():
    layer = Layer(1, [2], act="gelu")
    leaves, treedef = pt.flatten(layer)
    assert leaves == [1, 2]
    assert repr(treedef) == "PyTreeDef(CustomNode(Layer[('gelu',)], [*, [*]]))"
    assert [pt.keystr(p) for p, _ in pt.leaves_with_path(layer)] == [".w", ".b[0]"]
    rebuilt = pt.map(lambda v: v * 2, layer)
    assert rebuilt == Layer(2, [4], act="gelu")
    assert pt.structure(Layer(1, 2)) != pt.structure(Layer(1, 2, act="tanh"))


def test_dataclass_explicit_fields_order():
    leaves, treedef = pt.flatten(Explicit(x=1, y=2, name="n"))
    assert leaves == [2, 1]
    assert pt.unflatten(treedef, ["Y", "X"]) == Explicit(x="X", y="Y", name="n")
    assert [pt.keystr(p) for p, _ in pt.leaves_with_path(Explicit(1, 2, "n"))] == [".y", ".x"]


def test_dataclass_decorator_with_arguments_on_plain_class():
    q = pt.map(lambda v: v + 1, Quantity(1, "m"))
    assert (q.value, q.unit) == (2, "m")
    assert repr(pt.structure(Quantity(1, "m"))) == "PyTreeDef(CustomNode(Quantity[('m',)], [*]))"


def test_dataclass_meta_must_be_hashable():
    with pytest.raises(TypeError, match=r"meta field\(s\) \['act'\] of Layer must be hashable"):
        pt.flatten(Layer(1, 2, act=["not", "hashable"]))


def test_dataclass_registration_errors():
    @dataclasses.dataclass
    class Partial:
        a: int
        b: int

    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        pt.register_dataclass(Partial, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match="both data and meta"):
        pt.register_dataclass(Partial, data_fields=["a", "b"], meta_fields=["a"])
    with pytest.raises(TypeError, match="both"):
        pt.register_dataclass(Partial, data_fields=["a", "b"])

    class NotDC:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        pt.register_dataclass(NotDC)

    @dataclasses.dataclass
    class WithDerived:
        a: int
        derived: int = dataclasses.field(init=False, default=0)

    pt.register_dataclass(WithDerived)  # non-init fields are not children
    assert pt.leaves(WithDerived(5)) == [5]


def test_node_class_and_keys():
    s = pt.map(lambda v: v + 1, Scaled(1, 10))
    assert (s.value, s.scale) == (2, 10)
    assert [pt.keystr(p) for p, _ in pt.leaves_with_path(Scaled(1, 10))] == ["[<flat index 0>]"]
    assert [pt.keystr(p) for p, _ in pt.leaves_with_path(Vec(1, [2]))] == [".x", ".y[0]"]
    v = pt.map(str, Vec(1, 2))
    assert (v.x, v.y) == ("1", "2")
    t = Table({"b": 1, "a": 2})
    assert pt.leaves_with_path(t) == [((pt.DictKey("a"),), 2), ((pt.DictKey("b"),), 1)]
    assert pt.map(lambda v: -v, t).cols == {"a": -2, "b": -1}


def test_static_nodes_live_in_the_treedef():
    tree = {"mode": Mode("train"), "x": 1}
    leaves, treedef = pt.flatten(tree)
    assert leaves == [1]
    assert repr(treedef) == "PyTreeDef({'mode': CustomNode(Mode[train], []), 'x': *})"
    assert pt.unflatten(treedef, [2]) == {"mode": "train", "x": 2}
    assert pt.structure({"mode": Mode("eval"), "x": 1}) != treedef
    assert pickle.loads(pickle.dumps(treedef)) == treedef

    class Unhashable:
        __hash__ = None

    with pytest.raises(TypeError, match="hashable"):
        pt.register_static(Unhashable)


def test_duplicate_and_builtin_registration_rejected():
    with pytest.raises(ValueError, match="already registered"):
        pt.register_node(Vec, lambda v: ((), None), lambda a, c: Vec(0, 0))
    with pytest.raises(ValueError, match="built-in"):
        pt.register_node(list, lambda v: ((), None), lambda a, c: [])
    with pytest.raises(TypeError, match="expected a class"):
        pt.register_node("list", lambda v: ((), None), lambda a, c: [])


def test_custom_node_pickle_round_trip():
    tree = [Layer(1, 2), Scaled(3, 4), Vec(5, 6), Mode("m"), Explicit(7, 8, "e")]
    treedef = pt.structure(tree)
    restored = pickle.loads(pickle.dumps(treedef))
    assert restored == treedef and repr(restored) == repr(treedef)
    rebuilt = restored.unflatten(pt.leaves(tree))
    assert rebuilt[0] == Layer(1, 2) and rebuilt[2].y == 6


class Both:
    def __init__(self, u, v):
        self.u, self.v = u, v


pt.register_node(
    Both,
    lambda b: ((b.u, b.v), None),
    lambda _, ch: Both(*ch),
    flatten_with_keys=lambda b: (((pt.DictKey("u"), b.u), (pt.DictKey("v"), b.v)), None),
)


def test_register_node_with_optional_keyed_flatten():
    assert [pt.keystr(p) for p, _ in pt.leaves_with_path(Both(1, 2))] == ["['u']", "['v']"]
    assert pt.leaves(Both(1, 2)) == [1, 2]
