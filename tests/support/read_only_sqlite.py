"""SQLite files that refuse writes, as on a read-only disk or after `chmod a-w`.

chmod cannot stage that for root (these tests often run as root), so `sqlite3.connect` is
wrapped to open the existing files under a folder with SQLite's own `mode=ro`: opening
succeeds and the first write fails with SQLITE_READONLY, what a read-only file gives anyone.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest


def make_sqlite_read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Until the test ends, every existing SQLite file under `folder` opens read-only."""
    real_connect = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        path = Path(database)
        if path.is_relative_to(folder) and path.exists():
            kwargs["uri"] = True
            return real_connect(f"{path.as_uri()}?mode=ro", *args, **kwargs)
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
