"""Sphinx configuration for the dpgauss documentation."""

import importlib.util
from pathlib import Path

import dpgauss

project = "dpgauss"
author = "The dpgauss developers"
copyright = "2026, The dpgauss developers"
release = dpgauss.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"members": True}
templates_path = ["_templates"]
exclude_patterns = ["_build"]
# No intersphinx: the documentation builds offline, with nothing downloaded.

# The gallery: every examples/plot_*.py is run (matplotlib's Agg canvas) and
# rendered with its output and figures. Offline: no Binder or JupyterLite
# links, no links into other projects' documentation, and the examples simulate
# their data. A failing example fails the build.
_HERE = Path(__file__).resolve().parent
sphinx_gallery_conf = {
    "examples_dirs": str(_HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reference_url": {},
    "binder": {},
    "jupyterlite": None,
    "download_all_examples": False,
    "show_memory": False,
    "plot_gallery": "True",
    "remove_config_comments": True,
}

html_theme = (
    "pydata_sphinx_theme"
    if importlib.util.find_spec("pydata_sphinx_theme")
    else "alabaster"
)
html_title = f"dpgauss {release}"
