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
    """How hard and how long to try the model provider for one answer. The README states
    these limits (tests/models/test_provider_limits.py holds the two to each other)."""

    attempts: int = 4
    # Seconds without a byte from the provider before an attempt is given up (the client's
    # connect, read and write timeouts). Mistral's first token takes a second or two, a
    # structured extraction (not streamed, so no byte until it is whole) a few.
    silence_timeout: float = 10.0
    # Attempts that time out so, at most: a hung provider is given up on after 2 x 10 s and
    # one backoff, 21 s, not four times that. With `shopbot chat`'s start-up (5 to 17 s
    # seen on a busy machine) the person has the error within 45 s of pressing Enter.
    timeout_attempts: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    # A Retry-After longer than this is not waited for: the turn fails cleanly instead.
    max_retry_after: float = 30.0
    # One answer, streamed or not, from its first request to its last token, retries and the
    # waits between them included. The silence limit alone is per read: a provider that
    # trickles a token every few seconds would never trip it.
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
