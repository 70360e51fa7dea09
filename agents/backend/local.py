"""The backend that runs ShopBot in this process: the engine (the graph, its stores) once
started, and the stores alone before that (the command line's `threads`, `show`, `audit` and
`handled` need no model, no graph and none of LangChain's second of imports).

Store reads are SQLite calls: each runs off the event loop (`asyncio.to_thread`), as the
fronts did before they had a backend.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Collection
from functools import partial
from typing import TYPE_CHECKING, TextIO, TypeVar

from agents.backend.audit_connections import AuditConnections
from agents.backend.thread_ids import new_thread_id
from agents.backend.who_decided import refused_naming_who
from agents.reviewer import Reviewer
from agents.settings import Settings
from agents.store.database import checked_database, location_of

if TYPE_CHECKING:
    from agents.audit.log import AuditEvent, AuditQuery
    from agents.events import ApprovalRequest, EngineEvent
    from agents.runner.engine import ShopBotEngine
    from agents.store.escalations import Escalation
    from agents.store.threads import ChatLine, ThreadInfo, ThreadRegistry

T = TypeVar("T")
EngineFactory = Callable[[], "ShopBotEngine"]


def load_engine() -> type[ShopBotEngine]:
    """The engine class, importing LangChain and LangGraph if that has not happened yet."""
    from agents.runner.engine import ShopBotEngine

    return ShopBotEngine


class LocalBackend:
    """`LocalBackend(settings, via="app")`: decisions are the login name's, through `via`
    ("app", "command line"). `engine_factory`: the engine to start (tests hand in one with
    a scripted model); by default `ShopBotEngine(settings)`, built off the event loop."""

    def __init__(
        self,
        settings: Settings,
        *,
        via: str,
        engine_factory: EngineFactory | None = None,
        offline_token_delay: float = 0.0,
    ) -> None:
        self.settings = settings
        self._reviewer = Reviewer.here(via)
        self._engine_factory = engine_factory
        self._offline_token_delay = offline_token_delay
        self.engine: ShopBotEngine | None = None
        # Before the engine starts (or without it): the registry opened on first use.
        self._registry: ThreadRegistry | None = None
        self._registry_lock = threading.Lock()
        self._audit = AuditConnections(
            location_of(settings),
            # A home's database found missing where it held data is refused, not made anew;
            # PostgreSQL's is reached first.
            before_open=partial(checked_database, settings),
        )

    # --- the backend's own ---------------------------------------------------------------

    @property
    def model_label(self) -> str:
        return self.engine.model_label if self.engine is not None else self.settings.model_label

    @property
    def reviewer(self) -> Reviewer:
        return self._reviewer

    def new_thread_id(self) -> str:
        return new_thread_id()

    async def start(self) -> None:
        engine_class = await asyncio.to_thread(load_engine)
        if self._engine_factory is not None:
            engine = self._engine_factory()
        else:
            # Building the model imports its client (ChatMistralAI's is heavy): off the loop.
            engine = await asyncio.to_thread(
                engine_class, self.settings, offline_token_delay=self._offline_token_delay
            )
        await engine.start()
        self.engine = engine

    async def close(self) -> None:
        # Off the event loop: closing may flush to disk (a query still running on one of
        # them, a viewer's, closes it when it ends).
        await asyncio.to_thread(self._audit.close)
        engine, self.engine = self.engine, None
        if self._registry is not None:
            registry, self._registry = self._registry, None
            await asyncio.to_thread(registry.close)
        if engine is not None:
            await engine.aclose()

    async def describe_failure(self, error: BaseException) -> str:
        from agents.store.damage import failure_text

        # (Naming damage runs SQLite's quick_check: off the event loop.)
        return await asyncio.to_thread(failure_text, self.settings, error)

    def _running(self) -> ShopBotEngine:
        if self.engine is None:
            raise RuntimeError("the engine is not started: `await backend.start()` first")
        return self.engine

    def _threads(self) -> ThreadRegistry:
        """The engine's registry, or one of our own before it runs (in a worker thread)."""
        if self.engine is not None:
            return self.engine.threads
        with self._registry_lock:
            if self._registry is None:
                from agents.store.threads import ThreadRegistry

                self._registry = ThreadRegistry(checked_database(self.settings))
            return self._registry

    async def _off_loop(self, work: Callable[[ThreadRegistry], T]) -> T:
        return await asyncio.to_thread(lambda: work(self._threads()))

    # --- a turn --------------------------------------------------------------------------

    def send(
        self, thread_id: str, text: str, *, customer: str | None = None
    ) -> AsyncIterator[EngineEvent]:
        return self._running().run_turn(thread_id, text, customer=customer)

    def decide(
        self, thread_id: str, decision: str, *, request_id: str | None
    ) -> AsyncIterator[EngineEvent]:
        events = self._running().resume(
            thread_id, decision, asked=request_id, reviewer=self._reviewer
        )
        return refused_naming_who(thread_id, events, self.audit_page)

    def stop_reply(self, thread_id: str) -> bool:
        return self.engine is not None and self.engine.stop_turn(thread_id)

    def paying_refund(self, thread_id: str) -> bool:
        return self.engine is not None and self.engine.paying_refund(thread_id)

    # --- conversations -------------------------------------------------------------------

    async def threads(
        self,
        *,
        limit: int | None = 200,
        matching: str = "",
        among: Collection[str] | None = None,
    ) -> list[ThreadInfo]:
        return await self._off_loop(
            lambda threads: threads.list(limit=limit, matching=matching, among=among)
        )

    async def count_threads(self) -> int:
        return await self._off_loop(lambda threads: threads.count())

    async def thread(self, thread_id: str) -> ThreadInfo | None:
        return await self._off_loop(lambda threads: threads.get(thread_id))

    async def waiting_for_decision(self) -> list[ThreadInfo]:
        return await self._off_loop(lambda threads: threads.with_status("awaiting_approval"))

    async def escalations(self) -> list[Escalation]:
        return await self._off_loop(lambda threads: threads.escalations())

    async def transcript(self, thread_id: str, limit: int | None = None) -> list[ChatLine]:
        return await self._off_loop(lambda threads: threads.lines(thread_id, limit=limit))

    async def active_agent(self, thread_id: str) -> str:
        return await self._running().active_agent(thread_id)

    async def answering_elsewhere(self, thread_id: str) -> bool:
        return await asyncio.to_thread(self._running().answering_elsewhere, thread_id)

    # --- decisions and escalations -------------------------------------------------------

    async def pending_decision(self, thread_id: str) -> ApprovalRequest | None:
        return await self._running().pending_approval(thread_id)

    async def decision_as_it_stands(self, request: ApprovalRequest) -> ApprovalRequest:
        return await asyncio.to_thread(self._running().approval_as_it_stands, request)

    def may_not_decide(self, request: ApprovalRequest) -> str | None:
        return self._running().may_not_decide(request, self._reviewer)

    async def mark_handled(self, thread_id: str) -> Escalation | None:
        if (engine := self.engine) is not None:
            return await asyncio.to_thread(engine.close_escalation, thread_id, self._reviewer)
        return await asyncio.to_thread(self._mark_handled_without_engine, thread_id)

    def _mark_handled_without_engine(self, thread_id: str) -> Escalation | None:
        from agents.audit.log import AuditLog
        from agents.store.escalations import mark_handled
        from agents.store.threads import validate_thread_id

        with AuditLog(checked_database(self.settings)) as log:
            return mark_handled(self._threads(), log, validate_thread_id(thread_id), self._reviewer)

    # --- drafts --------------------------------------------------------------------------

    async def draft(self, thread_id: str | None) -> str:
        return await self._off_loop(lambda threads: threads.draft(thread_id))

    async def save_draft(self, thread_id: str | None, text: str) -> None:
        await self._off_loop(lambda threads: threads.save_draft(thread_id, text))

    async def drafted_threads(self) -> set[str]:
        return await self._off_loop(lambda threads: threads.drafted())

    # --- the audit log -------------------------------------------------------------------

    async def audit_page(
        self, query: AuditQuery, *, limit: int, before_id: int | None = None
    ) -> list[AuditEvent]:
        return await asyncio.to_thread(
            self._audit.run, "pages", lambda log: log.page(query, limit=limit, before_id=before_id)
        )

    async def audit_count(self, query: AuditQuery) -> int:
        return await asyncio.to_thread(self._audit.run, "stats", lambda log: log.count(query))

    async def audit_thread_ids(self) -> list[str]:
        return await asyncio.to_thread(self._audit.run, "stats", lambda log: log.thread_ids())

    async def audit_export(self, query: AuditQuery, dest: TextIO) -> int:
        return await asyncio.to_thread(
            self._audit.run, "export", lambda log: log.export_jsonl(dest, query)
        )
