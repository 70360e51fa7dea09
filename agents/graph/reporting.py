"""One call records what a turn does: in the audit log, in the conversation's transcript,
and on the stream the fronts read. The graph writes all three itself, so a turn leaves the
same record under the in-process runner and under a LangGraph server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from agents.audit.writer import TurnSink
from agents.events import (
    ApprovalDecided,
    EngineEvent,
    Escalated,
    ReplyDone,
    TurnStatus,
    note_for,
    to_wire,
    waiting_note,
)
from agents.graph.context import ShopContext
from agents.graph.services import Turn, turn
from agents.names import DEFAULT_AGENT

# How the conversation list shows a turn that ended so.
LISTED_AS: dict[TurnStatus, str] = {
    "done": "idle",
    "awaiting_approval": "awaiting_approval",
    "error": "error",
}


def report(
    runtime: Runtime[ShopContext],
    event: EngineEvent | None = None,
    *,
    kind: str | None = None,
    agent: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> None:
    """Append an audit event of `kind` (if given), and stream `event` (if given) to the
    fronts with its transcript line written."""
    this = turn(runtime.context)
    if kind is not None:
        this.audit.append(kind, thread_id=this.thread_id, agent=agent, detail=detail)
    if event is not None:
        transcribe(this.audit, this.thread_id, event)
        runtime.stream_writer(to_wire(event))


def transcribe(sink: TurnSink, thread_id: str, event: EngineEvent) -> None:
    """The transcript line for an event, in the order things happened: a reply under the
    agent that wrote it, notes between; an escalation also waits in the queue for a person."""
    if not thread_id:
        return
    if isinstance(event, Escalated):
        sink.escalate(thread_id, agent=event.agent, reason=event.reason)
    if isinstance(event, ReplyDone):
        if event.text:
            sink.line(thread_id, "assistant", event.text, agent=event.agent)
    elif (line := note_for(event)) is not None:
        sink.line(thread_id, "note", line)


def decided_by(this: Turn, kind: str, decision: str) -> ApprovalDecided:
    """A person's decision as the fronts show it, with who took it."""
    by = f"{this.reviewer.name} ({this.reviewer.via})" if this.reviewer is not None else ""
    return ApprovalDecided(kind=kind, decision=decision, by=by)


def close_turn(runtime: Runtime[ShopContext], *, agent: str, status: TurnStatus) -> None:
    """How the run ends: the conversation listed as idle, waiting or failed, with the agent
    it is with, and `turn_finished` in the audit log, after everything the turn said."""
    this = turn(runtime.context)
    if not this.thread_id:
        return
    this.audit.finish(this.thread_id, status=LISTED_AS[status], agent=agent)
    this.audit.append(
        "turn_finished", thread_id=this.thread_id, agent=agent, detail={"status": status}
    )


def pause_for(runtime: Runtime[ShopContext], payload: Mapping[str, Any]) -> None:
    """The run is about to wait for a person's answer to `payload`: said in the transcript,
    and the turn closed as waiting."""
    this = turn(runtime.context)
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    if this.thread_id:
        # (The pause itself is no event: the interrupt ends the run.)
        this.audit.line(this.thread_id, "note", waiting_note(str(payload.get("kind", ""))))
    close_turn(runtime, agent=agent, status="awaiting_approval")
