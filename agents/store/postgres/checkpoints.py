"""The conversation store in PostgreSQL: LangGraph's `AsyncPostgresSaver` on a pool, set up
once (under an advisory lock, as processes may start at once), and pruned as the engine asks.

The engine prunes a thread every few idle turns with the strategy `idle`, which the SQLite
saver defines (agents/store/checkpoints.py) and LangGraph's PostgreSQL saver does not (it
knows `keep_latest` and `delete`): the finished subgraph runs go, unless an interrupt waits,
then LangGraph's own `keep_latest` keeps the latest checkpoint of each namespace with its
writes and blobs, and deletes the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from agents.store.checkpoints import StoredStateUnreadable
from agents.store.postgres.database import CHECKPOINT_SETUP_LOCK, LOCK_SPACE, PostgresDatabase
from agents.store.postgres.errors import session_failure
from agents.store.sqlite import StorageError

# A subgraph's namespace carries its task id, so a finished run's namespace is never used
# again; a paused run's is (its interrupt resumes there). So they go only while the latest
# main checkpoint has no pending writes: an interrupt is one. (The engine prunes only
# threads with nothing pending; this holds even if that ever were wrong.)
_NOTHING_PENDING = (
    "NOT EXISTS (SELECT 1 FROM checkpoint_writes w WHERE w.thread_id = %(thread)s"
    " AND w.checkpoint_ns = '' AND w.checkpoint_id = (SELECT max(checkpoint_id)"
    " FROM checkpoints WHERE thread_id = %(thread)s AND checkpoint_ns = ''))"
)
_DROP_SUBGRAPHS = tuple(
    f"DELETE FROM {table} WHERE thread_id = %(thread)s AND checkpoint_ns <> ''"  # noqa: S608
    f" AND {_NOTHING_PENDING}"
    for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints")
)
# The pool's connections, as LangGraph's saver needs them: autocommit (its setup makes
# indexes CONCURRENTLY), rows as dicts, statements prepared at once.
_POOL_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
# One saver runs one query at a time (its lock); a second connection covers a pruning or a
# read from another task while one is being replaced.
_POOL_SIZE = 2
_POOL_OPEN_SECONDS = 15.0


class PrunedPostgresSaver(AsyncPostgresSaver):
    """`AsyncPostgresSaver` with the `idle` pruning strategy, and decoding failures told apart
    from the database's own (as `PrunedSqliteSaver`)."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        try:
            return await super().aget_tuple(config)
        except (psycopg.Error, PoolTimeout, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise StoredStateUnreadable(f"{type(exc).__name__}: {exc}") from exc

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest` and `delete` as LangGraph's; `idle`: finished subgraph runs go too
        (unless something is pending), then `keep_latest`."""
        if strategy not in ("keep_latest", "idle", "delete"):
            raise ValueError(f"unknown pruning strategy {strategy!r}")
        threads = [str(thread_id) for thread_id in thread_ids]
        if strategy == "idle":
            for thread_id in threads:
                async with self._cursor() as cur, cur.connection.transaction():
                    for statement in _DROP_SUBGRAPHS:
                        await cur.execute(statement, {"thread": thread_id})
            strategy = "keep_latest"
        await super().aprune(threads, strategy=strategy)


async def open_postgres_checkpoints(
    database: PostgresDatabase,
) -> tuple[AsyncConnectionPool[Any], PrunedPostgresSaver]:
    """The saver on a pool of its own (closed by the caller), or a `StorageError`."""
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        database.url,
        kwargs=_POOL_KWARGS,
        min_size=1,
        max_size=_POOL_SIZE,
        open=False,
        name="shopbot-checkpoints",
    )
    try:
        try:
            await pool.open(wait=True, timeout=_POOL_OPEN_SECONDS)
        except PoolTimeout:
            # The pool says only that it timed out: connect once more for the reason.
            database.raw_connection().close()
            raise
        saver = PrunedPostgresSaver(pool)
        await _set_up(database, pool, saver)
    except BaseException as exc:
        await pool.close()
        if isinstance(exc, psycopg.Error) and (
            named := session_failure(database.shown, database.user, exc)
        ):
            raise named from exc
        if isinstance(exc, PoolTimeout):
            raise StorageError(
                f"Cannot connect to the ShopBot database {database.shown} in time. Nothing "
                "was changed."
            ) from exc
        raise
    return pool, saver


async def _set_up(
    database: PostgresDatabase, pool: AsyncConnectionPool[Any], saver: PrunedPostgresSaver
) -> None:
    """LangGraph's tables and migrations, once: read first (no lock when they are there),
    else run under an advisory lock that two processes' migrations cannot interleave past."""
    async with pool.connection() as conn:
        if await _migrated(conn, len(saver.MIGRATIONS)):
            return
    async with await psycopg.AsyncConnection.connect(database.url, autocommit=True) as lock:
        await lock.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_SPACE, CHECKPOINT_SETUP_LOCK))
        await saver.setup()  # (the lock goes with its connection)


async def _migrated(conn: psycopg.AsyncConnection[Any], migrations: int) -> bool:
    cursor = await conn.execute("SELECT to_regclass('checkpoint_migrations') IS NOT NULL AS made")
    made = await cursor.fetchone()
    if not made or not made["made"]:
        return False
    cursor = await conn.execute("SELECT max(v) AS v FROM checkpoint_migrations")
    latest = await cursor.fetchone()
    return latest is not None and latest["v"] == migrations - 1
