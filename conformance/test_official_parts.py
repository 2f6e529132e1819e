"""``python -m conformance.official --part K/N`` and ``--merge N``: the official suite in shares, one
time-limited call each (the TPU machine's calls stop at 10 minutes), folded into one summary."""
import json

import pytest

from conformance import official


@pytest.fixture
def suite(tmp_path):
    tests = tmp_path / "array_api_tests"
    tests.mkdir()
    for name, size in {"test_a.py": 900, "test_b.py": 500, "test_c.py": 450, "test_d.py": 100, "helper.py": 5000}.items():
        (tests / name).write_text("#" * size)
    return tmp_path


def test_shares_are_disjoint_cover_every_test_file_and_balance_by_size(suite):
    shares = [official.suite_share(suite, k, 2) for k in (1, 2)]
    assert shares == [["array_api_tests/test_a.py", "array_api_tests/test_d.py"],  # 900 + 100
                      ["array_api_tests/test_b.py", "array_api_tests/test_c.py"]]  # 500 + 450
    three = [official.suite_share(suite, k, 3) for k in (1, 2, 3)]
    assert sorted(f for s in three for f in s) == [f"array_api_tests/test_{c}.py" for c in "abcd"]


@pytest.mark.parametrize("bad", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_malformed_part_is_refused_by_name(bad):
    with pytest.raises(SystemExit, match="--part wants K/N"):
        official._parse_part(bad)


def _share(k, passed, known, new, examples=20):
    return {"executor": "jax", "label": "tpu", "command": f"python -m conformance.official --part {k}/2",
            "max_examples": examples, "counts": {"passed": passed, "xfailed": known, "failed": len(new)},
            "passed": passed, "failed_or_xfailed": known + len(new), "new_failures": new,
            "xpassed": [f"x{k}"], "duration_s": 10.0 * k, "mode": "default", "part": f"{k}/2", "files": []}


def test_merge_folds_the_shares_into_one_summary(tmp_path, monkeypatch):
    (tmp_path / "results").mkdir()
    monkeypatch.setattr(official, "HERE", tmp_path)
    monkeypatch.setattr(official, "MODES_FILE", tmp_path / "results" / "official_modes.json")
    monkeypatch.setattr(official, "_strict_run", lambda: False)
    for k, (passed, known, new) in {1: (700, 10, []), 2: (660, 9, ["t::new"])}.items():
        (tmp_path / "results" / f"official-jax-tpu-part{k}of2.json").write_text(json.dumps(_share(k, passed, known, new)))
    assert official.main(["--executor", "jax", "--label", "tpu", "--merge", "2"]) == 1  # a new failure fails the run
    merged = json.loads((tmp_path / "results" / "official-jax-tpu.json").read_text())
    assert (merged["passed"], merged["failed_or_xfailed"], merged["duration_s"]) == (1360, 20, 30.0)
    assert merged["counts"] == {"failed": 1, "passed": 1360, "xfailed": 19}
    assert merged["new_failures"] == ["t::new"] and merged["xpassed"] == ["x1", "x2"] and merged["parts"] == 2
    assert "part" not in merged and "files" not in merged
    modes = json.loads((tmp_path / "results" / "official_modes.json").read_text())
    assert modes["runs"]["jax-tpu"]["default"]["passed"] == 1360


def test_merge_refuses_missing_or_mismatched_shares(tmp_path, monkeypatch, capsys):
    (tmp_path / "results").mkdir()
    monkeypatch.setattr(official, "HERE", tmp_path)
    monkeypatch.setattr(official, "_strict_run", lambda: False)
    (tmp_path / "results" / "official-jax-tpu-part1of2.json").write_text(json.dumps(_share(1, 1, 0, [])))
    assert official.main(["--executor", "jax", "--label", "tpu", "--merge", "2"]) == 2
    assert "part2of2.json is missing" in capsys.readouterr().out
    (tmp_path / "results" / "official-jax-tpu-part2of2.json").write_text(json.dumps(_share(2, 1, 0, [], examples=3)))
    assert official.main(["--executor", "jax", "--label", "tpu", "--merge", "2"]) == 2
    assert "different --max-examples" in capsys.readouterr().out
