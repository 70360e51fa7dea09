"""`shopbot`, killed (SIGKILL, as a power cut or the OOM killer would) right after its Nth
audit event of a kind is stored: `python -m tests.support.kill_after KIND N ARGS...`.

Stored means committed: by the audit writer's batch (its own, or the one transaction it makes
with the thread registry's writes), by an engine's direct append, or, for `refund_processed`,
by the ledger's transaction that writes the refund with its event.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from agents.audit.log import AuditLog
from agents.store.shop import RefundOutcome, ShopData
from agents.store.threads import ThreadRegistry


def install(kind: str, nth: int) -> None:
    seen = [0]

    def stored(kinds: Iterable[str]) -> None:
        seen[0] += sum(1 for k in kinds if k == kind)
        if seen[0] >= nth:
            os.kill(os.getpid(), signal.SIGKILL)

    append, append_many, pay = AuditLog.append, AuditLog.append_many, ShopData.record_refund

    def append_one(self: AuditLog, event_kind: str, **kwargs: Any) -> Any:
        done = append(self, event_kind, **kwargs)
        stored([event_kind])
        return done

    def append_several(self: AuditLog, events: Iterable[Mapping[str, Any]], **kwargs: Any) -> int:
        listed = list(events)
        done = append_many(self, listed, **kwargs)
        stored(str(event["kind"]) for event in listed)
        return done

    def record_refund(self: ShopData, order_id: str, **kwargs: Any) -> RefundOutcome:
        outcome = pay(self, order_id, **kwargs)
        if outcome.created and kwargs.get("recorded_by") is not None:
            stored(["refund_processed"])
        return outcome

    insert_rows, write_together = AuditLog.insert_rows, ThreadRegistry.write_together
    # The kinds a registry transaction inserts, told once it has committed.
    in_transaction: list[list[str]] = []

    def insert_noted(self: AuditLog, conn: Any, rows: list[Any]) -> int:
        done = insert_rows(self, conn, rows)
        if in_transaction:
            in_transaction[-1] += [str(row[3]) for row in rows]
        return done

    def together(self: ThreadRegistry, writes: Any, then: Any) -> None:
        in_transaction.append([])
        try:
            write_together(self, writes, then)
        finally:
            kinds = in_transaction.pop()
        stored(kinds)

    AuditLog.insert_rows = insert_noted  # type: ignore[method-assign]
    ThreadRegistry.write_together = together  # type: ignore[method-assign]
    AuditLog.append = append_one  # type: ignore[method-assign]
    AuditLog.append_many = append_several  # type: ignore[method-assign]
    ShopData.record_refund = record_refund  # type: ignore[method-assign]


if __name__ == "__main__":
    install(sys.argv[1], int(sys.argv[2]))
    from shopbot_tui.cli.main import main

    sys.exit(main(sys.argv[3:]))
