"""Stores damaged the way a bad disk or a crash damages them, for the tests that say so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agents.audit.log import AuditLog

PAGE = 4096


def filled_audit_log(path: Path, events: int = 3_000) -> None:
    """An audit log with enough events to span many pages, all in the main file."""
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


def damage_thread_state(home: Path, thread_id: str) -> None:
    """Inside a sound file, make one thread's stored state undecodable (0xc1 is a byte
    MessagePack never uses)."""
    with sqlite3.connect(home / "shopbot.sqlite") as conn:
        conn.execute(
            "UPDATE checkpoints SET checkpoint = X'c1c1c1c1' WHERE thread_id = ?", (thread_id,)
        )
    conn.close()
