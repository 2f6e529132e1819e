"""Executor tests: one module per executor (``test_<name>*.py``) for what is particular to it.

Every function of the standard on every executor against the NumPy executor is the table's eager
sweep (``conformance/test_differential.py``: drawn calls and the hand-picked examples of
``conformance/differential/table/examples.py``), with Numba's own kernels and Dask's multi-chunk paths.
"""
