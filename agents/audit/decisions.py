"""Earlier decisions on an order's refund, read back from the audit log for the approver.

A refund a person turned down may be asked for again on a later message, in this
conversation or another one: the approval then says so, so that asking again and again
never wears a "no" down into a "yes" unnoticed.
"""

from __future__ import annotations

from typing import Any

from agents.audit.log import AuditLog, AuditQuery

# At most this many are shown, newest first.
SHOWN = 3
# Events read to find them: the text search matches the order id anywhere in a decision.
READ = 50


def refund_decisions(log: AuditLog, order_id: str, *, limit: int = SHOWN) -> list[dict[str, str]]:
    """`{decision, decided_by, via, at, thread_id}` of the latest decisions on `order_id`'s
    refund, newest first."""
    query = AuditQuery(kinds=("approval_decided",), text=order_id)
    found: list[dict[str, str]] = []
    for event in log.page(query, limit=READ):
        detail = event.detail
        if detail.get("kind") != "refund_approval" or detail.get("order_id") != order_id:
            continue
        found.append(
            {
                "decision": str(detail.get("decision", "")),
                "decided_by": str(detail.get("decided_by") or "unknown user"),
                "via": str(detail.get("via") or ""),
                "at": event.ts,
                "thread_id": event.thread_id or "",
            }
        )
        if len(found) == limit:
            break
    return found


DECIDED: dict[str, str] = {"approve": "approved", "reject": "rejected", "escalate": "escalated"}


def earlier_decision(earlier: dict[str, Any]) -> str:
    """'rejected by alex (app), 2026-11-30 10:12 UTC, conversation t-1'."""
    decision = str(earlier.get("decision", "?"))
    via = f" ({earlier['via']})" if earlier.get("via") else ""
    when = str(earlier.get("at", ""))[:16].replace("T", " ")
    where = f", conversation {earlier['thread_id']}" if earlier.get("thread_id") else ""
    return (
        f"{DECIDED.get(decision, decision)} by {earlier.get('decided_by', 'unknown user')}"
        f"{via}, {when} UTC{where}"
    )
