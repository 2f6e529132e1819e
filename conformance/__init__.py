"""Conformance: results must not depend on the executor, and the official array-api-tests pass.

- ``python -m conformance`` (``__main__.py``, ``matrix.py``, ``capabilities.py``, ``html.py``): the
  report: every function, operator and PRNG draw x executor x (eager, jit, vmap, grad) on the
  differential suite's inputs, capabilities from the executors' tables, JSON and an HTML page;
  ``test_transforms_quick.py`` is its quick pass in CI, ``test_report.py`` tests it.
- ``test_parity.py`` (runs in CI): every standard function on every available executor,
  compared with the NumPy executor; an executor that raises NotImplementedError is a gap.
- ``python -m conformance.report``: the parity matrix as a table (function x executor).
- ``differential/`` and ``test_differential.py``: hypothesis-drawn calls of every function and
  operator, each executor against NumPy (quick profile in CI; ``python -m conformance.differential``
  for the deep one); ``deviations.py``: what an executor truly cannot match, pinned by
  ``test_deviations.py``.
- ``python -m conformance.official``: runs the official data-apis/array-api-tests suite against
  arrayx on one executor and compares the failures with ``known_failures/<executor>.txt``.
"""
