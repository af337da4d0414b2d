"""The pytest session of the benchmark: one `RunPlan` and one `BeamSession` per pytest config, and their parts.

`state` holds the two objects; the modules beside it are the jobs they do (planning at
configure, the start, collection, fixtures, the model side, graph services, conversations, a
question's step and its outcome, the estimate, xdist scheduling, progress, the collector of
results). Only `state` is imported eagerly, so `pytest --help` stays light.
"""

from .plan import RunPlan
from .state import BeamSession, get_session

__all__ = ["BeamSession", "RunPlan", "get_session"]
