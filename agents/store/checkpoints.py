"""The conversation store: LangGraph's async SQLite saver, opened with our checks, and pruned
(in PostgreSQL, LangGraph's saver for it: agents/store/postgres/checkpoints.py).

Every turn stores the whole state again (the history, until summarised), so a thread's
superseded checkpoints would grow the file by ~10 kB a turn forever. Nothing reads them: a
run starts from the latest checkpoint, the transcript keeps what was said and the audit log
what was decided. LangGraph defines `aprune` for this, but its SQLite saver does not
implement it, hence the subclass.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.store.sqlite import (
    BUSY_TIMEOUT_MS,
    StorageError,
    open_database,
    unusable_text,
)

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from agents.store.database import Location

# Of each table, all rows but those of the latest checkpoint per namespace (`keep_latest`);
# `writes` first, as its rows are found through the checkpoints that stay.
_KEEP_LATEST = (
    "DELETE FROM writes WHERE thread_id = :thread AND (checkpoint_ns, checkpoint_id) NOT IN "
    "(SELECT checkpoint_ns, MAX(checkpoint_id) FROM checkpoints WHERE thread_id = :thread "
    "GROUP BY checkpoint_ns)",
    "DELETE FROM checkpoints WHERE thread_id = :thread AND (checkpoint_ns, checkpoint_id) "
    "NOT IN (SELECT checkpoint_ns, MAX(checkpoint_id) FROM checkpoints "
    "WHERE thread_id = :thread GROUP BY checkpoint_ns)",
)
# A subgraph's namespace carries its task id, so a finished run's namespace is never used
# again; only a paused run's is (its interrupt resumes there). So they go only while the
# latest main checkpoint has no pending writes: an interrupt is one. (The engine prunes
# only threads with nothing pending; this holds even if that ever were wrong.)
_DROP_SUBGRAPHS = (
    "DELETE FROM writes WHERE thread_id = :thread AND checkpoint_ns != '' AND NOT EXISTS "
    "(SELECT 1 FROM writes WHERE thread_id = :thread AND checkpoint_ns = '' AND "
    "checkpoint_id = (SELECT MAX(checkpoint_id) FROM checkpoints "
    "WHERE thread_id = :thread AND checkpoint_ns = ''))",
    "DELETE FROM checkpoints WHERE thread_id = :thread AND checkpoint_ns != '' AND NOT EXISTS "
    "(SELECT 1 FROM writes WHERE thread_id = :thread AND checkpoint_ns = '' AND "
    "checkpoint_id = (SELECT MAX(checkpoint_id) FROM checkpoints "
    "WHERE thread_id = :thread AND checkpoint_ns = ''))",
)
# A pruning waits this long for another process's write lock, then gives up until the next
# time: it is housekeeping, and the turn that runs it is waiting.
PRUNE_BUSY_TIMEOUT_MS = 1_000


class StoredStateUnreadable(Exception):
    """A thread's stored checkpoint no longer decodes (damaged bytes inside a sound file)."""


class PrunedSqliteSaver(AsyncSqliteSaver):
    """`AsyncSqliteSaver` with `aprune`, and decoding failures told apart from our own bugs.
    Our state has no `DeltaChannel` (the latest checkpoint holds every channel's whole
    value; tests/store/test_checkpoints.py checks), so older checkpoints can simply go."""

    def __init__(self, conn: aiosqlite.Connection, *, path: Path, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.path = path

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        try:
            return await super().aget_tuple(config)
        except (sqlite3.Error, asyncio.CancelledError):
            raise
        except Exception as exc:
            # Bytes that no longer decode raise whatever the decoder meets (ValueError,
            # KeyError, NotImplementedError...): one type, so callers can say what it is.
            raise StoredStateUnreadable(f"{type(exc).__name__}: {exc}") from exc

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest`: the latest checkpoint of each namespace stays (LangGraph's contract).
        `idle`: only the main graph's latest stays, unless something is pending.
        `delete`: everything of the threads goes."""
        if strategy == "delete":
            for thread_id in thread_ids:
                await self.adelete_thread(thread_id)
            return
        if strategy not in ("keep_latest", "idle"):
            raise ValueError(f"unknown pruning strategy {strategy!r}")
        await self.setup()
        statements = (_DROP_SUBGRAPHS if strategy == "idle" else ()) + _KEEP_LATEST
        # In a worker, on a connection of its own, as one transaction: held on the shared
        # async connection, the write lock would wait across the event loop's turns, while
        # another store's write on the loop waited for that lock (the database is one file).
        async with self.lock:
            await asyncio.shield(
                asyncio.to_thread(self._prune, [str(t) for t in thread_ids], statements)
            )

    def _prune(self, thread_ids: list[str], statements: tuple[str, ...]) -> None:
        conn = sqlite3.connect(
            self.path, timeout=PRUNE_BUSY_TIMEOUT_MS / 1000, isolation_level=None
        )
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for thread_id in thread_ids:
                    for statement in statements:
                        conn.execute(statement, {"thread": thread_id})
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()


class Closable(Protocol):
    """What holds a saver's connections (aiosqlite's connection, psycopg's pool)."""

    async def close(self) -> None: ...


async def open_checkpoints(
    where: Location, what: str = "ShopBot database"
) -> tuple[Closable, BaseCheckpointSaver[Any]]:
    """The saver at `where` on connections of its own (closed by the caller), or a
    `StorageError`: the home's SQLite file, or PostgreSQL (agents/store/postgres/)."""
    if not isinstance(where, Path):
        from agents.store.postgres.checkpoints import open_postgres_checkpoints

        return await open_postgres_checkpoints(where)
    return await open_sqlite_checkpoints(where, what)


async def open_sqlite_checkpoints(
    path: Path, what: str = "ShopBot database"
) -> tuple[aiosqlite.Connection, PrunedSqliteSaver]:
    """The SQLite saver on its own connection (closed by the caller), or a `StorageError`."""
    # The checks every ShopBot store gets (WAL, busy waits, damaged or locked, said
    # clearly), run once before LangGraph's own async connection opens; off the event loop,
    # as they may wait for another process's lock.
    await asyncio.to_thread(lambda: open_database(path, what=what).close())
    try:
        # Autocommit: each of the saver's writes is one statement, so no write lock is held
        # while the event loop runs something else (a store writing to the same file on the
        # loop would then wait for it, and the saver's commit for the loop).
        connection = await aiosqlite.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
        )
    except sqlite3.DatabaseError as exc:
        raise _unusable(path, what, exc) from exc
    try:
        await connection.execute("PRAGMA synchronous = NORMAL")
        saver = PrunedSqliteSaver(connection, path=path)
        await saver.setup()
    except BaseException as exc:
        await connection.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise _unusable(path, what, exc) from exc
        raise
    return connection, saver


def _unusable(path: Path, what: str, exc: sqlite3.DatabaseError) -> StorageError:
    return StorageError(unusable_text(what, path, exc))
