"""Damage found mid-use (past a file's first page, or inside one stored state) is named:
which file, what to do; nothing is changed and the rest of ShopBot goes on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agents.audit_log import AuditLog
from agents.settings import Settings
from agents.store_damage import damaged_stores, diagnose_storage, quick_check
from tests.engine_support import open_engine, say
from tests.test_cli import one_line_error, run

PAGE = 4096


def filled_audit_log(path: Path, events: int = 3_000) -> None:
    with AuditLog(path) as audit:
        audit.append_many(
            {"kind": "gate_passed", "thread_id": f"t{i % 7}", "detail": {"n": i, "pad": "x" * 80}}
            for i in range(events)
        )
    with sqlite3.connect(path) as conn:  # everything into the main file, the WAL emptied
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def garble_past_first_page(path: Path) -> bytes:
    """Flip bytes all over the file except its first pages, as a bad disk would; the file
    still opens (the first page is sound). Returns the damaged bytes."""
    data = bytearray(path.read_bytes())
    assert len(data) > 8 * PAGE, "too small to damage past its start"
    for offset in range(3 * PAGE, len(data), 61):
        data[offset] ^= 0x5A
    path.write_bytes(bytes(data))
    return bytes(data)


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


@pytest.mark.cli
def test_the_command_line_names_a_log_damaged_past_its_first_page(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    filled_audit_log(path)
    damaged = garble_past_first_page(path)
    done = run(tmp_path, "audit", "--text", "nothing-like-this", "--limit", "500")
    assert done.returncode == 2
    line = one_line_error(done)
    assert f"audit log at {path} is damaged" in line and "unexpected" not in line
    assert path.read_bytes() == damaged


async def test_a_conversation_whose_stored_state_is_damaged_says_so_and_others_go_on(
    tmp_path: Path,
) -> None:
    async with open_engine(tmp_path) as engine:
        assert (await say(engine, "hurt", "Where is ORD-001?", "Alex")).result.status == "done"
        assert (await say(engine, "fine", "Where is ORD-001?", "Alex")).result.status == "done"
    # Inside a sound file, the stored state of one thread no longer decodes (0xc1 is a byte
    # MessagePack never uses).
    with sqlite3.connect(tmp_path / "checkpoints.sqlite") as conn:
        conn.execute("UPDATE checkpoints SET checkpoint = X'c1c1c1c1' WHERE thread_id = 'hurt'")
    conn.close()
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


@pytest.mark.cli
def test_the_command_line_exits_2_for_a_damaged_conversation(tmp_path: Path) -> None:
    assert run(tmp_path, "chat", "hurt", "Where is ORD-001?").returncode == 0
    with sqlite3.connect(tmp_path / "checkpoints.sqlite") as conn:
        conn.execute("UPDATE checkpoints SET checkpoint = X'c1c1c1c1' WHERE thread_id = 'hurt'")
    conn.close()
    done = run(tmp_path, "chat", "hurt", "Where is ORD-001 now?")
    assert done.returncode == 2
    assert "stored state of conversation hurt" in one_line_error(done)
