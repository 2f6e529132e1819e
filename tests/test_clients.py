"""scikit-learn, SciPy and array-api-extra driven through arrayx arrays on every executor, each call
compared with the same call on the NumPy executor (the calls: tests/clients.py).

The calls run in one subprocess per executor (SciPy reads ``SCIPY_ARRAY_API`` at import, and this
process may have imported SciPy without it).  ``CLIENT_SIDE`` lists what fails on the NumPy executor
too, with the reason in the client, ``EXECUTOR_SIDE`` what one executor still fails; a listed call
that starts working fails the test, so both tables stay true.  Reproduce one executor's outcomes with ``python -m tests.clients dask``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from arrayx.core import executor as base
from tests.clients import CALLS

for _lib in ("sklearn", "scipy", "array_api_extra"):
    pytest.importorskip(_lib)

_EIGH = ("scipy.linalg.eigh inside returns NumPy arrays, which the client mixes with arrayx ones into its "
         "fitted attributes (its namespace check at predict refuses them)")
#: call id -> why the client fails whatever the executor (also on the NumPy executor)
CLIENT_SIDE = {
    "sklearn:LDA(eigen).predict": _EIGH,
    "sklearn:LDA(eigen).predict_proba": _EIGH,
    "sklearn:LDA(eigen).decision_function": _EIGH,
    "sklearn:LDA(eigen).score": _EIGH,
    "sklearn:LDA(eigen,shrinkage).predict": _EIGH,
    "sklearn:Ridge(cholesky).predict": "scikit-learn's array-API Ridge supports solver='svd' only",
    "sklearn:Ridge(lbfgs).predict": "scikit-learn's array-API Ridge supports solver='svd' only",
    "sklearn:GaussianMixture.predict": "init_params='kmeans' is refused under array_api_dispatch",
    "sklearn:metrics.matthews_corrcoef": "mixes arrayx with its own array_api_compat.numpy arrays",
    "sklearn:metrics.roc_auc_score": "calls xp.diff(x, 1) positionally (the standard's n is keyword-only)",
    "sklearn:metrics.roc_curve": "calls xp.diff(x, 1) positionally (the standard's n is keyword-only)",
    "scipy:signal.argrelmax": "calls the non-standard method x.take()",
}


#: (executor, call id) -> why that executor fails a call the NumPy executor passes (fixed elsewhere)
# (jax's three read-only-buffer failures went with dbe165a: numpy.asarray is writeable)
# (oaconvolve on jax and dask went when permute_dims became a view there: it adds into
# swapaxes(ret)[a:b] and reads ret)
EXECUTOR_SIDE: dict = {}


def outcomes(executor: str) -> dict:
    """Call id -> outcome for every call on ``executor``, from one subprocess."""
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("ARRAYX_EXECUTOR", None)
    out = subprocess.run([sys.executable, "-m", "tests.clients", executor], capture_output=True, text=True,
                         env=env, timeout=2400)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # the client calls rerun in a subprocess per executor
def test_client_calls_match_numpy(executor):
    """Every call gives the NumPy executor's result; the listed failures still fail, as listed.

    One test per executor (not per call): the calls of one executor share one subprocess.
    """
    got = outcomes(executor)
    assert set(got) == {c.id for c in CALLS}
    wrong = []
    for cid, outcome in got.items():
        if cid in CLIENT_SIDE:
            if not outcome.startswith("client:"):
                wrong.append(f"{cid}: listed in CLIENT_SIDE ({CLIENT_SIDE[cid]}) but gave {outcome!r}")
        elif (executor, cid) in EXECUTOR_SIDE:
            if outcome == "ok":
                wrong.append(f"{cid}: works on {executor!r} now; remove it from EXECUTOR_SIDE")
        elif outcome != "ok":
            wrong.append(f"{cid}: {outcome}")
    ok = sum(v == "ok" for v in got.values())
    assert not wrong, f"{len(wrong)} of {len(got)} client calls on {executor!r} went wrong ({ok} ok):\n" + "\n".join(wrong)
    assert ok == len(got) - len(CLIENT_SIDE) - sum(e == executor for e, _ in EXECUTOR_SIDE)


def test_the_harness_is_real():
    """Enough calls, every library represented, and the known failures are calls of the table."""
    ids = {c.id for c in CALLS}
    assert len(ids) == len(CALLS) >= 300
    assert {i.split(":")[0] for i in ids} == {"sklearn", "scipy", "xpx"}
    assert set(CLIENT_SIDE) <= ids and {cid for _, cid in EXECUTOR_SIDE} <= ids
    assert {e for e, _ in EXECUTOR_SIDE} <= set(base.registered())
