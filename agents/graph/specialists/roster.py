"""The three specialists: what each extracts, which gates it runs, which tools it may use."""

from __future__ import annotations

from agents.graph.schemas import ComplaintExtraction, OrderExtraction, RefundExtraction
from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.tools.domain import ORDER_TOOLS, REFUND_TOOLS
from agents.graph.validation import check_complaint, check_order_request, check_refund_request

ORDER_AGENT = SpecialistSpec(
    name="order_agent",
    ticket_category="order_inquiry",
    schema=OrderExtraction,
    gates=check_order_request,
    domain_tools=ORDER_TOOLS,
)
REFUND_AGENT = SpecialistSpec(
    name="refund_agent",
    ticket_category="refund_request",
    schema=RefundExtraction,
    gates=check_refund_request,
    domain_tools=REFUND_TOOLS,
)
COMPLAINTS_AGENT = SpecialistSpec(
    name="complaints_agent",
    ticket_category="complaint",
    schema=ComplaintExtraction,
    gates=check_complaint,
    domain_tools=(),
    extract_first=True,
    review="complaint",
)
SPECIALISTS = (ORDER_AGENT, REFUND_AGENT, COMPLAINTS_AGENT)
