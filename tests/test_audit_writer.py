"""The background audit writer: order kept, nothing dropped, failures kept in the log file."""

from __future__ import annotations

import logging
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


def test_a_store_that_fails_keeps_the_events_in_the_log_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite")
    writer = AuditWriter(audit)
    audit.close()  # the database goes away under the writer
    with caplog.at_level(logging.ERROR, logger="shopbot.audit"):
        writer.append("escalated", thread_id="lost", detail={"reason": "over the limit"})
        writer.flush()
    assert "could not store 1 audit events" in caplog.text
    assert "over the limit" in caplog.text
    writer.close()
