"""``python -m pytest_beam.cli ...``, as the ``pytest-beam`` command."""

import sys

from . import main

sys.exit(main())
