"""A disk of its own for a test's data, small enough to fill: a tmpfs mounted for the test
(root only: without the right to mount, the tests that need one are skipped, saying why)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest


@contextmanager
def small_disk(folder: Path, size: str = "2m") -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small disk here: {mounted.stderr.strip() or 'not root'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path) -> Path:
    """Fill `disk` to its last byte with one file, returned (remove it to free the space)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        for block in (65536, 512, 1):  # big blocks, then what is left of the last ones
            with suppress(OSError):
                while out.write(b"\0" * block):
                    pass
    return filler
