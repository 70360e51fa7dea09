"""Audit events written from a background thread, so a turn never waits on SQLite.

Each append costs about half a millisecond (redaction, JSON, the trigram index, a commit);
a turn writes a dozen. Here the caller only queues the event, stamped with the time it
happened; one writer thread stores queued events in order, in batches. `flush()` waits
until everything queued is stored, and `close()` flushes: nothing queued is dropped.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from agents.audit_log import AuditLog, check_kind
from agents.sqlite_store import utc_timestamp

log = logging.getLogger("shopbot.audit")

_STOP = object()
# Events stored per transaction at most: bounded latency when the queue is long.
BATCH = 500


class AuditSink(Protocol):
    """Where the engine records decisions: an `AuditLog` or an `AuditWriter`."""

    def append(
        self,
        kind: str,
        *,
        thread_id: str | None = None,
        agent: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> object: ...

    def flush(self) -> None:
        """Return once everything appended so far is stored."""


class AuditWriter:
    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit
        self._queue: queue.Queue[object] = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="shopbot-audit", daemon=True)
        self._thread.start()

    def append(
        self,
        kind: str,
        *,
        thread_id: str | None = None,
        agent: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        check_kind(kind)  # a wrong kind is the caller's bug: say so now, not in the thread
        if self._closed:
            raise RuntimeError("the audit writer is closed")
        event = {"ts": utc_timestamp(), "kind": kind, "thread_id": thread_id, "agent": agent}
        self._queue.put({**event, "detail": dict(detail or {})})

    def flush(self) -> None:
        """Wait until every event queued so far is stored."""
        self._queue.join()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            events = [item for item in batch if isinstance(item, dict)]
            try:
                self.audit.append_many(events)
            except Exception:
                # Kept in the (redacted) log file rather than lost; the turn goes on.
                lines = json.dumps(events, default=str)[:100_000]
                log.exception("could not store %d audit events: %s", len(events), lines)
            finally:
                for _ in batch:
                    self._queue.task_done()
            if any(item is _STOP for item in batch):
                return
