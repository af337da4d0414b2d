"""The pytest session of the benchmark: one `RunPlan` and one `BeamSession` per pytest config, and their parts.

`plan` and `state` hold the two objects; the modules beside them are the jobs they do (planning at
configure, the start, collection, fixtures, the model side, graph services, conversations, a
question's step and its verdict, the dry run, xdist scheduling, progress, the gathering of
results). Only `plan` and `state` are imported eagerly, so `pytest --help` stays light.
"""

from .plan import RunPlan
from .state import BeamSession, get_session

__all__ = ["BeamSession", "RunPlan", "get_session"]
