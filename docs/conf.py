"""Sphinx configuration of sb3-maxdiff's documentation (``sphinx-build -W docs docs/_build``)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

project = "sb3-maxdiff"
author = "sb3-maxdiff contributors"
copyright = "sb3-maxdiff contributors"  # noqa: A001  (Sphinx's setting)
release = (ROOT / "sb3_maxdiff" / "version.txt").read_text().strip()

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
# the lab notebook and the per-run data are not pages of the documentation
exclude_patterns = ["_build", "reproduction"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
