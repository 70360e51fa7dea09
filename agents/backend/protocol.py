"""What a front (the TUI, the `shopbot` command) may ask of ShopBot, and nothing else.

Every method takes and returns plain values (the dataclasses `agents.backend` exports), so
an implementation can run the graph in this process (`LocalBackend`) or ask a ShopBot server
over HTTP (a `langgraph-sdk` client: a turn's events arrive as the wire's JSON objects,
`agents.events.from_wire` makes them the same `EngineEvent`s). What reads or writes stored
data is a coroutine; what only looks at this process's own running turns is not.

Who decides is the backend's to say (`reviewer`): the login name locally, the authenticated
user on a server; a front never passes a name in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from agents.audit.log import AuditEvent, AuditQuery
    from agents.events import ApprovalRequest, EngineEvent
    from agents.reviewer import Reviewer
    from agents.store.escalations import Escalation
    from agents.store.threads import ChatLine, ThreadInfo


class Backend(Protocol):
    """ShopBot as a front sees it. `start()` before the first turn; reads work before it
    (the command line's `threads`, `show`, `audit`); `close()` once, at the end."""

    @property
    def model_label(self) -> str:
        """The model as the fronts name it ("offline demo" for the rule-based one)."""
        ...

    @property
    def reviewer(self) -> Reviewer:
        """Who decides through this backend, recorded with every decision."""
        ...

    def new_thread_id(self) -> str:
        """An id for a new conversation (a server's are UUIDs)."""
        ...

    async def start(self) -> None:
        """Be ready to run turns (locally: load and start the engine)."""
        ...

    async def close(self) -> None:
        """Close whatever was opened; safe to call once whatever happened."""
        ...

    async def describe_failure(self, error: BaseException) -> str:
        """One line for a person about `error`, raised by a call here: a damaged store named,
        with what to do."""
        ...

    # --- a turn --------------------------------------------------------------------------

    def send(
        self, thread_id: str, text: str, *, customer: str | None = None
    ) -> AsyncIterator[EngineEvent]:
        """One customer message, answered: events ending with `TurnFinished`. Refused before
        anything runs (`InputError` and its kinds) while a decision waits, among others."""
        ...

    def decide(
        self, thread_id: str, decision: str, *, request_id: str | None
    ) -> AsyncIterator[EngineEvent]:
        """Answer the decision `thread_id` waits for, in `reviewer`'s name. `request_id`: the
        request the person saw; another one waiting now is not decided (`DecisionPending`)."""
        ...

    def stop_reply(self, thread_id: str) -> bool:
        """Stop the turn this front runs on `thread_id` (a person pressed Stop). False when
        there is none, or it is past stopping (its reply whole, its question asked)."""
        ...

    def paying_refund(self, thread_id: str) -> bool:
        """Whether that turn is paying an approved refund right now (why a stop is refused)."""
        ...

    # --- conversations -------------------------------------------------------------------

    async def threads(
        self,
        *,
        limit: int | None = 200,
        matching: str = "",
        among: Collection[str] | None = None,
    ) -> list[ThreadInfo]:
        """The conversations, most recently updated first: at most `limit` (None: all), those
        `matching` a text (id, customer, first message, agent), or only those `among`."""
        ...

    async def count_threads(self) -> int: ...

    async def thread(self, thread_id: str) -> ThreadInfo | None:
        """The conversation as a list shows it (a turn whose process is gone: `cut_off`);
        None for one never used."""
        ...

    async def waiting_for_decision(self) -> list[ThreadInfo]:
        """The conversations a decision holds up, the one left alone longest first."""
        ...

    async def escalations(self) -> list[Escalation]:
        """The conversations escalated to a person and not handled yet, the oldest first."""
        ...

    async def transcript(self, thread_id: str, limit: int | None = None) -> list[ChatLine]:
        """What was said in the conversation (the last `limit` lines), oldest first."""
        ...

    async def active_agent(self, thread_id: str) -> str:
        """The agent that answers the conversation's next message."""
        ...

    async def answering_elsewhere(self, thread_id: str) -> bool:
        """Whether another front runs a turn of `thread_id` now (its state is not final)."""
        ...

    # --- decisions and escalations -------------------------------------------------------

    async def pending_decision(self, thread_id: str) -> ApprovalRequest | None:
        """The decision the conversation waits for, if any."""
        ...

    async def decision_as_it_stands(self, request: ApprovalRequest) -> ApprovalRequest:
        """`request` read again: the order may have been refunded or decided on since."""
        ...

    def may_not_decide(self, request: ApprovalRequest) -> str | None:
        """Why `reviewer` may not decide `request` (a refund above their limit); None when
        they may. Known from `start()` on: the dialog says it as it opens."""
        ...

    async def mark_handled(self, thread_id: str) -> Escalation | None:
        """`reviewer` handled the conversation's escalation; None when none was open."""
        ...

    # --- drafts --------------------------------------------------------------------------

    async def draft(self, thread_id: str | None) -> str:
        """What was typed in the conversation and not sent (None: a new conversation's)."""
        ...

    async def save_draft(self, thread_id: str | None, text: str) -> None: ...

    async def drafted_threads(self) -> set[str]: ...

    # --- the audit log -------------------------------------------------------------------

    async def audit_page(
        self, query: AuditQuery, *, limit: int, before_id: int | None = None
    ) -> list[AuditEvent]:
        """Up to `limit` events matching `query`, newest first, older than `before_id`."""
        ...

    async def audit_count(self, query: AuditQuery) -> int: ...

    async def audit_thread_ids(self) -> list[str]:
        """The conversations with events, the most recently active first."""
        ...

    async def audit_export(self, query: AuditQuery, dest: TextIO) -> int:
        """Write the matching events to `dest` as JSON lines, newest first; how many."""
        ...
