"""The eager sweep of the table: every function on every executor agrees with the NumPy executor.

Per function and executor: its hand-picked examples (``differential/table/examples.py``, run as
``python -m conformance.report`` runs them) and a few drawn calls (the ci profile).  Each call runs
on the executor and on NumPy; a disagreement that ``deviations.py`` does not cover fails, with
hypothesis's shrunk example.  NotImplementedError is a gap: allowed only when ``gaps.py`` lists the
function for that executor, and a listed gap that works fails too.  The deep profile
is ``python -m conformance.differential --max-examples 200``.  The examples per function and
executor are the test profile's (``conformance.profile``: ``ARRAYX_TEST_PROFILE=ci|deep``).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

import arrayx
from conformance import deviations, gaps, profile, report, spec
from conformance.differential import functions as F
from conformance.differential import runner
from conformance.differential.strategies import CATEGORIES, DTYPES, Input
from conformance.differential.table import examples as E

QUICK_EXAMPLES = profile.current().examples

#: disagreement classes this suite found that their owners are fixing now, by
#: (executor, table name): not deviations (they can be fixed), so they are expected failures
#: until then; a fixed one shows as XPASS and its line goes
OPEN: dict[tuple[str, str], str] = {}


_EXAMPLES = E.by_function()
#: one eager item per table entry, and per function that has hand-picked examples only (array.at, operator chains)
NAMES = [f.name for f in F.TABLE] + [name for name in _EXAMPLES if name not in F.BY_NAME]


#: executors whose hand-picked examples are rotated in a sampled profile (ci), as their drawn calls
#: are (below): each example compiles new XLA programs on the jax executor (one per operation, shape
#: and dtype; three quarters of this file's programs were the examples').  Of the examples of one
#: function that differ only in their dtype within one class (float32 and float64, complex64 and
#: complex128, int8 and int64, uint8 and uint32: the same call on the same shapes and kinds of values,
#: one dtype for every argument), it runs one, the class's dtypes taken in turn along the table; every
#: other example (promotion across dtypes, keywords, shapes, the only one of its class) runs there, so
#: every function and every dtype of the examples still runs on it.  The other executors, and the deep
#: profile everywhere, run every example.
ROTATED_EXAMPLES = ("jax",)


def _siblings_left_out() -> frozenset[str]:
    """Ids of the examples that a rotated executor leaves out in a sampled profile (ROTATED_EXAMPLES)."""
    groups: dict = {}
    for case in E.CASES:
        dtypes = {a.dtype for a in case.args}
        if len(dtypes) != 1:
            continue  # no array argument, or several dtypes (promotion): always run
        key = (case.func, case.fn.__code__, case.fn.__defaults__, case.tolerance,
               tuple((a.shape, a.values, np.dtype(a.dtype).kind) for a in case.args))
        groups.setdefault(key, []).append(case)
    turns: dict = {}
    left_out = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        classes = tuple(m.args[0].dtype for m in members)
        turn = turns.get(classes, 0)
        turns[classes] = turn + 1
        left_out.update(m.id for i, m in enumerate(members) if i != turn % len(members))
    return frozenset(left_out)


_LEFT_OUT = _siblings_left_out()


def _examples_on(name: str, executor: str) -> list:
    """The hand-picked examples of ``name`` that run on ``executor`` in this profile."""
    cases = _EXAMPLES.get(name, [])
    if executor not in ROTATED_EXAMPLES or not profile.current().sampled:
        return cases
    return [c for c in cases if c.id not in _LEFT_OUT]


def _check_examples(name: str, executor: str) -> list[str]:
    """The hand-picked examples of ``name`` on ``executor``: what went wrong, one line each."""
    bad = []
    for case in _examples_on(name, executor):
        outcome = report.check(case, executor)
        if outcome.status == report.GAP:
            if gaps.reason(executor, case.func, case.id) is None:
                bad.append(f"{case.id}: the {executor!r} executor raised NotImplementedError ({outcome.detail}); "
                           f"implement it, or list {case.func!r} under {executor!r} in conformance/gaps.py with the reason")
        elif outcome.status != report.OK:
            bad.append(f"{case.id} on {executor!r}: {outcome.status}: {outcome.detail}")
    return bad


#: executors whose drawn calls are rotated in a sampled profile (ci): each call compiles new XLA
#: programs on the jax executor (about 30 ms each, one per operation, shape and dtype: half of this
#: file's CPU time went to its drawn calls there), so it runs one of each function's drawn calls,
#: the first, second and third in turn along the table, where the other executors run all of them
#: (the same calls: one seed per function); its hand-picked examples as ROTATED_EXAMPLES says.  The
#: deep profile runs every drawn call everywhere.
ROTATED = ("jax",)


def _drawn_turn(name: str, executor: str):
    """Which drawn call of ``name`` runs on ``executor`` (its index), or None for all of them."""
    if executor not in ROTATED or not profile.current().sampled or QUICK_EXAMPLES <= 1:
        return None
    return NAMES.index(name) % QUICK_EXAMPLES


@pytest.mark.parametrize("name", NAMES)
def test_agrees_with_numpy(name: str, executor: str, request) -> None:
    if (executor, name) in OPEN:
        request.applymarker(pytest.mark.xfail(reason=OPEN[executor, name], strict=False))
    bad = _check_examples(name, executor)
    assert not bad, "\n".join(bad)
    if executor == runner.REFERENCE or name not in F.BY_NAME:
        return  # the reference runs its examples only (they must not fail there either)
    fn = F.BY_NAME[name]
    turn = _drawn_turn(name, executor)
    drawn = iter(range(10**9))

    @seed(zlib.crc32(fn.name.encode()))  # repeatable in CI, and distinct per function
    @settings(max_examples=QUICK_EXAMPLES, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(F.examples(fn))
    def agrees(example):
        if turn is not None and next(drawn) % QUICK_EXAMPLES != turn:
            return
        args, kwargs = example
        d = runner.outcome(fn, args, kwargs, executor)
        if d is not None and deviations.classify(d) is None:
            pytest.fail(f"{d.function} on {executor!r}: {d.kind}: {d.detail}\n  reproducer: {d.example}")

    agrees()


# -- the table covers the standard -------------------------------------------------------------------


def test_every_standard_function_is_in_the_table() -> None:
    missing = sorted(set(spec.all_functions()) - {F.standard_name(f) for f in F.TABLE})
    assert not missing, f"no entry in conformance/differential/functions.py for {missing}"


def test_every_operator_and_inplace_operator_is_in_the_table() -> None:
    members = {m for m in spec.load()["array"] if m.startswith("__")} - {
        "__array_namespace__", "__bool__", "__complex__", "__dlpack__", "__dlpack_device__", "__float__",
        "__index__", "__int__"}
    names = {F.standard_name(f)[len("array."):] for f in F.TABLE if f.name.startswith("array.")}
    assert members <= names, sorted(members - names)
    inplace = {f"__i{m[2:]}" for m in F.INPLACE} | {"__imatmul__"}
    assert inplace <= names, sorted(inplace - names)


def test_domains_and_signatures_exist() -> None:
    for fn in F.TABLE:
        assert fn.signature in F.SIGNATURES, fn.name
        assert fn.dtypes in CATEGORIES, fn.name
        assert all(k in F.DOMAINS for k in fn.kw), fn.name
        assert fn.tolerance in runner.TOLERANCES, fn.name
        assert fn.view is None or fn.view in F.VIEWS, fn.name


class _Covered(Exception):
    """Raised by ``_draw_until``'s test body: everything sought has been seen."""


def _draw_until(fn, covered, limit: int) -> None:
    """Feed up to ``limit`` drawn examples of ``fn`` (the same ones on every run) to ``covered``,
    stopping at the first for which it returns True: the coverage checks stop once all is seen
    rather than drawing the whole budget (300 + 200 examples, then ~18 s of CPU)."""

    @settings(max_examples=limit, database=None, derandomize=True, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(F.examples(fn))
    def draw(example):
        if covered(example):
            raise _Covered

    try:
        draw()
    except _Covered:
        pass


def test_the_strategies_reach_every_dtype_layout_and_special_value() -> None:
    """Over the whole table the drawn inputs cover all 13 dtypes, every layout and the special values
    (up to 300 examples of each of four functions, and 200 of two for the special values)."""
    seen_dtypes, seen_layouts = set(), set()
    layouts = {"contiguous", "strided", "transposed", "reversed"}

    def record(example):
        for leaf in _inputs(example):
            seen_dtypes.add(leaf.values.dtype.name)
            seen_layouts.add(leaf.layout)
        return seen_dtypes == set(DTYPES) and seen_layouts == layouts

    for fn in (F.BY_NAME["add"], F.BY_NAME["sum"], F.BY_NAME["equal"], F.BY_NAME["where"]):
        _draw_until(fn, record, 300)
    assert seen_dtypes == set(DTYPES)
    assert seen_layouts == layouts
    tags = set()
    special = {"nan", "inf", "zero", "subnormal"}

    def note(example):
        tags.update(runner.input_tags(*example))
        return special <= tags

    for fn in (F.BY_NAME["sin"], F.BY_NAME["multiply"]):
        _draw_until(fn, note, 200)
    assert special <= tags


def _inputs(tree):
    if isinstance(tree, Input):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for t in tree:
            yield from _inputs(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            yield from _inputs(t)



@seed(17)
@settings(max_examples=100 if profile.current().sampled else 300, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(F.examples(F.BY_NAME["array.__getitem__"]))
def test_basic_index_keys_fit_their_array(example) -> None:
    """A drawn key selects from x (an integer for a size-0 axis, or one meant for the axis after a
    None, would break the setitem strategy); NumPy's own indexing is the judge.  100 drawn keys in the
    ci profile (the eager sweep draws more of them through getitem and setitem), 300 in the deep one."""
    (x, key), _ = example
    np.empty(x.values.shape)[key]

@pytest.mark.parametrize("layout", ["strided", "transposed", "reversed"])
def test_layouts_build_the_values_as_views(executor: str, layout: str) -> None:
    values = np.arange(12.0).reshape(3, 4)
    from conformance.differential.strategies import build

    x = build(arrayx, Input(values, layout), executor)
    assert x.executor == executor
    np.testing.assert_array_equal(np.asarray(x), values)


# -- the hand-picked examples and the gap table -------------------------------------------------------

_LISTED = [(ex, func) for ex, table in gaps.GAPS.items() for func in table]


@pytest.mark.parametrize("executor_name,func", _LISTED, ids=[f"{e}:{f}" for e, f in _LISTED] or None)
def test_listed_gaps_are_real(executor_name: str, func: str) -> None:
    """A function listed as a gap still raises NotImplementedError on that executor in some example."""
    from arrayx.core import executor as _base

    if executor_name not in _base.registered() or not _base.get(executor_name).available():
        pytest.skip(f"executor {executor_name!r} is not available here")
    covered = report.cases_for_gap(func)
    assert covered, f"gaps.py lists {func!r}, which is neither a function nor an example id of the table (a typo?)"
    outcomes = [report.check(c, executor_name).status for c in covered]
    assert report.GAP in outcomes, f"{func!r} works on {executor_name!r} now ({outcomes}); remove it from conformance/gaps.py"


def test_gap_table_names_known_executors_and_functions() -> None:
    known = set(spec.all_functions()) | {c.func for c in E.CASES} | {c.id for c in E.CASES}
    for ex, table in gaps.GAPS.items():
        for func, why in table.items():
            assert func in known, f"gaps.py: {ex}: {func!r} is not a function of the standard"
            assert why and why.strip(), f"gaps.py: {ex}: {func!r} needs a reason"


def test_the_rotated_examples_keep_every_function_and_dtype() -> None:
    """A rotated executor (ci) still runs an example of every function with examples, every dtype of
    the examples, every example with several dtypes, and leaves out only examples with a kept sibling
    of the same class."""
    left_out = _siblings_left_out()
    kept = [c for c in E.CASES if c.id not in left_out]
    assert {c.func for c in kept} == {c.func for c in E.CASES}
    assert {a.dtype for c in kept for a in c.args} == {a.dtype for c in E.CASES for a in c.args}
    assert all(len({a.dtype for a in c.args}) == 1 for c in E.CASES if c.id in left_out)
    for c in E.CASES:
        if c.id in left_out:
            kind = np.dtype(c.args[0].dtype).kind
            assert any(k.func == c.func and k.fn.__code__ is c.fn.__code__ and
                       [np.dtype(a.dtype).kind for a in k.args] == [kind] * len(c.args) for k in kept), c.id
    assert 0 < len(left_out) < len(E.CASES) // 4


def test_every_standard_function_has_a_hand_picked_example() -> None:
    missing = sorted(set(spec.all_functions()) - {c.func for c in E.CASES})
    assert not missing, f"no example in conformance/differential/table/examples.py for: {missing}"


def test_every_example_names_a_real_function() -> None:
    names = set(spec.all_functions())
    for c in E.CASES:
        if c.func.startswith("array."):
            member = c.func.split(".", 1)[1]
            assert member == "operators" or hasattr(arrayx.Array, member), c.id
        else:
            assert c.func in names, f"{c.id}: {c.func!r} is not in the 2025.12 standard"
            assert callable(E.lookup(arrayx, c.func)), c.id
        assert c.tolerance in runner.TOLERANCES, c.id


def test_example_inputs_are_deterministic_and_in_range() -> None:
    for c in E.CASES:
        a, b = c.inputs(), c.inputs()
        for x, y, arg in zip(a, b, c.args):
            assert x.dtype == np.dtype(arg.dtype) and x.shape == tuple(arg.shape), c.id
            np.testing.assert_array_equal(x, y)
            if arg.values == "positive":
                assert np.all(np.real(x) > 0), c.id
            if arg.values == "spd":
                assert np.all(np.linalg.eigvalsh(x) > 0), c.id
            if arg.values.startswith("index:"):
                assert np.all((0 <= x) & (x < int(arg.values.split(":")[1]))), c.id


def test_results_must_live_on_the_executor_in_its_own_buffers() -> None:
    x = arrayx.asarray([1.0], device="numpy")
    with pytest.raises(report.Mismatch, match="numpy"):
        report.materialise(x, "someother")
    assert report.materialise(x, "numpy")[0] == "array"


# -- the comparison can fail ---------------------------------------------------------------------------

_SIN = F.BY_NAME["sin"]


@pytest.mark.parametrize(
    "got,want",
    [
        (np.zeros(2, np.float32), np.zeros(2, np.float64)),                 # dtype
        (np.zeros((2, 1)), np.zeros(2)),                                    # shape
        (np.array([1.0, 1.0 + 1e-13]), np.array([1.0, 1.0])),               # beyond 8 eps
        (np.array([np.nan, 1.0]), np.array([0.0, 1.0])),                    # a NaN position
        (np.array([np.inf]), np.array([-np.inf])),                          # an infinity
        (np.array([-0.0]), np.array([0.0])),                                # the sign of a zero
        (np.array([0.0], np.float32), np.array([1e-40], np.float32)),       # a flushed subnormal
        (np.array([complex(np.nan, 1)]), np.array([complex(1, np.nan)])),   # NaN in the other part
        (np.array([1, 2], np.int8), np.array([1, 3], np.int8)),             # integers are exact
    ],
)
def test_compare_detects_differences(got, want) -> None:
    with pytest.raises(runner.Mismatch):
        runner.compare(_SIN, ("array", got), ("array", want), 1.0)


def test_compare_accepts_equal_and_close_values() -> None:
    want = np.array([1.0, np.nan, np.inf, -0.0, 5e-324])
    runner.compare(_SIN, ("array", want * (1 + 2e-16)), ("array", want), 1.0)
    runner.compare(F.BY_NAME["empty"], ("array", np.ones(3)), ("array", np.zeros(3)), 1.0)  # dtype and shape only


def test_errors_must_agree(executor: str) -> None:
    """NumPy's TypeError for sin(int8 array) must be the executor's too; a call NumPy runs must not raise."""
    if executor == runner.REFERENCE:
        pytest.skip("the reference itself")
    ints = Input(np.arange(3, dtype=np.int8))
    assert runner.outcome(_SIN, (ints,), {}, executor) is None
    d = runner.outcome(F.BY_NAME["add"], (Input(np.arange(3.0)), Input(np.arange(2.0))), {}, executor)
    assert d is None  # both raise ValueError (shapes do not broadcast)


def test_outcome_reports_a_wrong_answer(monkeypatch) -> None:
    """A planted bug in one executor's result is found, named and reproducible."""
    real_call = runner.call

    def planted(fn, args, kwargs, executor):
        kind, value = real_call(fn, args, kwargs, "numpy")
        return (kind, value + 1) if executor != runner.REFERENCE else (kind, value)

    monkeypatch.setattr(runner, "call", planted)
    d = runner.outcome(_SIN, (Input(np.zeros(2)),), {}, "someother")
    assert d is not None and d.kind == "value" and d.function == "sin" and "np.asarray" in d.example


def test_deep_profile_command_writes_results_and_merges_shards(tmp_path, capsys) -> None:
    from conformance.differential.__main__ import main

    parts = []
    for k in range(2):
        path = tmp_path / f"part{k}.json"
        assert main(["--max-examples", "2", "--executors", "numpy", "--only", "sin,add,fft.fft",
                     "--shard", f"{k}/2", "--json", str(path), "-q"]) == 0
        parts.append(path)
    import json

    first, second = (json.loads(p.read_text()) for p in parts)
    assert set(first["functions"]) == {"sin", "fft.fft"} and set(second["functions"]) == {"add"}
    assert first["examples"] == 4 and first["executors"] == ["numpy"] and first["unexplained"] == []
    merged = tmp_path / "merged.json"
    assert main(["--merge", *map(str, parts), "--json", str(merged)]) == 0
    data = json.loads(merged.read_text())
    assert data["examples"] == 6 and set(data["functions"]) == {"sin", "add", "fft.fft"}
    assert [d["id"] for d in data["deviations"]] == [d.id for d in deviations.DEVIATIONS]
    assert "known deviations" in capsys.readouterr().out
    from conformance import report

    assert report.main(["--differential", str(merged)]) == 0
    out = capsys.readouterr().out
    assert "6 examples" in out and "jax-flushes-subnormals" in out


def _part(seed, examples, classes, name="sin"):
    return {"max_examples": examples, "seed": seed, "executors": ["numpy", "jax"], "settings": {}, "machine": "",
            "duration_s": 1.0, "examples": examples, "pairs": examples, "disagreements": len(classes),
            "classes": classes, "unexplained": [], "deviations": [],
            "functions": {name: {"examples": examples, "pairs": examples, "seconds": 1.0,
                                 "disagreements": sum(c["count"] for c in classes)}}}


def test_merge_adds_rounds_and_lets_a_rerun_replace_its_seed() -> None:
    from conformance.differential.__main__ import merge

    bug = {"class": "sin | jax | value | x", "function": "sin", "entry": "sin", "executor": "jax", "kind": "value",
           "count": 2, "detail": "", "reproducer": "", "deviation": None}
    other = dict(bug, **{"class": "sin | jax | value | y"})
    first, second = _part(1, 10, [bug]), _part(2, 10, [other])
    data = merge([first, second])
    assert data["examples"] == 20 and data["max_examples"] == 20 and data["seeds"] == [1, 2]
    assert sorted(data["unexplained"]) == [bug["class"], other["class"]]
    rerun = _part(1, 10, [])  # seed 1 again after a fix: replaces the first run of sin
    data = merge([first, second, rerun])
    assert data["examples"] == 20 and data["unexplained"] == [other["class"]] and data["disagreements"] == 2
    legacy = dict(bug)
    del legacy["entry"]  # parts written before classes named their table entry
    assert merge([_part(None, 5, [legacy]), _part(0, 5, [])])["unexplained"] == []


@pytest.mark.parametrize("values", [
    np.asarray([complex(-0.0, 3.4e38), complex(1, -0.0), complex(np.inf, np.nan), 2 + 1j], np.complex64),
    np.asarray([[complex(0.0, -np.inf)]]), np.asarray(complex(-0.0, -0.0)), np.asarray([1.5 - 2j, 3j]),
    np.asarray([-0.0, np.nan, -np.inf, 5e-324]), np.zeros((2, 0), np.int8), np.asarray([True, False]),
])
def test_input_repr_rebuilds_the_values_bit_for_bit(values) -> None:
    """The reproducer of a class is runnable: its inputs are the ones that disagreed, signed zeros included."""
    from numpy import inf, nan  # noqa: F401 - names the repr uses

    x = Input(values, "reversed")
    again = eval(repr(x))  # noqa: S307 - the repr of our own test data
    assert again.layout == "reversed" and again.values.dtype == values.dtype and again.values.shape == values.shape
    assert again.values.tobytes() == values.tobytes()


def test_layout_free_executors_build_the_contiguous_buffer(executor: str) -> None:
    from conformance.differential.strategies import LAYOUT_FREE, build

    values = np.arange(12.0).reshape(3, 4)
    for layout in ("strided", "transposed", "reversed"):
        x = build(arrayx, Input(values, layout), executor)
        np.testing.assert_array_equal(np.asarray(x), values)
        if executor not in LAYOUT_FREE and executor in ("numpy", "numba"):  # real strides: a view, not a copy
            assert not x._buf.flags.c_contiguous, layout


def test_jax_programs_are_kept_in_the_named_folder(tmp_path, monkeypatch) -> None:
    jax = pytest.importorskip("jax")
    from conformance.differential.runner import keep_jax_programs_on_disk

    saved = jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs
    monkeypatch.setenv("ARRAYX_JAX_CACHE_DIR", str(tmp_path / "jax"))
    try:
        assert keep_jax_programs_on_disk() == str(tmp_path / "jax")
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "jax")
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 0
    finally:
        jax.config.update("jax_compilation_cache_dir", saved[0])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", saved[1])
