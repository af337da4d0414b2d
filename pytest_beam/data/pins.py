"""Pins of every BEAM file the harness may read.

The local pins are the upstream repository's files at the commit below, all four tiers: a git
blob id for each, and a sha256 for each file an offline copy held. The parquet pin is the Hugging
Face split at the pinned revision. Both sources give the same records.
"""

from dataclasses import dataclass
from importlib import resources

UPSTREAM_COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"

HF_REPO_ID = "Mohammadta/BEAM"
HF_REVISION = "3205395e897e7318c7b094ef4e6047b9b82dbb03"
HF_FILENAME = "data/100K-00000-of-00001.parquet"
HF_SHA256 = "c0519be25907005ba873c927c50877471d550873039d96c041554d0075a78ace"


@dataclass(frozen=True)
class FilePin:
    """One upstream file: its git blob id (always), its size and sha256 where known."""

    path: str
    size: int | None
    git_blob_sha1: str
    sha256: str | None


def _read_pins() -> dict[str, FilePin]:
    table = resources.files(__package__).joinpath(PINS_FILE).read_text(encoding="utf-8")
    lines = [line for line in table.splitlines() if line and not line.startswith("#")]
    header, *rows = (line.split("\t") for line in lines)
    if header != ["path", "bytes", "git_blob_sha1", "sha256"]:
        raise RuntimeError(f"{PINS_FILE}: unexpected header {header}")
    return {
        path: FilePin(path, None if size == "-" else int(size), blob, None if digest == "-" else digest)
        for path, size, blob, digest in rows
    }


PINS_FILE = "upstream_files.tsv"
"""Every chat and probing-questions file of all four tiers upstream (from the offline copy's
UPSTREAM-FILES.tsv and SHA256SUMS), so a clone of the upstream repository is checked byte for byte
even where no sha256 is known."""

UPSTREAM_FILES: dict[str, FilePin] = _read_pins()

LOCAL_SHA256: dict[str, str] = {p.path: p.sha256 for p in UPSTREAM_FILES.values() if p.sha256}
"""path relative to the data root -> sha256, for every file whose sha256 is pinned."""
