"""The conversation store stays bounded: superseded checkpoints are pruned, nothing else is."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agents.models.offline.demo_model import OfflineDemoModel
from agents.runner.engine import PRUNE_EVERY, ShopBotEngine
from agents.store import checkpoints
from agents.store.checkpoints import open_checkpoints
from agents.store.sqlite import StorageError
from tests.support.backends import Backend
from tests.support.engine import decide, history, open_engine, say

ORDER_QUESTION = "Where is my order ORD-001?"
REFUND = "I want a refund for ORD-001, the headphones arrived broken and do not work"


def _stored(store: Path | Backend) -> Backend:
    """A home (its SQLite file) or a test's backend, to read the saver's tables from."""
    return store if isinstance(store, Backend) else Backend("sqlite", store)


def _writes_table(store: Path | Backend) -> str:
    # (LangGraph's PostgreSQL saver names it checkpoint_writes, its SQLite saver writes.)
    return "checkpoint_writes" if _stored(store).postgres else "writes"


def rows(store: Path | Backend, thread: str) -> list[tuple[str, str]]:
    """(namespace, checkpoint id) of the thread's stored checkpoints, read from the tables."""
    found = _stored(store).query(
        "SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = ? "
        "ORDER BY checkpoint_id",
        (thread,),
    )
    return [(ns, checkpoint) for ns, checkpoint in found]


def writes(store: Path | Backend, thread: str) -> int:
    query = f"SELECT COUNT(*) FROM {_writes_table(store)} WHERE thread_id = ?"
    ((count,),) = _stored(store).query(query, (thread,))
    return int(count)


async def chat(engine: ShopBotEngine, thread: str, turns: int) -> None:
    for _ in range(turns):
        turn = await say(engine, thread, ORDER_QUESTION, "Alex")
        assert turn.result.status == "done"


async def test_every_tenth_finished_turn_keeps_only_the_latest_state(
    tmp_path: Path, heavy_backend: Backend
) -> None:
    async with open_engine(tmp_path) as engine:
        await chat(engine, "long", PRUNE_EVERY - 1)
        before = rows(heavy_backend, "long")
        assert len(before) == PRUNE_EVERY - 1  # one per turn until the pruning turn
        await chat(engine, "other", 3)
        await chat(engine, "long", 1)
        after = rows(heavy_backend, "long")
        assert len(after) == 1 and after[0][0] == ""
        assert after[0][1] > before[-1][1]  # the newest state is the one that stayed
        assert len(rows(heavy_backend, "other")) == 3  # other threads are left alone
        kept = await history(engine, "long")
        # The conversation is whole: every question and answer of the ten turns (or the
        # summary that replaced the oldest), and the next turn carries on from it.
        assert sum(1 for m in kept if m.type == "human") >= 5
        turn = await say(engine, "long", "And what was the delivery date?", "Alex")
        assert turn.result.status == "done"
        assert "2025-06-10" in turn.result.reply
        assert len(rows(heavy_backend, "long")) == 2


async def test_a_paused_thread_is_not_pruned_and_resumes_after_pruning(
    tmp_path: Path, heavy_backend: Backend
) -> None:
    async with open_engine(tmp_path) as engine:
        await chat(engine, "refund", PRUNE_EVERY - 1)
        turn = await say(engine, "refund", REFUND, "Alex")  # turn 10 waits for a human
        assert turn.result.status == "awaiting_approval"
        paused = rows(heavy_backend, "refund")
        assert len(paused) > PRUNE_EVERY - 1
        assert any(ns.startswith("refund_agent:") for ns, _ in paused)
        # LangGraph's own contract, `keep_latest`, keeps the paused run's namespace whole.
        await engine._saver.aprune(["refund"], strategy="keep_latest")
        assert any(ns.startswith("refund_agent:") for ns, _ in rows(heavy_backend, "refund"))
        assert writes(heavy_backend, "refund") > 0  # the interrupt is a pending write
        assert await engine.pending_approval("refund") is not None
        done = await decide(engine, "refund", "approve")
        assert done.result.status == "done"
        refund = engine.shop.refund_for("ORD-001")
        assert refund is not None and refund.reference in done.result.reply


async def test_delete_and_unknown_strategies(tmp_path: Path, heavy_backend: Backend) -> None:
    async with open_engine(tmp_path) as engine:
        await chat(engine, "gone", 2)
        await chat(engine, "kept", 1)
        with pytest.raises(ValueError, match="unknown pruning strategy"):
            await engine._saver.aprune(["gone"], strategy="oldest")
        assert len(rows(heavy_backend, "gone")) == 2
        await engine._saver.aprune(["gone"], strategy="delete")
        assert rows(heavy_backend, "gone") == []
        assert len(rows(heavy_backend, "kept")) == 1


async def test_a_store_that_is_not_a_database_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "shopbot.sqlite"
    path.write_bytes(b"this is not a database, it is a shopping list" * 100)
    with pytest.raises(StorageError, match=f"ShopBot database at {path} is damaged"):
        await open_checkpoints(path)


def namespaces(store: Path | Backend, thread: str) -> set[str]:
    return {ns for ns, _ in rows(store, thread)}


def written_checkpoints(store: Path | Backend, thread: str) -> set[str]:
    table = _writes_table(store)
    query = f"SELECT DISTINCT checkpoint_id FROM {table} WHERE thread_id = ?"
    return {checkpoint for (checkpoint,) in _stored(store).query(query, (thread,))}


async def test_finished_subgraph_runs_and_old_writes_go_with_the_tenth_turn(
    tmp_path: Path,
    heavy_backend: Backend,
) -> None:
    async with open_engine(tmp_path) as engine:
        await chat(engine, "mixed", PRUNE_EVERY - 2)
        asked = await say(engine, "mixed", REFUND, "Alex")  # turn 9: hands off, then waits
        assert asked.result.status == "awaiting_approval"
        paid = await decide(engine, "mixed", "approve")
        assert paid.result.status == "done"
        assert len(namespaces(heavy_backend, "mixed")) > 1  # the specialists' runs were stored
        assert written_checkpoints(heavy_backend, "mixed")
        await chat(engine, "mixed", 1)  # turn 10
        assert namespaces(heavy_backend, "mixed") == {""}
        ((_, latest),) = rows(heavy_backend, "mixed")
        assert written_checkpoints(heavy_backend, "mixed") <= {latest}
        refund = engine.shop.refund_for("ORD-001")
        assert refund is not None
        turn = await say(engine, "mixed", "Thanks! Was that refund done?", "Alex")
        assert turn.result.status == "done"


def test_no_channel_of_ours_is_rebuilt_from_older_checkpoints(tmp_path: Path) -> None:
    """Pruning relies on it: a DeltaChannel rebuilds its value from the checkpoints before."""
    from langgraph.channels import DeltaChannel

    from agents.graph.parent import build_graph

    graph = build_graph(OfflineDemoModel(), None)
    graphs = [graph, *(sub for _, sub in graph.get_subgraphs(recurse=True))]
    assert len(graphs) == 4  # the parent and the three specialists
    for each in graphs:
        kinds = {name: type(channel) for name, channel in each.channels.items()}
        assert not [name for name, kind in kinds.items() if issubclass(kind, DeltaChannel)]


async def test_a_pruning_that_fails_on_a_lock_ends_no_turn_and_leaves_no_transaction(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_engine(tmp_path) as engine:
        await chat(engine, "busy", PRUNE_EVERY - 1)
        # Another process takes the write lock as the pruning starts, and holds it past the
        # pruning's patience (then lets go: the rest of the turn writes as usual).
        other = sqlite3.connect(tmp_path / "shopbot.sqlite", isolation_level=None)
        prune = engine._saver.aprune

        async def lock_first(thread_ids: list[str], *, strategy: str = "keep_latest") -> None:
            other.execute("BEGIN IMMEDIATE")
            try:
                await prune(thread_ids, strategy=strategy)
            finally:
                other.execute("ROLLBACK")

        monkeypatch.setattr(engine._saver, "aprune", lock_first)
        await chat(engine, "busy", 1)  # the tenth turn tries, fails, and is done
        monkeypatch.undo()
        assert "pruning the checkpoints of busy failed" in caplog.text
        assert not engine._saver.conn.in_transaction
        assert len(rows(tmp_path, "busy")) == PRUNE_EVERY  # kept for the next pruning
        # Another process writes meanwhile; ours still reads and writes the latest state.
        other.execute("CREATE TABLE elsewhere (x)")
        other.close()
        await chat(engine, "after", 2)
        await chat(engine, "busy", PRUNE_EVERY)
        assert len(rows(tmp_path, "busy")) == 1


class FailingOn:
    """A connection whose statements starting with `prefix` fail (the deletions before them
    having run inside the same transaction)."""

    def __init__(self, conn: sqlite3.Connection, prefix: str, deleted: list[str]) -> None:
        self._conn, self._prefix, self._deleted = conn, prefix, deleted

    def execute(self, sql: str, *args: object) -> object:
        if sql.startswith(self._prefix):
            raise sqlite3.OperationalError("disk I/O error")
        if sql.startswith("DELETE"):
            self._deleted.append(sql)
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


async def test_a_pruning_that_fails_half_way_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_engine(tmp_path) as engine:
        await chat(engine, "half", PRUNE_EVERY - 1)
        before = rows(tmp_path, "half")
        writes_before = writes(tmp_path, "half")
        deleted: list[str] = []
        connect = sqlite3.connect

        def failing(*args: Any, **kwargs: Any) -> Any:
            return FailingOn(connect(*args, **kwargs), "DELETE FROM checkpoints", deleted)

        monkeypatch.setattr(checkpoints.sqlite3, "connect", failing)
        with pytest.raises(sqlite3.OperationalError):
            await engine._saver.aprune(["half"], strategy="idle")
        monkeypatch.undo()
        assert deleted  # the failure came after a deletion had run
        # Rolled back as a whole: the deleted `writes` rows are back, nothing is half pruned.
        assert rows(tmp_path, "half") == before
        assert writes(tmp_path, "half") == writes_before
        # The saver still writes: the next turns run and the pruning succeeds.
        await chat(engine, "half", 1)
        assert len(rows(tmp_path, "half")) == 1


async def test_a_pruning_whose_turn_is_cancelled_prunes_whole_or_not_at_all(
    tmp_path: Path,
) -> None:
    async with open_engine(tmp_path) as engine:
        await chat(engine, "cut", PRUNE_EVERY - 1)
        pruning = asyncio.ensure_future(engine._saver.aprune(["cut"], strategy="idle"))
        await asyncio.sleep(0)
        pruning.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pruning
        # (The transaction runs in its worker to its end: a cancelled wait cuts nothing.)
        await asyncio.to_thread(lambda: None)
        left = len(rows(tmp_path, "cut"))
        assert left in (1, PRUNE_EVERY - 1), left
        await chat(engine, "cut", 1)
