"""One way to open ShopBot's SQLite files: WAL, a busy timeout, and a clear error when damaged."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.safety.text import without_surrogates


class StorageError(Exception):
    """A local data file or folder cannot be used; the message says which one and what to do."""


# Writers from a second process (another `shopbot chat`) wait this long for the lock.
BUSY_TIMEOUT_MS = 10_000


def open_database(path: Path, *, what: str, check_same_thread: bool = True) -> sqlite3.Connection:
    """Open (creating if needed) the SQLite file at `path` for ShopBot's own use.

    `what` names the store in error messages ("shop data", "audit log"). Pass
    `check_same_thread=False` only when the caller serialises use with its own lock.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=check_same_thread,
        )
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(f"Cannot open the {what} at {path}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _enable_wal(conn)
        # WAL + NORMAL: a commit survives a process crash; only a power cut can lose the last one.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StorageError(unusable_text(what, path, exc)) from exc
    conn.row_factory = sqlite3.Row
    return conn


def unusable_text(what: str, path: Path, exc: sqlite3.DatabaseError) -> str:
    """Why the store at `path` cannot be used, as the person can act on it: a lock, a full
    disk or a read-only file is not damage (moving a healthy file aside would be wrong)."""
    if cannot_write(exc, path):
        return cannot_write_text(f"the {what} at {path}", exc, path)
    if is_damage(exc):
        return damaged_text(what, path, exc)
    return f"Cannot use the {what} at {path} ({exc}); ShopBot left the file as it is."


def damaged_text(what: str, path: Path, problem: object) -> str:
    return (
        f"The {what} at {path} is damaged ({problem}); ShopBot left the file as it is. "
        f"Move the file aside (for example: mv '{path}' '{path}.damaged') and start again."
    )


def is_busy(exc: sqlite3.Error) -> bool:
    """True for "database is locked/busy": a wait-and-retry matter, not damage."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def is_read_only(exc: sqlite3.Error) -> bool:
    """True for "attempt to write a readonly database": the file or its folder is read-only."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_READONLY


def is_full(exc: sqlite3.Error) -> bool:
    """True for "database or disk is full": the disk (or the file's quota) has no room."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_FULL


def is_io_error(exc: sqlite3.Error) -> bool:
    """True for SQLite's "disk I/O error" (any of its extended codes)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_IOERR


# Less room than this on a store's disk makes an I/O error a full disk: SQLite says "disk
# I/O error", not "disk is full", when it cannot grow its shared-memory or WAL file.
FULL_BELOW_BYTES = 1 << 20


def disk_full(path: Path) -> bool:
    """Whether the disk holding `path` (a file or folder, there or not yet) has no room."""
    for folder in (path, *path.parents):
        try:
            stat = os.statvfs(folder)
        except OSError:
            continue
        return stat.f_bavail * stat.f_frsize < FULL_BELOW_BYTES
    return False


def _out_of_room(exc: sqlite3.Error, path: Path | None) -> bool:
    return is_full(exc) or (path is not None and is_io_error(exc) and disk_full(path))


def cannot_write(exc: sqlite3.Error, path: Path | None = None) -> bool:
    """SQLite refusing a write for a reason outside the file (a lock, a read-only file or
    folder, a full disk, and with `path` an I/O error on a disk with no room left):
    `cannot_write_text` says what to do; the file is not damaged."""
    return is_busy(exc) or is_read_only(exc) or _out_of_room(exc, path)


def cannot_write_text(where: str, exc: sqlite3.Error, path: Path | None = None) -> str:
    # One message per cause, each saying what to do; "damaged" would send people astray.
    if is_busy(exc):
        return (
            f"Cannot use {where}: it is locked by another program ({exc}). "
            "Close other ShopBot windows or commands and try again."
        )
    if _out_of_room(exc, path):
        disk = f"the disk holding {path.parent}" if path is not None else "the disk"
        return (
            f"Cannot write to {where}: {disk} is full ({exc}). Nothing was changed. Free "
            "some space on it, or set SHOPBOT_HOME to a folder on another disk."
        )
    return (
        f"Cannot write to {where} ({exc}). Nothing was changed. Make the file and its folder "
        "writable, or set SHOPBOT_HOME to a folder you can write to."
    )


# What SQLite says of a damaged file; anything else (a lock, a read-only file or folder, a
# file it cannot open, an I/O error) is not damage, and moving the file aside would not help.
_DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
_DAMAGE_WORDS = ("malformed", "not a database", "could not decode")


def is_damage(exc: BaseException) -> bool:
    """SQLite refusing a query because the file is damaged."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _DAMAGE_CODES
    # (Python's own decoding of a stored text fails without an SQLite code.)
    return any(words in str(exc).lower() for words in _DAMAGE_WORDS)


def _database_file(conn: sqlite3.Connection) -> str:
    for _seq, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file) or "an in-memory database"
    return "the database"


def _enable_wal(conn: sqlite3.Connection) -> None:
    # Switching a fresh file to WAL needs an exclusive lock and SQLite does not call the
    # busy handler for it: two processes opening a new file at once got an instant
    # "database is locked" here. Retry for as long as the busy timeout would have waited.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


@contextmanager
def immediate_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection.

    IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
    instead of failing with SQLITE_BUSY when a read lock would have to be upgraded.
    A read-only file (SQLite opens one without complaint and refuses the first write) or a
    lock held past the busy timeout becomes a StorageError naming the file.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            # SQLite may already have rolled back (disk full, I/O error): don't mask that error.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        where = _database_file(conn)
        path = Path(where) if where.startswith(os.sep) else None
        if not cannot_write(exc, path):
            raise
        raise StorageError(cannot_write_text(where, exc, path)) from exc


def apply_schema(
    conn: sqlite3.Connection, statements: Iterable[str], *, path: Path, what: str
) -> None:
    """Run idempotent DDL in one write transaction; close `conn` and raise StorageError on failure.

    One transaction, so two processes opening a fresh file at once cannot interleave.
    """
    try:
        with immediate_transaction(conn):
            for statement in statements:
                conn.execute(statement)
    except StorageError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StorageError(f"Cannot prepare the {what} at {path}: {exc}") from exc


def fetch_packed(
    conn: sqlite3.Connection, columns: Sequence[str], select: str, params: Sequence[Any] = ()
) -> list[dict[str, Any]]:
    """The rows of `select` as dicts of `columns`, fetched as one JSON array: in SQLite's
    order, which callers must not rely on (they sort). For reads off the event loop's thread:
    Python's sqlite3 lets go of the GIL for every row it steps to, and a thread waits up to
    5 ms to get it back from a busy event loop. 200 conversations listed in 1 ms took 1.5 s
    that way while the loop was busy (a reply streaming); packed, one row is one wait.
    `columns` are ours (names, not input). A BLOB where text belongs (another program wrote
    it) comes as SQLite's literal, `x'00FF'`: JSON cannot hold bytes, and one odd value must
    not make a whole list unreadable."""
    pairs = ", ".join(f"'{name}', {_json_safe(name)}" for name in columns)
    sql = f"SELECT json_group_array(json_object({pairs})) FROM ({select})"  # noqa: S608
    (packed,) = conn.execute(sql, params).fetchone()
    rows: list[dict[str, Any]] = json.loads(packed)
    return rows


def _json_safe(column: str) -> str:
    blob_literal = f"'x''' || hex({column}) || ''''"
    return f"iif(typeof({column}) = 'blob', {blob_literal}, {column})"


def utc_timestamp(moment: datetime | None = None) -> str:
    """ISO-8601 UTC with milliseconds and `Z`, e.g. 2025-06-10T09:30:00.123Z (sorts as text)."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


# Lone surrogates are unencodable in UTF-8, so SQLite refuses them: stored as U+FFFD.
storable_text = without_surrogates


# The name a schema statement creates ("CREATE TABLE IF NOT EXISTS refunds (...").
_CREATED = re.compile(
    r"CREATE\s+(?:VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER)\s+IF\s+NOT\s+EXISTS\s+(\w+)"
)


def created_names(schema: Iterable[str]) -> list[str]:
    """The names of the tables, indexes and triggers `schema`'s statements create."""
    return [m.group(1) for m in map(_CREATED.search, schema) if m is not None]
