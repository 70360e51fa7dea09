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

import asyncio
import contextlib
import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass
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


class TurnSink(AuditSink, Protocol):
    """Where a graph records a turn: its audit events, and its transcript lines, escalation
    and end in the conversation registry, all in one order (an `AuditWriter`)."""

    def line(self, thread_id: str, role: str, text: str, agent: str | None = None) -> None: ...

    def escalate(self, thread_id: str, *, agent: str | None, reason: str) -> None: ...

    def finish(self, thread_id: str, *, status: str, agent: str) -> None: ...

    def open_turn(self, thread_id: str, *, customer: str | None, message: str) -> None: ...


class ConversationRegistry(Protocol):
    """What the writer records of a conversation beside its audit events (a ThreadRegistry)."""

    def append_line(
        self, thread_id: str, role: Any, text: str, agent: str | None = None
    ) -> object: ...

    def escalate(self, thread_id: str, *, agent: str | None, reason: str) -> object: ...

    def update(
        self, thread_id: str, *, active_agent: str | None = None, status: Any = None
    ) -> object: ...

    def open_turn(self, thread_id: str, *, customer: str | None, message: str) -> object: ...


@dataclass(frozen=True)
class _RegistryWrite:
    """A conversation's transcript line, escalation or end of turn, in order with the events."""

    op: str
    args: tuple[Any, ...]


class AuditWriter:
    """Audit events and, with `threads`, what the conversation's transcript and registry
    keep of a turn (its lines, an escalation, how it ended), stored in the order they came,
    off the event loop: a graph node never waits on SQLite (a LangGraph server refuses a
    blocking call on its loop)."""

    def __init__(
        self,
        audit: AuditLog,
        *,
        threads: ConversationRegistry | None = None,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self.audit = audit
        self._threads = threads
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

    def line(self, thread_id: str, role: str, text: str, agent: str | None = None) -> None:
        """A transcript line of `thread_id` (a reply, a note), stored after what came before."""
        self._registry("append_line", thread_id, role, text, agent)

    def escalate(self, thread_id: str, *, agent: str | None, reason: str) -> None:
        """The conversation now waits for a person (the escalation queue)."""
        self._registry("escalate", thread_id, agent, reason)

    def finish(self, thread_id: str, *, status: str, agent: str) -> None:
        """How the conversation's turn ended: its status and the agent it is with."""
        self._registry("update", thread_id, agent, status)

    def open_turn(self, thread_id: str, *, customer: str | None, message: str) -> None:
        """A customer's message starts a turn (a runtime that did not record it itself)."""
        self._registry("open_turn", thread_id, customer, message)

    def _registry(self, op: str, *args: Any) -> None:
        if self._threads is None:
            return
        if self._closed:
            raise RuntimeError("the audit writer is closed")
        self._queue.put(_RegistryWrite(op, args))

    def flush(self) -> None:
        """Wait until every event queued so far is stored, or its write failed (it is then
        tried again: a failing store must not hang the caller)."""
        self._queue.join()

    async def aflush(self) -> None:
        """`flush` for a coroutine: the writer says when, and neither the event loop nor a
        worker thread waits meanwhile."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queue.put(_FlushMark(loop, done))
        await done

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
                unstored = self._store(
                    unstored
                    + [i for i in batch if i is not _STOP and not isinstance(i, _FlushMark)]
                )
            finally:
                for item in batch:
                    if isinstance(item, _FlushMark):
                        item.settle()
                    self._queue.task_done()
            if any(item is _STOP for item in batch):
                # Closing: that was the last try (the app is quitting, it must not hang).
                _keep_in_log_file(unstored)
                return

    def _store(self, items: list[Any]) -> list[Any]:
        """Write `items` in order, audit events BATCH to a transaction (a chunk committed is
        done: a retry never writes it twice); return what a passing failure left, to try
        again."""
        start = 0
        while start < len(items):
            if isinstance(items[start], _RegistryWrite):
                chunk: list[Any] = [items[start]]
            else:
                chunk = []
                for item in items[start : start + BATCH]:
                    if isinstance(item, _RegistryWrite):
                        break
                    chunk.append(item)
            try:
                self._write(chunk)
            except Exception as exc:
                if not (
                    isinstance(exc, sqlite3.OperationalError) and cannot_write(exc, self.audit.path)
                ):
                    # Trying again would fail the same way, holding every later event back.
                    log.exception("could not store %d audit events", len(chunk))
                    _keep_in_log_file(chunk)
                    start += len(chunk)
                    continue
                left = items[start:]
                if not self._failing:  # once per failing spell, not at every try
                    self._failing = True
                    log.warning(
                        "could not store %d audit events (%s); trying again", len(left), exc
                    )
                _keep_in_log_file(left[:-MAX_UNSTORED])
                return left[-MAX_UNSTORED:]
            start += len(chunk)
        if self._failing:
            self._failing = False
            log.warning("stored the audit events a failed write had held back")
        return []

    def _write(self, chunk: list[Any]) -> None:
        if chunk and isinstance(chunk[0], _RegistryWrite):
            write = chunk[0]
            assert self._threads is not None
            if write.op == "append_line":
                thread_id, role, text, agent = write.args
                self._threads.append_line(thread_id, role, text, agent=agent)
            elif write.op == "open_turn":
                thread_id, customer, message = write.args
                self._threads.open_turn(thread_id, customer=customer, message=message)
            elif write.op == "escalate":
                thread_id, agent, reason = write.args
                self._threads.escalate(thread_id, agent=agent, reason=reason)
            else:
                thread_id, agent, status = write.args
                self._threads.update(thread_id, active_agent=agent, status=status)
            return
        self.audit.append_many(chunk)

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


@dataclass(frozen=True)
class _FlushMark:
    """Queued by `aflush`: everything before it has been tried once it is reached."""

    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]

    def settle(self) -> None:
        with contextlib.suppress(RuntimeError):  # (its loop closed meanwhile: nobody waits)
            self.loop.call_soon_threadsafe(_settle, self.done)


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():  # (a cancelled waiter's future is done already)
        done.set_result(None)


def _keep_in_log_file(items: list[Any]) -> None:
    """The last place left for events the audit log cannot take: one (redacted) log line
    each, whole."""
    for item in items:
        if isinstance(item, _RegistryWrite):
            log.error(
                "conversation record not stored: %s %s", item.op, json.dumps(item.args, default=str)
            )
        else:
            log.error("audit event not stored: %s", json.dumps(item, default=str))
