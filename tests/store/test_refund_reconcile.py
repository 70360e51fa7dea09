"""The refund ledger and the audit log back each other up: a lost audit event is written,
a lost ledger is restored, and an order is never paid twice because a file was replaced."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from agents.audit.log import AuditLog, AuditQuery
from agents.store.refund_reconcile import RESTORED_REASON, reconcile_refunds
from agents.store.shop import ShopData
from tests.support.engine import decide, open_engine, say

REFUND = "I want a refund for ORD-005, the speaker crackles"


def refund_events(audit: AuditLog) -> list[dict[str, object]]:
    return [e.detail for e in audit.iter_events(AuditQuery(kinds=("refund_processed",)))]


def test_a_refund_missing_from_the_audit_log_is_written_once(tmp_path: Path) -> None:
    shop = ShopData(tmp_path / "shop.sqlite")
    audit = AuditLog(tmp_path / "audit.sqlite")
    try:
        # Paid, and the process died before its audit event was stored.
        paid = shop.record_refund(
            "ORD-005", amount=Decimal("59.50"), reason="it crackles", thread_id="t"
        )
        # Just paid: its own process may still be writing the event; nothing is added yet.
        assert reconcile_refunds(shop, audit).logged_late == 0
        first = reconcile_refunds(shop, audit, settled_after=0)
        assert (first.logged_late, first.restored) == (1, 0)
        [event] = audit.page(AuditQuery(kinds=("refund_processed",)))
        assert event.thread_id == "t"
        assert event.detail["reference"] == paid.record.reference
        assert event.detail["amount"] == "59.50"
        assert "found in the refund ledger" in str(event.detail["recorded_late"])
        again = reconcile_refunds(shop, audit, settled_after=0)
        assert (again.logged_late, again.restored) == (0, 0)
        assert len(refund_events(audit)) == 1
    finally:
        shop.close()
        audit.close()


def test_a_lost_ledger_is_restored_from_the_audit_log(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    audit.append(
        "refund_processed",
        thread_id="t1",
        agent="refund_agent",
        detail={"order_id": "ORD-006", "reference": "REF-ORD-006-AAAAAA", "amount": "129.00"},
    )
    # An event for an order this shop does not have is left alone.
    audit.append(
        "refund_processed",
        thread_id="t2",
        agent="refund_agent",
        detail={"order_id": "ORD-900", "reference": "REF-ORD-900-BBBBBB", "amount": "5.00"},
    )
    shop = ShopData(tmp_path / "shop.sqlite")  # a fresh file: an empty ledger
    try:
        assert reconcile_refunds(shop, audit).restored == 1
        record = shop.refund_for("ORD-006")
        assert record is not None
        assert (record.reference, record.amount, record.thread_id, record.reason) == (
            "REF-ORD-006-AAAAAA",
            Decimal("129.00"),
            "t1",
            RESTORED_REASON,
        )
        assert shop.refund_for("ORD-900") is None
        assert reconcile_refunds(shop, audit).restored == 0
    finally:
        shop.close()
        audit.close()


async def test_replacing_the_shop_database_never_pays_an_order_twice(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "s1", REFUND, "Sam")
        await decide(engine, "s1", "approve")
        first = engine.shop.refund_for("ORD-005")
        assert first is not None
    # The shop file is damaged and moved aside, as the app's own message advises.
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"shop.sqlite{suffix}").unlink(missing_ok=True)
    async with open_engine(tmp_path) as engine:
        turn = await say(engine, "s3", REFUND, "Sam")
        assert turn.result.status == "done"  # refused, not sent for approval
        assert first.reference in turn.result.reply
        again = engine.shop.refund_for("ORD-005")
        assert again is not None and again.reference == first.reference
        created = [d for d in refund_events(engine.audit) if d.get("created") is True]
        assert [d["reference"] for d in created] == [first.reference]
