"""The standard's ``linalg`` extension (``arrayx.linalg``); definitions live in ``arrayx.api.linalg``."""
from arrayx.api.linalg import *  # noqa: F401,F403
from arrayx.api.linalg import EXTENSION_ALL as __all__  # noqa: F401
