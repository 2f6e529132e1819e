"""The fft extension."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.differential import strategies as S
from conformance.differential.table._core import SIGNATURES, _dt, add


def _fft_nd(draw, fn):
    dt = _dt(draw, fn)
    x = draw(S.inputs(dt, draw(S.shapes(1, 3)), fn.values))
    nd = x.values.ndim
    kw = {}
    if draw(st.booleans()):
        axes = tuple(draw(st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd)))
        kw["axes"] = axes
        if draw(st.booleans()):
            kw["s"] = tuple(draw(st.integers(1, 5)) for _ in axes)
    return (x,), kw


def _freq(draw, fn):
    kw = {"d": draw(st.sampled_from([1.0, 0.5, 2.0]))} if draw(st.booleans()) else {}
    if draw(st.booleans()):
        kw["dtype"] = np.dtype(draw(st.sampled_from(["float32", "float64"])))
    return (draw(st.integers(1, 9)),), kw


SIGNATURES.update(fft_nd=_fft_nd, freq=_freq)

# fft
for _name, _cat in (("fft", "floating"), ("ifft", "floating"), ("rfft", "real floating"), ("irfft", "floating"),
                    ("hfft", "floating"), ("ihfft", "real floating")):
    add(f"fft.{_name}", "unary1", _cat, "bounded", kw=("fft_n", "fft_axis", "norm"), tolerance="fft")
for _name, _cat in (("fftn", "floating"), ("ifftn", "floating"), ("rfftn", "real floating"), ("irfftn", "floating")):
    add(f"fft.{_name}", "fft_nd", _cat, "bounded", kw=("norm",), tolerance="fft")
add("fft.fftfreq", "freq", tolerance="fft")
add("fft.rfftfreq", "freq", tolerance="fft")
add("fft.fftshift", "unary", "numeric", kw=("axes",), tolerance="exact")
add("fft.ifftshift", "unary", "numeric", kw=("axes",), tolerance="exact")
