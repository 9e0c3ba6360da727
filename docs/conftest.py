"""pytest configuration for the doctests of the documentation pages.

The tutorial runs on statsmodels' bundled ``fair`` table. statsmodels is in
the ``tests`` extra, so the clean-clone CI runs the page; without it (a bare
``pip install dpgauss`` and pytest) the page is skipped rather than failed.
"""

from importlib.util import find_spec

collect_ignore = [] if find_spec("statsmodels") else ["tutorial.rst"]
