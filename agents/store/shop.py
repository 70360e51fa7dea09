"""The shop's orders and its refund ledger, in one local SQLite file.

The ledger pays at most once per order, and the database enforces it: a retried tool
call, a replayed interrupt node or a second `shopbot resume` process racing this one
all get the existing refund back instead of a second payment.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from agents.audit.log import INSERT_EVENT, event_values, prepared_event
from agents.store.database import Location, Store
from agents.store.sqlite import utc_timestamp


@dataclass(frozen=True)
class Order:
    """One order as the shop knows it."""

    order_id: str
    customer: str
    product: str
    status: str
    amount: Decimal
    delivery: str

    def as_record(self) -> dict[str, Any]:
        """Plain data for gates and tools, keyed like the reference design's ORDERS_DB."""
        return {
            "order_id": self.order_id,
            "customer": self.customer,
            "product": self.product,
            "status": self.status,
            "amount": round(float(self.amount), 2),
            "delivery_date": self.delivery,
        }


@dataclass(frozen=True)
class RefundRecord:
    """A refund that was paid: one per order, ever."""

    reference: str
    order_id: str
    amount: Decimal
    reason: str
    thread_id: str | None
    created_at: str


@dataclass(frozen=True)
class RefundOutcome:
    """`created` is False when the refund already existed and nothing was paid again."""

    record: RefundRecord
    created: bool


@dataclass(frozen=True)
class RefundAudit:
    """Who lets a refund through, for the `refund_processed` event written with it."""

    thread_id: str | None
    agent: str
    # Beside the refund's own facts: who decided (`decided_by`, `via`).
    detail: dict[str, str]

    def event(
        self, record: RefundRecord
    ) -> tuple[str, str | None, str | None, str, dict[str, Any]]:
        facts = {
            "order_id": record.order_id,
            "reference": record.reference,
            "amount": str(record.amount),
            "created": True,
        }
        return prepared_event(
            "refund_processed", self.thread_id, self.agent, {**facts, **self.detail}
        )


def _order(
    order_id: str, customer: str, product: str, status: str, amount: str, delivery: str
) -> Order:
    return Order(order_id, customer, product, status, Decimal(amount), delivery)


# ORD-001..004 are the reference design's orders and must stay exactly as they are.
DEMO_ORDERS: tuple[Order, ...] = (
    _order("ORD-001", "Alex", "Wireless Headphones", "Delivered", "89.99", "2025-06-10"),
    _order("ORD-002", "Sam", "Phone Case", "In Transit", "14.99", "Expected 2025-06-18"),
    _order("ORD-003", "Jordan", "Laptop Stand", "Processing", "45.00", "Expected 2025-06-20"),
    # Over the 500.00 auto-refund limit: exercises the approval path.
    _order("ORD-004", "Alex", "4K Monitor", "Delivered", "649.00", "2025-06-08"),
    _order("ORD-005", "Sam", "Bluetooth Speaker", "Delivered", "59.50", "2025-06-05"),
    _order("ORD-006", "Jordan", "Mechanical Keyboard", "Delivered", "129.00", "2025-06-03"),
    _order("ORD-007", "Alex", "USB-C Hub", "Cancelled", "39.99", "Cancelled 2025-06-01"),
)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS orders (
        order_id TEXT PRIMARY KEY,
        customer TEXT NOT NULL,
        product TEXT NOT NULL,
        status TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents >= 0),
        delivery TEXT NOT NULL
    )""",
    # UNIQUE(order_id) is the one-refund-per-order rule; the code relies on it, not on a read.
    """CREATE TABLE IF NOT EXISTS refunds (
        reference TEXT PRIMARY KEY,
        order_id TEXT NOT NULL UNIQUE REFERENCES orders(order_id),
        amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
        reason TEXT NOT NULL,
        thread_id TEXT,
        created_at TEXT NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


def to_cents(amount: Decimal) -> int:
    """Whole cents; rejects NaN, infinities and fractions of a cent."""
    try:
        value = Decimal(amount)
    except (InvalidOperation, TypeError, ValueError) as exc:
        raise ValueError(f"Not a money amount: {amount!r}") from exc
    if not value.is_finite():
        raise ValueError(f"Not a money amount: {amount}")
    cents = value * 100
    if cents != cents.to_integral_value():
        raise ValueError(f"Money amounts have at most 2 decimal places, got {amount}")
    return int(cents)


def _from_cents(cents: int) -> Decimal:
    return (Decimal(cents) / 100).quantize(Decimal("0.01"))


class OrderIds:
    """The set of known order ids as a `Container[str]`, asking the database on each test."""

    def __init__(self, shop: ShopData) -> None:
        self._shop = shop

    def __contains__(self, order_id: object) -> bool:
        return isinstance(order_id, str) and self._shop.has_order(order_id)


class ShopData(Store):
    """Orders and the refund ledger at `where`: a SQLite file, or a PostgreSQL database
    (thread-safe)."""

    WHAT = "shop data"
    SCHEMA = _SCHEMA

    def __init__(self, where: Location) -> None:
        super().__init__(where)
        self._seed()

    def _seed(self) -> None:
        # First run only: a marker row, so orders an operator changed or removed stay so.
        # Read first: a seeded shop opens without waiting for another writer's lock.
        with self._lock:
            if self._conn.execute("SELECT 1 FROM meta WHERE key = 'seeded'").fetchone():
                return
        with self._lock, self._transaction() as conn:
            if conn.execute("SELECT 1 FROM meta WHERE key = 'seeded'").fetchone():
                return
            for o in DEMO_ORDERS:
                conn.execute(
                    "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (o.order_id, o.customer, o.product, o.status, to_cents(o.amount), o.delivery),
                )
            # (No conflict in SQLite, whose transaction has the file to itself; in PostgreSQL
            # another process may be seeding the same shop at this moment.)
            conn.execute(
                "INSERT INTO meta VALUES ('seeded', ?) ON CONFLICT DO NOTHING", (utc_timestamp(),)
            )

    def _orders(self, where: str, params: tuple[Any, ...]) -> list[Order]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT * FROM orders {where} ORDER BY order_id",  # noqa: S608 - fixed clauses
                params,
            ).fetchall()
        return [
            Order(
                r["order_id"],
                r["customer"],
                r["product"],
                r["status"],
                _from_cents(r["amount_cents"]),
                r["delivery"],
            )
            for r in rows
        ]

    def note(self, key: str, value: str) -> None:
        """Keep a fact about the shop's database (a move finished, say) in its meta table."""
        with self._lock, self._transaction() as conn:
            conn.execute(
                "INSERT INTO meta VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def get_order(self, order_id: str) -> Order | None:
        """The order with exactly this id, or None."""
        found = self._orders("WHERE order_id = ?", (order_id,))
        return found[0] if found else None

    def has_order(self, order_id: str) -> bool:
        """True when an order with exactly this id exists."""
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM orders WHERE order_id = ?", (order_id,))
            return row.fetchone() is not None

    def known_ids(self) -> OrderIds:
        """A live `Container[str]` of order ids, for gates."""
        return OrderIds(self)

    def all_orders(self) -> list[Order]:
        """Every order, by id."""
        return self._orders("", ())

    def refund_for(self, order_id: str) -> RefundRecord | None:
        """The refund already paid for this order, if any."""
        with self.damage_named(), self._lock:
            row = self._conn.execute("SELECT * FROM refunds WHERE order_id = ?", (order_id,))
            found = row.fetchone()
        return _refund(found) if found else None

    def refunds(self) -> list[RefundRecord]:
        """Every refund in the ledger, oldest first."""
        with self._lock:
            rows = self._conn.execute("SELECT * FROM refunds ORDER BY created_at").fetchall()
        return [_refund(row) for row in rows]

    def restore_refund(self, record: RefundRecord) -> bool:
        """Put back a refund the ledger lost (its file was replaced) but another record holds.
        False when the order is unknown here or already has its refund."""
        with self._lock, self._transaction() as conn:
            if (
                conn.execute(
                    "SELECT 1 FROM orders WHERE order_id = ?", (record.order_id,)
                ).fetchone()
                is None
            ):
                return False
            return (
                conn.execute(
                    "INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (
                        record.reference,
                        record.order_id,
                        to_cents(record.amount),
                        record.reason,
                        record.thread_id,
                        record.created_at,
                    ),
                ).rowcount
                == 1
            )

    def record_refund(
        self,
        order_id: str,
        *,
        amount: Decimal,
        reason: str,
        thread_id: str | None,
        recorded_by: RefundAudit | None = None,
    ) -> RefundOutcome:
        """Pay a refund once; a repeat returns the first refund with `created=False`. With
        `recorded_by`, its `refund_processed` audit event is written in the same transaction
        as the ledger row: no kill between two writes can leave one without the other."""
        cents = to_cents(amount)
        reference = f"REF-{order_id}-{secrets.token_hex(3).upper()}"
        with self.damage_named(), self._lock, self._transaction() as conn:
            order = conn.execute(
                "SELECT amount_cents FROM orders WHERE order_id = ?", (order_id,)
            ).fetchone()
            if order is None:
                raise ValueError(f"Unknown order {order_id!r}: no refund recorded.")
            if not 0 < cents <= order["amount_cents"]:
                raise ValueError(
                    f"Refund amount {amount} for {order_id} must be above 0 and at most "
                    f"the order amount {_from_cents(order['amount_cents'])}."
                )
            # No conflict target: the reference embeds the order id, so a (one in 16M) clash
            # on it is the same order's refund too, and must not raise either.
            inserted = conn.execute(
                "INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (reference, order_id, cents, reason, thread_id, utc_timestamp()),
            ).rowcount
            row = conn.execute("SELECT * FROM refunds WHERE order_id = ?", (order_id,)).fetchone()
            outcome = RefundOutcome(record=_refund(row), created=inserted == 1)
            if outcome.created and recorded_by is not None:
                conn.execute(INSERT_EVENT, event_values(recorded_by.event(outcome.record)))
        return outcome


def _refund(row: Any) -> RefundRecord:
    return RefundRecord(
        reference=row["reference"],
        order_id=row["order_id"],
        amount=_from_cents(row["amount_cents"]),
        reason=row["reason"],
        thread_id=row["thread_id"],
        created_at=row["created_at"],
    )
