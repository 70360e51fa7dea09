"""Another program holding the database's write lock, as long as it likes; or taking it at
the moment a refund is paid (the database is one file: held from the start, it would stop a
turn long before its payment)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agents.store.shop import RefundOutcome, ShopData


class HeldLock:
    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self._conn.execute("ROLLBACK")
        self._conn.close()


@contextmanager
def locked_at_payment(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every refund paid inside finds the ledger's file locked by another program (past the
    busy timeout); yields the count of payments tried."""
    tried: list[int] = []
    pay = ShopData.record_refund

    def record_refund(
        self: ShopData, order_id: str, *, amount: Decimal, **kwargs: Any
    ) -> RefundOutcome:
        tried.append(1)
        lock = HeldLock(self.path)
        try:
            return pay(self, order_id, amount=amount, **kwargs)
        finally:
            lock.release()

    with monkeypatch.context() as patch:
        patch.setattr(ShopData, "record_refund", record_refund)
        yield tried
