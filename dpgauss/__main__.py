"""``python -m dpgauss``: the same as the ``dpgauss`` command."""

import sys

from dpgauss._cli import main

sys.exit(main())
