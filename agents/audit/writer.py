"""Audit events written from a background thread, so a turn never waits on SQLite.

Each append costs about half a millisecond (redaction, JSON, the trigram index, a commit);
a turn writes a dozen. Here the caller only queues the event, stamped with the time it
happened; one writer thread stores queued events in order, in batches. `flush()` waits
until everything queued has been written (or has failed to be), and `close()` flushes.

The writer is not woken for every event: a wake-up is a thread hand-off (the GIL, a core)
in the middle of the turn that queued it, and a batch a transaction (in PostgreSQL a
flushed commit). It stores what is queued when asked (`flush`, `aflush`, a turn's
`turn_finished`, a full batch, closing) and otherwise at most `delay` seconds after an
event came, so another window's audit viewer still sees a long turn as it goes. With a conversation
registry, a batch's transcript lines, escalations and turn ends are written in the same
transaction as its events (`ThreadRegistry.write_together`).

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
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from agents.audit.log import AuditLog, check_kind
from agents.store.sqlite import StorageError, cannot_write, utc_timestamp
from agents.store.threads import RegistryWrite

log = logging.getLogger("shopbot.audit")

# Events stored per transaction at most: bounded latency when the queue is long.
BATCH = 500
# Unstored events kept for the next try at most (about 1 kB each): a store that never comes
# back must not exhaust memory. The oldest beyond it go to the log file.
MAX_UNSTORED = 50_000
RETRY_SECONDS = 2.0
# Longest an event waits in the queue when nobody asks for it (a viewer's liveness).
STORE_DELAY = 0.25


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
        delay: float = STORE_DELAY,
        store_at_turn_end: bool = True,
    ) -> None:
        """`store_at_turn_end=False`: a turn's `turn_finished` waits like any event, for an
        owner that flushes once the run has saved its checkpoint (the engine). Stored at once,
        it takes the database's write lock while the run's checkpoint is written to the same
        file, and SQLite's busy handler sleeps (1, 2, 5 ms...) instead of waiting for the lock
        to be let go: a few milliseconds on every turn."""
        self.audit = audit
        self._store_at_turn_end = store_at_turn_end
        self._threads = threads
        self._retry_seconds = retry_seconds
        self._delay = delay
        self._failing = False  # the last write failed for a passing reason (said once)
        # What is queued, and when to store it, under one condition the thread waits on.
        self._wake = threading.Condition()
        self._items: list[object] = []
        self._now = False  # store at once: asked (flush, turn end, a full batch)
        self._sleeping = False  # the thread waits for no time: the next item wakes it
        self._stopping = False
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
        # A turn's last word: what it queued is stored now, whoever waits for it (a server's
        # run too, which no engine flushes).
        now = self._store_at_turn_end and kind == "turn_finished"
        self._put({**event, "detail": dict(detail or {})}, now=now)

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
        self._put(RegistryWrite(op, args, utc_timestamp()))

    def _put(self, item: object, *, now: bool = False) -> None:
        with self._wake:
            self._items.append(item)
            now = now or len(self._items) >= BATCH
            if now or self._sleeping:
                self._now = self._now or now
                self._sleeping = False
                self._wake.notify()

    def flush(self) -> None:
        """Wait until every event queued so far is stored, or its write failed (it is then
        tried again: a failing store must not hang the caller)."""
        if self._closed:
            return
        done = threading.Event()
        self._put(_FlushMark(None, done), now=True)
        done.wait()

    async def aflush(self) -> None:
        """`flush` for a coroutine: the writer says when, and neither the event loop nor a
        worker thread waits meanwhile."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._put(_FlushMark(loop, done), now=True)
        await done

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with self._wake:
                self._stopping = True
                self._wake.notify()
            self._thread.join()

    def _run(self) -> None:
        unstored: list[Any] = []  # what a failed write left, tried first
        while True:
            items, stopping = self._next_batch(retrying=bool(unstored))
            marks = [item for item in items if isinstance(item, _FlushMark)]
            try:
                unstored = self._store(
                    unstored + [item for item in items if not isinstance(item, _FlushMark)]
                )
            finally:
                for mark in marks:
                    mark.settle()
            if stopping:
                # Closing: that was the last try (the app is quitting, it must not hang).
                _keep_in_log_file(unstored)
                return

    def _next_batch(self, *, retrying: bool) -> tuple[list[object], bool]:
        """What is queued, once it is time to store it: asked for, `delay` after the first
        of it came (`retry_seconds` after a failed write), or closing. Whether closing."""
        with self._wake:
            due = time.monotonic() + (self._retry_seconds if retrying else self._delay)
            while not (self._now or self._stopping):
                left = due - time.monotonic()
                if left > 0:
                    self._wake.wait(left)
                elif self._items or retrying:
                    break
                else:
                    # Nothing came meanwhile: sleep until something does (it wakes us).
                    self._sleeping = True
                    self._wake.wait()
                    due = time.monotonic() + self._delay
            items, self._items = self._items, []
            self._now = False
            return items, self._stopping

    def _store(self, items: list[Any]) -> list[Any]:
        """Write `items` in order, BATCH to a transaction (a chunk committed is done: a
        retry never writes it twice); return what a passing failure left, to try again."""
        together = getattr(self._threads, "write_together", None)
        start = 0
        while together is not None and start < len(items):
            chunk = items[start : start + BATCH]
            try:
                self._write_together(together, chunk)
            except Exception as exc:
                if _passing(exc, self.audit):
                    return self._held_back(items[start:], exc)
                # Something in it cannot be written as it stands: each on its own, as ever,
                # so that only that one is set aside.
                return self._store_one_by_one(items[start:])
            start += len(chunk)
        return self._store_one_by_one(items[start:])

    def _write_together(self, together: Any, chunk: list[Any]) -> None:
        writes = [item for item in chunk if isinstance(item, RegistryWrite)]
        rows = [
            self.audit.stored_row(item) for item in chunk if not isinstance(item, RegistryWrite)
        ]
        together(writes, partial(self.audit.insert_rows, rows=rows))

    def _store_one_by_one(self, items: list[Any]) -> list[Any]:
        """Write `items` in order, audit events BATCH to a transaction, each registry write
        in its own."""
        start = 0
        while start < len(items):
            if isinstance(items[start], RegistryWrite):
                chunk: list[Any] = [items[start]]
            else:
                chunk = []
                for item in items[start : start + BATCH]:
                    if isinstance(item, RegistryWrite):
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
                return self._held_back(items[start:], exc)
            start += len(chunk)
        if self._failing:
            self._failing = False
            log.warning("stored the audit events a failed write had held back")
        return []

    def _held_back(self, left: list[Any], exc: Exception) -> list[Any]:
        """`left` kept for the next try (at most MAX_UNSTORED of them)."""
        if not self._failing:  # once per failing spell, not at every try
            self._failing = True
            log.warning("could not store %d audit events (%s); trying again", len(left), exc)
        _keep_in_log_file(left[:-MAX_UNSTORED])
        return left[-MAX_UNSTORED:]

    def _write(self, chunk: list[Any]) -> None:
        if chunk and isinstance(chunk[0], RegistryWrite):
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


def _passing(exc: Exception, audit: AuditLog) -> bool:
    """A failure that trying again later cures (a lock held past the busy timeout, a full
    disk), as SQLite raises it or as a transaction names it (`StorageError`)."""
    cause = exc.__cause__ if isinstance(exc, StorageError) else exc
    return isinstance(cause, sqlite3.OperationalError) and cannot_write(cause, audit.path)


@dataclass(frozen=True)
class _FlushMark:
    """Queued by `flush` (a threading.Event, no loop) and `aflush` (a future of `loop`):
    everything before it has been tried once it is reached."""

    loop: asyncio.AbstractEventLoop | None
    done: asyncio.Future[None] | threading.Event

    def settle(self) -> None:
        if isinstance(self.done, threading.Event):
            self.done.set()
            return
        assert self.loop is not None
        with contextlib.suppress(RuntimeError):  # (its loop closed meanwhile: nobody waits)
            self.loop.call_soon_threadsafe(_settle, self.done)


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():  # (a cancelled waiter's future is done already)
        done.set_result(None)


def _keep_in_log_file(items: list[Any]) -> None:
    """The last place left for events the audit log cannot take: one (redacted) log line
    each, whole."""
    for item in items:
        if isinstance(item, RegistryWrite):
            log.error(
                "conversation record not stored: %s %s", item.op, json.dumps(item.args, default=str)
            )
        else:
            log.error("audit event not stored: %s", json.dumps(item, default=str))
