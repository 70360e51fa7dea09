"""Audit events written from a background thread, so a turn never waits on SQLite.

Each append costs about half a millisecond (redaction, JSON, the trigram index, a commit);
a turn writes a dozen. Here the caller only queues the event, stamped with the time it
happened; one writer thread stores queued events in order, in batches. `flush()` waits
until everything queued has been written (or has failed to be), and `close()` flushes.

A write that fails for a passing reason (another process holding the log's lock past the
busy timeout, a full disk) is tried again, with the events that came since, every
`retry_seconds` until it succeeds: nothing is dropped while the process lives. Events still
unstored at `close()` (after one more try), or that fail for any other reason (a damaged
file: trying again would hold every later event back for ever), are written to the
(redacted) log file instead, one line each, when that file can be written.
"""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from agents.audit.log import AuditLog, check_kind
from agents.store.sqlite import cannot_write, utc_timestamp

log = logging.getLogger("shopbot.audit")

_STOP = object()
# Events stored per transaction at most: bounded latency when the queue is long.
BATCH = 500
# Unstored events kept for the next try at most (about 1 kB each): a store that never comes
# back must not exhaust memory. The oldest beyond it go to the log file.
MAX_UNSTORED = 50_000
RETRY_SECONDS = 2.0


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
        """Return once everything appended so far is stored (or failed to be, for now)."""


class AuditWriter:
    def __init__(self, audit: AuditLog, *, retry_seconds: float = RETRY_SECONDS) -> None:
        self.audit = audit
        self._retry_seconds = retry_seconds
        self._failing = False  # the last write failed for a passing reason (said once)
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
        """Wait until every event queued so far is stored, or its write failed (it is then
        tried again: a failing store must not hang the caller)."""
        self._queue.join()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()

    def _run(self) -> None:
        unstored: list[dict[str, Any]] = []  # events a failed write left, tried first
        while True:
            batch = self._next_batch(wait=self._retry_seconds if unstored else None)
            try:
                unstored = self._store(unstored + [i for i in batch if isinstance(i, dict)])
            finally:
                for _ in batch:
                    self._queue.task_done()
            if any(item is _STOP for item in batch):
                # Closing: that was the last try (the app is quitting, it must not hang).
                _keep_in_log_file(unstored)
                return

    def _store(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Write `events` in order, BATCH to a transaction (a chunk committed is done: a retry
        never writes it twice); return what a passing failure left, to try again."""
        for start in range(0, len(events), BATCH):
            chunk = events[start : start + BATCH]
            try:
                self.audit.append_many(chunk)
            except Exception as exc:
                if not (
                    isinstance(exc, sqlite3.OperationalError) and cannot_write(exc, self.audit.path)
                ):
                    # Trying again would fail the same way, holding every later event back.
                    log.exception("could not store %d audit events", len(chunk))
                    _keep_in_log_file(chunk)
                    continue
                left = events[start:]
                if not self._failing:  # once per failing spell, not at every try
                    self._failing = True
                    log.warning(
                        "could not store %d audit events (%s); trying again", len(left), exc
                    )
                _keep_in_log_file(left[:-MAX_UNSTORED])
                return left[-MAX_UNSTORED:]
        if self._failing:
            self._failing = False
            log.warning("stored the audit events a failed write had held back")
        return []

    def _next_batch(self, *, wait: float | None) -> list[object]:
        """Queued items (at most BATCH), waiting for the first up to `wait` seconds (None:
        for ever); empty when that wait ran out, for a retry."""
        try:
            batch = [self._queue.get(timeout=wait)]
        except queue.Empty:
            return []
        while len(batch) < BATCH:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return batch


def _keep_in_log_file(events: list[dict[str, Any]]) -> None:
    """The last place left for events the audit log cannot take: one (redacted) log line
    each, whole."""
    for event in events:
        log.error("audit event not stored: %s", json.dumps(event, default=str))
