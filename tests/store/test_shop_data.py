"""Shop data: the demo orders, and a refund ledger that pays at most once per order, in the
home's SQLite file and in PostgreSQL (`backend`)."""

from __future__ import annotations

import multiprocessing
import re
import sqlite3
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agents.settings import Settings
from agents.store.database import checked_database
from agents.store.shop import DEMO_ORDERS, Order, RefundOutcome, ShopData
from agents.store.sqlite import StorageError
from tests.support.backends import Backend


@pytest.fixture
def shop_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "shop.sqlite"


@pytest.fixture
def shop(backend: Backend, shop_path: Path) -> Iterator[ShopData]:
    with ShopData(backend.where(shop_path)) as data:
        yield data


@pytest.fixture
def ledger_rows(backend: Backend, shop_path: Path) -> Any:
    """The refunds as stored: (reference, order id, cents)."""

    def rows() -> list[tuple[Any, ...]]:
        return backend.query(
            "SELECT reference, order_id, amount_cents FROM refunds", sqlite_path=shop_path
        )

    return rows


def test_reference_orders_are_exactly_as_designed(shop: ShopData) -> None:
    assert shop.get_order("ORD-001") == Order(
        "ORD-001", "Alex", "Wireless Headphones", "Delivered", Decimal("89.99"), "2025-06-10"
    )
    assert shop.get_order("ORD-002") == Order(
        "ORD-002", "Sam", "Phone Case", "In Transit", Decimal("14.99"), "Expected 2025-06-18"
    )
    assert shop.get_order("ORD-003") == Order(
        "ORD-003", "Jordan", "Laptop Stand", "Processing", Decimal("45.00"), "Expected 2025-06-20"
    )
    assert shop.get_order("ORD-004") == Order(
        "ORD-004", "Alex", "4K Monitor", "Delivered", Decimal("649.00"), "2025-06-08"
    )
    assert shop.all_orders() == sorted(DEMO_ORDERS, key=lambda o: o.order_id)
    assert all(re.fullmatch(r"ORD-\d{3}", o.order_id) for o in DEMO_ORDERS)


def test_as_record_is_plain_data(shop: ShopData) -> None:
    order = shop.get_order("ORD-004")
    assert order is not None
    assert order.as_record() == {
        "order_id": "ORD-004",
        "customer": "Alex",
        "product": "4K Monitor",
        "status": "Delivered",
        "amount": 649.0,
        "delivery_date": "2025-06-08",
    }


def test_lookups(shop: ShopData) -> None:
    assert shop.get_order("ord-001") is None  # exact ids only: normalising is the gate's job
    assert shop.get_order("ORD-999") is None
    assert shop.has_order("ORD-003")
    assert not shop.has_order("ORD-999")


def test_known_ids_is_a_live_container(shop: ShopData, backend: Backend, shop_path: Path) -> None:
    ids = shop.known_ids()
    assert "ORD-001" in ids
    assert "ORD-999" not in ids
    assert 1 not in ids
    backend.execute(
        "INSERT INTO orders VALUES ('ORD-999', 'Kim', 'Mug', 'Delivered', 900, 'x')",
        sqlite_path=shop_path,
    )
    assert "ORD-999" in ids


def test_seeding_happens_once_and_never_overwrites(backend: Backend, shop_path: Path) -> None:
    ShopData(backend.where(shop_path)).close()
    backend.execute(
        "UPDATE orders SET status = 'Returned' WHERE order_id = 'ORD-001'", sqlite_path=shop_path
    )
    backend.execute("DELETE FROM orders WHERE order_id = 'ORD-002'", sqlite_path=shop_path)
    with ShopData(backend.where(shop_path)) as again:
        order = again.get_order("ORD-001")
        assert order is not None and order.status == "Returned"
        assert again.get_order("ORD-002") is None
        assert len(again.all_orders()) == len(DEMO_ORDERS) - 1


def test_one_refund_per_order(shop: ShopData, ledger_rows: Any) -> None:
    first = shop.record_refund(
        "ORD-001", amount=Decimal("89.99"), reason="Arrived broken, left ear silent", thread_id="t1"
    )
    assert first.created
    record = first.record
    assert re.fullmatch(r"REF-ORD-001-[0-9A-F]{6}", record.reference)
    assert (record.order_id, record.amount, record.thread_id) == ("ORD-001", Decimal("89.99"), "t1")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record.created_at)

    again = shop.record_refund(
        "ORD-001", amount=Decimal("89.99"), reason="Arrived broken, left ear silent", thread_id="t1"
    )
    replay = shop.record_refund(
        "ORD-001", amount=Decimal("10.00"), reason="A different reason entirely", thread_id="t2"
    )
    assert again == RefundOutcome(record=record, created=False)
    assert replay == RefundOutcome(record=record, created=False)
    assert shop.refund_for("ORD-001") == record
    assert shop.refund_for("ORD-002") is None
    assert ledger_rows() == [(record.reference, "ORD-001", 8999)]


def test_the_database_itself_refuses_a_second_refund_of_an_order(
    shop: ShopData, backend: Backend, shop_path: Path
) -> None:
    # Not a read before the write: the table's UNIQUE constraint, whoever writes.
    shop.record_refund(
        "ORD-002", amount=Decimal("14.99"), reason="Cracked in the box", thread_id="t"
    )
    refused = sqlite3.IntegrityError if not backend.postgres else psycopg.errors.UniqueViolation
    with pytest.raises(refused):
        backend.execute(
            "INSERT INTO refunds VALUES ('REF-OTHER', 'ORD-002', 1499, 'again', NULL, 'now')",
            sqlite_path=shop_path,
        )


def test_second_instance_on_the_same_file_sees_the_refund(
    backend: Backend, shop_path: Path
) -> None:
    where = backend.where(shop_path)
    with ShopData(where) as one, ShopData(where) as two:
        first = one.record_refund(
            "ORD-003", amount=Decimal("45.00"), reason="Wrong size ordered", thread_id=None
        )
        second = two.record_refund(
            "ORD-003", amount=Decimal("45.00"), reason="Wrong size ordered", thread_id=None
        )
    assert first.created and not second.created
    assert second.record == first.record


def test_threads_racing_on_one_instance_pay_once(shop: ShopData, ledger_rows: Any) -> None:
    barrier = threading.Barrier(8)
    outcomes: list[RefundOutcome] = []

    def refund() -> None:
        barrier.wait()
        outcomes.append(
            shop.record_refund("ORD-005", amount=Decimal("59.50"), reason="Crackles", thread_id="t")
        )

    workers = [threading.Thread(target=refund) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sum(o.created for o in outcomes) == 1
    assert {o.record.reference for o in outcomes} == {outcomes[0].record.reference}
    assert len(ledger_rows()) == 1


def _refund_in_another_process(path: str, url: str | None, start: Any, results: Any) -> None:
    """Runs in a spawned process; reports its outcome or its error through `results`."""
    try:
        # Every process opens a fresh database at once: schema and seeding race too.
        start.wait()
        where = (
            Path(path) if url is None else checked_database(Settings(Path(path), database_url=url))
        )
        with ShopData(where) as data:
            outcome = data.record_refund(
                "ORD-006", amount=Decimal("129.00"), reason="Keys stick after a week", thread_id="p"
            )
        results.put((outcome.record.reference, outcome.created))
    except BaseException as exc:
        results.put(("error", repr(exc)))


def _race_to_refund(processes: int, backend: Backend, shop_path: Path) -> None:
    """`processes` processes refund ORD-006 at the same moment: exactly one pays."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(processes)
    results = ctx.Queue()
    workers = [
        ctx.Process(
            target=_refund_in_another_process, args=(str(shop_path), backend.url, start, results)
        )
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=120) for _ in range(processes)]
    for worker in workers:
        worker.join(timeout=60)
    assert [o for o in outcomes if o[0] == "error"] == []
    references = {reference for reference, _ in outcomes}
    assert len(references) == 1
    assert sum(created for _, created in outcomes) == 1
    stored = backend.query(
        "SELECT reference, order_id, amount_cents FROM refunds", sqlite_path=shop_path
    )
    assert stored == [(references.pop(), "ORD-006", 12900)]
    with ShopData(backend.where(shop_path)) as data:
        assert len(data.all_orders()) == len(DEMO_ORDERS)


def test_processes_racing_pay_once(tmp_path: Path, shop_path: Path) -> None:
    # (SQLite's file has one writer at a time whatever the count.)
    _race_to_refund(4, Backend("sqlite", tmp_path), shop_path)


@pytest.mark.postgres
def test_eight_processes_racing_on_postgres_pay_once(
    empty_postgres_url: str, tmp_path: Path, shop_path: Path
) -> None:
    # As many as would answer customers at once on a server, all on an empty database: the
    # tables, the seeding and the payment race together.
    _race_to_refund(8, Backend("postgres", tmp_path, empty_postgres_url), shop_path)


def test_unknown_order_is_rejected(shop: ShopData, ledger_rows: Any) -> None:
    with pytest.raises(ValueError, match="Unknown order 'ORD-999'"):
        shop.record_refund("ORD-999", amount=Decimal("1.00"), reason="x" * 12, thread_id=None)
    assert ledger_rows() == []


@pytest.mark.parametrize("amount", ["0", "-5.00", "649.01", "10.001", "NaN"])
def test_impossible_amounts_are_rejected(shop: ShopData, ledger_rows: Any, amount: str) -> None:
    with pytest.raises(ValueError, match="amount"):
        shop.record_refund("ORD-004", amount=Decimal(amount), reason="x" * 12, thread_id=None)
    assert ledger_rows() == []


def test_damaged_file_names_the_file(shop_path: Path) -> None:
    shop_path.parent.mkdir(parents=True)
    shop_path.write_bytes(b"this is not a database at all\x00\xff" * 200)
    with pytest.raises(StorageError) as caught:
        ShopData(shop_path)
    assert str(shop_path) in str(caught.value)
    assert "shop data" in str(caught.value)
