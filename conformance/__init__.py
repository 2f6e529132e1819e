"""Conformance: results must not depend on the executor, and the official array-api-tests pass.

- ``test_parity.py`` (runs in CI): every standard function on every available executor,
  compared with the NumPy executor; an executor that raises NotImplementedError is a gap.
- ``python -m conformance.report``: the parity matrix as a table (function x executor).
- ``python -m conformance.official``: runs the official data-apis/array-api-tests suite against
  arrayx on one executor and compares the failures with ``known_failures/<executor>.txt``.
"""
