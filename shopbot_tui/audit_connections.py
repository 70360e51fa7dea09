"""The audit viewer's connections to the audit log, kept while the app runs.

One connection per kind of work ("pages", "stats", "export"), so a slow count never queues a
page behind AuditLog's lock. They open on first use, in the viewer's worker threads, and the
app keeps them: opening the viewer again runs its first query at once instead of setting up
a connection while the screen is being built (tests/perf: the set-up's SQLite calls each
waited for the busy event loop to let go of the GIL).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from agents.facade import AuditLog, StorageError

T = TypeVar("T")


class AuditConnections:
    """`get(role)` from any thread; `close()` once (it waits for a query in progress)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._logs: dict[str, AuditLog] = {}
        self._lock = threading.Lock()
        self._closed = False

    def get(self, role: str) -> AuditLog:
        """The connection for `role`, opened now if it is not yet; StorageError once closed
        (or when the file cannot be opened)."""
        with self._lock:
            log = self._logs.get(role)
        if log is None:
            # Opened outside the lock: it may wait on another process's write lock, and
            # `close` takes this lock (on the event loop, when a viewer owns its connections).
            opened = AuditLog(self.path)
            with self._lock:
                log = None if self._closed else self._logs.setdefault(role, opened)
            if log is not opened:
                opened.close()
        if log is None:
            raise StorageError("The audit viewer is closed.")
        return log

    def run(self, role: str, work: Callable[[AuditLog], T]) -> T:
        """`work` on the connection for `role`. One the file failed under (damaged, a disk
        error) is closed and forgotten: the next query connects anew, to the file as it is
        then (moved aside and started afresh, say)."""
        log = self.get(role)
        try:
            return work(log)
        except sqlite3.DatabaseError:
            with self._lock:
                if self._logs.get(role) is log:
                    del self._logs[role]
            log.close()
            raise

    def close(self) -> None:
        """Close every connection; a query in progress on one finishes first (its lock)."""
        with self._lock:
            self._closed = True
            logs = list(self._logs.values())
            self._logs.clear()
        for log in logs:
            log.close()

    def close_in_background(self) -> None:
        """`close` on a thread of its own, for the event loop: never waits for a query."""
        threading.Thread(target=self.close, name="audit-close", daemon=True).start()
