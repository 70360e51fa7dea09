"""Damage found mid-use (past a file's first page, or inside one stored state) is named:
which file, what to do; nothing is changed and the rest of ShopBot goes on."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.runner.turn_closing import turn_failure_text
from agents.settings import Settings
from agents.store import sqlite as sqlite_store
from agents.store.damage import diagnose_storage, is_damage, quick_check
from agents.store.sqlite import StorageError
from agents.store.threads import ThreadRegistry
from tests.support.damage import damage_thread_state, filled_audit_log, garble_past_first_page
from tests.support.engine import open_engine, say


def test_quick_check_finds_damage_past_the_first_page_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.sqlite"
    filled_audit_log(path)
    assert quick_check(path) is None
    assert quick_check(tmp_path / "absent.sqlite") is None
    damaged = garble_past_first_page(path)
    problem = quick_check(path)
    assert problem and "\n" not in problem and "*** in database" not in problem
    assert path.read_bytes() == damaged


def real_error(action: Callable[[], object]) -> sqlite3.Error:
    try:
        action()
    except sqlite3.Error as exc:
        return exc
    raise AssertionError("no error")


def test_locks_read_only_files_and_missing_ones_are_not_damage(tmp_path: Path) -> None:
    path = Settings(home=tmp_path).database_path
    filled_audit_log(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(path, timeout=0, isolation_level=None)
    locked = real_error(lambda: waiter.execute("INSERT INTO events (kind) VALUES ('x')"))
    holder.execute("ROLLBACK")
    read_only = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    refused = real_error(lambda: read_only.execute("DELETE FROM events"))
    unopenable = real_error(lambda: sqlite3.connect(tmp_path / "no" / "such.sqlite"))
    for conn in (holder, waiter, read_only):
        conn.close()
    settings = Settings(home=tmp_path)
    for error in (locked, refused, unopenable):
        assert not is_damage(error), error
        assert diagnose_storage(settings, error) is None
    assert quick_check(path) is None  # (and the file is sound)
    garble_past_first_page(path)
    damaged = real_error(lambda: sqlite3.connect(path).execute("SELECT * FROM events").fetchall())
    assert is_damage(damaged)
    found = diagnose_storage(settings, damaged)
    assert found is not None and f"ShopBot database at {path} is damaged" in str(found)


async def test_a_conversation_whose_stored_state_is_damaged_says_so_and_others_go_on(
    tmp_path: Path,
) -> None:
    async with open_engine(tmp_path) as engine:
        assert (await say(engine, "hurt", "Where is ORD-001?", "Alex")).result.status == "done"
        assert (await say(engine, "fine", "Where is ORD-001?", "Alex")).result.status == "done"
    damage_thread_state(tmp_path, "hurt")
    async with open_engine(tmp_path) as engine:
        turn = await say(engine, "hurt", "Where is ORD-001 now?", "Alex")
        result = turn.result
        assert result.status == "error" and result.failed == "storage"
        assert result.error is not None
        assert "stored state of conversation hurt" in result.error
        assert "Start a new conversation" in result.error
        # What the customer wrote is kept in the transcript; the other thread is untouched.
        said = [line.text for line in engine.transcript("hurt") if line.role == "customer"]
        assert said[-1] == "Where is ORD-001 now?"
        other = await say(engine, "fine", "And ORD-001 again?", "Alex")
        assert other.result.status == "done" and "Wireless Headphones" in other.result.reply
        with pytest.raises(Exception, match="stored state of conversation hurt"):
            await engine.pending_approval("hurt")


async def test_our_own_bug_is_not_blamed_on_the_stored_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_engine(tmp_path) as engine:
        assert (await say(engine, "t", "Where is ORD-001?", "Alex")).result.status == "done"

        async def broken(*args: object, **kwargs: object) -> None:
            raise TypeError("aget_state() got an unexpected keyword argument 'subgraphs'")

        monkeypatch.setattr(engine.graph, "aget_state", broken)
        with pytest.raises(TypeError, match="unexpected keyword"):
            await engine.pending_approval("t")


async def test_a_database_damaged_past_its_first_page_is_named_when_something_trips_on_it(
    tmp_path: Path,
) -> None:
    path = Settings(home=tmp_path).database_path
    with ThreadRegistry(path) as threads:
        threads.ensure("old", customer="Alex")
        for n in range(1_500):
            threads.append_line("old", "customer", f"line {n} " + "x" * 80)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    garble_past_first_page(path)
    # (Starting reads parts of the file too: it may be the one that trips.)
    with pytest.raises(StorageError, match=r"ShopBot database at .* is damaged"):
        async with open_engine(tmp_path) as engine:
            await say(engine, "old", "Where is ORD-001?", "Alex")


def disk_full_error() -> sqlite3.OperationalError:
    """SQLite's own "database or disk is full": a file that may not grow, as on a full disk."""
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA max_page_count = 1")
    full = real_error(lambda: conn.execute("CREATE TABLE t (x)"))
    conn.close()
    assert isinstance(full, sqlite3.OperationalError)
    return full


def test_a_full_disk_is_said_as_such_never_as_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new store on a full disk read "is damaged ... Move the file aside"; a write to an
    # open one "unexpected error (OperationalError)", exit 1.
    full = disk_full_error()
    assert not is_damage(full)
    assert "the disk is full" in turn_failure_text(full)

    def no_room(conn: sqlite3.Connection) -> None:
        raise full

    with monkeypatch.context() as patched:
        patched.setattr(sqlite_store, "_enable_wal", no_room)
        with pytest.raises(StorageError) as opening:
            ThreadRegistry(tmp_path / "threads.sqlite")
    said = str(opening.value)
    assert f"the disk holding {tmp_path} is full" in said and "damaged" not in said

    with ThreadRegistry(tmp_path / "threads.sqlite") as registry:
        registry.ensure("t1", customer="Alex")
        pages = registry._conn.execute("PRAGMA page_count").fetchone()[0]
        registry._conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(
            StorageError, match=r"^Cannot write to .*threads\.sqlite: the disk holding .* is full"
        ):
            registry.append_line("t1", "customer", "x" * 50_000)
        assert registry.lines("t1") == []  # nothing half written


async def test_an_empty_database_in_a_home_that_never_held_data_is_simply_set_up(
    tmp_path: Path,
) -> None:
    """Only in a home that held data (its marker says so) is an empty database a lost one."""
    Settings(home=tmp_path).database_path.write_bytes(b"")
    async with open_engine(tmp_path) as engine:
        turn = await say(engine, "t1", "Where is ORD-002?", "Sam")
        assert "In Transit" in turn.result.reply
