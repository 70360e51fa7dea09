"""`shopbot`, killed (SIGKILL, as a power cut or the OOM killer would) while it moves a home
of four files into its one database, after the first file's rows are copied and before the
move commits: `python -m tests.support.killed_moving ARGS...`."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path

from agents.store import migration
from agents.store.migration import LegacyStore


def install() -> None:
    copy_one = migration._copy_one

    def copied_then_killed(
        conn: sqlite3.Connection, db: str, store: LegacyStore, path: Path
    ) -> None:
        copy_one(conn, db, store, path)
        os.kill(os.getpid(), signal.SIGKILL)

    migration._copy_one = copied_then_killed


if __name__ == "__main__":
    install()
    from shopbot_tui.cli.main import main

    sys.exit(main(sys.argv[1:]))
