"""The fixtures every question uses: this process's runtime, a conversation's system, the outcome.

Registered as a plugin per config (see `hooks.BeamSessionPlugin`); each fixture reaches the
config's BeamSession through `request.config`, never through module state.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..data.records import ProbingQuestion
from .runtime import ConversationRun, Outcome, Runtime
from .state import get_session


@pytest.fixture(scope="session")
def beam_runtime(request: pytest.FixtureRequest) -> Runtime:
    """This process's model client, services and systems (built on first use)."""
    session = get_session(request.config)
    assert session is not None, "the beam fixtures are registered only with a BeamSession"
    return session.get_runtime()


@pytest.fixture(scope="session")
def beam_conversation(request: pytest.FixtureRequest, beam_runtime: Runtime) -> Iterator[ConversationRun]:
    """One system on one conversation (a `SystemRun`), ingested once; closed after its questions."""
    run = request.param
    conversation = beam_runtime.open_conversation(run.conversation_id, run.system)
    yield conversation
    beam_runtime.close_conversation(beam_runtime.run_key(run.system, run.conversation_id))


@pytest.fixture
def beam_outcome(beam_question: ProbingQuestion, beam_conversation: ConversationRun, beam_runtime: Runtime,
                 request: pytest.FixtureRequest) -> Outcome:
    """Answer and judge in setup, so an infrastructure fault is an ERROR, never a score. An answer
    whose judging failed still goes on the item (so into the record), unscored."""
    from .outcome import record_unjudged

    return beam_runtime.answer_and_score(
        beam_question, beam_conversation,
        unjudged_answer=lambda outcome: record_unjudged(outcome, request.node.user_properties))
