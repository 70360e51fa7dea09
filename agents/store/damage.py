"""Whether the database is damaged, when SQLite (or a stored state) fails after it opened
(and, in PostgreSQL, what failed: agents/store/postgres/errors.py).

Opening checks only the first page of the file; damage further in shows up in the middle of
a query as a bare "database disk image is malformed" that names no file. Then the file gets
SQLite's `quick_check`, read-only, so the message can say which file and what to do. (A
database found missing or emptied is refused before it opens: agents/store/home.py.)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from agents.settings import Settings
from agents.store.home import WHAT
from agents.store.sqlite import StorageError, damaged_text, is_damage

if TYPE_CHECKING:
    from agents.store.database import Location


def quick_check(path: Path) -> str | None:
    """What SQLite finds damaged in the file, or None when it is sound, absent, or cannot be
    checked (locked, unreadable to us: a permissions matter, not damage)."""
    try:
        if not path.exists():
            return None
        # Read-only: a diagnosis must never change (or "repair") the evidence.
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
            rows = conn.execute("PRAGMA quick_check(3)").fetchall()
        conn.close()
    except OSError:
        return None
    except sqlite3.DatabaseError as exc:
        return str(exc) if is_damage(exc) else None
    found = [str(row[0]) for row in rows if row and row[0] != "ok"]
    # (Its report starts with a header line naming the schema: not news to anyone.)
    lines = (line.replace("*** in database main ***", "") for line in found)
    return "; ".join(" ".join(line.split()) for line in lines) or None


def damaged_database(settings: Settings) -> StorageError | None:
    """The database named as damaged, with what SQLite found; None when it is sound (or
    is PostgreSQL's, which says what fails itself)."""
    if settings.database_url is not None:
        return None
    path = settings.database_path
    problem = quick_check(path)
    return StorageError(damaged_text(WHAT, path, problem)) if problem is not None else None


def diagnose_storage(settings: Settings, exc: BaseException) -> StorageError | None:
    """A `StorageError` naming the damaged stores behind `exc`, if it is damage (or, in
    PostgreSQL, a failure of the database itself: lost, full, a privilege missing)."""
    if type(exc).__module__.startswith(("psycopg", "psycopg_pool")):
        return _postgres_failure(settings, exc)
    return damaged_database(settings) if is_damage(exc) else None


def _postgres_failure(settings: Settings, exc: BaseException) -> StorageError | None:
    from psycopg_pool import PoolTimeout

    from agents.store.postgres.errors import session_failure

    if isinstance(exc, PoolTimeout):
        return StorageError(
            f"The {WHAT} {settings.database_shown} did not give a connection in time ({exc}). "
            "Try again once PostgreSQL answers."
        )
    user = settings.database_shown.removeprefix("postgresql://").partition("@")[0]
    return session_failure(settings.database_shown, user, exc)


def unreadable_thread(settings: Settings, thread_id: str, exc: BaseException) -> StorageError:
    """A thread whose stored state cannot be read back. The file may be sound and only this
    state damaged: then the rest of ShopBot goes on, and only this conversation cannot."""
    if settings.database_url is None:
        path = settings.database_path
        if (problem := quick_check(path)) is not None:
            return StorageError(damaged_text(WHAT, path, problem))
    return StorageError(
        f"The stored state of conversation {thread_id} in the {WHAT} at "
        f"{settings.database_shown} "
        f"cannot be read ({type(exc).__name__}: {exc}); ShopBot left it as it is, and its "
        "transcript and audit events are kept. Start a new conversation."
    )


def file_failure_text(what: str, path: Location, exc: BaseException) -> str:
    """`failure_text` for a front that reads one store only (the audit viewer)."""
    if isinstance(path, Path) and is_damage(exc) and (problem := quick_check(path)) is not None:
        return damaged_text(what, path, problem)
    return str(exc) or type(exc).__name__


def failure_text(settings: Settings, exc: BaseException) -> str:
    """What a front shows for a failed read: the damaged store by name when it is damage.
    Runs `quick_check` on the failure path only, so call it off the event loop."""
    damage = diagnose_storage(settings, exc)
    return str(damage) if damage is not None else str(exc) or type(exc).__name__
