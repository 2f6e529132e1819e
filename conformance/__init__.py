"""Conformance: results must not depend on the executor, and the official array-api-tests pass.

- ``python -m conformance`` (``__main__.py``, ``matrix.py``, ``capabilities.py``, ``html.py``): the
  report: every function, operator and PRNG draw x executor x (eager, jit, vmap, grad) on the
  differential suite's inputs, capabilities from the executors' tables, JSON and an HTML page;
  ``test_transforms_quick.py`` is its quick pass in CI, ``test_report.py`` tests it.
- ``differential/table/``: the one function table, one module per spec category: each function's
  drawn inputs (dtypes, value ranges, keyword domains), its hand-picked examples (``examples.py``)
  and the derivative examples with their reference derivatives (``derivatives.py``).  The sweeps
  are generated from it: eager on every executor (``test_differential.py``: drawn calls and the
  examples; ``python -m conformance.differential`` for the deep profile), jit/vmap/grad on every
  executor (``test_transforms_quick.py``), derivatives (``tests/transforms/test_ad_functions.py``).
  An executor that raises NotImplementedError is a gap (``gaps.py``); ``deviations.py``: what an
  executor truly cannot match, pinned by ``test_deviations.py``.
- ``compare.py``: the one comparator and its dtype-aware tolerance rule; ``profile.py``: the one
  sampling knob (``ARRAYX_TEST_PROFILE=ci|deep``).
- ``python -m conformance.report``: the hand-picked examples as a table (function x executor).
- ``python -m conformance.official``: runs the official data-apis/array-api-tests suite against
  arrayx on one executor and compares the failures with ``known_failures/<executor>.txt``.
"""
