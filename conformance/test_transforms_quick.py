"""The quick conformance pass of CI: ``python -m conformance``'s matrix for jit, vmap and grad, one example each.

Every row of the matrix (the differential table and the PRNG rows) runs under ``jit``, ``vmap``
and ``grad`` on every available executor, each compared with the same transform on the NumPy
executor (``matrix.run_row``; the PRNG rows of ``matrix.QUICK_RANDOM``); eager calls are ``test_differential.py``'s and, for the PRNG,
``tests/test_random.py``'s.  A cell that is DIFFERS, ERROR or an unlisted gap fails,
with its first failing input and both results.  The examples per row and
transform are the test profile's (``conformance.profile``: ``ARRAYX_TEST_PROFILE=ci|deep``).
"""
from __future__ import annotations

import pytest

from arrayx.core import executor as _base
from conformance import __main__ as cli
from conformance import matrix, profile

EXAMPLES = profile.current().transform_examples
TRANSFORMS = ("jit", "vmap", "grad")

#: (row, transform, executor) -> what is wrong and who is fixing it: expected failures until fixed
#: (a fixed one shows as XPASS and its line goes)
KNOWN: dict[tuple[str, str, str], str] = {}


ROWS = matrix.entries(quick=True)

#: executors whose vmap and grad cells are rotated in a sampled profile (ci): eagerly on the jax
#: executor each operation compiles an XLA program per shape and dtype, and the vmap and grad cells
#: there were two thirds of this file's CPU time (grad alone half, some 330 programs).  There, every
#: row runs jit (the whole function as one program: the lowering, which no other cell exercises), and
#: vmap and grad each take every ``TURNS``-th of the rows they can apply to (``matrix.never_applies``:
#: a row with no array input, or no real floating one for grad, is n/a there anyway: about a half of
#: the cells that ran there before, which took vmap on even rows and grad on odd ones), vmap from the
#: first such row and grad from the third; the rules themselves run on every row on the other
#: executors.  The deep profile runs every cell.
ROTATED = ("jax",)
TURNS = 4


def _applicable_positions(transform: str) -> dict[int, int]:
    """Row index -> its position among the rows of ``ROWS`` that ``transform`` can apply to."""
    rows = [i for i, fn in enumerate(ROWS) if matrix.never_applies(fn, transform) is None]
    return {i: k for k, i in enumerate(rows)}


_POSITIONS = {t: _applicable_positions(t) for t in ("vmap", "grad")}
_OFFSET = {"vmap": 0, "grad": 2}


def _runs(index: int, transform: str, executor: str) -> bool:
    """Whether row ``index`` of ``ROWS`` runs ``transform`` on ``executor`` (a row where the transform
    cannot apply runs it everywhere: every executor's cell is n/a, no executor runs anything)."""
    if executor not in ROTATED or not profile.current().sampled or transform == "jit":
        return True
    position = _POSITIONS[transform].get(index)
    return position is None or position % TURNS == _OFFSET[transform]


@pytest.mark.parametrize("fn", ROWS, ids=[f.name for f in ROWS])
def test_transforms_agree_with_numpy(fn, request) -> None:
    executors = [n for n in _base.registered() if _base.get(n).available()]
    transforms = TRANSFORMS
    known = {(t, e): why for (row, t, e), why in KNOWN.items() if row == fn.name}
    if known:
        request.applymarker(pytest.mark.xfail(reason="; ".join(known.values()), strict=False))
    index = ROWS.index(fn)
    open_table = matrix.open_issues()
    cells = {}
    for t in transforms:  # each transform draws its own examples (matrix.run_row): one call per transform
        on = [e for e in executors if _runs(index, t, e)]
        cells[t] = matrix.run_row(fn, on, (t,), EXAMPLES, open_table=open_table)["cells"][t]
    bad = []
    for t in transforms:
        for e, cell in cells[t].items():
            if cell["status"] in cli.FAILING:
                first = cell["failures"][0] if cell["failures"] else {}
                bad.append(f"{fn.name} / {t} / {e}: {cell['status']}: {first.get('detail', '')}\n"
                           f"    input: {first.get('input', '')}\n    got:   {first.get('got', '')}\n"
                           f"    NumPy: {first.get('want', '')}")
    assert not bad, "\n".join(bad)


def test_the_rotated_cells_still_cover_every_transform() -> None:
    """In the ci profile the jax executor runs jit on every row, and vmap and grad on every TURNS-th row
    they apply to; the other executors run every cell (and the deep profile every cell everywhere)."""
    sampled = profile.current().sampled
    for t in TRANSFORMS:
        on_jax = [i for i in range(len(ROWS)) if _runs(i, t, "jax") and i in _POSITIONS.get(t, range(len(ROWS)))]
        assert all(_runs(i, t, e) for i in range(len(ROWS)) for e in ("numpy", "numba", "dask"))
        if t == "jit" or not sampled:
            assert len(on_jax) == len(ROWS) if t == "jit" else len(on_jax) == len(_POSITIONS[t])
        else:
            assert len(on_jax) == len(range(_OFFSET[t], len(_POSITIONS[t]), TURNS)) > 20, (t, len(on_jax))
