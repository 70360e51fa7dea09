"""Turn leases in PostgreSQL: a session advisory lock per thread, held on a connection of
its own for the whole turn.

The server frees a session's advisory locks when its connection ends, so the turn of a
process that died (killed, its machine gone once TCP notices) frees itself; no expiry or
process check is needed to take it over. A live process keeps its thread for as long as it
runs its turn, however long that is. The `turn_leases` row beside each lock only names its
holder, for a refusal to say who is answering.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import TYPE_CHECKING, NoReturn

import psycopg

from agents.store.leases import LEASE_SECONDS
from agents.store.postgres.connection import Row
from agents.store.postgres.database import LEASE_SPACE

if TYPE_CHECKING:
    from agents.store.postgres.database import PostgresDatabase

# The lock of a thread: (LEASE_SPACE, a non-negative 31-bit hash of its id), computed by the
# server so that every process, and the listing's join with pg_locks, agree on it. Two
# threads sharing a hash cannot answer at the same moment (one in two billion).
_KEY = "hashtext({}) & 2147483647"
_HELD_WHERE = (
    "WHERE locktype = 'advisory' AND granted AND objsubid = 2"  # noqa: S608 - constant text
    f" AND classid = {LEASE_SPACE}"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
# Connections kept for the next turns once their lock is let go (connecting takes some ms).
_IDLE_SESSIONS = 4


class AdvisoryLeases:
    """The turn leases of a PostgreSQL database (a `LeaseBook`, agents/store/leases.py)."""

    # A lease is alive while its lock is held: then it never expires, else it is none.
    listing = (
        f"WITH held AS (SELECT DISTINCT objid FROM pg_locks {_HELD_WHERE})"  # noqa: S608
        " SELECT threads.*, turn_leases.host AS lease_host, turn_leases.pid AS lease_pid,"
        " CASE WHEN held.objid IS NOT NULL THEN 'Infinity'::float8 END AS lease_expires"
        " FROM threads LEFT JOIN turn_leases USING (thread_id)"
        f" LEFT JOIN held ON held.objid = ({_KEY.format('threads.thread_id')})::oid"
    )

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database
        self._guard = threading.Lock()
        self._held: dict[tuple[str, str], psycopg.Connection[Row]] = {}
        self._idle: list[psycopg.Connection[Row]] = []

    def claim(self, thread_id: str, owner: str) -> bool:
        with self._guard:
            held = self._held.get((thread_id, owner))
            if held is not None and not held.closed:
                return True  # (a claim again by its holder, as with the table's leases)
            self._held.pop((thread_id, owner), None)
        session = self._session()
        try:
            # The lock, and when it is taken, the row naming its holder for `holder` (the
            # lock, not the row, is the lease): one statement, one round trip.
            taken = session.execute(
                "WITH taken AS (SELECT pg_try_advisory_lock(%s, hashtext(%s) & 2147483647) AS ok)"
                " INSERT INTO turn_leases SELECT %s, %s, %s, %s, %s FROM taken WHERE ok"
                " ON CONFLICT (thread_id) DO UPDATE SET host = excluded.host,"
                " pid = excluded.pid, owner = excluded.owner, expires_at = excluded.expires_at"
                " RETURNING 1",
                (
                    LEASE_SPACE,
                    thread_id,
                    thread_id,
                    socket.gethostname(),
                    os.getpid(),
                    owner,
                    _expiry(),
                ),
            ).fetchone()
        except psycopg.Error as exc:
            session.close()  # (which lets go of a lock it may have taken)
            self._failed(exc)
        if taken is None:
            self._put_back(session)
            return False
        with self._guard:
            self._held[(thread_id, owner)] = session
        return True

    def holder(self, thread_id: str, owner: str) -> tuple[str, int] | None:
        with self._guard:
            held = self._held.get((thread_id, owner))
            if held is not None and not held.closed:
                return None
        session = self._session()
        try:
            row = session.execute(
                "SELECT turn_leases.host, turn_leases.pid FROM (SELECT 1) AS one"  # noqa: S608
                " LEFT JOIN turn_leases ON turn_leases.thread_id = %s"
                f" WHERE EXISTS (SELECT 1 FROM pg_locks {_HELD_WHERE}"
                f" AND objid = ({_KEY.format('%s')})::oid)",
                (thread_id, thread_id),
            ).fetchone()
        except psycopg.Error as exc:
            session.close()
            self._failed(exc)
        self._put_back(session)
        if row is None:
            return None
        # (Its holder names itself right after taking the lock: for that moment, nobody.)
        return str(row[0] or "?"), int(row[1] or 0)

    def renew(self, thread_id: str, owner: str) -> bool:
        """Whether `owner` still holds the lock (a connection lost took it along)."""
        with self._guard:
            held = self._held.get((thread_id, owner))
        if held is None or held.closed:
            return False
        try:
            held.execute(
                "UPDATE turn_leases SET expires_at = %s WHERE thread_id = %s AND owner = %s",
                (_expiry(), thread_id, owner),
            )
        except psycopg.Error:
            held.close()
            return False
        return True

    def release(self, thread_id: str, owner: str) -> None:
        with self._guard:
            held = self._held.pop((thread_id, owner), None)
        if held is None or held.closed:
            return
        try:
            held.execute(
                "WITH gone AS (DELETE FROM turn_leases WHERE thread_id = %s AND owner = %s)"
                " SELECT pg_advisory_unlock(%s, hashtext(%s) & 2147483647)",
                (thread_id, owner, LEASE_SPACE, thread_id),
            )
        except psycopg.Error:
            held.close()  # closing lets go of the lock just the same
            return
        self._put_back(held)

    def close(self) -> None:
        with self._guard:
            sessions = [*self._held.values(), *self._idle]
            self._held.clear()
            self._idle.clear()
        for session in sessions:
            session.close()

    def _session(self) -> psycopg.Connection[Row]:
        with self._guard:
            while self._idle:
                session = self._idle.pop()
                if not session.closed:
                    return session
        session = self._database.raw_connection()
        # A lease's row only names who holds it (the advisory lock is the lease, and goes
        # with its session): a crash that loses the row's last change loses nothing, so its
        # commits need not wait for the disk (two flushes less a turn).
        try:
            session.execute("SET synchronous_commit = off")
        except psycopg.Error as exc:
            session.close()
            self._failed(exc)
        return session

    def _put_back(self, session: psycopg.Connection[Row]) -> None:
        with self._guard:
            if not session.closed and len(self._idle) < _IDLE_SESSIONS:
                self._idle.append(session)
                return
        session.close()

    def _failed(self, exc: psycopg.Error) -> NoReturn:
        from agents.store.postgres.errors import session_failure

        named = session_failure(self._database.shown, self._database.user, exc)
        if named is None:
            raise exc
        raise named from exc


def _expiry() -> float:
    return time.time() + LEASE_SECONDS
