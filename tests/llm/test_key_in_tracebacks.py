"""Issue 15 point 7: the API key reaches neither the terminal nor JUnit XML, even with ``pytest -l``.

A real pytest subprocess with --showlocals and --junitxml calls a real HTTP model server that
quotes the Authorization header in its error body (as some endpoints quote the key they refuse).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_beam.llm import EndpointConfig, ModelClient, ModelEndpointError, RoleModels
from tests.model_server import Reply, ScriptedModelServer

KEY = "sk-CANARY-4d1e9b7a2c5f-DO-NOT-LEAK"
PASSWORD = "pw-CANARY-0b3f8e"

INNER = '''
import os

from pytest_beam.llm import EndpointConfig, ModelClient, RoleModels


def call(url):
    config = EndpointConfig(base_url=url, api_key=os.environ["BEAM_API_KEY"], max_retries=1,
                            backoff_base_s=0.001, backoff_max_s=0.002, timeout_s=5)
    client = ModelClient(config, RoleModels(agent="agent-model"))
    client.chat(role="judge", messages=[{"role": "user", "content": "score this"}])


def test_refused_with_the_key_quoted():
    call(os.environ["URL_4XX"])


def test_failing_with_the_key_quoted():
    call(os.environ["URL_5XX"])
'''


@pytest.fixture
def echoing_servers():
    refuse = ScriptedModelServer(default_reply=Reply.fail(401, "Incorrect API key provided: {authorization}")).start()
    crash = ScriptedModelServer(default_reply=Reply.fail(500, "upstream failed for {authorization}")).start()
    try:
        yield refuse, crash
    finally:
        refuse.stop()
        crash.stop()


def test_showlocals_and_junit_xml_never_hold_the_key(tmp_path: Path, echoing_servers):
    refuse, crash = echoing_servers
    (tmp_path / "test_inner.py").write_text(INNER, encoding="utf-8")
    xml = tmp_path / "out.xml"
    env = {**os.environ, "BEAM_API_KEY": KEY, "URL_4XX": refuse.base_url, "URL_5XX": crash.base_url,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-l", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:beam",
         f"--junitxml={xml}", "--tb=long", "-rA", "test_inner.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    output = done.stdout + done.stderr
    assert "2 failed" in output, output[-3000:]
    assert "Incorrect API key provided: Bearer ***" in output  # the body was shown, scrubbed
    assert refuse.request_count == 1 and crash.request_count == 2  # the key was really sent
    assert refuse.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in output and "CANARY" not in output
    assert "CANARY" not in xml.read_text(encoding="utf-8")


def test_credentials_in_the_base_url_are_never_written():
    url = f"http://beam-user:{PASSWORD}@127.0.0.1:9/v1"  # port 9: nothing listens
    traces: list[dict] = []
    config = EndpointConfig(base_url=url, api_key=KEY, max_retries=0, timeout_s=2)
    client = ModelClient(config, RoleModels(agent="agent-model"), trace=traces.append)
    with pytest.raises(ModelEndpointError) as info:
        client.chat(role="agent", messages=[{"role": "user", "content": "hi"}])
    error = info.value
    assert "http://127.0.0.1:9/v1" in str(error)
    texts = [str(error), repr(error), str(vars(error)), repr(config), repr(client), str(traces)]
    for text in texts:
        assert PASSWORD not in text and "beam-user" not in text and KEY not in text
