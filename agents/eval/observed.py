"""What one scripted conversation left behind: its turns as the script saw them, and the
throwaway home's state at the end (the refund ledger, the audit log, the escalation queue,
the transcript). Plain data: the checks read it, and a test can build one by hand."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from agents.audit.log import AuditEvent
from agents.store.shop import Order, RefundRecord


@dataclass(frozen=True)
class TurnRecord:
    """One step of the script as it went: what was said or decided, and what came of it."""

    step: int
    kind: Literal["say", "decide"]
    text: str
    # The turn's status, or "refused" when the engine would not take the step at all.
    status: str
    reply: str = ""
    agent: str = ""
    # What waits after this step: "none", "refund_approval" or "complaint_review".
    pending: str = "none"
    # The order the waiting refund approval names, if one does.
    pending_order: str | None = None
    seconds: float = 0.0
    error: str | None = None
    # What failed, when the turn did: "provider", "storage" or "internal".
    failed: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            self.kind: self.text,
            "status": self.status,
            "reply": self.reply,
            "agent": self.agent,
            "pending": self.pending,
            "seconds": round(self.seconds, 4),
        }
        if self.pending_order:
            out["pending_order"] = self.pending_order
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Observed:
    """A conversation's end, as its home holds it."""

    customer: str | None
    turns: tuple[TurnRecord, ...] = ()
    # Why the script stopped before its end (a step refused, nothing to decide), if it did.
    stopped: str | None = None
    # The transcript: what the customer wrote, and every reply they were shown.
    customer_said: tuple[str, ...] = ()
    replies: tuple[str, ...] = ()
    # The whole home's refund ledger and audit log (oldest event first).
    refunds: tuple[RefundRecord, ...] = ()
    events: tuple[AuditEvent, ...] = ()
    escalated: bool = False
    pending: str = "none"
    agent: str = ""
    # The orders the scripted reviewer said "approve" to (the request's own order).
    approved: tuple[str, ...] = ()
    # The shop's orders, to tell the customer's own from others'.
    orders: tuple[Order, ...] = ()

    @property
    def last_reply(self) -> str:
        return self.turns[-1].reply if self.turns else ""


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_EMPHASIS = re.compile(r"\*\*|__|`")


def plain(text: str) -> str:
    """A reply as words to search: Markdown's escapes and emphasis dropped, spacing and case
    folded ("**In Transit**" holds "in transit")."""
    return " ".join(_EMPHASIS.sub("", _ESCAPED.sub(r"\1", text)).split()).casefold()


def holds(reply: str, fact: str) -> bool:
    return plain(fact) in plain(reply)
