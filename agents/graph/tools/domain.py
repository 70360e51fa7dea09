"""Shop tools. They run only on gate-validated arguments (see specialists/tool_calls.py).

Each re-checks ownership itself: defence in depth, should a call ever bypass the gates; and
`process_refund` pays only the refund a person was asked to approve, at the amount shown.
`ToolRuntime[Any, Any]`, not `[ShopContext, ...]`: LangChain builds a pydantic schema from
the signature, and the context holds objects pydantic cannot describe.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, tool

from agents.graph.services import turn
from agents.names import REFUND_AGENT
from agents.store.shop import Order, RefundAudit
from gates import AUTO_REFUND_LIMIT, REFUNDABLE_STATUS, normalise_order_id, validate_ownership


def _visible_order(order_id: str, runtime: ToolRuntime[Any, Any]) -> Order | None:
    this = turn(runtime.context, runtime.config)
    order = this.shop.get_order(normalise_order_id(order_id))
    if order is None:
        return None
    owned, _ = validate_ownership(order.order_id, order.customer, this.customer)
    return order if owned else None


def _not_found(order_id: str) -> str:
    return f"No order found with ID '{order_id}'. Ask the customer to check the order number."


@tool
def lookup_order(order_id: str, runtime: ToolRuntime[Any, Any]) -> str:
    """Look up a customer's order by order ID: product, status, amount and delivery date."""
    order = _visible_order(order_id, runtime)
    if order is None:
        return _not_found(order_id)
    text = (
        f"Order {order.order_id}: {order.product} | Status: {order.status} | "
        f"Amount: ${order.amount:.2f} | Delivery: {order.delivery}"
    )
    refund = turn(runtime.context, runtime.config).shop.refund_for(order.order_id)
    return f"{text} | Refunded: {refund.reference}" if refund else text


@tool
def check_refund_eligibility(order_id: str, runtime: ToolRuntime[Any, Any]) -> str:
    """Check whether an order can be refunded. Only Delivered orders are eligible."""
    order = _visible_order(order_id, runtime)
    if order is None:
        return _not_found(order_id)
    refund = turn(runtime.context, runtime.config).shop.refund_for(order.order_id)
    if refund is not None:
        return f"Order {order.order_id} was already refunded (reference {refund.reference})."
    if order.status != REFUNDABLE_STATUS:
        return f"Order {order.order_id} is NOT eligible. Status: {order.status}."
    if Decimal(order.amount) > AUTO_REFUND_LIMIT:
        return (
            f"Order {order.order_id} is eligible, but ${order.amount:.2f} is above the "
            f"${AUTO_REFUND_LIMIT:.2f} auto-refund limit: it needs a senior colleague."
        )
    return f"Order {order.order_id} IS eligible for a refund. Amount: ${order.amount:.2f}."


def _approved_amount(order_id: str, runtime: ToolRuntime[Any, Any]) -> Decimal | None:
    """The amount a person was asked to approve for `order_id`: the approval request this run
    answers (see specialists/approvals.py). None when no refund of that order was asked."""
    state = runtime.state if isinstance(runtime.state, dict) else {}
    approval = state.get("approval") or {}
    if approval.get("kind") != "refund_approval" or approval.get("order_id") != order_id:
        return None
    try:
        return Decimal(str(approval.get("amount")))
    except InvalidOperation:
        return None


@tool(response_format="content_and_artifact")
def process_refund(
    order_id: str, reason: str, runtime: ToolRuntime[Any, Any]
) -> tuple[str, dict[str, Any]]:
    """Refund a delivered order. A human approves every refund before it runs."""
    order = _visible_order(order_id, runtime)
    if order is None:
        return _not_found(order_id), {}
    # The gates checked these before approval; checked again where the money moves.
    if order.status != REFUNDABLE_STATUS or Decimal(order.amount) > AUTO_REFUND_LIMIT:
        return (
            f"Refund refused: order {order.order_id} is {order.status}, "
            f"${order.amount:.2f}; only delivered orders up to ${AUTO_REFUND_LIMIT:.2f} are "
            "refunded here. Tell the customer a colleague will review it."
        ), {"escalate": f"refund of {order.order_id} refused at payment: order now {order.status}"}
    # Money moves only as a person approved it: that order, that amount. An amount changed
    # since the request was shown (a price corrected while it waited) pays nothing.
    approved = _approved_amount(order.order_id, runtime)
    if approved is None:
        return (
            f"Refund refused: no person approved a refund of order {order.order_id}. "
            "Do not call process_refund for it again in this turn."
        ), {}
    if approved != Decimal(order.amount):
        return (
            f"Refund refused, nothing was paid: ${approved:.2f} was approved, but order "
            f"{order.order_id} now reads ${order.amount:.2f}. Tell the customer a colleague "
            "will review it."
        ), {
            "escalate": (
                f"refund of {order.order_id} not paid: ${approved:.2f} approved, "
                f"the order now reads ${order.amount:.2f}"
            )
        }
    this = turn(runtime.context, runtime.config)
    reviewer = this.reviewer.audit_detail() if this.reviewer is not None else {}
    outcome = this.shop.record_refund(
        order.order_id,
        amount=approved,
        reason=reason,
        thread_id=this.thread_id,
        # The audit event goes with the ledger row, in its transaction (who let it through).
        recorded_by=RefundAudit(this.thread_id, REFUND_AGENT, reviewer),
    )
    record = outcome.record
    facts = {
        "order_id": record.order_id,
        "reference": record.reference,
        "amount": str(record.amount),
        "created": outcome.created,
    }
    if not outcome.created:
        text = (
            f"Order {order.order_id} was already refunded earlier. Reference: {record.reference}."
        )
        return text, facts
    return (
        f"Refund APPROVED and PROCESSED. Reference: {record.reference}. "
        f"${record.amount:.2f} will be returned within 3 to 5 business days."
    ), facts


ORDER_TOOLS: tuple[BaseTool, ...] = (lookup_order,)
REFUND_TOOLS: tuple[BaseTool, ...] = (check_refund_eligibility, process_refund)
# Tools whose arguments must match the gate-validated order before they run.
ORDER_BOUND_TOOLS = frozenset({"lookup_order", "check_refund_eligibility", "process_refund"})
