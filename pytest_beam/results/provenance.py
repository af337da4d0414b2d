"""Where a run came from: the git commit (and whether the tree was dirty), the lockfile's hash, and
what scored it (profile, prompt hashes, judge repeats)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from .schema import ScoringStamp

__all__ = ["git_info", "lockfile_hash", "prompt_hashes", "scoring_stamp"]


def prompt_hashes() -> dict[str, str]:
    """sha256 of every judge prompt text a profile sends (all three profiles send BEAM's prompts).

    The classifier's user message is a template; it is hashed with ``{first}``/``{second}`` in its
    slots, so an edit to its fixed text changes the hash.
    """
    from ..scoring import prompts

    texts = {
        "judge": prompts.JUDGE_PROMPT,
        "binary_classifier_system": prompts.BINARY_CLASSIFIER_SYSTEM,
        "binary_classifier_user": prompts.binary_classifier_user("{first}", "{second}"),
    }
    return {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in texts.items()}


def scoring_stamp(profile: str, judge_runs: int = 1) -> ScoringStamp:
    """The record's scoring stamp for a run scored under ``profile`` (checked) with ``judge_runs`` repeats."""
    from ..scoring.profiles import get_profile

    return ScoringStamp(profile=get_profile(profile).name, prompt_sha256=prompt_hashes(), judge_runs=judge_runs)


def git_info(root: str | os.PathLike[str]) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git work tree at ``root``; ``(None, None)`` when not a repo."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=20
        )
        if head.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    commit = head.stdout.strip() or None
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return commit, dirty


def _sha256(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def lockfile_hash(root: str | os.PathLike[str]) -> str | None:
    """``"<source>:<sha256>"`` of the project's lock: uv.lock, poetry.lock, pylock.toml or
    requirements*.txt (the first that exists), else of the distributions installed where this
    Python imports from (``"installed:<sha>"``, one ``name==version`` line each, sorted: what
    ``pip freeze`` lists, read in this process; a pip subprocess took about a second of every run);
    None when none of them can be read."""
    base = Path(root)
    for name in ("uv.lock", "poetry.lock", "pylock.toml"):
        p = base / name
        if p.is_file():
            return f"{name}:{_sha256([p.read_bytes()])}"
    reqs = sorted(base.glob("requirements*.txt"))
    if reqs:
        label = reqs[0].name if len(reqs) == 1 else "requirements*.txt"
        digest = _sha256(p.name.encode() + b"\0" + p.read_bytes() for p in reqs)
        return f"{label}:{digest}"
    lines = installed_distributions()
    if not lines:
        return None
    digest = _sha256(["\n".join(lines).encode()])
    return f"installed:{digest}"


def installed_distributions() -> list[str]:
    """``name==version`` of each distribution on this Python's path, sorted and once each (the first
    one found wins, as for imports); names normalized as packaging does."""
    from importlib import metadata

    seen: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if not name:
            continue
        key = re.sub(r"[-_.]+", "-", name).lower()
        seen.setdefault(key, f"{key}=={dist.version}")
    return sorted(seen.values())


def data_revision(source: str) -> str | None:
    """The pinned revision behind a data source ("hf:..." or "local:...")."""
    from ..data import pins

    if source.startswith("hf:"):
        return pins.HF_REVISION
    if source.startswith("local:"):
        return pins.UPSTREAM_COMMIT
    return None
