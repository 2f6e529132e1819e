"""The standard's ``fft`` extension (``arrayx.fft``); definitions live in ``arrayx.api.fft``."""
from arrayx.api.fft import *  # noqa: F401,F403
from arrayx.api.fft import __all__  # noqa: F401
