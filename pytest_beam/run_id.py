"""A run's id (the name of its folder under the results directory); no imports beyond the standard library."""

from __future__ import annotations

import time
import uuid


def new_run_id() -> str:
    """The run's start time to the second, then six hex digits, so two runs started in the same
    second never share a folder."""
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
