"""The three specialists: their tools (whose arguments the gates check) and hand-offs."""

from __future__ import annotations

from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.tools.domain import COMPLAINT_TOOLS, ORDER_TOOLS, REFUND_TOOLS

ORDER_AGENT = SpecialistSpec(
    name="order_agent", ticket_category="order_inquiry", domain_tools=ORDER_TOOLS
)
REFUND_AGENT = SpecialistSpec(
    name="refund_agent", ticket_category="refund_request", domain_tools=REFUND_TOOLS
)
COMPLAINTS_AGENT = SpecialistSpec(
    name="complaints_agent",
    ticket_category="complaint",
    domain_tools=COMPLAINT_TOOLS,
    review="complaint",
)
SPECIALISTS = (ORDER_AGENT, REFUND_AGENT, COMPLAINTS_AGENT)
