"""The fixtures every question uses: the session, a conversation's system, the question's record.

Registered as a plugin per config (see `hooks.BeamSessionPlugin`); each fixture reaches the
config's BeamSession through `request.config`, never through module state, and its parts
through the session: `conversations` opens and closes a system's run, `questions` answers and
scores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ..data.records import ProbingQuestion
from .conversations import ConversationRun
from .state import BeamSession, get_session

if TYPE_CHECKING:
    from ..results.question_record import QuestionRecord


@pytest.fixture(scope="session")
def beam_session(request: pytest.FixtureRequest) -> BeamSession:
    """This process's BeamSession (its parts call no model and start nothing until a question needs them)."""
    session = get_session(request.config)
    assert session is not None, "the beam fixtures are registered only with a BeamSession, started before any test"
    return session


@pytest.fixture(scope="session")
def beam_conversation(request: pytest.FixtureRequest, beam_session: BeamSession) -> Iterator[ConversationRun]:
    """One system on one conversation (a `SystemRun`), ingested once; closed after its questions."""
    run = request.param
    conversations = beam_session.conversations
    conversation = conversations.open(run.conversation_id, run.system)
    yield conversation
    conversations.close(conversations.run_key(run.system, run.conversation_id))


@pytest.fixture
def beam_record(beam_question: ProbingQuestion, beam_conversation: ConversationRun, beam_session: BeamSession,
                request: pytest.FixtureRequest) -> QuestionRecord:
    """Answer and judge in setup, so an infrastructure fault is an ERROR, never a score. An answer
    whose judging failed still goes on the item (so into the record), unscored."""
    from .verdict import record_unjudged

    def upcoming() -> list[ProbingQuestion]:
        """The questions this process will ask of this system's conversation, this one first."""
        from .question_pool import upcoming as upcoming_items
        from .system_choice import SystemRun

        run = request.node.callspec.params["beam_conversation"]
        out: list[ProbingQuestion] = []
        for item in upcoming_items(request.session, request.node):
            params = getattr(getattr(item, "callspec", None), "params", {})
            if params.get("beam_conversation") != run:  # a run's items are contiguous: its last one passed
                break
            question = params.get("beam_question")
            if isinstance(question, ProbingQuestion):
                out.append(question)
        return out if isinstance(run, SystemRun) else [beam_question]

    return beam_session.questions.record_of(
        beam_question, beam_conversation,
        unjudged_answer=lambda result: record_unjudged(result, request.node.user_properties), upcoming=upcoming)
