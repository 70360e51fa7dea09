"""The background audit writer: order kept, nothing dropped, failures kept in the log file."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from agents.audit.log import AuditLog, AuditQuery
from agents.audit.writer import BATCH, AuditWriter


def test_events_are_stored_in_order_with_the_time_they_happened(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    writer = AuditWriter(audit)
    for n in range(1_200):  # more than one batch
        writer.append("tool_called", thread_id="t", agent="order_agent", detail={"n": n})
    writer.flush()
    events = list(reversed(audit.page(AuditQuery(thread_id="t"), limit=2_000)))
    assert [e.detail["n"] for e in events] == list(range(1_200))
    assert [e.ts for e in events] == sorted(e.ts for e in events)
    writer.close()
    audit.close()


def test_close_stores_everything_queued_and_refuses_more(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    writer = AuditWriter(audit)
    for _ in range(50):
        writer.append("handoff", thread_id="c", detail={"to": "refund_agent"})
    writer.close()
    assert audit.count(AuditQuery(thread_id="c")) == 50
    with pytest.raises(RuntimeError, match="closed"):
        writer.append("handoff", thread_id="c")
    audit.close()


def test_a_wrong_kind_fails_at_the_caller(tmp_path: Path) -> None:
    with AuditLog(tmp_path / "audit.sqlite") as audit:
        writer = AuditWriter(audit)
        with pytest.raises(ValueError, match="Unknown audit kind"):
            writer.append("coffee_break")
        writer.close()


def test_secrets_are_redacted_before_storage(tmp_path: Path) -> None:
    key = "sk-live-0123456789abcdefABCDEF0123456789"
    with AuditLog(tmp_path / "audit.sqlite", secrets=[key]) as audit:
        writer = AuditWriter(audit)
        writer.append("provider_error", detail={"error": f"401 for Bearer {key}"})
        writer.close()
        stored = audit.page(limit=1)[0]
        assert key not in str(stored.detail)


def test_a_store_that_fails_for_good_logs_the_events_and_holds_nothing_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    writer = AuditWriter(audit, retry_seconds=0.01)
    audit.close()  # the database goes away under the writer: no retry will help
    with caplog.at_level(logging.ERROR, logger="shopbot.audit"):
        writer.append("escalated", thread_id="lost", detail={"reason": "over the limit"})
        writer.flush()
        assert "audit event not stored: " in caplog.text  # at once, not at close
        assert "over the limit" in caplog.text
        writer.append("escalated", thread_id="lost", detail={"reason": "the next one"})
        writer.flush()
        assert "the next one" in caplog.text  # not queued behind the first for ever
        writer.close()


def passing_failure(message: str = "database is locked") -> sqlite3.OperationalError:
    """What SQLite raises for a lock held past the busy timeout (or a full disk)."""
    exc = sqlite3.OperationalError(message)
    exc.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    return exc


class Broken:
    """`append_many` (or, with `insert_rows`, each transaction) of an AuditLog, failing
    while `broken` (a lock held past the busy timeout), then storing again; the calls
    numbered in `fail_calls` fail too."""

    def __init__(self, audit: AuditLog, *, insert_rows: bool = False) -> None:
        self.broken, self.tries, self.fail_calls = True, 0, set[int]()
        self._store = audit._insert_rows if insert_rows else audit.append_many

    def __call__(self, events: list[Any]) -> int:
        self.tries += 1
        if self.broken or self.tries in self.fail_calls:
            raise passing_failure()
        return self._store(events)


def writer_on_a_broken_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, retry_seconds: float
) -> tuple[AuditLog, Broken, AuditWriter]:
    """An audit log whose `append_many` is `Broken` (failing until told), and its writer."""
    audit = AuditLog(tmp_path / "audit.sqlite")
    store = Broken(audit)
    monkeypatch.setattr(audit, "append_many", store)
    return audit, store, AuditWriter(audit, retry_seconds=retry_seconds)


def test_a_failed_write_is_tried_again_with_what_came_since_and_nothing_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    audit, store, writer = writer_on_a_broken_log(tmp_path, monkeypatch, retry_seconds=0.01)
    with caplog.at_level(logging.WARNING, logger="shopbot.audit"):
        writer.append("turn_started", thread_id="full", detail={"n": 0})
        writer.flush()  # returns once the write failed
        for n in range(1, 5):  # more events come while the store cannot take them
            writer.append("turn_started", thread_id="full", detail={"n": n})
            writer.flush()
        assert store.tries >= 5 and audit.count(AuditQuery(thread_id="full")) == 0
        store.broken = False  # the lock is let go, or space is freed
        writer.append("turn_started", thread_id="full", detail={"n": 5})
        writer.flush()
        writer.close()
    events = list(reversed(audit.page(AuditQuery(thread_id="full"), limit=10)))
    assert [e.detail["n"] for e in events] == [0, 1, 2, 3, 4, 5]  # all of them, in order
    assert caplog.text.count("trying again") == 1  # said once, not at every try
    assert "held back" in caplog.text and "not stored" not in caplog.text
    audit.close()


def test_a_retry_never_writes_twice_what_a_partial_write_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    # Each transaction of the log fails while broken; then only the second one after.
    inserts = Broken(audit, insert_rows=True)
    monkeypatch.setattr(audit, "_insert_rows", inserts)
    writer = AuditWriter(audit, retry_seconds=0.01)
    held = 5 * BATCH  # held back: more than one of the log's own transactions (2,000)
    for n in range(held):
        writer.append("turn_started", thread_id="p", detail={"n": n})
    writer.flush()
    inserts.fail_calls = {inserts.tries + 2}  # the lock comes back after one transaction
    inserts.broken = False
    writer.append("turn_started", thread_id="p", detail={"n": held})
    writer.flush()
    writer.close()
    stored = list(reversed(audit.page(AuditQuery(thread_id="p"), limit=5_000)))
    assert [e.detail["n"] for e in stored] == list(range(held + 1))  # each once, in order
    audit.close()


def test_closing_tries_once_more_then_logs_what_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # No retry on its own during the test.
    audit, store, writer = writer_on_a_broken_log(tmp_path, monkeypatch, retry_seconds=60)
    with caplog.at_level(logging.ERROR, logger="shopbot.audit"):
        writer.append("escalated", thread_id="c", detail={"reason": "over the limit"})
        writer.flush()
        tries = store.tries
        writer.close()  # at once: the app is quitting
    assert store.tries == tries + 1
    assert "audit event not stored: " in caplog.text and "over the limit" in caplog.text
    audit.close()


class RecordingRegistry:
    """A thread registry that records what was asked of it, and when, against the log."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit
        self.calls: list[tuple[Any, ...]] = []

    def _seen(self, *call: Any) -> None:
        # How many audit events were stored when this registry write ran: the order kept.
        self.calls.append((*call, self.audit.count(AuditQuery(thread_id="t"))))

    def append_line(self, thread_id: str, role: str, text: str, agent: str | None = None) -> object:
        self._seen("line", thread_id, role, text, agent)
        return None

    def escalate(self, thread_id: str, *, agent: str | None, reason: str) -> object:
        self._seen("escalate", thread_id, agent, reason)
        return None

    def update(self, thread_id: str, *, status: str, active_agent: str | None = None) -> object:
        self._seen("finish", thread_id, status, active_agent)
        return None

    def open_turn(self, thread_id: str, *, customer: str | None, message: str) -> object:
        self._seen("open", thread_id, customer, message)
        return None


def test_transcript_lines_and_turn_ends_are_written_in_order_with_the_events(
    tmp_path: Path,
) -> None:
    """The graph's lines, escalations and turn ends go to the registry in the order they
    were said, between the audit events said before and after them."""
    audit = AuditLog(tmp_path / "audit.sqlite")
    registry = RecordingRegistry(audit)
    writer = AuditWriter(audit, threads=registry)
    writer.open_turn("t", customer="Sam", message="Where is ORD-002?")
    writer.append("turn_started", thread_id="t")
    writer.line("t", "note", "gate: order id passed")
    writer.append("escalated", thread_id="t", detail={"reason": "r"})
    writer.escalate("t", agent="refund_agent", reason="r")
    writer.line("t", "assistant", "A colleague will follow up.", "refund_agent")
    writer.finish("t", status="idle", agent="refund_agent")
    writer.flush()
    assert registry.calls == [
        ("open", "t", "Sam", "Where is ORD-002?", 0),
        ("line", "t", "note", "gate: order id passed", None, 1),
        ("escalate", "t", "refund_agent", "r", 2),
        ("line", "t", "assistant", "A colleague will follow up.", "refund_agent", 2),
        ("finish", "t", "idle", "refund_agent", 2),
    ]
    writer.close()
    audit.close()


async def test_aflush_returns_once_everything_queued_is_stored(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    registry = RecordingRegistry(audit)
    writer = AuditWriter(audit, threads=registry)
    for n in range(700):
        writer.append("tool_called", thread_id="t", detail={"n": n})
    writer.finish("t", status="idle", agent="order_agent")
    await writer.aflush()
    assert audit.count(AuditQuery(thread_id="t")) == 700
    assert registry.calls == [("finish", "t", "idle", "order_agent", 700)]
    writer.close()
    audit.close()


def test_a_turns_events_lines_and_end_are_stored_in_one_transaction(tmp_path: Path) -> None:
    """What a turn queues (its message, events, transcript lines, end) is one commit of the
    one database, not a transaction per write: in PostgreSQL each is a flushed commit."""
    from agents.store.threads import ThreadRegistry

    where = tmp_path / "shopbot.sqlite"
    audit, registry = AuditLog(where), ThreadRegistry(where)
    statements: list[str] = []
    for store in (audit, registry):
        store._sqlite.set_trace_callback(statements.append)
    writer = AuditWriter(audit, threads=registry, delay=60)  # stored when asked, not before
    writer.open_turn("t", customer="Sam", message="Where is ORD-002?")
    writer.append("turn_started", thread_id="t")
    writer.line("t", "note", "gate: order id passed")
    writer.append("tool_called", thread_id="t", detail={"tool": "lookup_order"})
    writer.escalate("t", agent="order_agent", reason="asked for a person")
    writer.line("t", "assistant", "A colleague will follow up.", "order_agent")
    writer.finish("t", status="idle", agent="order_agent")
    writer.append("turn_finished", thread_id="t", detail={"status": "done"})
    writer.flush()
    begins = [s for s in statements if s.startswith("BEGIN")]
    assert len(begins) == 1, statements
    assert [s for s in statements if s.startswith("COMMIT")] == ["COMMIT"]
    assert audit.count(AuditQuery(thread_id="t")) == 3
    info = registry.get("t")
    assert info is not None and (info.status, info.turns) == ("idle", 1)
    assert [line.text for line in registry.lines("t")] == [
        "Where is ORD-002?",
        "gate: order id passed",
        "A colleague will follow up.",
    ]
    assert [e.reason for e in registry.escalations()] == ["asked for a person"]
    writer.close()
    registry.close()
    audit.close()


def test_a_batch_with_a_write_that_cannot_be_made_sets_only_that_one_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One transaction for the batch, but a line for a thread that does not exist does not
    take the rest down with it: written one by one, only that one is logged instead."""
    from agents.store.threads import ThreadRegistry

    where = tmp_path / "shopbot.sqlite"
    audit, registry = AuditLog(where), ThreadRegistry(where)
    writer = AuditWriter(audit, threads=registry, delay=60)
    with caplog.at_level(logging.ERROR, logger="shopbot.audit"):
        writer.open_turn("t", customer="Sam", message="Hello")
        writer.append("turn_started", thread_id="t")
        writer.line("nobody", "note", "a line of no conversation")
        writer.finish("t", status="idle", agent="order_agent")
        writer.flush()
    assert "a line of no conversation" in caplog.text
    assert audit.count(AuditQuery(thread_id="t")) == 1
    info = registry.get("t")
    assert info is not None and info.status == "idle"
    assert registry.get("nobody") is None
    writer.close()
    registry.close()
    audit.close()


def test_a_turns_end_is_stored_without_anyone_flushing(tmp_path: Path) -> None:
    """Under a LangGraph server nobody flushes after a run: `turn_finished` has the writer
    store the turn at once, not after its delay."""
    audit = AuditLog(tmp_path / "audit.sqlite")
    writer = AuditWriter(audit, delay=600)
    writer.append("turn_started", thread_id="s")
    writer.append("turn_finished", thread_id="s", detail={"status": "done"})
    stored = threading.Event()
    for _ in range(500):  # up to 5 s on a busy machine; done as soon as it is there
        if audit.count(AuditQuery(thread_id="s")) == 2:
            stored.set()
            break
        stored.wait(0.01)
    assert stored.is_set()
    writer.close()
    audit.close()


def test_an_owner_that_flushes_after_the_checkpoint_holds_the_turns_end_until_then(
    tmp_path: Path,
) -> None:
    """The engine stores a turn's end once the run's checkpoint is saved: stored at once, it
    would take the write lock the checkpoint is waiting for."""
    audit = AuditLog(tmp_path / "audit.sqlite")
    writer = AuditWriter(audit, delay=600, store_at_turn_end=False)
    writer.append("turn_started", thread_id="s")
    writer.append("turn_finished", thread_id="s", detail={"status": "done"})
    # What the writer without the flag stores within milliseconds is still queued.
    threading.Event().wait(0.3)
    assert audit.count(AuditQuery(thread_id="s")) == 0
    writer.flush()
    assert audit.count(AuditQuery(thread_id="s")) == 2
    writer.close()
    audit.close()
