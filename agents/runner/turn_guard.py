"""One turn at a time per thread, in this process and across processes, and a way to stop one.

A thread's turn holds an asyncio lock here and a lease in the thread registry (renewed while
it runs, so a slow turn never looks dead to another window). While its graph runs, the task
running it is known, so a person can stop it (`stop`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from agents.errors import BusyElsewhere, InputError
from agents.store.leases import LEASE_SECONDS
from agents.store.threads import ThreadRegistry

log = logging.getLogger("shopbot.engine")

# A running turn renews its lease this often, well before it would expire.
LEASE_RENEW_EVERY = LEASE_SECONDS / 4


class TurnGuard:
    """The turns of `threads` run by `owner` (this engine)."""

    def __init__(self, threads: ThreadRegistry, owner: str) -> None:
        self._threads = threads
        self._owner = owner
        # Threads with a turn of this engine running (a second one is refused, never queued).
        self._turning: set[str] = set()
        # The task running each thread's graph here, and the threads a person stopped.
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._stopped: set[str] = set()
        # Threads inside `unstoppable` (paying a refund) right now.
        self._unstoppable: set[str] = set()

    def claim(self, thread_id: str) -> bool:
        """Take `thread_id`'s lease outside a turn (start-up checks); release it after."""
        return self._threads.claim_turn(thread_id, self._owner)

    def held_elsewhere(self, thread_id: str) -> bool:
        """Whether another live process (or engine) runs a turn of `thread_id` right now."""
        return self._threads.turn_held_elsewhere(thread_id, self._owner)

    def release(self, thread_id: str) -> None:
        self._threads.release_turn(thread_id, self._owner)

    @asynccontextmanager
    async def turn(self, thread_id: str) -> AsyncIterator[None]:
        """Hold `thread_id` for one turn, or refuse (`InputError`) while another runs."""
        if thread_id in self._turning:
            raise InputError(f"Thread {thread_id} is already answering a message; wait for it.")
        self._turning.add(thread_id)
        try:
            if not self.claim(thread_id):
                raise BusyElsewhere(self._busy_text(thread_id))
            keeping = asyncio.create_task(self._keep_lease(thread_id))
            try:
                yield
            finally:
                keeping.cancel()
                try:
                    self.release(thread_id)
                except Exception:
                    # Closing mid-turn may have closed the registry first: the lease then
                    # expires by itself, and whatever ended the turn must not be replaced.
                    log.exception("releasing the turn of %s failed", thread_id)
        finally:
            self._turning.discard(thread_id)

    def _busy_text(self, thread_id: str) -> str:
        """Who holds the turn, as far as the lease says: it said "another ShopBot window"
        also to a `shopbot chat` refused because another `shopbot chat` was answering, or
        an app that no window of which was open on the thread. The lease knows the process,
        not which front it is."""
        holder = self._threads.turn_holder(thread_id, self._owner)
        if holder is None:  # released since: the refusal stands, the next try may pass
            where = "in another ShopBot process (the app or a `shopbot` command)"
        elif holder == (socket.gethostname(), os.getpid()):
            where = "in another ShopBot engine of this process"
        else:
            host, pid = holder
            on_host = "" if host == socket.gethostname() else f" on {host}"
            where = (
                f"in another ShopBot process (pid {pid}{on_host}: the app, or a "
                "`shopbot chat` or `shopbot resume` command)"
            )
        return f"Thread {thread_id} is answering a message {where}; wait for it to finish."

    async def _keep_lease(self, thread_id: str) -> None:
        """Renew the turn's lease while it runs: a slow turn (retries, a long approval
        reply) must not look dead to another window, which would take the thread over."""
        while True:
            await asyncio.sleep(LEASE_RENEW_EVERY)
            try:
                if not self._threads.renew_turn(thread_id, self._owner):
                    # Taken over (this process looked dead: a suspended laptop, say).
                    log.warning("the turn lease of %s was taken by another window", thread_id)
            except Exception:
                log.exception("renewing the turn lease of %s failed", thread_id)

    @contextmanager
    def stoppable(self, thread_id: str) -> Iterator[None]:
        """While the graph runs, `stop` may cancel it; after, the turn is only being
        recorded: too late to stop."""
        self._stopped.discard(thread_id)  # a stop of an earlier run that ended by itself
        if (task := asyncio.current_task()) is not None:
            self._running[thread_id] = task
        try:
            yield
        finally:
            self._running.pop(thread_id, None)

    @contextmanager
    def unstoppable(self, thread_id: str) -> Iterator[None]:
        """No stop while this lasts (money moving: a refund and its record). A stop asked
        just before, still on its way to the task, ends the run here instead, before it."""
        if thread_id in self._stopped:
            raise asyncio.CancelledError
        task = self._running.pop(thread_id, None)
        self._unstoppable.add(thread_id)
        try:
            yield
        finally:
            self._unstoppable.discard(thread_id)
            if task is not None and not task.done():
                self._running[thread_id] = task

    def in_unstoppable(self, thread_id: str) -> bool:
        """Whether `thread_id`'s turn is inside `unstoppable` (a stop now is refused)."""
        return thread_id in self._unstoppable

    def too_late_to_stop(self, thread_id: str) -> None:
        """The run goes on only to save what is done (a whole reply, a question asked)."""
        self._running.pop(thread_id, None)

    def stop(self, thread_id: str) -> bool:
        """Cancel `thread_id`'s running graph (a person pressed Stop); False when none runs.
        It cancels the task that consumes the turn's events: a front must await nothing but
        the next event while a turn runs, or the cancellation lands in its own code."""
        task = self._running.get(thread_id)
        if task is None or task.done():
            return False
        self._stopped.add(thread_id)
        task.cancel()
        return True

    def was_stopped(self, thread_id: str) -> bool:
        """Whether the turn just cut off was stopped by a person (asked once per cut)."""
        stopped = thread_id in self._stopped
        self._stopped.discard(thread_id)
        return stopped
