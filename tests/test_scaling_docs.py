"""The shard engines' files in docs/examples work as written (issue 41 point 4): each shard's command,
exactly as the file gives it (the runner's pytest for the venv's), collects its share here and the
shares are the whole set, each conversation once; the merge command and its flags exist; the
workflow's and the Job's shard counts agree with their own --beam-shard."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML (a dependency of huggingface_hub, installed with the project)")
REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples"


def collected(command: str, project: Path, beam_data: Path) -> set[str]:
    """The question ids the shard's pytest command collects, run here as written (collect-only, no
    workers, no endpoint; the data from here)."""
    command = command.split(" || ", 1)[0]  # the file's `|| test $? -eq 1` keeps a low score's exit 1
    words = command.split()
    assert words[0].endswith("pytest"), command
    args = [w for w in words[1:] if not w.startswith("--junitxml")]
    if "-n" in args:  # the runner's cores: collection needs none
        del args[args.index("-n"):args.index("-n") + 2]
    proc = subprocess.run([sys.executable, "-m", "pytest", *args, "--co", "-q", "-p", "no:cacheprovider",
                           f"--beam-data={beam_data}"], cwd=project, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BEAM_MODEL": "m", "BEAM_BASE_URL": "http://127.0.0.1:9/v1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return set(re.findall(r"test_question\[(conv[^\]]+)\]", proc.stdout))


def held_to_the_whole_set(shares: list[set[str]]) -> None:
    union = set().union(*shares)
    assert len(union) == 100 and sum(len(s) for s in shares) == 100  # the full set, each question once
    conversations = [{q.split(":")[0] for q in share} for share in shares]
    assert sum(len(c) for c in conversations) == 5  # each conversation in exactly one shard


def test_the_github_actions_matrix_runs_every_shard_once_and_merges_them(tmp_path, beam_data_dir):
    workflow = yaml.safe_load((EXAMPLES / "beam-shards.yml").read_text())
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    shards = shard_job["strategy"]["matrix"]["shard"]
    run = next(step["run"] for step in shard_job["steps"] if "--beam-shard" in step.get("run", ""))
    count = int(re.search(r"--beam-shard=\$\{\{ matrix\.shard \}\}/(\d+)", run).group(1))
    assert shards == list(range(1, count + 1)) and shard_job["strategy"]["fail-fast"] is False
    assert merge_job["needs"] == "shard" and merge_job["if"] == "always()"
    upload = next(s for s in shard_job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    download = next(s for s in merge_job["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    assert upload["with"]["name"] == "shard-${{ matrix.shard }}" and download["with"]["pattern"] == "shard-*"
    assert "results/" in upload["with"]["path"] and "--beam-results=results" in run
    merge = next(step["run"] for step in merge_job["steps"] if "pytest-beam merge" in step.get("run", ""))
    assert merge.split()[2] == f"{download['with']['path']}/shard-*/results/*/"  # each shard's run folder
    help_text = subprocess.run([sys.executable, "-m", "pytest_beam.cli", "merge", "--help"], capture_output=True,
                               text=True).stdout
    assert all(flag in help_text for flag in re.findall(r"--[a-z]+", merge))

    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    held_to_the_whole_set([collected(run.replace("${{ matrix.shard }}", str(k)), tmp_path, beam_data_dir)
                           for k in shards])


def test_the_kubernetes_indexed_job_runs_every_shard_once(tmp_path, beam_data_dir):
    job = yaml.safe_load((EXAMPLES / "beam-shards-job.yaml").read_text())
    spec = job["spec"]
    assert (job["kind"], spec["completionMode"]) == ("Job", "Indexed")
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    count = int(env["SHARDS"])
    assert spec["completions"] == spec["parallelism"] == count
    assert container["command"] == ["/bin/sh", "-c"]
    (script,) = container["args"]
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    shares = []
    for index in range(count):  # what the shell makes of the line in pod `index`
        line = script.replace("$((JOB_COMPLETION_INDEX + 1))", str(index + 1)).replace("$SHARDS", str(count))
        line = line.replace("$JOB_COMPLETION_INDEX", str(index)).replace("/results/", f"{tmp_path}/results/")
        assert "$" not in line.split(" || ")[0], line
        shares.append(collected(line, tmp_path, beam_data_dir))
    held_to_the_whole_set(shares)
