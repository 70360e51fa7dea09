"""Typed messages the engine workers post; the screens' `@on(...)` handlers own all UI state.

Every turn message carries its `thread_id`: a reply can still arrive for a conversation the
person has switched away from, and the handlers decide what to do with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from agents.backend import (
        ApprovalRequest,
        ChatLine,
        Escalation,
        Step,
        ThreadInfo,
        TurnResult,
    )


@dataclass
class EngineReady(Message):
    """The backend is started (locally: its engine imported and running)."""


@dataclass
class EngineFailed(Message):
    """The engine could not start; `error` says why and what to do."""

    error: str


@dataclass
class ThreadLoaded(Message):
    """A conversation's stored history and state, read for display."""

    thread_id: str
    info: ThreadInfo | None
    lines: list[ChatLine]
    hidden_lines: int
    agent: str
    pending: ApprovalRequest | None
    error: str = ""
    # Which opening read it: a read for an earlier opening of the same thread is stale.
    opening: int = 0
    # Another process (a window, a `shopbot` command) was running a turn of it: its stored
    # state was not final (a decision shown pending may be being answered there).
    answering_elsewhere: bool = False
    # What was typed in it and not sent, last time (see drafts.py).
    draft: str = ""
    # `draft` is a new conversation's, typed before the app last closed (see drafts.py).
    new_draft: bool = False


@dataclass
class TurnMessage(Message):
    """Base of everything a running turn reports."""

    thread_id: str


@dataclass
class TurnAccepted(TurnMessage):
    """The engine took the message (`text`) or the decision (`decision`) and is working."""

    text: str = ""
    decision: str | None = None


@dataclass
class TurnRefused(TurnMessage):
    """The engine refused the input before doing anything; `reason` says what to do,
    `pending` is the decision a refused message found the thread waiting for."""

    text: str = ""
    reason: str = ""
    decision: str | None = None
    pending: ApprovalRequest | None = None
    # Refused because another process runs a turn of the thread, or (a decision) because
    # nothing is pending any more: answered elsewhere.
    busy_elsewhere: bool = False
    nothing_pending: bool = False


@dataclass
class ReplyChunk(TurnMessage):
    """A streamed piece of the reply being written by `agent`."""

    agent: str = ""
    text: str = ""


@dataclass
class ReplyComplete(TurnMessage):
    """The final, exact reply text."""

    agent: str = ""
    text: str = ""


@dataclass
class AgentSwitched(TurnMessage):
    """`agent` is now the active specialist."""

    agent: str = ""


@dataclass
class StepUpdate(TurnMessage):
    """The active specialist moved to another step."""

    agent: str = ""
    step: Step = "idle"
    detail: str = ""
    attempt: int | None = None


@dataclass
class GateReported(TurnMessage):
    """A deterministic gate ran on what the model extracted."""

    agent: str = ""
    gate: str = ""
    ok: bool = True
    detail: str = ""


@dataclass
class NoteAdded(TurnMessage):
    """A quiet system line, worded by `agents.events.note_for` like the stored transcript."""

    text: str = ""


@dataclass
class ProviderRetrying(TurnMessage):
    """The model provider failed transiently and the call is retried."""

    attempt: int = 0
    delay: float = 0.0
    reason: str = ""


@dataclass
class TurnProblem(TurnMessage):
    """The turn could not finish (provider down, internal error); the thread is intact."""

    kind: str = "internal"
    message: str = ""


@dataclass
class TurnEnded(TurnMessage):
    """The event stream is exhausted (the engine's lock is released); `result` may be None
    only when the engine broke its promise of a final `TurnFinished`."""

    result: TurnResult | None = None


# What a running turn writes into the chat log, and what it shows in the side panel.
LiveReport = ReplyChunk | ReplyComplete | NoteAdded | ProviderRetrying
TurnProgress = AgentSwitched | StepUpdate | GateReported


@dataclass
class EscalationClosed(Message):
    """A person marked `thread_id`'s escalation handled: `closed` is it, or None when it was
    not open any more (another window or command closed it); `note` is the transcript's line."""

    thread_id: str
    closed: Escalation | None
    note: str


@dataclass
class ChatExported(Message):
    """The conversation was written to `path` (or `error` says why not)."""

    path: str = ""
    error: str = ""
