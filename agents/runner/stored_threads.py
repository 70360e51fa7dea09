"""A conversation's checkpointed state: read it, see what it waits for, mend its tail, and
name the store when reading fails."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from agents.events import ApprovalRequest, TurnFailed
from agents.graph.specialists.spec import RECURSION_LIMIT
from agents.runner.thread_state import pending_in
from agents.runner.turn_closing import closing_messages, turn_failure_text, with_ledger
from agents.settings import Settings
from agents.store.checkpoints import StoredStateUnreadable
from agents.store.damage import diagnose_storage, unreadable_thread
from agents.store.shop import ShopData
from agents.store.sqlite import StorageError

log = logging.getLogger("shopbot.engine")


class StoredThreads:
    """The compiled graph's view of every thread, with the shop's refund ledger beside it."""

    def __init__(self, graph: Any, shop: ShopData, settings: Settings) -> None:
        self.graph = graph
        self._shop = shop
        self._settings = settings

    @staticmethod
    def config(thread_id: str) -> dict[str, Any]:
        """The run configuration of `thread_id`, with the recursion brake on every run."""
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": RECURSION_LIMIT}

    async def snapshot(self, thread_id: str) -> Any:
        """The thread's stored state, with the specialists' own (an interrupt their state has
        moved past is stale); a `StorageError` saying what to do when it cannot be read."""
        try:
            return await self.graph.aget_state(self.config(thread_id), subgraphs=True)
        except (StoredStateUnreadable, sqlite3.DatabaseError) as exc:
            raise await self.named(thread_id, exc) from exc

    def pending(self, thread_id: str, state: Any) -> ApprovalRequest | None:
        """The decision `state` waits for, as the refund ledger stands now."""
        return with_ledger(pending_in(thread_id, state), self._shop)

    async def mend_tail(
        self,
        thread_id: str,
        state: Any,
        note: str,
        *,
        say_it: bool = False,
        then: Sequence[BaseMessage] = (),
    ) -> None:
        """Close a turn that did not end normally (see `agents/runner/turn_closing.py`); the thread
        no longer points at the node it stopped in."""
        closing = closing_messages(state, note, say_it=say_it, then=then)
        if closing or state.next:
            await self.graph.aupdate_state(
                self.config(thread_id), {"messages": closing}, as_node="end_turn"
            )

    async def named(self, thread_id: str, exc: Exception) -> Exception:
        """`exc` as a `StorageError` naming the damaged store or conversation, when that is
        what it is; else `exc` itself. Never raises: it runs where something already failed."""
        try:
            if isinstance(exc, StoredStateUnreadable):
                log.error("the stored state of %s cannot be read: %s", thread_id, exc)
                # (Off the event loop: naming the damage runs SQLite's quick_check.)
                return await asyncio.to_thread(unreadable_thread, self._settings, thread_id, exc)
            if (
                damage := await asyncio.to_thread(diagnose_storage, self._settings, exc)
            ) is not None:
                return damage
        except Exception:
            log.exception("diagnosing %r failed", exc)
        return exc

    async def failure(self, thread_id: str, exc: Exception) -> TurnFailed:
        """What broke a turn, for the person: a damaged store by name, else no internals."""
        named = exc if isinstance(exc, StorageError) else await self.named(thread_id, exc)
        if isinstance(named, StorageError):  # (it says what to do already)
            return TurnFailed(kind="storage", message=str(named))
        if isinstance(exc, sqlite3.DatabaseError):
            return TurnFailed(kind="storage", message=turn_failure_text(exc))
        return TurnFailed(kind="internal", message=turn_failure_text(exc))
