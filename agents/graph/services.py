"""What a run uses that no client may send: the shop and its ledger, the audit log, the retry
budget, who decides a question. One set per process, opened from settings; the in-process
runner hands its own through the run's config instead (objects never cross a server's wire,
so a client cannot put its own there).

Nodes and tools reach them through `turn(...)`: the run's thread, its customer (from the
context), its reviewer and these services, in one small view.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from agents.audit.writer import TurnSink
from agents.graph.context import RetryBudget, ShopContext
from agents.refund_limits import RefundLimits
from agents.reviewer import Reviewer
from agents.store.shop import ShopData

# The run config's keys for what the in-process runner passes itself (objects, never JSON).
SERVICES_KEY = "shopbot_services"
REVIEWER_KEY = "shopbot_reviewer"


def _no_decisions(order_id: str) -> list[dict[str, str]]:
    return []


def _nothing_to_hold(thread_id: str) -> AbstractContextManager[None]:
    return nullcontext()


@dataclass(frozen=True)
class Services:
    shop: ShopData
    audit: TurnSink
    retry: RetryBudget = field(default_factory=RetryBudget)
    # The earlier decisions on an order's refund, newest first (audit/decisions.py); a
    # blocking read, called off the event loop.
    decisions_on: Callable[[str], list[dict[str, str]]] = _no_decisions
    # Held while money moves for a thread (the refund and its record): a person's stop waits
    # until both are done, or, asked just before, ends the run before anything is paid.
    unstoppable: Callable[[str], AbstractContextManager[None]] = _nothing_to_hold
    # Who may decide refunds up to what amount (the home's reviewers file).
    limits: RefundLimits = field(default_factory=RefundLimits)


class _ProcessServices:
    """This process's services, opened on first use by the factory a server registers."""

    def __init__(self) -> None:
        self.opened: Services | None = None
        self.factory: Callable[[], Services] | None = None
        self.lock = threading.Lock()

    def get(self) -> Services:
        with self.lock:
            if self.opened is None:
                if self.factory is None:
                    raise RuntimeError(
                        "No ShopBot services in this process: run the graph through the "
                        "in-process runner or its server module (agents/serving)."
                    )
                self.opened = self.factory()
            return self.opened


_PROCESS = _ProcessServices()


def serve_with(factory: Callable[[], Services]) -> None:
    """How this process opens its services when a run first needs them (a server's graph
    module registers it; the in-process runner passes its own per run instead)."""
    _PROCESS.factory = factory


def process_services() -> Services:
    """This process's services, opened on first use (blocking: the first call off the
    event loop, see `opened`)."""
    return _PROCESS.get()


def opened() -> bool:
    """Whether `turn` can find this process's services without opening them."""
    return _PROCESS.opened is not None


@dataclass(frozen=True)
class Turn:
    """One run's view of what it works with."""

    thread_id: str
    customer: str | None
    # Who answers the decision this run resumes with (None on a customer's message).
    reviewer: Reviewer | None
    services: Services

    @property
    def shop(self) -> ShopData:
        return self.services.shop

    @property
    def audit(self) -> TurnSink:
        return self.services.audit

    @property
    def retry(self) -> RetryBudget:
        return self.services.retry

    @property
    def limits(self) -> RefundLimits:
        return self.services.limits

    def reviewer_limit(self) -> Decimal:
        """The refund limit of who answers this run's decision (the standard one for a run
        whose reviewer is unknown)."""
        return self.limits.limit_of(self.reviewer.name if self.reviewer else None)

    def decisions_on(self, order_id: str) -> list[dict[str, str]]:
        return self.services.decisions_on(order_id)

    def unstoppable(self) -> AbstractContextManager[None]:
        return self.services.unstoppable(self.thread_id)


def turn(context: ShopContext | None, config: RunnableConfig | None = None) -> Turn:
    """The run's view, from its context and config (by default the running node's)."""
    configurable: Mapping[str, Any] = (config or get_config()).get("configurable") or {}
    services = configurable.get(SERVICES_KEY)
    if not isinstance(services, Services):
        services = process_services()
    return Turn(
        thread_id=str(configurable.get("thread_id") or ""),
        customer=context.customer if isinstance(context, ShopContext) else None,
        reviewer=_reviewer(configurable),
        services=services,
    )


def _reviewer(configurable: Mapping[str, Any]) -> Reviewer | None:
    """The runner's own `Reviewer`, or the user a LangGraph server authenticated: never a
    name a client wrote (JSON cannot make either object)."""
    given = configurable.get(REVIEWER_KEY)
    if isinstance(given, Reviewer):
        return given
    user = configurable.get("langgraph_auth_user")
    identity = getattr(user, "identity", None)
    if isinstance(identity, str) and identity.strip() and not isinstance(user, dict):
        return Reviewer(" ".join(identity.split())[:64], "server")
    return None
