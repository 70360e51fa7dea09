"""The graph's server module opens the deployment's stores: the home's SQLite file, or the
PostgreSQL database of SHOPBOT_DATABASE_URL (`backend`)."""

from __future__ import annotations

from decimal import Decimal

from tests.support.backends import Backend


def test_the_served_graph_keeps_its_refunds_and_audit_where_the_settings_say(
    backend: Backend,
) -> None:
    from agents.serving.graph import open_services

    services = open_services(backend.settings())
    try:
        paid = services.shop.record_refund(
            "ORD-005", amount=Decimal("59.50"), reason="the speaker crackles", thread_id="s1"
        )
        services.audit.append(
            "refund_processed", thread_id="s1", agent="refund_agent", detail={"order_id": "ORD-005"}
        )
        services.audit.flush()
    finally:
        services.audit.close()  # type: ignore[attr-defined]  # (the writer it is)
        services.shop.close()
    assert (services.shop.path is None) == backend.postgres
    assert backend.query("SELECT reference FROM refunds") == [(paid.record.reference,)]
    kinds = backend.query("SELECT kind FROM events WHERE thread_id = ?", ("s1",))
    assert ("refund_processed",) in kinds
