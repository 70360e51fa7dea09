"""What every node of a run may use but the model never fills in: who the customer is and
where the shop's records live. Passed as LangGraph's run context, never checkpointed."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

# Real imports, not TYPE_CHECKING ones: tools' schemas resolve these annotations at runtime.
from agents.audit.writer import AuditSink
from agents.reviewer import Reviewer
from agents.store.shop import ShopData


@dataclass(frozen=True)
class RetryBudget:
    """How hard to try a provider that answers 429 or 5xx."""

    attempts: int = 4
    # A request that timed out (the client waits 30 s for each read) is tried once more, not
    # as often as a refusal: a hung provider kept the person waiting two minutes in silence.
    timeout_attempts: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    # A Retry-After longer than this is not waited for: the turn fails cleanly instead.
    max_retry_after: float = 30.0
    # One answer, streamed or not, from request to last token. The client's timeout is per
    # read: a provider that trickles a token every 25 s would otherwise never time out.
    reply_deadline: float = 120.0


def _no_decisions(order_id: str) -> list[dict[str, str]]:
    return []


@dataclass(frozen=True)
class ShopContext:
    thread_id: str
    # From the session (`--customer`), never from what the model writes.
    customer: str | None
    shop: ShopData
    audit: AuditSink
    retry: RetryBudget = field(default_factory=RetryBudget)
    # Held while money moves (the refund and its record): a person's stop waits until both
    # are done, or, asked just before, ends the run before anything is paid.
    unstoppable: Callable[[], AbstractContextManager[None]] = nullcontext
    # Who answered the decision this run resumes with (None on a customer's message).
    reviewer: Reviewer | None = None
    # The earlier decisions on an order's refund, newest first (decision_history.py); a
    # blocking read, called off the event loop.
    decisions_on: Callable[[str], list[dict[str, str]]] = _no_decisions
