"""The differential suite: hypothesis-drawn calls of every standard function and operator,
each executor compared with the NumPy executor.

- ``strategies.py``: dtypes (all 13), shapes (0-d, size 0, broadcast pairs), special values,
  non-contiguous layouts, Python scalars.
- ``functions.py``: the table of functions, assembled from ``table/`` (one module per spec
  category: its entries and the strategies of their arguments; ``table/_core.py``: ``Fn``,
  keyword domains, shared strategies).
- ``runner.py``: one call on two executors, the comparison, disagreements.
- ``python -m conformance.differential --max-examples 200``: the deep profile; writes
  ``conformance/results/differential.json`` (classes of disagreements with a minimal reproducer,
  each classified against ``conformance/deviations.py``).
- ``conformance/test_differential.py``: the quick profile that runs in CI.
"""
