"""Keep every question of a conversation on one xdist worker.

xdist's public `--dist loadgroup` groups by a `@group` suffix that its worker appends to each
nodeid; under pytest 9 that suffix is no longer written (nodeids moved off `_nodeid`), so the
groups silently fall apart and every worker would start every conversation's Neo4j. No public
hook chooses an item's group, so this scheduler (returned from the public
`pytest_xdist_make_scheduler` hook) overrides `LoadGroupScheduling._split_scope` to read the
conversation from the question's id and keeps xdist's rule for every other item. That method is
private: pyproject.toml pins the pytest-xdist range it was checked against, and
tests/test_plugin_collection.py checks the behaviour (a conversation's items on one worker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xdist.scheduler import LoadGroupScheduling


def conversation_of(nodeid: str) -> str | None:
    """The conversation of a question's item (`conv17`, `500K/conv3`), whatever system answers it:
    every system of a conversation goes to the same worker, which loads its data once."""
    from ..data.ids import item_id_of_nodeid

    item = item_id_of_nodeid(nodeid)
    return item.question.conversation_label if item else None


def make_scheduler(config: pytest.Config, log: object) -> LoadGroupScheduling | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ConversationScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return conversation_of(nodeid) or super()._split_scope(nodeid)

    return ConversationScheduling(config, log)
