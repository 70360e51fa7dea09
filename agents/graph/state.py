"""Graph state: what the parent keeps per conversation, and what a specialist keeps per turn."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

# Not typing's: pydantic (a LangGraph server's schema endpoints) wants this one before 3.12.
from typing_extensions import TypedDict


class ShopState(TypedDict, total=False):
    """Checkpointed per thread. No list with an `operator.add` reducer lives here: a subgraph
    returning its state would append it twice (see design.md), and the audit log is not state."""

    messages: Annotated[list[AnyMessage], add_messages]
    active_agent: str
    # The conversation's customer, as its first turn's session named them: a later run for
    # another customer is refused (turn_start.py), whatever runtime delivers it.
    customer: str | None
    # Survives summarisation: older messages are folded into `summary`, never these fields.
    summary: str
    order_id: str
    ticket_category: str
    # Reset to 0 by each new customer message (a run's input); the hand-off cap reads it.
    handoffs: int
    # Corrections asked of the model this turn, by any specialist: at most MAX_CORRECTIONS a
    # turn, then a human takes over; reset by each new customer message, carried by hand-offs.
    corrections: int
    # A person's decision on each order's refund this turn (order id -> decision): it stands
    # until the customer's next message, whichever specialist the turn is handed to meanwhile.
    refund_decisions: dict[str, str]
    # Tool rounds (act steps) this turn, by any specialist: a model that keeps calling tools
    # is stopped at MAX_TOOL_ROUNDS, well before a runtime's recursion limit would be hit.
    tool_rounds: int
    # The question waiting for a person (a refund to approve, a complaint to review), asked
    # at this level so that a message arriving meanwhile finds it (decisions.py); None once
    # answered.
    awaiting: dict[str, Any] | None


class SpecialistState(ShopState, total=False):
    """A specialist's private scratchpad; it starts empty every time the specialist runs."""

    # What the gates cleaned for this turn's order (or complaint): one a turn.
    validated: dict[str, Any] | None
    gate_error: str | None
    gate_codes: list[str]
    gate_checks: list[dict[str, Any]]
    # The order a call was escalated for (over the limit), as the gates read it.
    escalating: str | None
    # Signatures of tool calls answered this run, for the repeated-call brake; those answered
    # with a correction, which the model may make again (and fail again: then a person).
    seen_calls: list[str]
    corrected_calls: list[str]
    stop: dict[str, str] | None
