"""Refund gates: may this order be refunded automatically, and is this the refund we validated."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from gates.order_id import normalise_order_id
from gates.result import GateError, GateResult, Remedy, failed, passed
from gates.rules import AUTO_REFUND_LIMIT, MIN_REASON_LENGTH, REFUNDABLE_STATUS


def _money(value: object) -> Decimal:
    try:
        return Decimal(str(value)).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError):
        return Decimal("0.00")


def validate_refund_request(
    extracted: Mapping[str, Any],
    order: Mapping[str, Any] | None,
    senior_limit: Decimal = AUTO_REFUND_LIMIT,
) -> GateResult:
    """Gate: order delivered, amount within the limit someone may decide, reason substantive.

    `order` is the shop's record for the (already validated) order id: `status`, `amount`.
    `senior_limit`: the highest refund limit any reviewer holds; a refund above the
    auto-refund limit but within it waits for such a reviewer, one above it is escalated.
    Every failed rule is reported, joined with ' | '.
    """
    order_id = normalise_order_id(extracted.get("order_id"))
    raw_reason = extracted.get("reason")
    reason = " ".join(raw_reason.split()) if isinstance(raw_reason, str) else ""
    if order is None:
        return failed(
            f"Order {order_id or '(none)'} could not be found, so no refund can be checked. "
            "Validate the order id first.",
            Remedy.CORRECT,
            "refund.order_unknown",
        )
    errors: list[GateError] = []
    status = str(order.get("status", ""))
    if status != REFUNDABLE_STATUS:
        errors.append(
            GateError(
                f"Order {order_id} has status '{status}'. Refunds can only be processed for "
                f"{REFUNDABLE_STATUS} orders. Inform the customer and do not attempt a refund.",
                Remedy.INFORM,
                ("refund.not_delivered",),
            )
        )
    amount = _money(order.get("amount"))
    if amount > max(senior_limit, AUTO_REFUND_LIMIT):
        beyond = (
            f"the auto-refund limit of ${AUTO_REFUND_LIMIT:.2f}"
            if senior_limit <= AUTO_REFUND_LIMIT
            else f"every reviewer's refund limit (at most ${senior_limit:.2f})"
        )
        errors.append(
            GateError(
                f"Refund amount ${amount:.2f} exceeds {beyond}. This needs a senior "
                "colleague's sign-off: escalate, do not process it automatically.",
                Remedy.ESCALATE,
                ("refund.over_limit",),
            )
        )
    if len(reason) < MIN_REASON_LENGTH:
        errors.append(
            GateError(
                f"Refund reason '{reason}' is too short (minimum {MIN_REASON_LENGTH} "
                "characters). Ask the customer to explain in a sentence why they want to "
                "return the item.",
                Remedy.ASK_CUSTOMER,
                ("refund.reason_too_short",),
            )
        )
    if errors:
        return False, GateError.combine(errors)
    return passed({**extracted, "order_id": order_id, "reason": reason, "amount": str(amount)})


def validate_refund_action(
    call_args: Mapping[str, Any],
    validated: Mapping[str, Any] | None,
    existing_reference: str | None,
    earlier_decision: str | None = None,
) -> GateResult:
    """Gate on a `process_refund` call: it must name the validated order, refunded only once,
    and not one a person has already decided on (`earlier_decision`) in this conversation's
    turn: a "reject" or "escalate" stands, the model cannot ask until someone says yes.

    The refund then runs on `validated`, never on what the model wrote in the call.
    """
    if not validated or not validated.get("order_id"):
        return failed(
            "process_refund was called before the refund request passed validation. Check the "
            "order and the customer's reason first; do not call process_refund yet.",
            Remedy.CORRECT,
            "refund_action.not_validated",
        )
    asked = normalise_order_id(call_args.get("order_id"))
    expected = str(validated["order_id"])
    if asked != expected:
        return failed(
            f"process_refund was called for order '{asked}', but the validated refund request "
            f"is for {expected}. Only {expected} may be refunded in this conversation; call "
            f"process_refund with order_id {expected} or ask the customer.",
            Remedy.CORRECT,
            "refund_action.order_mismatch",
        )
    if existing_reference:
        return failed(
            f"Order {expected} has already been refunded (reference {existing_reference}). "
            "Do not refund it again; give the customer the existing reference.",
            Remedy.INFORM,
            "refund_action.already_refunded",
        )
    if earlier_decision:
        return failed(
            f"A person has already decided on the refund of {expected}: {earlier_decision}. "
            "Do not ask for it again; tell the customer what was decided.",
            Remedy.INFORM,
            "refund_action.already_decided",
        )
    return passed(validated)
