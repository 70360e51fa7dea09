"""Where a customer's message starts a turn, whatever runtime delivered it: the per-turn
brakes start again from nothing, the message is in the transcript (the in-process runner
wrote it already; a server's input is written here), and the audit log says a turn began."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from agents.graph.context import ShopContext
from agents.graph.history import CUSTOMER_LINE_PREFIX, text_of
from agents.graph.services import turn
from agents.graph.state import ShopState
from agents.safety.redaction import redact

BEGIN_TURN = "begin_turn"


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
