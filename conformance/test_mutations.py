"""conformance/mutations.py: the sweeps a test belongs to, and a patch ported to where its lines moved."""
from __future__ import annotations

import json
import pathlib

from conformance import mutations

HERE = pathlib.Path(__file__).parent


def test_tests_fall_into_the_stored_sweeps():
    assert mutations.sweep_of("conformance/test_differential.py::test_agrees_with_numpy[numba-max]") == "differential"
    assert mutations.sweep_of("tests/api/test_elementwise.py::test_binary_matches_numpy[jax-add]") == "elementwise-sweep"
    assert mutations.sweep_of("conformance/test_transforms_quick.py::test_transforms_agree_with_numpy[sin]") \
        == "transforms_quick"
    assert mutations.sweep_of("tests/api/test_elementwise.py::test_something_else") == "rest"
    stored = json.loads((HERE / "results" / "mutations.json").read_text())
    assert set(mutations.SWEEPS) | {"rest"} <= set(stored["sweeps"])


def test_a_patch_whose_file_moved_is_applied_where_the_line_is_now(tmp_path):
    moved = tmp_path / "arrayx" / "executors" / "numba"
    moved.mkdir(parents=True)
    (moved / "kernels.py").write_text('A = 1\n    "trunc": (_FLOAT, "same", "np.trunc(a)"),\nB = 2\n')
    patch = ('--- a/arrayx/executors/_numba_kernels.py\n+++ b/arrayx/executors/_numba_kernels.py\n@@ -1,3 +1,3 @@\n'
             ' A = 1\n-    "trunc": (_FLOAT, "same", "np.trunc(a)"),\n+    "trunc": (_FLOAT, "same", "np.floor(a)"),\n B = 2\n')
    assert mutations.port(patch, tmp_path) == ["arrayx/executors/numba/kernels.py"]
    assert '"np.floor(a)"' in (moved / "kernels.py").read_text() and "np.trunc" not in (moved / "kernels.py").read_text()
    assert "0 files hold" in mutations.port(patch, tmp_path)  # the line is gone: not silently skipped


def test_every_stored_mutation_has_a_patch_and_a_selector():
    stored = json.loads((HERE / "results" / "mutations.json").read_text())
    assert len(stored["mutations"]) == 13
    for m in stored["mutations"]:
        assert m["patch"].startswith("--- a/arrayx/") and m["selector"], m["id"]
