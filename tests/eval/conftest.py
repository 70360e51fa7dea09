"""`shopbot eval` tests: the user's own home is set, and must stay as it was."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """SHOPBOT_HOME, pointed at a folder that must stay empty; no Mistral key set."""
    for name in os.environ:
        if name.startswith(("MISTRAL_", "SHOPBOT_", "LANGSMITH_", "LANGCHAIN_")):
            monkeypatch.delenv(name)
    home = tmp_path / "users-own-home"
    monkeypatch.setenv("SHOPBOT_HOME", str(home))
    # The eval's throwaway homes go under the temporary folder: here, to be looked at.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)  # (read TMPDIR again)
    root = logging.getLogger()
    before = list(root.handlers)
    yield home
    # main() points the root logger at the run's log file: take that back.
    for handler in [h for h in root.handlers if h not in before]:
        root.removeHandler(handler)
        handler.close()
    assert not home.exists(), "eval wrote into the user's own home"
