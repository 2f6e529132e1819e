"""The one sampling knob (``ARRAYX_TEST_PROFILE``) and the sampling of parameter products."""
from __future__ import annotations

import pytest

from conformance import profile


def test_ci_is_the_default_and_deep_takes_more(monkeypatch) -> None:
    monkeypatch.delenv(profile.VARIABLE, raising=False)
    ci = profile.current()
    assert ci.name == "ci" and ci.sampled
    monkeypatch.setenv(profile.VARIABLE, " Deep ")
    deep = profile.current()
    assert deep.name == "deep" and not deep.sampled
    assert deep.examples > ci.examples and deep.transform_examples > ci.transform_examples


def test_an_unknown_profile_is_refused_with_the_accepted_names(monkeypatch) -> None:
    monkeypatch.setenv(profile.VARIABLE, "full")
    with pytest.raises(ValueError, match=r"ARRAYX_TEST_PROFILE='full'.*ci, deep"):
        profile.current()


def test_sampling_is_seeded_by_name_keeps_order_and_is_off_in_deep(monkeypatch) -> None:
    monkeypatch.delenv(profile.VARIABLE, raising=False)
    cases = list(range(100))
    a, b = profile.sample("one sweep", cases, 10), profile.sample("one sweep", cases, 10)
    assert a == b and len(a) == 10 and a == sorted(a)
    assert profile.sample("another sweep", cases, 10) != a
    assert profile.sample("one sweep", cases[:5], 10) == cases[:5]
    monkeypatch.setenv(profile.VARIABLE, "deep")
    assert profile.sample("one sweep", cases, 10) == cases
