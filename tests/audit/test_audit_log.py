"""The audit log: contract schema, filters, paging, redaction, and no way to rewrite history."""

from __future__ import annotations

import io
import json
import multiprocessing
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from agents.audit.log import AUDIT_KINDS, AuditEvent, AuditLog, AuditQuery
from agents.safety.redaction import REDACTED
from agents.store import sqlite as sqlite_store
from agents.store.sqlite import StorageError
from tests.support.backends import Backend

API_KEY = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm"  # Mistral-shaped: 32 alphanumerics
TS_PATTERN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2025, 6, 10, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "audit.sqlite"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def log(heavy_backend: Backend, audit_path: Path, clock: Clock) -> Iterator[AuditLog]:
    """The log in a SQLite file, and in PostgreSQL (`-m postgres`)."""
    with AuditLog(heavy_backend.where(audit_path), secrets=[API_KEY], clock=clock) as audit:
        yield audit


@pytest.fixture
def sqlite_log(audit_path: Path, clock: Clock) -> Iterator[AuditLog]:
    """The log in a SQLite file, for what only a file has (its write lock, its schema)."""
    with AuditLog(audit_path, secrets=[API_KEY], clock=clock) as audit:
        yield audit


def _ids(events: list[AuditEvent]) -> list[int]:
    return [event.id for event in events]


def test_record_has_the_contract_schema(log: AuditLog) -> None:
    event = log.append(
        "handoff",
        thread_id="t-1",
        agent="order_agent",
        detail={"target": "refund_agent", "reason": "wants money back"},
    )
    record = event.to_json()
    assert list(record) == ["id", "ts", "thread_id", "agent", "kind", "detail"]
    assert record["ts"] == "2025-06-10T09:00:00.000Z"
    assert (record["thread_id"], record["agent"], record["kind"]) == (
        "t-1",
        "order_agent",
        "handoff",
    )
    assert record["detail"] == {"target": "refund_agent", "reason": "wants money back"}
    assert log.get(event.id) == event
    assert log.get(event.id + 1) is None
    json.dumps(record)  # plain JSON all the way down


def test_real_clock_stamps_are_utc_with_milliseconds(audit_path: Path) -> None:
    with AuditLog(audit_path) as audit:
        event = audit.append("turn_started", thread_id="t")
    assert TS_PATTERN.fullmatch(event.ts)
    stamped = datetime.fromisoformat(event.ts)
    assert abs(stamped - datetime.now(UTC)) < timedelta(minutes=5)


def test_kinds_are_validated(log: AuditLog) -> None:
    design_kinds = {
        "handoff", "gate_passed", "gate_failed", "correction", "escalated",
        "approval_requested", "approval_decided", "tool_called", "refund_processed",
        "limit_reached", "provider_error",
    }  # fmt: skip
    assert design_kinds <= AUDIT_KINDS
    with pytest.raises(ValueError, match="Unknown audit kind 'refund_made'"):
        log.append("refund_made", thread_id="t")
    with pytest.raises(ValueError, match="Unknown audit kind"):
        log.page(AuditQuery(kinds=("handoff", "nope")))
    assert log.count() == 0


def test_detail_is_coerced_to_json(log: AuditLog) -> None:
    class Extraction(BaseModel):
        order_id: str
        amount: Decimal

    detail: dict[Any, Any] = {
        "amount": Decimal("89.99"),
        "when": datetime(2025, 6, 10, 12, 30, tzinfo=UTC),
        "file": Path("/tmp/x.txt"),
        "ids": ("ORD-001", "ORD-002"),
        "tags": {"b", "a"},
        "model": Extraction(order_id="ORD-001", amount=Decimal("1.50")),
        "ratio": float("nan"),
        "other": object,
        7: "int key",
    }
    event = log.append("gate_passed", thread_id="t", detail=detail)
    stored = log.get(event.id)
    assert stored is not None and stored == event
    assert stored.detail == {
        "amount": "89.99",
        "when": "2025-06-10T12:30:00+00:00",
        "file": "/tmp/x.txt",
        "ids": ["ORD-001", "ORD-002"],
        "tags": ["a", "b"],
        "model": {"order_id": "ORD-001", "amount": "1.50"},
        "ratio": "nan",
        "other": "<class 'object'>",
        "7": "int key",
    }


def test_pages_newest_first_without_gaps_or_duplicates(log: AuditLog) -> None:
    appended = [log.append("tool_called", thread_id="t", detail={"n": n}).id for n in range(250)]
    seen: list[int] = []
    sizes: list[int] = []
    before: int | None = None
    while page := log.page(limit=100, before_id=before):
        sizes.append(len(page))
        seen.extend(_ids(page))
        before = page[-1].id
    assert sizes == [100, 100, 50]
    assert seen == sorted(appended, reverse=True)
    assert _ids(list(log.iter_events(page_size=7))) == seen
    assert log.count() == 250
    with pytest.raises(ValueError, match="limit"):
        log.page(limit=0)


def test_filters_by_thread_kind_and_time(log: AuditLog, clock: Clock) -> None:
    early = log.append("turn_started", thread_id="a", agent="order_agent")
    clock.advance(minutes=1)
    middle = log.append("handoff", thread_id="b", agent="order_agent")
    clock.advance(minutes=1)
    late = log.append("gate_failed", thread_id="a", agent="refund_agent")
    log.append("turn_finished", thread_id=None)

    assert _ids(log.page(AuditQuery(thread_id="a"))) == [late.id, early.id]
    assert log.count(AuditQuery(thread_id="a")) == 2
    assert _ids(log.page(AuditQuery(kinds=("handoff", "gate_failed")))) == [late.id, middle.id]
    assert log.count(AuditQuery(kinds=("turn_started",))) == 1
    assert _ids(log.page(AuditQuery(thread_id="a", kinds=("handoff",)))) == []

    # since is inclusive, until exclusive; other offsets and plain dates are understood.
    assert _ids(log.page(AuditQuery(since=middle.ts, until=late.ts))) == [middle.id]
    assert _ids(log.page(AuditQuery(since="2025-06-10T11:01:00+02:00"))) == [
        late.id + 1,
        late.id,
        middle.id,
    ]
    assert log.count(AuditQuery(until="2025-06-10")) == 0
    assert log.count(AuditQuery(since="2025-06-10", until="2025-06-11")) == 4
    with pytest.raises(ValueError, match="ISO-8601"):
        log.page(AuditQuery(since="yesterday"))


def test_moments_whose_utc_falls_outside_the_calendar_bound_nothing(log: AuditLog) -> None:
    # Valid ISO-8601, but 00:00 at UTC+14 on 1 January of year 1 is in year 0 in UTC: this
    # raised OverflowError (`shopbot audit` exited 1, "unexpected error").
    event = log.append("turn_started", thread_id="a")
    earliest, latest = "0001-01-01T00:00+14:00", "9999-12-31T23:59-14:00"
    assert _ids(log.page(AuditQuery(since=earliest, until=latest))) == [event.id]
    assert log.count(AuditQuery(since=latest)) == 0
    assert log.count(AuditQuery(until=earliest)) == 0


def test_thread_ids_most_recent_first(log: AuditLog) -> None:
    for thread in ["one", "two", "one", "three", None]:
        log.append("turn_started", thread_id=thread)
    assert log.thread_ids() == ["three", "one", "two"]


@pytest.fixture
def texts(log: AuditLog) -> dict[str, int]:
    """Events with adversarial text, by name -> id."""
    messages = {
        "cyrillic": "Клиент требует ВОЗВРАТ денег",
        "cjk": "客户要求退款，订单 ORD-001",
        "markup": "customer wrote [bold]urgent[/bold] and [link=x]click[/link]",
        "percent": "discount of 100% promised",
        "underscore": "field order_id was empty",
        "quote": 'she said "never again"',
        "plain": "axb plain words only",
    }
    # A kind without "_" and no agent, so only the message can hold a "_" or "%".
    return {
        name: log.append("escalated", thread_id=f"t-{name}", detail={"message": message}).id
        for name, message in messages.items()
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("возврат", {"cyrillic"}),  # case folded beyond ASCII
        ("клиент ТРЕБУЕТ", {"cyrillic"}),
        ("Кл", {"cyrillic"}),  # shorter than a trigram: the fallback scan, still folded
        ("要求退款", {"cjk"}),
        ("退款", {"cjk"}),
        ("[bold]", {"markup"}),
        ("[link=x]", {"markup"}),
        ("%", {"percent"}),  # not a LIKE wildcard
        ("0%", {"percent"}),
        ("100% promised", {"percent"}),
        ("_", {"underscore"}),  # not a LIKE wildcard either
        ("r_", {"underscore"}),
        ("r_i", {"underscore"}),
        ("a_b", set()),
        ('"never', {"quote"}),
        ("ORD-001", {"cjk"}),
        ("message", {"cyrillic", "cjk", "markup", "percent", "underscore", "quote", "plain"}),
        ("t-markup", {"markup"}),  # the thread id is searchable
        # As the table shows a detail (`key=value`), in every way of searching.
        ("message=Клиент", {"cyrillic"}),
        ("MESSAGE=AXB", {"plain"}),
        ("message=customer wrote [bold]", {"markup"}),
        ("e=a", {"plain"}),
        ("e=К", {"cyrillic"}),
        ("e=", {"cyrillic", "cjk", "markup", "percent", "underscore", "quote", "plain"}),
        # Several terms: an event must show every one; a quoted phrase is one term.
        ("message=axb x", {"plain"}),
        ('message="axb x"', set()),
        ('message="axb plain"', {"plain"}),
        ("nothing like this", set()),
    ],
)
def test_free_text_search(
    log: AuditLog, texts: dict[str, int], text: str, expected: set[str]
) -> None:
    names = {event_id: name for name, event_id in texts.items()}
    # Alone, the text walks the FTS index; with a kind that leaves few rows, each row's text
    # is tested instead. Both ways must find the same events.
    for query in (AuditQuery(text=text), AuditQuery(text=text, kinds=("escalated",))):
        found = log.page(query)
        assert {names[event.id] for event in found} == expected
        assert _ids(found) == sorted(_ids(found), reverse=True)
        assert log.count(query) == len(expected)


def test_text_combines_with_other_filters(log: AuditLog, texts: dict[str, int]) -> None:
    assert _ids(log.page(AuditQuery(text="message", thread_id="t-cjk"))) == [texts["cjk"]]
    assert log.count(AuditQuery(text="message", kinds=("handoff",))) == 0
    assert log.count(AuditQuery(text="message", kinds=("escalated",))) == len(texts)
    for query in (AuditQuery(text="MESSAGE"), AuditQuery(text="MESSAGE", kinds=("escalated",))):
        hits = log.page(query, limit=3)
        rest = log.page(query, before_id=hits[-1].id)
        assert _ids(hits + rest) == sorted(texts.values(), reverse=True)


def test_secrets_and_credentials_never_reach_the_file(
    log: AuditLog, heavy_backend: Backend, audit_path: Path
) -> None:
    event = log.append(
        "provider_error",
        thread_id="t",
        agent=f"order_agent {API_KEY}",
        detail={
            "error": f"401 for key {API_KEY}",
            "headers": ["Accept: json", {"auth": "Bearer abcdef0123456789"}],
            "openai": "sk-live-0123456789abcdefghij",
            API_KEY: "as a key",
        },
    )
    assert event.agent == f"order_agent {REDACTED}"
    assert event.detail == {
        "error": f"401 for key {REDACTED}",
        "headers": ["Accept: json", {"auth": f"Bearer {REDACTED}"}],
        "openai": REDACTED,
        REDACTED: "as a key",
    }
    assert log.get(event.id) == event
    leaks = [API_KEY, "abcdef0123456789", "sk-live-0123456789abcdefghij"]
    if heavy_backend.postgres:
        stored = heavy_backend.query("SELECT agent, detail::text, body FROM events")
        raw = repr(stored).encode()
    else:
        raw = b"".join(p.read_bytes() for p in audit_path.parent.glob("audit.sqlite*"))
    assert not [leak for leak in leaks if leak.encode() in raw]
    assert log.page(AuditQuery(text="abcdef0123")) == []  # not in the search index either


def test_registered_process_secret_is_redacted(
    audit_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.safety import redaction

    monkeypatch.setattr(redaction, "_registered", set())
    redaction.register_secret("configured-at-start-up")
    with AuditLog(audit_path) as audit:
        event = audit.append("provider_error", detail={"why": "bad configured-at-start-up"})
    assert event.detail == {"why": f"bad {REDACTED}"}


def test_events_cannot_be_changed_or_removed(
    log: AuditLog, heavy_backend: Backend, audit_path: Path
) -> None:
    event = log.append(
        "refund_processed", thread_id="t", detail={"reference": "REF-ORD-001-ABCDEF"}
    )
    verbs = ("update", "delete", "remove", "clear", "truncate", "drop", "edit", "set")
    public_or_private = [name.lower().lstrip("_") for name in dir(log) if not name.startswith("__")]
    assert [name for name in public_or_private if name.startswith(verbs)] == []
    # Refused by the database itself, whoever connects (its owner too): triggers.
    refused: type[Exception] = (
        psycopg.errors.RestrictViolation if heavy_backend.postgres else sqlite3.DatabaseError
    )
    rewrites = ["UPDATE events SET detail = '{}' WHERE id = ?", "DELETE FROM events"]
    if heavy_backend.postgres:
        rewrites.append("TRUNCATE events")
    for rewrite in rewrites:
        params = (event.id,) if "?" in rewrite else ()
        with pytest.raises(refused, match="append-only"):
            heavy_backend.execute(rewrite, params, sqlite_path=audit_path)
    assert log.get(event.id) == event
    assert log.count() == 1


def test_export_jsonl_honours_the_filter(log: AuditLog, tmp_path: Path) -> None:
    for n in range(30):
        log.append(
            "tool_called" if n % 3 else "gate_failed", thread_id=f"t{n % 2}", detail={"n": n}
        )
    query = AuditQuery(thread_id="t0", kinds=("tool_called",))
    expected = [event.to_json() for event in log.iter_events(query)]
    assert len(expected) == 10

    dest = tmp_path / "export.jsonl"
    assert log.export_jsonl(dest, query) == 10
    lines = dest.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == expected

    buffer = io.StringIO()
    assert log.export_jsonl(buffer) == 30
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [r["id"] for r in records] == list(range(30, 0, -1))
    assert all(set(r) == {"id", "ts", "thread_id", "agent", "kind", "detail"} for r in records)


def test_a_detail_is_found_by_the_words_its_summary_shows(log: AuditLog) -> None:
    decided = log.append(
        "approval_decided",
        thread_id="t-sam",
        detail={"kind": "refund_approval", "decision": "approve", "order_id": "ORD-005"},
    )
    called = log.append("tool_called", thread_id="t-sam", detail={"args": {"order_id": "ORD-6"}})
    assert "decision=approve order_id=ORD-005" in decided.summary()
    for text, expected in [
        ("order_id=ORD-005", [decided.id]),
        ("decision=approve", [decided.id]),
        ("order_id: ORD-005", [decided.id]),  # as the index holds it, as before
        ("_id=ORD-", [called.id, decided.id]),  # a nested key too
    ]:
        assert _ids(log.page(AuditQuery(text=text))) == expected, text
        # Few rows left by a kind: each row's text is tested instead of the index.
        only_decided = AuditQuery(text=text, kinds=("approval_decided",))
        assert _ids(log.page(only_decided)) == [decided.id], text


def test_summary_is_one_short_line() -> None:
    event = AuditEvent(1, "2025-06-10T09:00:00.000Z", "t", "a", "gate_failed", {
        "error": "Order ID 'ORD-99X'\nis not\tvalid",
        "attempt": 2,
        "args": {"order_id": "ORD-99X"},
    })  # fmt: skip
    assert event.summary() == (
        'error=Order ID \'ORD-99X\' is not valid attempt=2 args={"order_id":"ORD-99X"}'
    )
    short = event.summary(width=20)
    assert len(short) == 20 and short.endswith("…") and "\n" not in short


def test_damaged_file_names_the_file(audit_path: Path) -> None:
    audit_path.parent.mkdir(parents=True)
    audit_path.write_bytes(b"\x00garbage" * 512)
    with pytest.raises(StorageError, match=re.escape(str(audit_path))):
        AuditLog(audit_path)


@pytest.fixture
def short_busy_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock held elsewhere fails an open in 0.1 s, not 10."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 100)


def _holding_the_write_lock(path: Path) -> sqlite3.Connection:
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    return writer


def test_opening_a_set_up_log_writes_nothing(
    sqlite_log: AuditLog, audit_path: Path, short_busy_wait: None
) -> None:
    """A viewer opens its connections while the engine writes: it must not wait for it."""
    sqlite_log.append("turn_started", thread_id="t-1")
    writer = _holding_the_write_lock(audit_path)
    try:
        with AuditLog(audit_path) as reader:
            assert [event.kind for event in reader.page()] == ["turn_started"]
    finally:
        writer.close()


def test_a_log_missing_part_of_its_schema_gets_it_on_opening(
    sqlite_log: AuditLog, audit_path: Path, short_busy_wait: None
) -> None:
    sqlite_log.append("turn_started", thread_id="t-1")
    with sqlite3.connect(audit_path) as conn:
        conn.execute("DROP INDEX events_ts")
    writer = _holding_the_write_lock(audit_path)
    try:
        # The schema's write transaction is needed now, and waits for the writer.
        with pytest.raises(StorageError, match="locked"):
            AuditLog(audit_path)
    finally:
        writer.close()
    with AuditLog(audit_path) as reopened:
        assert reopened.count(AuditQuery(text="turn_started")) == 1
    with sqlite3.connect(audit_path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "events_ts" in names


def _append_in_another_process(path: str, worker: int, start: Any, results: Any) -> None:
    """Runs in a spawned process: appends 100 events as fast as it can."""
    try:
        start.wait()
        with AuditLog(Path(path)) as audit:
            for n in range(100):
                audit.append("tool_called", thread_id=f"w{worker}", detail={"n": n})
        results.put("ok")
    except BaseException as exc:
        results.put(repr(exc))


def test_processes_appending_at_once_all_succeed(audit_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(4)
    results = ctx.Queue()
    workers = [
        ctx.Process(target=_append_in_another_process, args=(str(audit_path), w, start, results))
        for w in range(4)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert outcomes == ["ok"] * 4
    with AuditLog(audit_path) as audit:
        assert audit.count() == 400
        for w in range(4):
            ns = [e.detail["n"] for e in audit.iter_events(AuditQuery(thread_id=f"w{w}"))]
            assert ns == list(range(99, -1, -1))


def test_a_hundred_thousand_events(log: AuditLog) -> None:
    total = 100_000
    kinds = ("turn_started", "tool_called", "gate_passed", "turn_finished")

    def event(n: int) -> dict[str, Any]:
        detail: dict[str, Any] = {"n": n}
        if n % 10_000 == 1234:
            detail["note"] = "needle in the haystack"
        return {
            "kind": "escalated" if n % 997 == 0 else kinds[n % 4],
            "thread_id": f"thread-{n // 200}",  # conversations are runs of 200 events
            "agent": "order_agent",
            "detail": detail,
        }

    assert log.append_many(event(n) for n in range(total)) == total
    # Event n has id n + 1 (a fresh log, appended in order).
    assert log.count() == total

    deep = log.page(limit=100, before_id=1001)
    assert _ids(deep) == list(range(1000, 900, -1))
    assert [e.detail["n"] for e in deep] == list(range(999, 899, -1))
    last = log.page(limit=100, before_id=51)
    assert _ids(last) == list(range(50, 0, -1))

    thread = AuditQuery(thread_id="thread-123")
    assert log.count(thread) == 200
    assert _ids(log.page(thread)) == list(range(24_800, 24_700, -1))
    assert _ids(log.page(thread, before_id=24_701)) == list(range(24_700, 24_600, -1))

    escalations = AuditQuery(kinds=("escalated",))
    expected = [n + 1 for n in range(total - 1, -1, -1) if n % 997 == 0]
    assert log.count(escalations) == len(expected)
    assert _ids(log.page(escalations, limit=50, before_id=expected[9])) == expected[10:60]

    needle = AuditQuery(text="NEEDLE in")
    assert log.count(needle) == 10
    assert _ids(log.page(needle)) == [n + 1 for n in range(total - 1, 0, -1) if n % 10_000 == 1234]
    assert _ids(log.page(AuditQuery(text="needle", thread_id="thread-6"))) == [1235]

    common = AuditQuery(text="order_agent", kinds=("turn_started",))
    assert _ids(log.page(common, limit=3, before_id=41)) == [37, 33, 29]


@pytest.mark.parametrize("needle", ["\udcff", "bad \udcff bytes"])
def test_text_search_with_undecodable_bytes_finds_what_was_stored(
    log: AuditLog, needle: str
) -> None:
    # `shopbot audit --text $'\xff'`: the stored detail holds U+FFFD where the bytes were.
    stored = log.append("correction", thread_id="t1", detail={"error": "bad \udcff bytes"})
    log.append("correction", thread_id="t1", detail={"error": "fine"})
    assert _ids(log.page(AuditQuery(text=needle))) == [stored.id]
