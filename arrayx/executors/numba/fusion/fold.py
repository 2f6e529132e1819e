"""Folds over a block of values, called by the fused kernels (``numba.fusion.lowering``).

A fused kernel computes one block of a region's values into a small buffer with a loop LLVM
vectorises, then folds the buffer with one of these.  They are separate (not inlined) functions
so that only they are compiled with ``reassoc``: a fused kernel itself must not be, since
reassociation would undo the rounding tricks of the inline transcendentals (``numba.math``).

Importing this module imports Numba: only the generated kernels import it.
"""
from __future__ import annotations

from numba import njit

_FOLD = dict(nogil=True, error_model="numpy")
_SUMS = dict(_FOLD, fastmath={"reassoc", "contract"})  # a vectorised, reassociated sum


@njit(**_SUMS)
def sum_block(t, n, zero):
    """t[0] + ... + t[n-1], starting from ``zero`` (of the accumulator dtype)."""
    s = zero
    for i in range(n):
        s += t[i]
    return s


@njit(**_FOLD)
def prod_block(t, n, one):
    """t[0] * ... * t[n-1], in order."""
    p = one
    for i in range(n):
        p *= t[i]
    return p


@njit(inline="always")
def _max2(a, v):
    """NumPy's maximum: the larger, a NaN from either side wins."""
    return a if (a > v) | (a != a) else v


@njit(inline="always")
def _min2(a, v):
    return a if (a < v) | (a != a) else v


# max/min in eight interleaved lanes: one running value is a chain of dependent compare-selects
# (~2 cycles each); eight independent ones run side by side (~1.9x on a block)

def _eight_lanes(pick, doc: str):
    """A block fold keeping eight running values of ``pick`` (a NaN-winning max or min)."""
    @njit(**_FOLD)
    def block(t, n, acc):
        m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = acc
        n8 = n - n % 8
        for i in range(0, n8, 8):
            m0, m1, m2, m3 = pick(m0, t[i]), pick(m1, t[i + 1]), pick(m2, t[i + 2]), pick(m3, t[i + 3])
            m4, m5, m6, m7 = pick(m4, t[i + 4]), pick(m5, t[i + 5]), pick(m6, t[i + 6]), pick(m7, t[i + 7])
        for i in range(n8, n):
            m0 = pick(m0, t[i])
        return pick(pick(pick(m0, m1), pick(m2, m3)), pick(pick(m4, m5), pick(m6, m7)))

    block.__doc__ = doc
    return block


max_block = _eight_lanes(_max2, "The largest of ``acc`` and t[:n]; a NaN wins (NumPy's ``max``).")
min_block = _eight_lanes(_min2, "The smallest of ``acc`` and t[:n]; a NaN wins (NumPy's ``min``).")


@njit(**_FOLD)
def any_block(t, n, acc):
    for i in range(n):
        acc |= t[i]
    return acc


@njit(**_FOLD)
def all_block(t, n, acc):
    for i in range(n):
        acc &= t[i]
    return acc


@njit(**_SUMS)
def mean_m2_block(t, n, count, zero):
    """(mean of t[:n], sum of squared deviations from it): two passes over a block in cache
    (``count`` is n and ``zero`` 0 in t's dtype: a float32 block stays float32)."""
    s = zero
    for i in range(n):
        s += t[i]
    m = s / count
    q = zero
    for i in range(n):
        d = t[i] - m
        q += d * d
    return m, q


@njit(**_FOLD)
def chan_join(count, mean, m2, n, mean_b, m2_b):
    """(count, mean, m2) of two groups joined (Chan et al.'s update, stable for any sizes)."""
    total = count + n
    delta = mean_b - mean
    mean = mean + delta * (n / total)
    m2 = m2 + m2_b + delta * delta * (count * (n / total))
    return total, mean, m2
