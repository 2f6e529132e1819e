"""What ``arrayx.api`` gets from the layers above it, handed in when they are imported.

``arrayx.api`` builds on ``arrayx.core`` only, so it never imports the transforms or the assembled
``arrayx`` module; they fill these slots instead:

- ``namespace``: the ``arrayx`` module (set last by ``arrayx/__init__.py``): what
  ``x.__array_namespace__()`` returns, and where NumPy's protocols (``_numpy_dispatch``,
  ``_numpy_methods``) look functions up by name;
- ``while_loop``: ``arrayx.while_loop`` (set by ``arrayx.transforms.control_flow``): indexing's
  loops over a traced count.
"""
from __future__ import annotations

namespace = None
while_loop = None
