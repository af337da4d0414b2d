"""BEAM from a local directory in the upstream layout (every tier), every file checked against
its pin: sha256 where one is known, else the upstream git blob id (a clone of the upstream
repository is then checked byte for byte). 10M's plans are joined by :mod:`pytest_beam.data.plans_10m`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import pins
from .data_error import BeamDataError
from .plans_10m import join_plans, joined_plan_sessions, plan_numbers
from .sources import (
    BeamCorpus,
    RawConversation,
    RawItem,
    build_corpus,
    check_pin,
    upstream_sessions,
)
from .tiers import UPSTREAM_URL, ranges
from .tiers import tier as tier_of


def git_blob_sha1(path: Path) -> str:
    """What `git hash-object FILE` prints: sha1 of "blob <size>\\0" and the content."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_upstream_file(path: Path, pin: pins.FilePin) -> None:
    """By sha256 where one is pinned, else by the upstream git blob id (a clone of the upstream
    repository is then checked byte for byte too)."""
    fix = "The file differs from BEAM at the pinned commit; restore it."
    if pin.sha256 is not None:
        check_pin(path, pin.sha256, fix)
        return
    actual = git_blob_sha1(path)
    if actual != pin.git_blob_sha1:
        raise BeamDataError(
            f"git blob id mismatch for {path}: expected {pin.git_blob_sha1} (upstream "
            f"{pin.path} at {pins.UPSTREAM_COMMIT[:12]}), got {actual}. {fix}"
        )


def _not_a_directory(root: Path) -> BeamDataError:
    what = ("is a file, not a directory" if root.is_file() else
            "is not a directory" if root.exists() else "does not exist")
    return BeamDataError(
        f"BEAM data directory {root} {what}. Give a directory in the upstream layout "
        "(chats/100K/<n>/...) with --beam-data=DIR, BEAM_DATA=DIR or the ini key beam_data; or "
        "leave it unset (an empty --beam-data= or BEAM_DATA= also means unset) to use the Hugging "
        "Face source."
    )


def how_to_get(tier: str) -> str:
    """Where the files of a tier come from when a copy lacks them: a clone of the upstream repository,
    every file of which is checked against its git blob id."""
    return (f"to run them, clone the upstream repository at the pinned commit (git clone {UPSTREAM_URL} BEAM "
            f"&& git -C BEAM checkout {pins.UPSTREAM_COMMIT[:12]}) and pass --beam-data=BEAM: each file is "
            f"checked against its git blob id in pytest_beam/data/{pins.PINS_FILE}")


def chat_present(root: Path, tier: str, conversation: str) -> bool:
    """Whether the copy at ``root`` holds the conversation's chat (10M: the joined file or its plans)."""
    spec = tier_of(tier)
    if (root / spec.chat_path(conversation)).is_file():
        return True
    return spec.layout == "plans" and (root / spec.plan_path(conversation, 0)).is_file()


def _read_json(path: Path, rel: str, root: Path, pinned: dict[str, pins.FilePin]) -> Any:
    if not path.is_file():
        raise BeamDataError(f"{path} is missing from the BEAM data directory {root}.")
    if rel not in pinned:
        raise BeamDataError(f"{rel} is not pinned in pytest_beam/data/{pins.PINS_FILE}.")
    check_upstream_file(path, pinned[rel])
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BeamDataError(f"{path} is not valid JSON: {exc}") from exc


def read_chat(root: Path, tier: str, conversation: str,
              pinned: dict[str, pins.FilePin]) -> tuple[list[list[RawItem]], str]:
    """One conversation's sessions, every file hash-checked, and where it was read from."""
    spec = tier_of(tier)
    rel = spec.chat_path(conversation)
    path = root / rel
    if spec.layout == "chat" or path.is_file():
        chat = _read_json(path, rel, root, pinned)
        sessions = joined_plan_sessions(chat, path) if spec.layout == "plans" else upstream_sessions(chat, path)
        return sessions, str(path)
    plans = []
    for k in plan_numbers(root, tier, conversation, pinned):
        plan_rel = spec.plan_path(conversation, k)
        plans.append(upstream_sessions(_read_json(root / plan_rel, plan_rel, root, pinned), root / plan_rel))
    if not plans:
        raise BeamDataError(f"{path} is missing from the BEAM data directory {root}, and so are its plans "
                            f"({spec.plan_path(conversation, 0)}, ...); {how_to_get(tier)}.")
    return join_plans(plans), str(root / f"chats/{tier}/{conversation}/plan-*")


def load_local(root: Path, conversation_ids: Iterable[str], known_bad: dict[str, str],
               pinned: dict[str, pins.FilePin] | None = None, tier: str = "100K") -> BeamCorpus:
    """Read conversations of ``tier`` from a directory in the upstream layout, every file hash-checked."""
    pinned = pins.UPSTREAM_FILES if pinned is None else pinned
    root = Path(root)
    if not root.is_dir():
        raise _not_a_directory(root)
    spec = tier_of(tier)
    raws = []
    for cid in conversation_ids:
        sessions, where = read_chat(root, tier, cid, pinned)
        rel = spec.questions_path(cid)
        probing = _read_json(root / rel, rel, root, pinned)
        raws.append((RawConversation(cid, sessions, probing), where))
    return build_corpus(f"local:{root}", raws, known_bad, tier)


def missing_chats(root: Path, tier: str, conversation_ids: Iterable[str]) -> list[str]:
    """The conversations whose chat the copy at ``root`` lacks (its questions may be there: 1M here)."""
    root = Path(root)
    if not root.is_dir():
        raise _not_a_directory(root)
    return [cid for cid in conversation_ids if not chat_present(root, tier, cid)]


def missing_line(root: Path, tier: str, missing: list[str], total: int) -> str:
    """One line: which conversations of a tier a run leaves out, and how to get them."""
    return (f"pytest-beam: {tier}: {len(missing)} of {total} conversations have no chat in {root} "
            f"({ranges(missing)}), so their {20 * len(missing)} questions are left out; {how_to_get(tier)}")
