"""The benchmark's one test function; the plugin parametrizes it with every selected question.

Answering and judging happen in the `beam_outcome` fixture (setup), so a model or Neo4j fault
is reported as an error; the test body only records metrics and decides pass or fail.
"""

from pytest_beam.session.verdict import check_outcome


def test_question(beam_outcome, beam_session, request, snapshot):
    check_outcome(beam_outcome, beam_session, request.node.user_properties, snapshot)
