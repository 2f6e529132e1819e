"""The documentation site builds, and its executors page shows the table and a benchmark plot in a browser.

Needs Sphinx (the ``docs`` extra) and a headless Chromium (``apt-get install chromium``); skipped
without them.  The build goes to a temporary folder; only the generated API pages (``docs/api/``,
ignored by git) are written inside the checkout, as every docs build writes them.
"""
from __future__ import annotations

import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXECUTORS = ("numpy", "numba", "jax", "dask", "cupy")

# builds the whole site and opens it in a browser: the slow tier (.ci/run builds the site itself)
pytestmark = pytest.mark.slow


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


needs_sphinx = pytest.mark.skipif(importlib.util.find_spec("sphinx") is None,
                                  reason="no Sphinx here: pip install -e '.[docs]'")
needs_browser = pytest.mark.skipif(_browser() is None, reason="no headless browser (chromium) here: apt-get install chromium")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("docs")
    html = out / "html"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(out / "doctrees"), str(ROOT / "docs"), str(html)],
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return html


# after the load event, the page records each image's source and decoded width in the DOM
_PROBE = """<script>window.addEventListener("load", function () {
  var out = [];
  for (var i = 0; i < document.images.length; i++) {
    var im = document.images[i];
    out.push(im.getAttribute("src") + "=" + (im.complete ? im.naturalWidth : -1));
  }
  document.body.setAttribute("data-images", out.join(" "));
});</script>"""


def _dom(browser: str, page: pathlib.Path) -> str:
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "<html" in out.stdout, out.stderr[-2000:]
    return out.stdout


@needs_sphinx
def test_the_site_has_every_page_and_the_api_reference(site):
    for page in ("index", "getting-started", "executors", "transforms", "sharding", "semantics",
                 "conformance", "benchmarks", "design", "api/index", "api/arrayx", "api/linalg", "api/random"):
        assert (site / f"{page}.html").is_file(), page
    api = (site / "api" / "arrayx.html").read_text()
    for name in ("arrayx.grad", "arrayx.vmap", "arrayx.jit", "arrayx.asarray", "arrayx.Array", "arrayx.strict"):
        assert f'id="{name}"' in api, name
    for plot in pathlib.Path(ROOT / "benchmarks" / "results" / "plots").glob("*.png"):
        if "-" not in plot.stem:  # the tagged variants (lax-lax.png) are not shown
            assert (site / "_images" / plot.name).is_file(), plot.name


@needs_sphinx
@needs_browser
def test_the_executors_page_shows_the_table_and_a_plot_in_a_browser(site):
    page = site / "executors.html"
    probe = site / "executors-probe.html"  # beside the page, so its relative links resolve the same
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    dom = _dom(_browser(), probe)
    table = re.search(r'<table[^>]*executors-table.*?</table>', dom, re.S)
    assert table, "no executors table in the page"
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(0), re.S)
    assert "fusion under" in rows[0] and "limits and known deviations" in rows[0]
    firsts = [re.sub(r"<[^>]+>", "", re.search(r"<td[^>]*>(.*?)</td>", r, re.S).group(1)).strip() for r in rows[1:]]
    assert tuple(firsts) == EXECUTORS
    images = dict(item.rsplit("=", 1) for item in re.search(r'data-images="([^"]*)"', dom).group(1).split())
    plots = {src: int(width) for src, width in images.items() if src.endswith("executors_numba.png")}
    assert plots and all(w > 0 for w in plots.values()), images  # the plot's file was found and decoded
