"""A real small filesystem for full-disk tests: a tmpfs mounted for the test, filled to a given
free space, unmounted after. Mounting needs root (CI runs as root); elsewhere the test skips with
the reason, which CI turns into a failure."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


class SmallDisk:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / ".filler"

    def fill(self, leave_bytes: int = 0) -> None:
        """Fill the disk, then give back ``leave_bytes`` (0: nothing at all is free)."""
        block = b"\0" * (1 << 16)
        with open(self.filler, "ab", buffering=0) as fh:  # unbuffered: a refused block is not retried at close
            try:
                while True:
                    fh.write(block)
                    fh.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
        size = self.filler.stat().st_size
        os.truncate(self.filler, max(0, size - leave_bytes))

    def free(self) -> int:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], SmallDisk]]:
    """``small_disk("8m")``: a new tmpfs of that size under the test's tmp_path."""
    mounted: list[Path] = []

    def make(size: str) -> SmallDisk:
        path = tmp_path / f"disk{len(mounted)}"
        path.mkdir()
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (root needed): {(proc.stderr or proc.stdout).strip()}")
        mounted.append(path)
        return SmallDisk(path)

    try:
        yield make
    finally:
        for path in reversed(mounted):
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)
