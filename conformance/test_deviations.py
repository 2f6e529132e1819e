"""The known-deviations table is short, reasoned and real: its ids are pinned here, each entry's
example still deviates on its executor and is covered by its own entry, and nothing else is."""
from __future__ import annotations

import numpy as np
import pytest

from arrayx.core import executor as _base
from conformance import deviations
from conformance.differential import functions as F
from conformance.differential import runner
from conformance.differential.strategies import Input

#: the whole table: adding an entry means adding its id here, with the reason in deviations.py
PINNED = {"jax-flushes-subnormals"}


def test_the_table_is_exactly_the_pinned_set() -> None:
    ids = [d.id for d in deviations.DEVIATIONS]
    assert len(ids) == len(set(ids)), "duplicate deviation ids"
    assert set(ids) == PINNED, f"conformance/deviations.py changed: {sorted(set(ids) ^ PINNED)}"


@pytest.mark.parametrize("dev", deviations.DEVIATIONS, ids=[d.id for d in deviations.DEVIATIONS])
def test_entry_is_reasoned_and_names_real_things(dev) -> None:
    assert len(dev.reason.split()) >= 8, f"{dev.id}: say why in a sentence"
    assert set(dev.executors) <= set(_base.registered()), dev.id
    names = {F.standard_name(f) for f in F.TABLE}
    assert "*" in dev.functions or set(dev.functions) <= names, dev.id
    assert set(dev.kinds) <= {"value", "error", "raises", "no-error", "gap"}, dev.id
    assert dev.example[0] in F.BY_NAME, dev.id


@pytest.mark.parametrize("dev", deviations.DEVIATIONS, ids=[d.id for d in deviations.DEVIATIONS])
def test_entry_still_happens_and_covers_its_example(dev) -> None:
    name, args, kwargs = dev.example
    for ex in dev.executors:
        if not _base.get(ex).available():
            continue
        d = runner.outcome(F.BY_NAME[name], args, kwargs, ex)
        assert d is not None, f"{dev.id}: {ex!r} agrees with NumPy now; remove the entry"
        assert deviations.classify(d) is dev, f"{dev.id}: its own example is not covered: {d.detail}"


def test_a_recheck_does_not_excuse_other_differences() -> None:
    """The subnormal recheck explains a flushed result, not a wrong one."""
    fn = F.BY_NAME["multiply"]
    x = Input(np.asarray([1e-310, 2.0]))
    assert deviations.as_if_subnormals_were_zero(fn, (x, 1.0), {}, "numpy")
    planted = runner.call

    def wrong(fn_, args, kwargs, executor):
        kind, value = planted(fn_, args, kwargs, "numpy")
        return (kind, value + 1) if executor == "someother" else (kind, value)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "call", wrong)
        assert not deviations.as_if_subnormals_were_zero(fn, (x, 1.0), {}, "someother")
