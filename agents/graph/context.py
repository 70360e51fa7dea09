"""What a run's context may hold, as a client sends it: who the customer is, and nothing else.

The customer comes from how the conversation was started (`--customer`, the app's customer,
a server client entitled to name one), never from what the model writes. Everything else a
node needs (the shop, the audit log, who decides) is the process's: see services.py. A
LangGraph server builds this from the run's JSON as `ShopContext(**context)`, so it holds
plain data only, and refuses any other key.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, field_validator

from agents.safety.text import MessageRejected, person_name


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


class ShopContext(BaseModel):
    """The run's context: the conversation's customer (None: a conversation with none)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    customer: str | None = None

    @field_validator("customer")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        # Vetted here too: a server's client names the customer, and the name decides whose
        # orders the ownership gate shows.
        try:
            return person_name(value)
        except MessageRejected as exc:
            raise ValueError(str(exc)) from exc
