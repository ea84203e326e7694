"""Allows `python -m driver ...` as an alias of the `fake-dra` console script."""

import sys

from driver.cli import main

sys.exit(main())
