"""A home's data never lost to a fault around its one database, through the `shopbot` command:
a home of four files whose move into the database failed (a file locked by an older ShopBot,
a full disk) is moved again later, never read as a brand-new home; an emptied database is
refused as emptied even with its write-ahead log beside it; a stop before the home is
checked makes no database in its place."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.runner.engine import ShopBotEngine
from agents.store import sqlite as sqlite_store
from agents.store.home import DATABASE_FILE, MARKER_FILE, forget_checked
from agents.store.shop import ShopData
from shopbot_tui.cli.main import main
from tests.cli.conftest import one_line, run_json
from tests.support.held_lock import HeldLock
from tests.support.legacy_home import split_into_legacy_files
from tests.support.small_disk import fill, small_disk

PAID = "I want a refund for ORD-005, the speaker crackles at any volume"
WAITING = "I want a refund for ORD-001, the headphones stopped working"


def refunds(home: Path) -> list[str]:
    with ShopData(home / DATABASE_FILE) as shop:
        return sorted(record.order_id for record in shop.refunds())


def listed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    forget_checked()
    assert main(["threads", "--json"]) == 0
    return sorted(json.loads(line)["thread_id"] for line in capsys.readouterr().out.splitlines())


def used_home(capsys: pytest.CaptureFixture[str]) -> None:
    """Sam's refund of ORD-005 paid (r1); Alex's of ORD-001 waiting for a decision (r2)."""
    code, said, _ = run_json(capsys, "chat", "r1", PAID, "--customer", "Sam", "--offline")
    assert code == 0 and said["status"] == "awaiting_approval", said
    code, said, _ = run_json(capsys, "resume", "r1", "approve", "--offline")
    assert code == 0 and said["status"] == "done", said
    code, said, _ = run_json(capsys, "chat", "r2", WAITING, "--customer", "Alex", "--offline")
    assert code == 0 and said["status"] == "awaiting_approval", said


def nothing_lost(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The conversations, the decision waiting and the ledger of before are all there."""
    assert listed(capsys) == ["r1", "r2"]
    forget_checked()
    code, said, err = run_json(capsys, "resume", "r2", "approve", "--offline")
    assert code == 0 and said["status"] == "done", (said, err)
    # ORD-005's refund of before the move still stops a second one.
    assert refunds(home) == ["ORD-001", "ORD-005"]


@pytest.fixture
def legacy_home(home: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Path]:
    """A used home, as an older ShopBot kept it: four files, no database, no marker."""
    used_home(capsys)
    split_into_legacy_files(home)
    forget_checked()
    yield home
    forget_checked()


def test_a_move_refused_for_a_file_locked_by_an_older_shopbot_is_made_once_it_lets_go(
    legacy_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first command after an upgrade, while an older ShopBot writes to its shop file:
    refused as locked (right); the next command, the lock gone, found the empty database the
    refused move had made and took it for a new home: no conversation, no decision waiting,
    an empty ledger (ORD-005 refundable again)."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 300)
    older = HeldLock(legacy_home / "shop.sqlite")
    try:
        assert main(["threads"]) == 2
        assert "locked" in one_line(capsys.readouterr().err)
    finally:
        older.release()
    nothing_lost(legacy_home, capsys)


def test_a_move_refused_for_a_locked_file_names_the_file_that_is_locked(
    legacy_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is on the older ShopBot's shop file; the line named the new database, which
    no other program uses, so the person looks for the wrong program to close."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 300)
    older = HeldLock(legacy_home / "shop.sqlite")
    try:
        assert main(["threads"]) == 2
        line = one_line(capsys.readouterr().err)
    finally:
        older.release()
    assert str(legacy_home / "shop.sqlite") in line, line


def test_a_move_refused_for_a_full_disk_is_made_once_space_is_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with small_disk(tmp_path / "disk", size="3m") as disk:
        home = disk / "home"
        monkeypatch.setenv("SHOPBOT_HOME", str(home))
        used_home(capsys)
        split_into_legacy_files(home)
        forget_checked()
        filler = fill(disk)
        # Room for the new database's first page, not for what is moved into it.
        filler.write_bytes(filler.read_bytes()[: -64 * 1024])
        assert main(["threads"]) == 2
        assert "is full" in one_line(capsys.readouterr().err)
        filler.unlink()
        nothing_lost(home, capsys)


def test_a_marker_a_full_disk_kept_from_being_written_does_not_refuse_the_home_once_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database adopted (its marker gone) on a full disk while a ShopBot window holds it
    open (so opening it needs no room): the marker file was made, its text could not be
    written, and the empty file was left. Said as a folder that cannot be written to (not
    as a full disk), and once space was freed every command refused the home: "the marker
    cannot be read ... put it back from a backup"."""
    with small_disk(tmp_path / "disk", size="3m") as disk:
        home = disk / "home"
        monkeypatch.setenv("SHOPBOT_HOME", str(home))
        used_home(capsys)
        (home / MARKER_FILE).unlink()
        forget_checked()
        window = sqlite3.connect(home / DATABASE_FILE, isolation_level=None)
        try:
            window.execute("SELECT count(*) FROM threads").fetchone()
            filler = fill(disk)
            assert main(["threads"]) == 2
            line = one_line(capsys.readouterr().err)
            assert f"the disk holding {home} is full" in line, line
            filler.unlink()
            assert listed(capsys) == ["r1", "r2"]
        finally:
            window.close()


def test_an_emptied_database_with_its_write_ahead_log_beside_it_is_refused_as_emptied(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ShopBot killed with its last write still in the write-ahead log, then the database
    emptied (`: > shopbot.sqlite`): it was taken for another home's database, written to (a
    new identity in the emptied file), and the person told to delete the marker to use it,
    which adopts an empty database: the ledger and every decision waiting gone."""
    used_home(capsys)
    database = home / DATABASE_FILE
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(database)], check=False)
    assert killed.returncode == -signal.SIGKILL
    assert database.with_name(f"{DATABASE_FILE}-wal").stat().st_size > 0
    database.write_bytes(b"")
    forget_checked()
    for argv in (["threads"], ["resume", "r2", "approve", "--offline"]):
        assert main(argv) == 2, argv
        line = one_line(capsys.readouterr().err)
        assert f"The ShopBot database at {database} is empty (0 bytes)" in line, (argv, line)
        assert "another ShopBot home" not in line, line
    # "Nothing was created or changed": the emptied file is as it was found.
    assert database.stat().st_size == 0


# A process that writes with its write-ahead log not copied back, and is killed (-9).
_KILLED_WRITER = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint = 0")
conn.execute("INSERT OR REPLACE INTO meta VALUES ('last write', 'in the log')")
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("state", ["four files", "database deleted"])
def test_a_stop_before_the_home_is_checked_makes_no_database(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, state: str
) -> None:
    """Ctrl+C pressed twice while `chat --json` starts (the second one lands in the engine's
    start-up, before it opened the home): the JSON object's look at the registry made a
    database in the home's place, unchecked. A home of four files was then never moved (read
    as a new, empty home: no conversation, no decision waiting, an empty ledger); a home
    whose database was deleted read as another home's (and the advice, to delete the marker,
    adopts that empty database)."""
    used_home(capsys)
    if state == "four files":
        split_into_legacy_files(home)
    else:
        for name in (DATABASE_FILE, f"{DATABASE_FILE}-wal", f"{DATABASE_FILE}-shm"):
            (home / name).unlink(missing_ok=True)
    forget_checked()

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # as a second Ctrl+C lands in the engine's start-up

    with monkeypatch.context() as patch:  # (undone alone: SHOPBOT_HOME stays the test's)
        patch.setattr(ShopBotEngine, "__init__", interrupted)
        code, said, _ = run_json(capsys, "chat", "r2", "Where is ORD-001?", "--offline")
    assert code == 130 and said["status"] == "error", said
    assert not (home / DATABASE_FILE).exists()
    if state == "four files":
        nothing_lost(home, capsys)
    else:
        assert (home / MARKER_FILE).exists()
        forget_checked()
        assert main(["threads"]) == 2
        assert "is missing" in one_line(capsys.readouterr().err)


def test_a_legacy_file_an_older_shopbot_still_has_open_loses_none_of_its_writes(
    legacy_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older ShopBot window left open over the upgrade keeps its connections to the four
    files: the move renamed them under it, and what it wrote after (a refund a person
    approved there) went to `shop.sqlite.migrated`, unseen by the database: that order could
    be refunded a second time. Either the move waits for it to close (refused by name) or
    nothing it wrote is lost."""
    # How long the move waits for the file to be let go: not the 10 s it waits for a person.
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 300)
    older = sqlite3.connect(legacy_home / "shop.sqlite", isolation_level=None)
    try:
        older.execute("SELECT count(*) FROM refunds").fetchone()  # (its connection is open)
        moved = main(["threads"])
        capsys.readouterr()
        older.execute(
            "INSERT INTO refunds VALUES ('REF-ORD-001-OLDER', 'ORD-001', 8999, "
            "'approved in the older window', 'r2', '2026-01-01T00:00:00.000Z')"
        )
    finally:
        older.close()
    if moved == 0:
        assert refunds(legacy_home) == ["ORD-001", "ORD-005"]
    else:
        assert moved == 2
