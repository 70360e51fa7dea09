"""Values chosen on the event loop and written from worker threads (or awaited writes),
newest first to last.

A worker started for each choice may run in any order; writing what each was started with
could land an older choice after a newer one. Here a choice is noted on the loop (in the
order it was made) and every write takes the newest noted values, so whichever write runs
last writes the newest ones, and a write that finds nothing new writes nothing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class NewestWins(Generic[K, V]):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._wanted: dict[K, V] = {}
        self._awaited_writes: asyncio.Lock | None = None  # made on its event loop

    def want(self, key: K, value: V) -> None:
        """Note `value` as the newest for `key` (on the event loop, in the order chosen)."""
        with self._lock:
            self._wanted[key] = value

    def flush(self, write: Callable[[K, V], None]) -> None:
        """Write every value noted and not yet written (from a worker thread). When `write`
        raises, what it did not write is noted again (unless a newer value was meanwhile)
        and the error goes on to the caller."""
        with self._write_lock:
            with self._lock:
                wanted, self._wanted = self._wanted, {}
            items = list(wanted.items())
            for done, (key, value) in enumerate(items):
                try:
                    write(key, value)
                except BaseException:
                    with self._lock:
                        for later_key, later_value in items[done:]:
                            self._wanted.setdefault(later_key, later_value)
                    raise

    async def aflush(self, write: Callable[[K, V], Awaitable[None]]) -> None:
        """`flush` for a `write` that is awaited (on the event loop): one at a time, in the
        order they were asked for, so the last to run writes the newest values."""
        if self._awaited_writes is None:
            self._awaited_writes = asyncio.Lock()
        async with self._awaited_writes:
            with self._lock:
                wanted, self._wanted = self._wanted, {}
            items = list(wanted.items())
            for done, (key, value) in enumerate(items):
                try:
                    await write(key, value)
                except BaseException:
                    with self._lock:
                        for later_key, later_value in items[done:]:
                            self._wanted.setdefault(later_key, later_value)
                    raise
