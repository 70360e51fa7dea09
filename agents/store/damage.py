"""Which store is damaged, when SQLite (or a stored state) fails after the files opened.

Opening checks only the first page of each file; damage further in shows up in the middle
of a query as a bare "database disk image is malformed" that names no file. Then each file
gets SQLite's `quick_check`, read-only, so the message can say which file and what to do.
A store found emptied (0 bytes) beside registered conversations is refused the same way.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from agents.settings import Settings
from agents.store.sqlite import StorageError, damaged_text, is_damage
from agents.store.threads import ThreadRegistry

log = logging.getLogger("shopbot.storage")


def store_files(settings: Settings) -> tuple[tuple[str, Path], ...]:
    """(what the messages call it, where it is) for every ShopBot store."""
    return (
        ("conversation store", settings.checkpoints_path),
        ("thread registry", settings.threads_path),
        ("audit log", settings.audit_path),
        ("shop data", settings.shop_path),
    )


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


def damaged_stores(settings: Settings) -> StorageError | None:
    """Every damaged store, each by name, in one message; None when all are sound."""
    found = [
        (what, path, problem)
        for what, path in store_files(settings)
        if (problem := quick_check(path)) is not None
    ]
    if len(found) <= 1:
        return StorageError(damaged_text(*found[0])) if found else None
    listed = "; ".join(f"the {what} at {path} ({problem})" for what, path, problem in found)
    first = found[0][1]
    return StorageError(
        f"ShopBot data files are damaged: {listed}; ShopBot left them as they are. Move them aside "
        f"(for example: mv '{first}' '{first}.damaged') and start again."
    )


# The stores an emptied file of would pass unnoticed (the registry lists what it lost).
_CHECKED_FOR_EMPTYING = ("conversation store", "audit log")


def emptied_stores(
    settings: Settings, which: tuple[str, ...] = _CHECKED_FOR_EMPTYING
) -> list[tuple[str, Path]]:
    """Of the conversation store and the audit log (or `which` of them), those whose file is
    there but empty (0 bytes, no write-ahead log either). ShopBot writes a store's tables as
    it creates the file, so beside registered conversations an empty one was emptied: opening
    it would make a new, empty store in silence, and a pending decision or the whole audit
    trail would be gone unsaid."""
    found = []
    for what, path in store_files(settings):
        if what not in which:
            continue
        wal = path.with_name(f"{path.name}-wal")
        try:
            if path.stat().st_size == 0 and (not wal.exists() or wal.stat().st_size == 0):
                found.append((what, path))
        except FileNotFoundError:  # (none yet: a first start, or moved aside on purpose)
            continue
    return found


def refuse_emptied(
    settings: Settings,
    registry: ThreadRegistry | None = None,
    which: tuple[str, ...] = _CHECKED_FOR_EMPTYING,
) -> None:
    """A `StorageError` when one of `which` stores was emptied beside registered
    conversations (`emptied_stores`); call it before opening the store, which would fill it
    anew. Without `registry` the registry is read only if a file is empty, and a registry that
    cannot be read refuses nothing: reading the audit log must not depend on it."""
    if not (emptied := emptied_stores(settings, which)):
        return
    if registry is not None:
        conversations = registry.count()
    elif not settings.threads_path.exists():
        return
    else:
        try:
            with ThreadRegistry(settings.threads_path) as opened:
                conversations = opened.count()
        except (sqlite3.Error, StorageError):
            log.exception("the thread registry could not be read to check %s", emptied)
            return
    if conversations:
        raise _emptied_error(emptied, conversations)


def _emptied_error(emptied: list[tuple[str, Path]], conversations: int) -> StorageError:
    path = emptied[0][1]
    named = " and ".join(f"the {what} at {path}" for what, path in emptied)
    listed = f"{conversations:,} conversation{'s' if conversations != 1 else ''}"
    return StorageError(
        f"{named[0].upper()}{named[1:]} {'are' if len(emptied) > 1 else 'is'} empty (0 bytes), "
        f"yet the thread registry lists {listed}: emptied or cut short; ShopBot left it as it "
        f"is. Restore it from a backup, or move it aside (for example: mv '{path}' "
        f"'{path}.emptied') to go on without what it held."
    )


def diagnose_storage(settings: Settings, exc: BaseException) -> StorageError | None:
    """A `StorageError` naming the damaged stores behind `exc`, if it is damage."""
    return damaged_stores(settings) if is_damage(exc) else None


def unreadable_thread(settings: Settings, thread_id: str, exc: BaseException) -> StorageError:
    """A thread whose stored state cannot be read back. The file may be sound and only this
    state damaged: then the rest of ShopBot goes on, and only this conversation cannot."""
    path = settings.checkpoints_path
    if (problem := quick_check(path)) is not None:
        return StorageError(damaged_text("conversation store", path, problem))
    return StorageError(
        f"The stored state of conversation {thread_id} in the conversation store at {path} "
        f"cannot be read ({type(exc).__name__}: {exc}); ShopBot left it as it is, and its "
        "transcript and audit events are kept. Start a new conversation."
    )


def file_failure_text(what: str, path: Path, exc: BaseException) -> str:
    """`failure_text` for a front that reads one store only (the audit viewer)."""
    if is_damage(exc) and (problem := quick_check(path)) is not None:
        return damaged_text(what, path, problem)
    return str(exc) or type(exc).__name__


def failure_text(settings: Settings, exc: BaseException) -> str:
    """What a front shows for a failed read: the damaged store by name when it is damage.
    Runs `quick_check` on the failure path only, so call it off the event loop."""
    damage = diagnose_storage(settings, exc)
    return str(damage) if damage is not None else str(exc) or type(exc).__name__
