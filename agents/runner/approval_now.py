"""A refund's approval as it stands now, not as it stood when it was asked.

A request waits (decided later, asked in another window, before a restart) while the same
order may be refunded or decided on elsewhere: its checks then said "not refunded before"
and its earlier decisions lacked the one just made. Read again from the ledger and the audit
log, the request says what a decision on it will meet (the graph checks the ledger again
when the decision comes: a refund already paid is never paid twice).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agents.events import ApprovalRequest

# The check a staged refund passed: the order named, not refunded before (tool_calls.py).
REFUND_ACTION_GATE = "refund_action"


def refunded_since_check(reference: str) -> dict[str, Any]:
    return {
        "gate": REFUND_ACTION_GATE,
        "ok": False,
        "detail": f"refunded since this was asked (reference {reference}); any decision only "
        "closes this request",
        "codes": ["refund_action.already_refunded"],
    }


def as_it_stands(
    request: ApprovalRequest,
    *,
    paid_reference: str | None,
    decided_before: list[dict[str, str]] | None = None,
) -> ApprovalRequest:
    """`request` with what the ledger holds for its order (`paid_reference`) and, when
    given, the latest decisions on it; a complaint review is returned as it is."""
    if request.kind != "refund_approval":
        return request
    payload = dict(request.payload)
    if decided_before is not None:
        payload["decided_before"] = decided_before
    if paid_reference:
        payload["already_refunded"] = paid_reference
        gates = [g for g in payload.get("gates") or [] if g.get("gate") != REFUND_ACTION_GATE]
        payload["gates"] = [*gates, refunded_since_check(paid_reference)]
    return replace(request, payload=payload)
