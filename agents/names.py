"""The agents' and the steps' names and titles, for fronts to import before anything else.

Kept apart from events.py (its dataclasses take a while to create): the chat's side panel and
conversation need these for their first frame.
"""

from __future__ import annotations

from typing import Literal

AgentName = Literal["order_agent", "refund_agent", "complaints_agent"]
AGENTS: tuple[AgentName, ...] = ("order_agent", "refund_agent", "complaints_agent")
AGENT_TITLES: dict[str, str] = {
    "order_agent": "Order agent",
    "refund_agent": "Refund agent",
    "complaints_agent": "Complaints agent",
}
DEFAULT_AGENT: AgentName = "order_agent"
# The one agent whose tools move money (its refunds' audit events name it).
REFUND_AGENT: AgentName = "refund_agent"

Step = Literal[
    "idle",
    "extracting",
    "checking_gate",
    "correcting",
    "calling_tool",
    "waiting_for_approval",
    "answering",
    "handing_off",
    "summarising",
]
STEP_LABELS: dict[str, str] = {
    "idle": "idle",
    "extracting": "extracting",
    "checking_gate": "checking gate",
    "correcting": "correcting",
    "calling_tool": "calling a tool",
    "waiting_for_approval": "waiting for approval",
    "answering": "answering",
    "handing_off": "handing off",
    "summarising": "summarising",
}
