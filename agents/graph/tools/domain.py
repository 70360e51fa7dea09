"""Shop tools. Their arguments are the extraction schemas: pydantic validates what the model
wrote, the gates check it, and each tool's work runs on the gate-cleaned values only, never
on what the model wrote. A failed gate is the tool's answer (its exact error, for the model
to act on) and its artifact says what failed, so the act node can correct, ask or escalate.

`process_refund` moves no money: a call that passes its gates is staged for a person's
approval (specialists/tool_calls.py), and `pay_refund` pays it once that person approved.
`ToolRuntime[Any, Any]`: LangChain builds a schema from the signature; the runtime is
injected, never shown to the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool, tool

from agents.graph.history import customer_words, latest_customer_words
from agents.graph.schemas import (
    ComplaintExtraction,
    OrderExtraction,
    OrderReference,
    RefundExtraction,
)
from agents.graph.services import Turn, turn
from agents.graph.validation import (
    GateVerdict,
    check_complaint,
    check_order_request,
    check_refund_request,
    with_check,
)
from agents.names import REFUND_AGENT
from agents.store.shop import Order, RefundAudit
from gates import (
    AUTO_REFUND_LIMIT,
    REFUNDABLE_STATUS,
    needs_review,
    order_ids_meant,
    validate_ownership,
    validate_refund_action,
)

Outcome = tuple[str, dict[str, Any]]
Gates = Callable[[Mapping[str, Any], Turn, str], GateVerdict]


def _checked(
    gates: Gates, args: Mapping[str, Any], runtime: ToolRuntime[Any, Any]
) -> tuple[Turn, GateVerdict]:
    """The gates on what the model wrote, with the customer's own words beside it (a typo
    of theirs is asked back, a misreading of the model corrected)."""
    this = turn(runtime.context, runtime.config)
    state = runtime.state if isinstance(runtime.state, dict) else {}
    messages: list[BaseMessage] = state.get("messages", [])
    return this, gates(args, this, customer_words(messages))


def _refused(verdict: GateVerdict) -> Outcome:
    return str(verdict.error), {"verdict": verdict.to_json()}


def _passed(text: str, verdict: GateVerdict, **more: Any) -> Outcome:
    return text, {"verdict": verdict.to_json(), **more}


def _visible_order(order_id: str, this: Turn) -> Order | None:
    """The order if this conversation may see it (again where the data is read: defence in
    depth, should a call ever arrive without its gates)."""
    order = this.shop.get_order(order_id)
    if order is None:
        return None
    owned, _ = validate_ownership(order.order_id, order.customer, this.customer)
    return order if owned else None


def _named_order(this: Turn, runtime: ToolRuntime[Any, Any]) -> str | None:
    """The first order the customer's latest words name that this conversation may see: the
    one a complaint is about, for its reviewer (looked up here, off the event loop)."""
    state = runtime.state if isinstance(runtime.state, dict) else {}
    for order_id in order_ids_meant(latest_customer_words(state.get("messages", []))):
        if _visible_order(order_id, this) is not None:
            return order_id
    return None


def _not_found(order_id: str) -> str:
    return f"No order found with ID '{order_id}'. Ask the customer to check the order number."


@tool(args_schema=OrderExtraction, response_format="content_and_artifact")
def lookup_order(order_id: str, query_type: str, runtime: ToolRuntime[Any, Any]) -> Outcome:
    """An order's product, status, amount and delivery."""
    this, verdict = _checked(
        check_order_request, {"order_id": order_id, "query_type": query_type}, runtime
    )
    if verdict.cleaned is None:
        return _refused(verdict)
    order = _visible_order(verdict.cleaned["order_id"], this)
    if order is None:
        return _passed(_not_found(verdict.cleaned["order_id"]), verdict)
    text = (
        f"Order {order.order_id}: {order.product} | Status: {order.status} | "
        f"Amount: ${order.amount:.2f} | Delivery: {order.delivery}"
    )
    refund = this.shop.refund_for(order.order_id)
    return _passed(f"{text} | Refunded: {refund.reference}" if refund else text, verdict)


@tool(args_schema=OrderReference, response_format="content_and_artifact")
def check_refund_eligibility(order_id: str, runtime: ToolRuntime[Any, Any]) -> Outcome:
    """Whether an order can be refunded."""
    this, verdict = _checked(check_order_request, {"order_id": order_id}, runtime)
    if verdict.cleaned is None:
        return _refused(verdict)
    order = _visible_order(verdict.cleaned["order_id"], this)
    if order is None:
        return _passed(_not_found(verdict.cleaned["order_id"]), verdict)
    refund = this.shop.refund_for(order.order_id)
    if refund is not None:
        text = f"Order {order.order_id} was already refunded (reference {refund.reference})."
    elif order.status != REFUNDABLE_STATUS:
        text = f"Order {order.order_id} is NOT eligible. Status: {order.status}."
    elif Decimal(order.amount) > AUTO_REFUND_LIMIT:
        text = (
            f"Order {order.order_id} is eligible, but ${order.amount:.2f} is above the "
            f"${AUTO_REFUND_LIMIT:.2f} auto-refund limit: it needs a senior colleague."
        )
    else:
        text = f"Order {order.order_id} IS eligible for a refund. Amount: ${order.amount:.2f}."
    return _passed(text, verdict)


@tool(args_schema=RefundExtraction, response_format="content_and_artifact")
def process_refund(order_id: str, reason: str, runtime: ToolRuntime[Any, Any]) -> Outcome:
    """Refund an order; a person approves it first."""
    this, verdict = _checked(
        check_refund_request, {"order_id": order_id, "reason": reason}, runtime
    )
    if verdict.cleaned is None:
        return _refused(verdict)
    state = runtime.state if isinstance(runtime.state, dict) else {}
    cleaned = verdict.cleaned
    existing = this.shop.refund_for(cleaned["order_id"])
    decided = (state.get("refund_decisions") or {}).get(cleaned["order_id"])
    # The order this turn validated (an eligibility check before, say), or this one.
    acted = with_check(
        verdict,
        "refund_action",
        validate_refund_action(
            cleaned,
            state.get("validated") or cleaned,
            existing.reference if existing else None,
            decided,
        ),
        "the call names the validated order, not refunded before",
    )
    if acted.cleaned is None:
        return _refused(acted)
    # Nothing is paid here: the validated refund is staged for a person's decision.
    return _passed("Waiting for a person's approval.", acted, staged=True)


@tool(args_schema=ComplaintExtraction, response_format="content_and_artifact")
def file_complaint(issue_summary: str, sentiment: str, runtime: ToolRuntime[Any, Any]) -> Outcome:
    """File the customer's complaint."""
    this, verdict = _checked(
        check_complaint, {"issue_summary": issue_summary, "sentiment": sentiment}, runtime
    )
    if verdict.cleaned is None:
        return _refused(verdict)
    filed = verdict.cleaned
    if needs_review(filed["sentiment"]):
        # An angry or frustrated customer: a person decides what happens next.
        named = _named_order(this, runtime)
        return _passed("Waiting for a person's review.", verdict, review=True, named=named)
    text = (
        f"Complaint recorded: “{filed['issue_summary']}” (sentiment: {filed['sentiment']}). "
        "Acknowledge the customer's specific problem and say that the customer care team will "
        "get back to them within 2 business days."
    )
    return _passed(text, verdict)


def _approved_amount(approval: Mapping[str, Any], order_id: str) -> Decimal | None:
    if approval.get("kind") != "refund_approval" or approval.get("order_id") != order_id:
        return None
    try:
        return Decimal(str(approval.get("amount")))
    except InvalidOperation:
        return None


def pay_refund(this: Turn, approval: Mapping[str, Any]) -> Outcome:
    """Pay the refund a person approved (`approval`: what they were shown), once; blocking.
    The order is checked again where the money moves: an amount or status changed since the
    question was asked pays nothing, and says a colleague must look (`escalate`)."""
    order_id = str(approval.get("order_id") or "")
    order = _visible_order(order_id, this)
    if order is None:
        return _not_found(order_id), {}
    # (The reviewer's limit, checked when they answered, checked again where money moves.)
    limit = this.reviewer_limit()
    if order.status != REFUNDABLE_STATUS or Decimal(order.amount) > limit:
        return (
            f"Refund refused: order {order.order_id} is {order.status}, "
            f"${order.amount:.2f}; only delivered orders up to ${limit:.2f} are "
            "refunded by this reviewer. Tell the customer a colleague will review it."
        ), {"escalate": f"refund of {order.order_id} refused at payment: order now {order.status}"}
    approved = _approved_amount(approval, order.order_id)
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
    reviewer = this.reviewer.audit_detail() if this.reviewer is not None else {}
    outcome = this.shop.record_refund(
        order.order_id,
        amount=approved,
        reason=str(approval.get("reason") or ""),
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
        return (
            f"Order {order.order_id} was already refunded earlier. Reference: {record.reference}.",
            facts,
        )
    return (
        f"Refund APPROVED and PROCESSED. Reference: {record.reference}. "
        f"${record.amount:.2f} will be returned within 3 to 5 business days."
    ), facts


ORDER_TOOLS: tuple[BaseTool, ...] = (lookup_order,)
REFUND_TOOLS: tuple[BaseTool, ...] = (check_refund_eligibility, process_refund)
COMPLAINT_TOOLS: tuple[BaseTool, ...] = (file_complaint,)
# Tools about one order: a turn validates one, and a call naming another is refused.
ORDER_BOUND_TOOLS = frozenset({"lookup_order", "check_refund_eligibility", "process_refund"})
