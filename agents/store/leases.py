"""Who is answering a message on a thread right now, across processes (the app, a second
window, `shopbot chat`): a lease per thread in the thread registry's database.

Two processes answering on one thread would fork its checkpoints: a turn starts only with
its thread's lease. In the SQLite file a lease is a row, and one whose process is gone (same
host) or that outlived `LEASE_SECONDS` is taken over; in PostgreSQL it is an advisory lock
(agents/store/postgres/leases.py), which the server frees when its process's connection ends.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Protocol

from agents.store.sqlite import immediate_transaction

LEASES_SCHEMA = """CREATE TABLE IF NOT EXISTS turn_leases (
        thread_id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL
    )"""
# A turn holding a lease longer than this (retries included) is presumed dead.
LEASE_SECONDS = 600.0


class LeaseBook(Protocol):
    """Where a store keeps its turn leases: a table here (`LeaseTable`), advisory locks in
    PostgreSQL (agents/store/postgres/leases.py)."""

    # Every thread with its lease, if any, as `lease_host`, `lease_pid`, `lease_expires`
    # (no lease, or none alive: `lease_alive` says False of them).
    listing: str

    def claim(self, thread_id: str, owner: str) -> bool: ...

    def holder(self, thread_id: str, owner: str) -> tuple[str, int] | None: ...

    def renew(self, thread_id: str, owner: str) -> bool: ...

    def release(self, thread_id: str, owner: str) -> None: ...

    def close(self) -> None: ...


class TurnLeases:
    """The thread registry's turn leases (mixed into `ThreadRegistry`, which picks where
    they are kept)."""

    _leases: LeaseBook

    def claim_turn(self, thread_id: str, owner: str) -> bool:
        """Take the thread's turn lease for `owner`; False when another live process holds it
        (a lease of a process gone, or expired, is taken over)."""
        return self._leases.claim(thread_id, owner)

    def turn_held_elsewhere(self, thread_id: str, owner: str) -> bool:
        """Whether a live lease of another owner than `owner` holds the thread's turn (a
        window reading it then must not take its stored state as final)."""
        return self.turn_holder(thread_id, owner) is not None

    def turn_holder(self, thread_id: str, owner: str) -> tuple[str, int] | None:
        """(host, pid) of the live lease of another owner than `owner` on the thread's
        turn, if any: who a refusal names."""
        return self._leases.holder(thread_id, owner)

    def renew_turn(self, thread_id: str, owner: str) -> bool:
        """Push `owner`'s lease another `LEASE_SECONDS` on; False when it is not theirs."""
        return self._leases.renew(thread_id, owner)

    def release_turn(self, thread_id: str, owner: str) -> None:
        self._leases.release(thread_id, owner)


class LeaseTable:
    """Leases as rows of the SQLite file's `turn_leases`, written under the registry's lock
    and connection (one file, one writer at a time)."""

    listing = (
        "SELECT threads.*, turn_leases.host AS lease_host, turn_leases.pid AS lease_pid,"
        " turn_leases.expires_at AS lease_expires FROM threads LEFT JOIN turn_leases"
        " USING (thread_id)"
    )

    def __init__(self, lock: threading.Lock, conn: sqlite3.Connection) -> None:
        self._lock = lock
        self._conn = conn

    def claim(self, thread_id: str, owner: str) -> bool:
        host, now = socket.gethostname(), time.time()
        with self._lock, immediate_transaction(self._conn) as conn:
            row = conn.execute(
                "SELECT host, pid, owner, expires_at FROM turn_leases WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            if row is not None and row["owner"] != owner and _live(row, host, now):
                return False
            conn.execute(
                "INSERT OR REPLACE INTO turn_leases VALUES (?, ?, ?, ?, ?)",
                (thread_id, host, os.getpid(), owner, now + LEASE_SECONDS),
            )
        return True

    def holder(self, thread_id: str, owner: str) -> tuple[str, int] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT host, pid, owner, expires_at FROM turn_leases WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
        if (
            row is None
            or row["owner"] == owner
            or not _live(row, socket.gethostname(), time.time())
        ):
            return None
        return str(row["host"]), int(row["pid"])

    def renew(self, thread_id: str, owner: str) -> bool:
        with self._lock, immediate_transaction(self._conn) as conn:
            renewed = conn.execute(
                "UPDATE turn_leases SET expires_at = ? WHERE thread_id = ? AND owner = ?",
                (time.time() + LEASE_SECONDS, thread_id, owner),
            )
            return renewed.rowcount == 1

    def release(self, thread_id: str, owner: str) -> None:
        with self._lock, immediate_transaction(self._conn) as conn:
            conn.execute(
                "DELETE FROM turn_leases WHERE thread_id = ? AND owner = ?", (thread_id, owner)
            )

    def close(self) -> None:
        """Nothing of its own to close (the registry closes the connection)."""


def _live(lease: sqlite3.Row, host: str, now: float) -> bool:
    """A lease neither expired nor left by a process of this host that is gone."""
    return lease_alive(lease["host"], lease["pid"], lease["expires_at"], here=host, now=now)


def lease_alive(
    host: str | None,
    pid: int | None,
    expires_at: float | None,
    *,
    here: str | None = None,
    now: float | None = None,
) -> bool:
    """Whether a lease (None: none) still holds its turn: not expired, and not left by a
    process of this host (`here`) that is gone."""
    if host is None or pid is None or expires_at is None:
        return False
    if expires_at < (time.time() if now is None else now):
        return False
    return host != (here or socket.gethostname()) or _process_alive(int(pid))


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that ended but that its parent has not reaped yet (a supervisor, a test
    runner) still answers `kill(pid, 0)`: its lease would hold its thread until it expired."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False  # no /proc (macOS) or gone meanwhile: kill() said alive, so be it
    # "pid (name) state ...": the name may hold spaces and parentheses, the state follows
    # the last ")".
    fields = stat.rpartition(")")[2].split()
    return bool(fields) and fields[0] == "Z"
