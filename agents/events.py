"""What the engine tells its fronts (TUI and CLI) while a turn runs.

Plain dataclasses, no LangChain: the UI imports this module before the engine is loaded.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, cast

from agents.names import AGENT_TITLES, Step

ApprovalKind = Literal["refund_approval", "complaint_review"]
REFUND_OPTIONS: tuple[str, ...] = ("approve", "reject", "escalate")
COMPLAINT_OPTIONS: tuple[str, ...] = ("escalate_to_senior", "provide_compensation", "close_ticket")
TurnStatus = Literal["done", "awaiting_approval", "error"]


REQUEST_ID_CHARS = 12


@dataclass(frozen=True)
class ApprovalRequest:
    """A decision the graph is waiting for; `payload` is what the interrupt carried."""

    thread_id: str
    kind: ApprovalKind
    options: tuple[str, ...]
    payload: dict[str, Any] = field(default_factory=dict)
    # The interrupt asking it: the same payload asked again is another request.
    interrupt_id: str = ""

    @property
    def request_id(self) -> str:
        """Names this request among those a thread asks: a decision can say which one it
        answers. The graph's own (the same question asked again keeps it), else the
        interrupt's, shortened (LangGraph's 32 hex digits read as a key, and get redacted)."""
        return str(self.payload.get("request_id") or self.interrupt_id[:REQUEST_ID_CHARS])

    def to_json(self) -> dict[str, Any]:
        """The `pending` object of the CLI contract."""
        shown = {**self.payload, "kind": self.kind, "options": list(self.options)}
        return {**shown, "request_id": self.request_id} if self.request_id else shown


# Interrupt payload keys that are engine bookkeeping, not something a reviewer decides on.
_NOT_FOR_PEOPLE = ("kind", "options", "tool_call_id", "agent")


def request_from_interrupt(
    thread_id: str, value: object, interrupt_id: str
) -> ApprovalRequest | None:
    """The decision an interrupt asks for (its value, as the graph or a server's JSON holds
    it); None for an interrupt that is not a question for a person."""
    if not isinstance(value, dict) or "options" not in value:
        return None
    return ApprovalRequest(
        thread_id=thread_id,
        kind=value["kind"],
        options=tuple(value["options"]),
        payload={k: v for k, v in value.items() if k not in _NOT_FOR_PEOPLE},
        interrupt_id=interrupt_id,
    )


@dataclass(frozen=True)
class TurnResult:
    """How a turn (or a resume) ended."""

    thread_id: str
    status: TurnStatus
    reply: str
    active_agent: str
    pending: ApprovalRequest | None = None
    error: str | None = None
    # What failed, when the turn did: "provider", "storage" or "internal" (not in the JSON).
    failed: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The `--json` object of `shopbot chat` and `shopbot resume`."""
        out: dict[str, Any] = {
            "thread_id": self.thread_id,
            "status": self.status,
            # A failed turn that said nothing: null, as for a refusal, not an empty reply.
            "reply": self.reply if self.reply or self.status != "error" else None,
            "active_agent": self.active_agent,
            "pending": self.pending.to_json() if self.pending else None,
        }
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class TokenDelta:
    """A piece of the reply being written, streamed from inside a specialist."""

    agent: str
    text: str


@dataclass(frozen=True)
class AgentChanged:
    """The active agent changed (a hand-off, or a thread was opened)."""

    agent: str
    previous: str | None = None


@dataclass(frozen=True)
class StepChanged:
    """The active agent moved to another step; `attempt` counts corrections (1 or 2)."""

    agent: str
    step: Step
    detail: str = ""
    attempt: int | None = None


@dataclass(frozen=True)
class GateChecked:
    """A gate ran on what the model extracted."""

    agent: str
    gate: str
    ok: bool
    detail: str
    attempt: int = 0


@dataclass(frozen=True)
class HandedOff:
    """One specialist handed the conversation to another."""

    source: str
    target: str
    reason: str = ""  # the engine's own words only (shown as a note), never the model's


@dataclass(frozen=True)
class ToolCalled:
    """A tool call the model asked for, and what became of it."""

    agent: str
    tool: str
    args: dict[str, Any]
    outcome: Literal["executed", "refused", "failed"]
    detail: str = ""
    # What the person watching is told (`detail` is written for the model): why it did not
    # run, and what happens instead.
    note: str = ""


@dataclass(frozen=True)
class Escalated:
    """The conversation was handed to a human colleague."""

    agent: str
    reason: str


@dataclass(frozen=True)
class LimitReached:
    """A brake stopped the turn (recursion, hand-off cap, repeated tool call)."""

    agent: str
    limit: str
    detail: str


@dataclass(frozen=True)
class Retrying:
    """The provider failed transiently; the call is retried after `delay` seconds."""

    agent: str
    attempt: int
    delay: float
    reason: str

    def notice(self) -> str:
        """What a person is told of it (TUI notification, the CLI's line on a terminal)."""
        return retry_notice(self.reason, self.delay, self.attempt)


@dataclass(frozen=True)
class ApprovalRequested:
    """The graph paused for a human decision."""

    request: ApprovalRequest


@dataclass(frozen=True)
class ApprovalDecided:
    """A person answered the pending approval; the graph carries on with `decision`."""

    kind: str
    decision: str
    # Who answered, as the audit log names them ("dana (app)"); the conversation says it too.
    by: str = ""


@dataclass(frozen=True)
class RefundPaid:
    """Money moved: the refund ledger holds this refund (noted even if the reply then fails)."""

    agent: str
    order_id: str
    reference: str
    amount: str


@dataclass(frozen=True)
class RefundNotCarriedOut:
    """A person's decision on a refund could not be carried out (the ledger could not be
    read or written): nothing was paid, and the same question waits again. The turn fails
    with `message`; `storage` says whether a store was the cause."""

    agent: str
    order_id: str
    decision: str
    message: str
    storage: bool = True


@dataclass(frozen=True)
class DecisionRefused:
    """An answer to the question waiting was refused (not an option, another request's, not
    the reviewer's to give): nothing was decided, and the question waits again."""

    agent: str
    message: str


@dataclass(frozen=True)
class MessageRefused:
    """A customer message that was not sent: a question waits for a person, or the
    conversation is another customer's."""

    agent: str
    message: str


@dataclass(frozen=True)
class ReplyDone:
    """A complete assistant reply (the streamed tokens, final and exact)."""

    agent: str
    text: str


@dataclass(frozen=True)
class TurnFailed:
    """The turn could not finish; the conversation is intact and usable."""

    kind: Literal["provider", "storage", "internal"]
    message: str


@dataclass(frozen=True)
class TurnFinished:
    """Always the last event of a stream."""

    result: TurnResult


EngineEvent = (
    TokenDelta
    | AgentChanged
    | StepChanged
    | GateChecked
    | HandedOff
    | ToolCalled
    | Escalated
    | LimitReached
    | Retrying
    | ApprovalRequested
    | ApprovalDecided
    | RefundPaid
    | RefundNotCarriedOut
    | DecisionRefused
    | MessageRefused
    | ReplyDone
    | TurnFailed
    | TurnFinished
)


# The wire format: each event the graph streams is a JSON object with a `type` (what a
# LangGraph server sends its clients as a custom stream event, and what the in-process
# runner reads back into these dataclasses). Dataclasses themselves lose their type on a
# server's wire (`langgraph dev` sends their fields only, Aegra their repr): see design.md.
WIRE_TYPES: dict[type[Any], str] = {
    TokenDelta: "token",
    ReplyDone: "reply",
    StepChanged: "step",
    AgentChanged: "agent",
    GateChecked: "gate",
    HandedOff: "handoff",
    ToolCalled: "tool",
    Escalated: "escalated",
    LimitReached: "limit",
    Retrying: "retrying",
    RefundPaid: "refund_paid",
    RefundNotCarriedOut: "refund_not_carried_out",
    DecisionRefused: "decision_refused",
    MessageRefused: "message_refused",
    ApprovalDecided: "decided",
    TurnFailed: "failed",
}
_BY_WIRE_TYPE = {name: kind for kind, name in WIRE_TYPES.items()}
_FIELDS = {kind: tuple(f.name for f in fields(kind)) for kind in WIRE_TYPES}


def to_wire(event: EngineEvent) -> dict[str, Any]:
    """`event` as the JSON object the graph streams: `{"type": ..., its fields...}`."""
    kind = type(event)
    return {"type": WIRE_TYPES[kind], **{name: getattr(event, name) for name in _FIELDS[kind]}}


def from_wire(data: object) -> EngineEvent | None:
    """The event a streamed JSON object stands for; None for anything else (a newer
    server's event type, another graph's custom data): a front shows what it knows."""
    if not isinstance(data, dict):
        return None
    kind = _BY_WIRE_TYPE.get(str(data.get("type")))
    if kind is None:
        return None
    try:
        return cast(EngineEvent, kind(**{n: data[n] for n in _FIELDS[kind] if n in data}))
    except TypeError:  # (a field missing: not an event of ours after all)
        return None


# A note shows its sentence whole (wrapped on screen): a check's "…format ORD-XXX (three
# digits, example: ORD…" was cut mid-example. This many characters at most, for text that
# quotes what a model wrote (an "order id" of a thousand characters).
NOTE_SENTENCE_CHARS = 400


def _first_sentence(text: str, width: int = NOTE_SENTENCE_CHARS) -> str:
    sentence = " ".join(text.split(". ", maxsplit=1)[0].split())  # one line, whatever it held
    return sentence if len(sentence) <= width else sentence[: width - 1] + "…"


# A tool name as Mistral allows one. The model writes the name of a call that is refused, and
# a note must not start with whatever it likes ("refund paid: ..." on a line of its own).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _tool_label(name: str) -> str:
    return name if _TOOL_NAME.fullmatch(name) else "an unknown tool"


def note_for(event: EngineEvent) -> str | None:
    """The quiet system line a person sees for an event, in the chat and in the transcript."""
    if isinstance(event, HandedOff):
        why = f" ({_first_sentence(event.reason)})" if event.reason else ""
        return f"→ handed to {AGENT_TITLES.get(event.target, event.target)}{why}"
    if isinstance(event, GateChecked) and not event.ok:
        return f"gate: {event.gate.replace('_', ' ')} rejected: {_first_sentence(event.detail)}"
    if isinstance(event, StepChanged) and event.step == "correcting":
        return f"correcting ({event.detail})"
    if isinstance(event, Escalated):
        return f"escalated to a human ({event.reason})"
    if isinstance(event, LimitReached):
        return f"stopped by a safety limit: {event.detail}"
    if isinstance(event, ToolCalled) and event.outcome != "executed":
        if event.note:
            verb = "not run" if event.outcome == "refused" else event.outcome
            return f"{_tool_label(event.tool)} {verb}: {event.note}"
        return f"{_tool_label(event.tool)} {event.outcome}: {_first_sentence(event.detail)}"
    if isinstance(event, ApprovalRequested):
        return waiting_note(event.request.kind)
    if isinstance(event, ApprovalDecided):
        by = f", by {event.by}" if event.by else ""
        return f"decision: {event.decision.replace('_', ' ')}{by}"
    if isinstance(event, RefundPaid):
        return f"refund paid: {event.order_id}, ${event.amount} (reference {event.reference})"
    if isinstance(event, Retrying):
        # (After a colon: the reason often ends in "(HTTP 429)." already.)
        reason = event.reason.strip().rstrip(".")
        return f"model provider failed, retrying in {event.delay:.1f}s: {reason}"
    if isinstance(event, TurnFailed | DecisionRefused | MessageRefused | RefundNotCarriedOut):
        return f"⚠ {event.message}"
    return None


def waiting_note(kind: str) -> str:
    """The transcript's line while a question of `kind` waits for a person."""
    return f"waiting for a human decision: {kind.replace('_', ' ')}"


def retry_notice(reason: str, delay: float, attempt: int) -> str:
    return f"{reason} Retrying in {delay:.1f}s (attempt {attempt})."


async def outcome(
    events: AsyncIterable[EngineEvent], on_event: Callable[[EngineEvent], object] | None = None
) -> TurnResult:
    """How a turn ended, from its whole stream of events (each shown to `on_event` first)."""
    result: TurnResult | None = None
    async for event in events:
        if on_event is not None:
            on_event(event)
        if isinstance(event, TurnFinished):
            result = event.result
    assert result is not None, "every turn's events end with TurnFinished"
    return result
