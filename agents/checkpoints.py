"""The conversation store: LangGraph's async SQLite saver, opened with our checks, and pruned.

Every turn stores the whole state again (the history, until summarised), so a thread's
superseded checkpoints would grow the file by ~10 kB a turn forever. Nothing reads them: a
run starts from the latest checkpoint, the transcript keeps what was said and the audit log
what was decided. LangGraph defines `aprune` for this, but its SQLite saver does not
implement it, hence the subclass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.sqlite_store import BUSY_TIMEOUT_MS, StorageError, is_busy, open_database

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
# again; only a paused run's is (its interrupt resumes there).
_DROP_SUBGRAPHS = (
    "DELETE FROM writes WHERE thread_id = :thread AND checkpoint_ns != ''",
    "DELETE FROM checkpoints WHERE thread_id = :thread AND checkpoint_ns != ''",
)


class PrunedSqliteSaver(AsyncSqliteSaver):
    """`AsyncSqliteSaver` with `aprune`. Our state has no `DeltaChannel` (the latest
    checkpoint holds every channel's whole value), so older checkpoints can simply go."""

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest`: the latest checkpoint of each namespace stays (LangGraph's contract).
        `idle`: only the main graph's latest stays — for a thread with nothing pending.
        `delete`: everything of the threads goes."""
        if strategy == "delete":
            for thread_id in thread_ids:
                await self.adelete_thread(thread_id)
            return
        if strategy not in ("keep_latest", "idle"):
            raise ValueError(f"unknown pruning strategy {strategy!r}")
        await self.setup()
        async with self.lock, self.conn.cursor() as cursor:
            statements = (_DROP_SUBGRAPHS if strategy == "idle" else ()) + _KEEP_LATEST
            for thread_id in thread_ids:
                for statement in statements:
                    await cursor.execute(statement, {"thread": str(thread_id)})
            await self.conn.commit()


async def open_checkpoints(
    path: Path, what: str = "conversation store"
) -> tuple[aiosqlite.Connection, PrunedSqliteSaver]:
    """The saver on its own connection (closed by the caller), or a `StorageError`."""
    # The checks every ShopBot store gets (WAL, busy waits, damaged or locked, said
    # clearly), run once synchronously before LangGraph's own async connection opens.
    open_database(path, what=what).close()
    try:
        connection = await aiosqlite.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.DatabaseError as exc:
        raise _unusable(path, what, exc) from exc
    try:
        await connection.execute("PRAGMA synchronous = NORMAL")
        saver = PrunedSqliteSaver(connection)
        await saver.setup()
    except BaseException as exc:
        await connection.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise _unusable(path, what, exc) from exc
        raise
    return connection, saver


def _unusable(path: Path, what: str, exc: sqlite3.DatabaseError) -> StorageError:
    if is_busy(exc):
        return StorageError(
            f"The {what} at {path} is locked by another program ({exc}). "
            "Close other ShopBot windows or commands and try again."
        )
    return StorageError(f"The {what} at {path} cannot be used ({exc}).")
