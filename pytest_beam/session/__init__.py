"""The pytest session of the benchmark: one `BeamSession` per pytest config, and its parts.

`state` holds the session object; the modules beside it are the jobs it does (collection,
fixtures, the runtime, a question's outcome, the estimate, xdist scheduling, progress, the
collector of results). Only `state` is imported eagerly, so `pytest --help` stays light.
"""

from .state import BeamSession, get_session

__all__ = ["BeamSession", "get_session"]
