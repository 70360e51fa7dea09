"""Where a customer's message starts a turn, whatever runtime delivered it: the per-turn
brakes start again from nothing, the message is in the transcript (the in-process runner
wrote it already; a server's input is written here), and the audit log says a turn began."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, RemoveMessage
from langgraph.runtime import Runtime

from agents.events import MessageRefused
from agents.graph.context import ShopContext
from agents.graph.history import CUSTOMER_LINE_PREFIX, text_of
from agents.graph.reporting import report
from agents.graph.services import turn
from agents.graph.state import ShopState
from agents.names import DEFAULT_AGENT
from agents.safety.redaction import redact

BEGIN_TURN = "begin_turn"


def other_customer_text(thread_id: str, known: str, given: str) -> str:
    """Why a message for `given` is refused on a conversation of `known`'s."""
    return f"Thread {thread_id} belongs to customer {known}; start a new thread for {given}."


async def begin_turn(state: ShopState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
    this = turn(runtime.context)
    update: dict[str, Any] = {
        "handoffs": 0,
        "corrections": 0,
        "tool_rounds": 0,
        "refund_decisions": {},
    }
    latest = next((m for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), None)
    if latest is None:
        return update
    stored = state.get("customer")
    if this.customer and stored and this.customer.casefold() != stored.casefold():
        # Another customer's session on this conversation: their orders and its history
        # must not meet. Taken back out, said, and the turn ends (parent.py routes it).
        said = other_customer_text(this.thread_id, stored, this.customer)
        agent = state.get("active_agent") or DEFAULT_AGENT
        report(
            runtime,
            MessageRefused(agent, said),
            kind="message_refused",
            agent=agent,
            detail={"reason": "another customer's conversation", "customer": this.customer},
        )
        return {"messages": [RemoveMessage(id=latest.id)]} if latest.id else {}
    if this.customer and not stored:
        update["customer"] = this.customer
    text = text_of(latest)
    if this.thread_id and not (latest.id or "").startswith(CUSTOMER_LINE_PREFIX):
        # A pasted key never reaches the transcript, the model or a later checkpoint (the
        # server's run check cleans the message before the run; this holds without it).
        cleaned = redact(text)
        this.audit.open_turn(this.thread_id, customer=this.customer, message=cleaned)
        if cleaned != text:
            update["messages"] = [HumanMessage(content=cleaned, id=latest.id)]
    this.audit.append("turn_started", thread_id=this.thread_id, detail={"chars": len(text)})
    return update
