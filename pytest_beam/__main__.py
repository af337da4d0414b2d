"""``python -m pytest_beam report ...`` (the same as the ``pytest-beam`` command)."""

import sys

from .cli import main

sys.exit(main())
