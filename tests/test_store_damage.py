"""Damage found mid-use (past a file's first page, or inside one stored state) is named:
which file, what to do; nothing is changed and the rest of ShopBot goes on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agents.settings import Settings
from agents.store_damage import damaged_stores, diagnose_storage, quick_check
from tests.engine_support import open_engine, say
from tests.fakes.damage import damage_thread_state, filled_audit_log, garble_past_first_page


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


def test_a_lock_is_not_damage(tmp_path: Path) -> None:
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    path = tmp_path / "audit.sqlite"
    filled_audit_log(path)
    garble_past_first_page(path)
    settings = Settings(home=tmp_path)
    assert diagnose_storage(settings, busy) is None
    found = diagnose_storage(settings, sqlite3.DatabaseError("database disk image is malformed"))
    assert found is not None and str(path) in str(found) and "audit log" in str(found)


def test_several_damaged_files_are_all_named(tmp_path: Path) -> None:
    for name in ("audit.sqlite", "threads.sqlite"):
        filled_audit_log(tmp_path / name)  # (any SQLite file with enough pages will do)
        garble_past_first_page(tmp_path / name)
    found = damaged_stores(Settings(home=tmp_path))
    assert found is not None
    text = str(found)
    assert "the audit log at" in text and "the thread registry at" in text
    assert "Nothing was changed" in text and "mv '" in text


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
