"""Hindsight, Cognee, LightRAG, neo4j-graphrag and LangMem beside the built-in system in one lite run (issue 44).

The whole plugin in a subprocess with a real local Neo4j (graphrag's, and neo4j-graphrag's with the
APOC procedures it calls), Hindsight and Cognee in their own environments as child processes
(Hindsight on pg0's PostgreSQL), and the scripted model double extended to each library's prompts
(tests/e2e/scripted_peers.py; a test double: nothing here says anything about the systems'
quality). Every process of the run, the children included, refuses any connection that leaves the
machine (tests/e2e/no_network). Checks: the twelve items pass; every library call was metered under
its system's name and is exactly what the relay received and the double served; each system
reports the messages its memories came from; nothing is left of any system's storage.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from pytest_beam.systems import missing_extra
from tests.e2e.scripted_beam import _text
from tests.e2e.scripted_peers import COGNEE_SUMMARY, HINDSIGHT_EXTRACT, PeerAwareModel
from tests.model_server import Reply, ScriptedModelServer

pytestmark = [pytest.mark.e2e, pytest.mark.neo4j]
LEADERS = ["hindsight", "cognee", "lightrag", "neo4j-graphrag", "langmem"]
SYSTEMS = ["graphrag", *LEADERS]
IDS = ["conv17:information_extraction:0", "conv17:multi_session_reasoning:0"]
NO_NETWORK = Path(__file__).parent / "no_network"


def calls(row: dict) -> int:
    return row.get("calls", 0) + row.get("cached_calls", 0) + row.get("replayed_calls", 0) + row.get("errors", 0)


@pytest.fixture(scope="module")
def installed() -> None:
    missing = [line for name in LEADERS if (line := missing_extra(name))]
    if missing:
        pytest.skip("; ".join(missing))


def no_network_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEAM_BASE_URL", "OPENAI_", "BEAM_MODEL"))}
    env["PYTHONPATH"] = os.pathsep.join([str(NO_NETWORK), *filter(None, [env.get("PYTHONPATH")])])
    env["BEAM_CHILD_PYTHONPATH"] = str(NO_NETWORK)
    env["BEAM_NETWORK_LOG"] = str(tmp_path / "network.log")
    return env


def test_the_published_leaders_beside_graphrag_offline_and_metered(installed, tmp_path, beam_data_dir):
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    model = PeerAwareModel()
    with ScriptedModelServer(responder=model) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite", "-v",
               f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
               "--beam-neo4j=local", "--beam-cache=off", f"--beam-results={tmp_path / 'results'}",
               f"--beam-system={','.join(SYSTEMS)}", "--beam-max-calls=400", "--beam-max-tokens=5000000",
               "--beam-snapshot=off", "--beam-judge-check=off"]
        run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=1500,
                             env=no_network_env(tmp_path))
        chat_received = len(server.chat_requests)
    out = run.stdout
    assert run.returncode == 0, out[-6000:] + run.stderr[-3000:]
    assert "12 passed" in out
    assert not (tmp_path / "network.log").exists(), (tmp_path / "network.log").read_text()
    assert model.unknown == []
    for system in LEADERS:
        assert model.served.get(system, 0) > 0, (system, model.served)

    [record_file] = (tmp_path / "results").glob("*/record.json")
    record = json.loads(record_file.read_text())
    by_system = record["usage_by_system"]
    assert list(by_system) == SYSTEMS
    relay = record["relay"]
    for system in LEADERS:
        row = f"{system} extraction"
        # the library's own calls: metered under its name, each one the relay received and the double served
        assert calls(by_system[system][row]) == relay[system]["chat"] == model.served[system] > 0
        assert relay[system]["errors"] == 0 and relay[system]["embeddings"] > 0
        assert set(by_system[system]) == {row, "agent", "judge"}
        assert calls(by_system[system]["agent"]) == 2  # one answering call per question, the shared prompt
    assert chat_received == sum(calls(row) for row in record["usage"].values())

    # every system names the messages its memories came from: message 18 answers the first question
    recall = {(q["system"], q["id"]): q for q in record["questions"]}
    for system in LEADERS:
        first = recall[(system, IDS[0])]
        assert first["evidence_recall"] == 1.0, (system, first["evidence_recall"])
        assert first["outcome"] == "passed"
    # nothing of any system's storage is left in the run's folders
    run_dir = record_file.parent
    leftovers = [p for s in LEADERS for p in run_dir.glob(f"conv17-{s}/*")]
    assert leftovers == [], leftovers


class HeldHindsight(PeerAwareModel):
    """Hindsight's first extraction call waits until the test releases it: the run is mid-ingest then."""

    def __init__(self) -> None:
        super().__init__()
        self.held = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict) -> object:
        if HINDSIGHT_EXTRACT in _text(body):
            self.held.set()
            self.release.wait(120)
        return super().__call__(body)


def _running(marker: str, under: Path | None = None, homes: set[str] | None = None) -> list[str]:
    """Command lines of the running processes that name `marker`: those working under `under`, or
    naming one of `homes` (another run on this machine may have its own)."""
    out = subprocess.run(["ps", "-eo", "pid=,args=", "-ww"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if marker not in args or "ps -eo" in args:
            continue
        if under is not None:
            try:
                if not os.readlink(f"/proc/{pid}/cwd").startswith(str(under)):
                    continue
            except OSError:
                continue
        if homes is not None and not any(home in args for home in homes):
            continue
        found.append(line.strip())
    return found


def _pg0_homes_of(run: subprocess.Popen) -> set[str]:
    """The pg0 folders the run (started in a session of its own) made: their owner is in its session.

    Not every new folder under the system's temp: another worker's Hindsight run (test_replay_leaders
    beside this module under xdist) makes its own at the same time, and it is not this run's to stop
    (a CI run failed on that: the live run's folder, rightly left alone, was taken for this one's)."""
    from pytest_beam.systems.child_process import OWNER_FILE, PG0_PREFIX

    homes = set()
    for home in Path(tempfile.gettempdir()).glob(PG0_PREFIX + "*"):
        try:
            owner = int((home / OWNER_FILE).read_text().strip())
            if os.getsid(owner) == run.pid:
                homes.add(str(home))
        except (OSError, ValueError):  # being made, gone, or its owner already ended
            continue
    return homes


def hindsight_run(tmp_path: Path, server: ScriptedModelServer, beam_data_dir: Path, **streams) -> subprocess.Popen:
    """The lite set on Hindsight alone, started as from a terminal (it takes Ctrl-C) in a session of its own."""
    from tests.e2e.gated_runs import AS_FROM_A_TERMINAL

    cmd = [sys.executable, "-c", AS_FROM_A_TERMINAL, "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
           f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
           "--beam-cache=off", f"--beam-results={tmp_path / 'results'}", "--beam-system=hindsight",
           "--beam-max-calls=400", "--beam-max-tokens=5000000", "--beam-snapshot=off", "--beam-judge-check=off"]
    return subprocess.Popen(cmd, cwd=tmp_path, text=True, env=no_network_env(tmp_path), start_new_session=True,
                            **streams)


def test_ctrl_c_during_hindsight_s_ingest_stops_its_process_and_its_postgresql(installed, tmp_path, beam_data_dir):
    """Ctrl-C while Hindsight waits for a model reply: the run ends as interrupted, and neither the
    child process nor pg0's PostgreSQL (as nobody, in a folder of its own) is left running."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    model = HeldHindsight()
    with ScriptedModelServer(responder=model) as server:
        proc = hindsight_run(tmp_path, server, beam_data_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            assert model.held.wait(300), "Hindsight never asked for its first extraction"
            homes = _pg0_homes_of(proc)  # as root, pg0 runs as nobody in a folder under the system's temp
            postgres = _running("bin/postgres", homes=homes) if homes else _running("bin/postgres", under=tmp_path)
            child = _running("children.hindsight_child", under=tmp_path)
            assert postgres and child, (postgres, child)
            interrupted = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal reaches the whole group
            output, _ = proc.communicate(timeout=180)
            stopped_in = time.monotonic() - interrupted
        finally:
            model.release.set()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 2, output[-4000:]  # interrupted
    # the child, mid-request, is not asked to close (it would answer only once its model call came back)
    assert stopped_in < 45, stopped_in
    assert _running("children.hindsight_child", under=tmp_path) == [], output[-3000:]
    assert (_running("bin/postgres", homes=homes) if homes else _running("bin/postgres", under=tmp_path)) == []
    assert not any(Path(home).exists() for home in homes)


def test_a_run_killed_with_9_leaves_its_postgresql_to_the_next_one_which_stops_it(installed, tmp_path,
                                                                                  beam_data_dir):
    """kill -9 gives the harness no chance to stop pg0's server; the next Hindsight run stops and removes
    what a dead run left (its owner pid is gone), and leaves a live run's alone."""
    from pytest_beam.systems.child_process import OWNER_FILE, PG0_PREFIX, stop_dead_runs_servers
    from pytest_beam.systems.own_env import python_of

    if os.geteuid() != 0:
        pytest.skip("as another user pg0's folder is in the conversation's folder, removed with the run's")
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    model = HeldHindsight()
    with ScriptedModelServer(responder=model) as server:
        proc = hindsight_run(tmp_path, server, beam_data_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # a live run's folder made while this one runs (as another worker's Hindsight run does): not this
        # run's, and the next start must leave it alone
        live = Path(tempfile.mkdtemp(prefix=f"{PG0_PREFIX}17-"))
        (live / OWNER_FILE).write_text(f"{os.getpid()}\n")
        try:
            assert model.held.wait(300), "Hindsight never asked for its first extraction"
            homes = _pg0_homes_of(proc)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
        finally:
            model.release.set()
    try:
        assert str(live) not in homes
        assert homes and _running("bin/postgres", homes=homes), "kill -9 leaves the server: nothing stopped it"
        deadline = time.monotonic() + 60  # the child, its stdin closed and its relay gone, ends by itself
        while _running("children.hindsight_child", under=tmp_path) and time.monotonic() < deadline:
            time.sleep(1)
        assert _running("children.hindsight_child", under=tmp_path) == []
        binary = sorted(python_of("hindsight").parent.parent.glob("lib/python*/site-packages/pg0/bin/pg0"))[0]
        removed = stop_dead_runs_servers(binary)
        assert homes <= set(removed) and str(live) not in removed and live.is_dir()
        assert _running("bin/postgres", homes=homes) == [] and not any(Path(h).exists() for h in homes)
    finally:
        shutil.rmtree(live, ignore_errors=True)


class UnusableSessionOne(PeerAwareModel):
    """What the model writes for the chunk holding `marker` is never JSON: Cognee's summary of it (on each
    of Cognee's tries) and Hindsight's fact extraction (asked once: its own LLM retries are off)."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.broken = {"cognee": 0, "hindsight": 0}

    def __call__(self, body: dict) -> object:
        text = _text(body)
        system = ("cognee" if COGNEE_SUMMARY in text and self.marker in text
                  else "hindsight" if HINDSIGHT_EXTRACT in text and self.marker in text.rsplit("Content:", 1)[-1]
                  else None)
        if system is not None:
            self.broken[system] += 1
            self._count(system)
            return Reply.say("The chat never says.")
        return super().__call__(body)


def test_hindsight_and_cognee_go_on_past_a_session_whose_replies_stay_unusable(installed, tmp_path, beam_data_dir):
    """A session whose replies stay unusable: Hindsight fails its whole retain (it commits a session whole
    or not at all), Cognee's cognify gives up after its tries (and would read the session again at the
    next cognify). Each is one empty extraction, named in the record; the other session is stored and
    recalled, and every question is answered."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nbeam_mode = lite\n")
    model = UnusableSessionOne("three kids")
    with ScriptedModelServer(responder=model) as server:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "lite",
               f"--beam-data={beam_data_dir}", f"--beam-base-url={server.base_url}", "--beam-model=scripted",
               "--beam-cache=off", f"--beam-results={tmp_path / 'results'}", "--beam-system=hindsight,cognee",
               "--beam-max-calls=400", "--beam-max-tokens=5000000", "--beam-pass-score=0", "--beam-snapshot=off",
               "--beam-judge-check=off"]
        run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                             env=no_network_env(tmp_path))
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert "4 passed" in run.stdout
    assert model.broken["hindsight"] == 1 and model.broken["cognee"] > 1  # Cognee tried again, Hindsight did not
    [record_file] = (tmp_path / "results").glob("*/record.json")
    record = json.loads(record_file.read_text())
    graph = record["graph"]
    for system, note in (("hindsight", "hindsight: session 1 left out: the model's replies were unusable (hindsight"),
                         ("cognee", "cognee: session 1's cognify left out: the model's replies were unusable")):
        ingest = graph[f"{system}/17"]
        assert ingest["empty_extractions"] == 1, (system, ingest)
        [lost] = [n for n in ingest["notes"] if "left out" in n]
        assert lost.startswith(note), lost
    recall = {(q["system"], q["id"]): q["evidence_recall"] for q in record["questions"]}
    assert recall[("hindsight", "conv17:multi_session_reasoning:0")] > 0  # session 3 is there
    assert recall[("cognee", "conv17:multi_session_reasoning:0")] > 0


PROBE_WAITS = """
import json, tenacity
from pytest_beam.systems.children import cognee_child
cognee_child._no_retry_time_floor()
changed = cognee_child._no_waits_between_tries()
from cognee.infrastructure.llm.structured_output_framework.litellm_native.native_adapter import NativeLiteLLMAdapter
policy = NativeLiteLLMAdapter.acreate_structured_output.retry
print(json.dumps({"changed": changed, "wait": type(policy.wait).__name__, "stop": type(policy.stop).__name__,
                  "attempts": getattr(policy.stop, "max_attempt_number", None)}))
"""


def test_cognee_tries_an_unusable_reply_again_without_the_waits_meant_for_a_rate_limit(installed):
    """Cognee waited 8 to 128 s before each new try of a structured call: seconds per unusable reply,
    for nothing the harness's transport had not already waited out. Its tries stay (two: the time
    floor is gone, _no_retry_time_floor); its waits go, in every adapter the relay can be reached by."""
    from pytest_beam.systems.own_env import python_of

    done = subprocess.run([str(python_of("cognee")), "-c", PROBE_WAITS], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
                               "TELEMETRY_DISABLED": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert (probe["wait"], probe["stop"], probe["attempts"]) == ("wait_none", "stop_after_attempt", 2)
    assert {"NativeLiteLLMAdapter.acreate_structured_output", "OpenAIAdapter.acreate_structured_output",
            "GenericAPIAdapter.acreate_structured_output"} <= set(probe["changed"])
