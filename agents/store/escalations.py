"""Conversations escalated to a person and not handled yet, kept in the thread registry's file.

An escalation tells the customer a colleague takes over; this queue keeps that promise in
sight (the app counts and marks them) until a person says it is handled, which the audit log
records with their name. A conversation escalated again while open keeps its first time.
"""

from __future__ import annotations

import builtins
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from agents.reviewer import Reviewer
from agents.safety.redaction import redact
from agents.store.database import Connection, Store
from agents.store.sqlite import storable_text, utc_timestamp

if TYPE_CHECKING:
    from agents.audit.writer import AuditSink
    from agents.store.threads import ThreadRegistry

ESCALATIONS_SCHEMA = """CREATE TABLE IF NOT EXISTS escalations (
        thread_id TEXT PRIMARY KEY,
        since TEXT NOT NULL,
        agent TEXT,
        reason TEXT NOT NULL
    )"""


@dataclass(frozen=True)
class Escalation:
    thread_id: str
    # When it was first escalated (ISO-8601 UTC); `reason` and `agent` are the latest.
    since: str
    agent: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class EscalationQueue(Store):
    """The thread registry's escalations (a part of `ThreadRegistry`, whose connection and
    lock they use)."""

    def escalate(self, thread_id: str, *, agent: str | None, reason: str) -> None:
        """`thread_id` needs a person, for `reason` (it stays so until `close_escalation`)."""
        with self._lock, self._transaction() as conn:
            self._escalate(conn, thread_id, agent, reason, utc_timestamp())

    def _escalate(
        self, conn: Connection, thread_id: str, agent: str | None, reason: str, now: str
    ) -> None:
        conn.execute(
            "INSERT INTO escalations VALUES (?, ?, ?, ?) ON CONFLICT(thread_id)"
            " DO UPDATE SET agent = excluded.agent, reason = excluded.reason",
            (thread_id, now, agent, redact(storable_text(reason))),
        )

    def escalations(self) -> builtins.list[Escalation]:
        """Every open escalation, the oldest first."""
        with self._lock:
            rows = self._conn.execute("SELECT * FROM escalations ORDER BY since, thread_id")
            return [_escalation(row) for row in rows]

    def close_escalation(self, thread_id: str) -> Escalation | None:
        """The escalation taken off the queue, or None if it was not open (closed meanwhile
        by another window or command). `mark_handled` also says who, where it must."""
        with self._lock, self._transaction() as conn:
            row = conn.execute(
                "DELETE FROM escalations WHERE thread_id = ? RETURNING *", (thread_id,)
            ).fetchone()
        return _escalation(row) if row else None


def mark_handled(
    registry: ThreadRegistry, audit: AuditSink, thread_id: str, reviewer: Reviewer
) -> Escalation | None:
    """`reviewer` handled `thread_id`'s escalation: closed in `registry`,
    said in the audit log with their name and in the conversation. None when it was not open
    (nothing is recorded then). The app and the command line both close it here."""
    closed = registry.close_escalation(thread_id)
    if closed is not None:
        detail = {"reason": closed.reason, "since": closed.since, **reviewer.audit_detail()}
        audit.append("escalation_closed", thread_id=thread_id, agent=closed.agent, detail=detail)
        registry.append_line(thread_id, "note", escalation_handled_note(reviewer))
    return closed


def escalation_handled_note(reviewer: Reviewer) -> str:
    """The transcript's line for a person closing an escalation."""
    return f"escalation handled by {reviewer.name} ({reviewer.via})"


def _escalation(row: Any) -> Escalation:
    return Escalation(row["thread_id"], row["since"], row["agent"], row["reason"])
