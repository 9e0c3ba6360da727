"""Sphinx configuration for the dpgauss documentation."""

import importlib.util

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
]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"members": True}
templates_path = ["_templates"]
exclude_patterns = ["_build"]
# No intersphinx: the documentation builds offline, with nothing downloaded.

html_theme = (
    "pydata_sphinx_theme"
    if importlib.util.find_spec("pydata_sphinx_theme")
    else "alabaster"
)
html_title = f"dpgauss {release}"
