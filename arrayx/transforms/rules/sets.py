"""Rules for the set functions (``arrayx/api/sets.py``): none of them is differentiated
(their results are values selected by equality, counts and indices)."""
from __future__ import annotations

from arrayx.api import sets as se
from arrayx.transforms.rules._define import defjvp_zero

defjvp_zero(se.isin_p, se.unique_all_p, se.unique_counts_p, se.unique_inverse_p, se.unique_values_p)
