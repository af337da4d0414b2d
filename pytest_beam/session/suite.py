"""The benchmark's one test function; the plugin parametrizes it with every selected question.

Answering and judging happen in the `beam_record` fixture (setup), so a model or Neo4j fault
is reported as an error; the test body only records the result and decides pass or fail.
"""

from pytest_beam.session.verdict import check_outcome


def test_question(beam_record, beam_session, request, snapshot):
    check_outcome(beam_record, beam_session.settings, beam_session.config, request.node.user_properties, snapshot)
