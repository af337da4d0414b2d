"""BEAM from Hugging Face: the pinned 100K parquet, downloaded once through huggingface_hub's
cache and checked against its sha256. The other tiers are served by a local copy only."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from pathlib import Path

from . import pins
from .data_error import BeamDataError
from .local_copy import how_to_get
from .sources import BeamCorpus, RawConversation, build_corpus, check_pin
from .tiers import tier as tier_of


def unreachable(url: str, timeout: float = 2.0) -> str | None:
    """Why `url`'s host cannot be reached (name lookup or TCP connect within `timeout`), else None.

    huggingface_hub retries a refused connection or a failed name lookup five times (25 to 32 s)
    before its error; one short probe first makes an offline run fail at once.
    """
    import socket
    import threading
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    problem: list[str] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as exc:
            problem.append(f"{type(exc).__name__}: {exc}")

    thread = threading.Thread(target=probe, daemon=True)  # getaddrinfo has no timeout of its own
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return f"no answer from {host}:{port} within {timeout:g} s"
    return problem[0] if problem else None


def _not_cached(why: str) -> BeamDataError:
    return BeamDataError(
        f"Could not get {pins.HF_REPO_ID}/{pins.HF_FILENAME}@{pins.HF_REVISION[:12]} from Hugging "
        f"Face and it is not cached ({why}). With no network, pass --beam-data=DIR (a copy in the "
        "upstream layout, e.g. ../shared/beam), or set BEAM_DATA=DIR.")


def download_parquet(cache_dir: Path | None = None) -> Path:
    """Fetch the pinned parquet through huggingface_hub (its cache makes later runs offline)."""
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise BeamDataError("huggingface_hub is not installed; pip install pytest-beam") from exc
    def fetch(local_files_only: bool = False) -> Path:
        return Path(hf_hub_download(pins.HF_REPO_ID, pins.HF_FILENAME, repo_type="dataset", revision=pins.HF_REVISION,
                                    cache_dir=cache_dir, local_files_only=local_files_only))

    try:  # a cached copy needs no network at all
        return fetch(local_files_only=True)
    except (LocalEntryNotFoundError, OSError):
        pass
    problem = unreachable(constants.ENDPOINT)
    if problem is not None:
        raise _not_cached(f"cannot reach {constants.ENDPOINT}: {problem}")
    try:
        return fetch()
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
        raise _not_cached(f"{type(exc).__name__}: {exc}") from exc


def load_parquet(path: Path, conversation_ids: Iterable[str], known_bad: dict[str, str],
                 expected_sha256: str = pins.HF_SHA256) -> BeamCorpus:
    path = Path(path)
    check_pin(path, expected_sha256, "Delete it from the Hugging Face cache and run again, or pass --beam-data.")
    import pyarrow.parquet as pq

    wanted = list(conversation_ids)
    try:
        table = pq.read_table(path, columns=["conversation_id", "chat", "probing_questions"])
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise BeamDataError(f"{path} is not a readable BEAM parquet: {exc}") from exc
    # Row i is conversation str(i + 1): the split's own order is the id.
    rows = {str(i + 1): r for i, r in enumerate(table.to_pylist())}
    raws = []
    for cid in wanted:
        if cid not in rows:
            raise BeamDataError(f"{path} has no conversation {cid}")
        row = rows[cid]
        try:
            probing = ast.literal_eval(row["probing_questions"])
        except (ValueError, SyntaxError) as exc:
            raise BeamDataError(f"{path}: probing_questions of conversation {cid} does not parse: {exc}") from exc
        sessions = [[{k: v for k, v in m.items() if v is not None} for m in s] for s in row["chat"]]
        raws.append((RawConversation(cid, sessions, probing), f"{path}#conversation {cid}"))
    return build_corpus(f"hf:{pins.HF_REPO_ID}@{pins.HF_REVISION}", raws, known_bad)


def load_huggingface(conversation_ids: Iterable[str], known_bad: dict[str, str],
                     download: Callable[[], Path] = download_parquet, tier: str = "100K") -> BeamCorpus:
    if tier != "100K":
        raise BeamDataError(huggingface_tier_problem(tier))
    return load_parquet(download(), conversation_ids, known_bad)


def huggingface_tier_problem(tier: str) -> str:
    """What the Hugging Face source can serve (100K, at the pinned revision and hash) and cannot."""
    where = ("the 10M tier is a separate dataset upstream (Mohammadta/BEAM-10M)" if tier == "10M" else
             f"the {tier} split of {pins.HF_REPO_ID} has no pinned file or hash here")
    spec = tier_of(tier)
    return (f"the Hugging Face source serves the 100K tier only ({pins.HF_REPO_ID}@{pins.HF_REVISION[:12]}, "
            f"{pins.HF_FILENAME}, sha256 {pins.HF_SHA256[:12]}...); {where}, so a download could not be "
            f"checked byte for byte. Pass --beam-data=DIR with a copy in the upstream layout "
            f"({spec.chat_path('<n>')}"
            + (f" or {spec.plan_path('<n>', 0).replace('plan-0', 'plan-<k>')}" if spec.layout == "plans" else "")
            + f", {spec.questions_path('<n>')}); {how_to_get(tier)}")
