"""The background audit writer: order kept, nothing dropped, failures kept in the log file."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from agents.audit_log import AuditLog, AuditQuery
from agents.audit_writer import AuditWriter


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


def test_a_store_that_never_comes_back_keeps_the_events_in_the_log_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    writer = AuditWriter(audit, retry_seconds=0.01)
    audit.close()  # the database goes away under the writer
    with caplog.at_level(logging.ERROR, logger="shopbot.audit"):
        writer.append("escalated", thread_id="lost", detail={"reason": "over the limit"})
        writer.flush()  # returns: the write failed, it is not waited for for ever
        assert "could not store 1 audit events; trying again" in caplog.text
        assert "over the limit" not in caplog.text  # still held, to be tried again
        writer.close()
    assert "could not store 1 audit events: " in caplog.text
    assert "over the limit" in caplog.text


class Broken:
    """`append_many` of an AuditLog that fails while `broken` (a lock held past the busy
    timeout, a full disk), and stores again once it is not."""

    def __init__(self, audit: AuditLog) -> None:
        self.broken, self.tries = True, 0
        self._append_many = audit.append_many

    def __call__(self, events: list[dict[str, object]]) -> None:
        self.tries += 1
        if self.broken:
            raise sqlite3.OperationalError("database or disk is full")
        self._append_many(events)


def test_a_failed_write_is_tried_again_with_what_came_since_and_nothing_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    store = Broken(audit)
    monkeypatch.setattr(audit, "append_many", store)
    writer = AuditWriter(audit, retry_seconds=0.01)
    with caplog.at_level(logging.WARNING, logger="shopbot.audit"):
        writer.append("turn_started", thread_id="full", detail={"n": 0})
        writer.flush()  # returns once the write failed
        for n in range(1, 5):  # more events come while the store cannot take them
            writer.append("turn_started", thread_id="full", detail={"n": n})
            writer.flush()
        assert store.tries >= 5 and audit.count(AuditQuery(thread_id="full")) == 0
        store.broken = False  # the lock is let go, or space is freed
        writer.close()
    events = list(reversed(audit.page(AuditQuery(thread_id="full"), limit=10)))
    assert [e.detail["n"] for e in events] == [0, 1, 2, 3, 4]  # all of them, in order
    assert caplog.text.count("trying again") == 1  # said once, not at every try
    assert "held back by a failed write" in caplog.text
    audit.close()
