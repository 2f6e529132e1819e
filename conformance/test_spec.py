"""``python -m conformance.spec`` finds the stubs only where it is told: no machine path is built in."""
from __future__ import annotations

import sys

import pytest

from conformance import spec


def test_a_missing_stubs_folder_is_named(tmp_path, capsys) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(SystemExit) as e:
        spec.main(["--check", "--stubs", str(missing)])
    assert e.value.code == 2
    assert str(missing) in capsys.readouterr().err


def test_without_stubs_the_error_says_how_to_give_them(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.delenv(spec.STUBS_ENV, raising=False)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "array-api" not in p])
    for name in [m for m in sys.modules if m.startswith("array_api_stubs")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        __import__("array_api_stubs")
        pytest.skip("array_api_stubs is installed here")
    except ImportError:
        pass
    with pytest.raises(SystemExit):
        spec.main(["--check"])
    err = capsys.readouterr().err
    assert "--stubs" in err and spec.STUBS_ENV in err


def test_stubs_from_the_environment_variable_are_read(monkeypatch, tmp_path) -> None:
    pkg = tmp_path / "array_api_stubs" / f"_{spec.VERSION.replace('.', '_')}"
    pkg.mkdir(parents=True)
    (tmp_path / "array_api_stubs" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("raise ImportError('planted stubs reached')\n")
    monkeypatch.setenv(spec.STUBS_ENV, str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [m for m in sys.modules if m.startswith("array_api_stubs")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match="planted stubs reached"):
        spec.from_stubs()
