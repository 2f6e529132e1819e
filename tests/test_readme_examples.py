"""The README's Python examples run, in order, as a reader would paste them.

A block whose comment names ``TypeError`` shows a refusal: it must raise exactly that.  Run in a
subprocess with two virtual devices (the sharding example's mesh) and the numpy executor default.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

_SCRIPT = r"""
import json, sys
blocks = json.loads(sys.argv[1])
ns = {}
for i, block in enumerate(blocks):
    if "# TypeError" in block:
        try:
            exec(block, ns)
        except TypeError:
            continue
        raise AssertionError(f"README block {i} should raise TypeError:\n{block}")
    exec(block, ns)
print("README blocks ran:", len(blocks))
"""


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("numba", "jax", "dask")),
                    reason="the README's executor example uses numba, jax and dask")
def test_the_readme_python_examples_run():
    code = blocks()
    assert len(code) >= 5 and code[0].startswith("import arrayx as xp")
    env = dict(os.environ, ARRAYX_VIRTUAL_DEVICES="2", ARRAYX_EXECUTOR="numpy",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(code)], capture_output=True, text=True,
                         timeout=600, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"README blocks ran: {len(code)}" in out.stdout
