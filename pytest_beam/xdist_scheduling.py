"""Keep every question of a conversation on one xdist worker.

xdist's `loadgroup` groups by a `@group` suffix that its worker appends to each nodeid; under
pytest 9 that suffix is no longer written (nodeids moved off `_nodeid`), so the groups silently
fall apart and every worker would start every conversation's Neo4j. This scheduler reads the
conversation straight from the question's id, and keeps xdist's rule for every other item.
"""

from __future__ import annotations

import re

_CONVERSATION = re.compile(r"^beam::test_question\[(conv\d+):")


def make_scheduler(config, log):
    from xdist.scheduler import LoadGroupScheduling

    class ConversationScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            found = _CONVERSATION.match(nodeid)
            return found.group(1) if found else super()._split_scope(nodeid)

    return ConversationScheduling(config, log)
