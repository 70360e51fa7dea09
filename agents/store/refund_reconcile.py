"""The refund ledger and the audit log, put back in step when the engine opens.

Each backs the other up. A refund paid just before the process died can be missing from the
audit log (its event was still queued for the writer); a shop database that was replaced
(damaged and moved aside, say) has lost its ledger, while the audit log still names every
refund paid: without it back, the same order could be paid twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation

from agents.audit.log import AuditLog, AuditQuery
from agents.store.shop import RefundRecord, ShopData
from agents.store.sqlite import utc_timestamp

log = logging.getLogger("shopbot.reconcile")

RESTORED_REASON = "(restored from the audit log)"
# The paying process writes the refund's audit event right after the ledger row (within the
# audit store's busy wait, 10 s): younger rows may be in flight, not missing.
SETTLED_AFTER_S = 15.0


@dataclass(frozen=True)
class Reconciled:
    logged_late: int  # ledger refunds the audit log had no event for
    restored: int  # audit-logged refunds put back into the ledger


def _logged_refunds(audit: AuditLog) -> dict[str, RefundRecord]:
    """The first `refund_processed` event of each order, as a ledger record."""
    found: dict[str, RefundRecord] = {}
    # Newest first: an older event of the same order replaces a newer one.
    for event in audit.iter_events(AuditQuery(kinds=("refund_processed",))):
        detail = event.detail
        order_id, reference = detail.get("order_id"), detail.get("reference")
        try:
            amount = Decimal(str(detail.get("amount")))
        except InvalidOperation:
            continue
        if isinstance(order_id, str) and isinstance(reference, str) and amount > 0:
            found[order_id] = RefundRecord(
                reference, order_id, amount, RESTORED_REASON, event.thread_id, event.ts
            )
    return found


def reconcile_refunds(
    shop: ShopData, audit: AuditLog, *, settled_after: float = SETTLED_AFTER_S
) -> Reconciled:
    """Put the two records in step; refunds paid in the last `settled_after` seconds are left
    to the process that paid them, whose audit event may be on its way."""
    paid = {record.order_id: record for record in shop.refunds()}
    logged = _logged_refunds(audit)
    settled = utc_timestamp(datetime.now(UTC) - timedelta(seconds=settled_after))
    late = [
        record
        for order_id, record in paid.items()
        if order_id not in logged and record.created_at <= settled
    ]
    for record in late:
        audit.append(
            "refund_processed",
            thread_id=record.thread_id,
            agent="refund_agent",
            detail={
                "order_id": record.order_id,
                "reference": record.reference,
                "amount": str(record.amount),
                "created": True,
                "recorded_late": f"found in the refund ledger, paid at {record.created_at}",
            },
        )
    restored = sum(
        shop.restore_refund(record) for order_id, record in logged.items() if order_id not in paid
    )
    if late or restored:
        log.warning(
            "refunds reconciled: %d added to the audit log, %d restored to the ledger",
            len(late),
            restored,
        )
    return Reconciled(logged_late=len(late), restored=restored)
