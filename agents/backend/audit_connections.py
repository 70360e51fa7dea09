"""The audit log's reading connections of a local backend, kept while it runs.

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
from typing import TYPE_CHECKING, TypeVar

from agents.store.sqlite import StorageError, is_busy

if TYPE_CHECKING:
    from agents.audit.log import AuditLog
    from agents.store.database import Location

T = TypeVar("T")


class AuditConnections:
    """`run(role, work)` from any thread; `close()` once. A connection is closed only when no
    query is using it (workers of a viewer closed meanwhile may still be in one)."""

    def __init__(self, path: Location, *, before_open: Callable[[], object] | None = None) -> None:
        """`before_open`: a check run (in the worker) before each connection opens, raising
        what the viewer should say instead (an emptied log, which opening would fill anew)."""
        self.path = path
        self._before_open = before_open
        self._logs: dict[str, AuditLog] = {}
        self._users: dict[int, int] = {}  # id(log) -> queries running on it
        self._retired: set[int] = set()  # forgotten or closed, to close once unused
        self._lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._closed = False

    def run(self, role: str, work: Callable[[AuditLog], T]) -> T:
        """`work` on the connection for `role` (opened now if need be). One the file failed
        under (damaged, a disk error; not a lock held elsewhere) is forgotten and closed: the
        next query connects anew, to the file as it is then (moved aside and started afresh,
        say). StorageError once closed, or when the file cannot be opened."""
        log = self._take(role)
        try:
            return work(log)
        except sqlite3.DatabaseError as exc:
            if not is_busy(exc):
                with self._lock:
                    if self._logs.get(role) is log:
                        del self._logs[role]
                    self._retired.add(id(log))
            raise
        finally:
            self._give_back(log)

    def _take(self, role: str) -> AuditLog:
        with self._open_lock:  # one opening at a time: two workers wanting "stats" share one
            with self._lock:
                if self._closed:
                    raise StorageError("The audit log's connections are closed.")
                log = self._logs.get(role)
                if log is not None:
                    self._users[id(log)] = self._users.get(id(log), 0) + 1
                    return log
            # Opened outside `_lock`: it may wait on another process's write lock, and
            # `close` takes `_lock` (on the event loop when a viewer owns its connections).
            if self._before_open is not None:
                self._before_open()
            from agents.audit.log import AuditLog  # (its dataclasses: not for the first frame)

            opened = AuditLog(self.path)
            with self._lock:
                kept = self._keep(role, opened)
        if kept:
            return opened
        opened.close()
        raise StorageError("The audit log's connections are closed.")

    def _keep(self, role: str, log: AuditLog) -> bool:
        # (`_lock` held.) Closed while `log` was opening: it is not kept.
        if self._closed:
            return False
        self._logs[role] = log
        self._users[id(log)] = 1
        return True

    def _give_back(self, log: AuditLog) -> None:
        with self._lock:
            users = self._users[id(log)] - 1
            if users:
                self._users[id(log)] = users
                return
            del self._users[id(log)]
            unused = id(log) in self._retired
            self._retired.discard(id(log))
        if unused:
            log.close()

    def close(self) -> None:
        """Close every connection: now if unused, else when its last query ends."""
        with self._lock:
            self._closed = True
            logs = list(self._logs.values())
            self._logs.clear()
            idle = [log for log in logs if id(log) not in self._users]
            self._retired.update(id(log) for log in logs if id(log) in self._users)
        for log in idle:
            log.close()
