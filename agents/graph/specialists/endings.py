"""Ways a turn ends without the model: escalation to a human, and the brakes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.runtime import Runtime

from agents.events import (
    AgentChanged,
    Escalated,
    HandedOff,
    LimitReached,
    ReplyDone,
    StepChanged,
    TurnFailed,
)
from agents.graph.context import ShopContext
from agents.graph.history import refuse_pending, repair_tail
from agents.graph.other_orders import other_orders_in_turn
from agents.graph.replies import (
    ESCALATED_AFTER_CORRECTIONS,
    ESCALATED_OVER_LIMIT,
    LIMIT_REACHED,
    TURN_FAILED_NOTE,
)
from agents.graph.reporting import close_turn, report
from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.state import SpecialistState
from agents.models.provider import ProviderUnavailable
from agents.names import DEFAULT_AGENT


def make_escalate(spec: SpecialistSpec) -> Any:
    async def escalate(state: SpecialistState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        codes = state.get("gate_codes", [])
        if "refund.over_limit" in codes:
            reason = "refund above the auto-refund limit"
            # The order the call named, not the conversation's last validated one.
            asked = state.get("escalating") or ""
            text = ESCALATED_OVER_LIMIT.format(order_id=asked or "your order")
            # Only that order goes to a colleague: another the customer named is theirs to
            # ask about next. (After failed corrections the whole request goes to one.)
            if others := other_orders_in_turn(state, text):
                text = f"{text}\n\n{others}"
        else:
            reason = "gate still failing after corrections"
            text = ESCALATED_AFTER_CORRECTIONS.format(attempts=state.get("corrections", 0))
        report(
            runtime,
            Escalated(agent=spec.name, reason=reason),
            kind="escalated",
            agent=spec.name,
            detail={"reason": reason, "error": state.get("gate_error"), "codes": codes},
        )
        report(runtime, ReplyDone(agent=spec.name, text=text))
        report(runtime, StepChanged(agent=spec.name, step="idle"))
        close_turn(runtime, agent=spec.name, status="done")
        why = "Not executed: the case was escalated to a human colleague."
        closing = refuse_pending(state["messages"], why)
        return {"messages": [*closing, AIMessage(content=text)]}

    return escalate


def make_stop_turn(spec: SpecialistSpec) -> Any:
    async def stop_turn(state: SpecialistState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        stop = state.get("stop") or {"limit": "unknown", "detail": ""}
        report(
            runtime,
            LimitReached(agent=spec.name, limit=stop["limit"], detail=stop["detail"]),
            kind="limit_reached",
            agent=spec.name,
            detail=stop,
        )
        report(runtime, ReplyDone(agent=spec.name, text=LIMIT_REACHED))
        close_turn(runtime, agent=spec.name, status="done")
        why = "Not executed: the turn was stopped by a safety limit."
        closing = refuse_pending(state["messages"], why)
        return {"messages": [*closing, AIMessage(content=LIMIT_REACHED)]}

    return stop_turn


def fail_turn(
    runtime: Runtime[ShopContext],
    agent: str,
    messages: Sequence[AnyMessage],
    exc: ProviderUnavailable,
) -> dict[str, Any]:
    """The model provider failed for good (its retries spent): the person is told, the
    turn closed as failed, and the history left where the next message can build on it (an
    unanswered call refused, no tool answer last). The customer's message stays."""
    report(runtime, TurnFailed(kind="provider", message=str(exc)))
    close_turn(runtime, agent=agent, status="error")
    return {"messages": repair_tail(messages, TURN_FAILED_NOTE)}


def close_complaint(
    runtime: Runtime[ShopContext], agent: str, reason: str = "complaint handled"
) -> dict[str, str]:
    """A handled complaint goes back to first contact, so the next message is not read as a
    new complaint (its extraction would find the old anger in the history and pause again).
    `reason`: how it was handled, as the hand-back's note says it."""
    report(
        runtime,
        HandedOff(source=agent, target=DEFAULT_AGENT, reason=reason),
        kind="handoff",
        agent=agent,
        detail={"from": agent, "to": DEFAULT_AGENT, "reason": reason},
    )
    report(runtime, AgentChanged(agent=DEFAULT_AGENT, previous=agent))
    return {"active_agent": DEFAULT_AGENT}
