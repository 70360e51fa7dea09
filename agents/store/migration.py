"""A home of four files (older versions kept the checkpoints, the conversations, the shop and
the audit log apart) moved into the one database, once, in place, with nothing lost.

The move is built beside the home (`shopbot.sqlite.moving`) while it holds each old file
exclusively (an older ShopBot still open on one of them is refused by name: what it wrote
after the move would be lost), every row copied and counted in one transaction, and only
then renamed into place, so a move that fails or is killed half way leaves the four files as
they were and no database that could pass for a new, empty home. The old files are kept,
renamed `*.migrated`. A home whose four files are not all there while one of them holds data
is refused by name: moving it over would make a lost store permanent (a deleted conversation
store drops every decision waiting, a deleted shop re-seeds the demo shop and forgets the
refund ledger).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from agents.store import sqlite as sqlite_store
from agents.store.sqlite import (
    StorageError,
    cannot_write,
    cannot_write_text,
    is_busy,
    open_database,
    unusable_text,
    utc_timestamp,
)

log = logging.getLogger("shopbot.storage")

MOVING_SUFFIX = ".moving"
MIGRATED_SUFFIX = ".migrated"
# The database's own record of its move (the shop's `meta` table): a move renamed into place
# before the old files were, or before the ledger and the audit log were put in step, is
# finished at the next opening.
MOVED_KEY = "moved_from_four_files"
RECONCILED_KEY = "moved_and_reconciled"


@dataclass(frozen=True)
class LegacyStore:
    what: str
    file: str
    # The rows that say the home was used (any of them: it holds data).
    data_query: str


LEGACY_STORES = (
    LegacyStore("thread registry", "threads.sqlite", "SELECT count(*) FROM {db}.threads"),
    LegacyStore(
        "conversation store", "checkpoints.sqlite", "SELECT count(*) FROM {db}.checkpoints"
    ),
    LegacyStore("shop data", "shop.sqlite", "SELECT count(*) FROM {db}.refunds"),
    LegacyStore("audit log", "audit.sqlite", "SELECT count(*) FROM {db}.events"),
)
# Tables never copied: those the full-text index makes for itself (the index is rebuilt as
# the events are copied), SQLite's own, and leases, which name processes of before the move.
_INDEX_TABLES = "events_fts_"
_NOT_COPIED = frozenset({"turn_leases", "sqlite_sequence"})


def _present(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False


def legacy_files(home: Path) -> dict[LegacyStore, Path]:
    """The old files of `home` that are there (and not empty)."""
    files = {store: home / store.file for store in LEGACY_STORES}
    return {store: path for store, path in files.items() if _present(path)}


def migrate_legacy_home(home: Path, target: Path) -> bool:
    """Move the four files of an older home into `target`; False when there were none."""
    present = legacy_files(home)
    if not present:
        return False
    held = _holding_data(present)
    missing = [store for store in LEGACY_STORES if store not in present]
    if held and missing:
        named = " and ".join(f"the {s.what} ({home / s.file})" for s in missing)
        raise StorageError(
            f"This ShopBot home is missing {named}, while "
            f"{', '.join(sorted(s.file for s in held))} hold{'s' if len(held) == 1 else ''} "
            "its data: going on would lose what the missing file held (decisions waiting, "
            "conversations, the refund ledger or the audit trail). Nothing was created or "
            f"changed. Put it back (from a backup); to start afresh on purpose, move the folder "
            f"aside (mv '{home}' '{home}.old')."
        )
    moving = target.with_name(target.name + MOVING_SUFFIX)
    _remove(moving)  # (a move killed half way: made again from the old files)
    try:
        conn = _copy(present, moving)
        try:
            moving.rename(target)
            for path in present.values():
                _retire(path)
        finally:
            conn.close()
    except BaseException:
        _remove(moving)
        raise
    log.warning("moved the four files of %s into %s", home, target)
    return True


def finish_move(home: Path, conn: sqlite3.Connection) -> bool:
    """A move renamed into place and killed before it renamed the old files: they go now.
    True when the database says it was moved from four files and the ledger and audit log
    still await being put in step (see home.py)."""
    try:
        rows = dict(
            conn.execute(
                "SELECT key, value FROM meta WHERE key IN (?, ?)", (MOVED_KEY, RECONCILED_KEY)
            ).fetchall()
        )
    except sqlite3.OperationalError:
        return False
    if MOVED_KEY not in rows:
        return False
    for path in legacy_files(home).values():
        _retire(path)
    return RECONCILED_KEY not in rows


def _holding_data(present: dict[LegacyStore, Path]) -> list[LegacyStore]:
    held = []
    for store, path in present.items():
        conn = open_database(path, what=store.what)
        try:
            (rows,) = conn.execute(store.data_query.format(db="main")).fetchone()
        except sqlite3.OperationalError:
            rows = 0  # (its table not made yet: it never held anything)
        except sqlite3.DatabaseError as exc:
            raise StorageError(unusable_text(store.what, path, exc)) from exc
        finally:
            conn.close()
        if rows:
            held.append(store)
    return held


def _copy(present: dict[LegacyStore, Path], moving: Path) -> sqlite3.Connection:
    """Everything copied into `moving` and committed; the connection, which still holds the
    old files exclusively, is the caller's to close once they are renamed."""
    try:
        conn = sqlite3.connect(
            moving, timeout=sqlite_store.BUSY_TIMEOUT_MS / 1000, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise StorageError(f"Cannot create the new ShopBot database {moving}: {exc}") from exc
    try:
        # One self-contained file to rename into place (it turns to WAL when next opened).
        conn.execute("PRAGMA journal_mode = DELETE")
        for number, path in enumerate(present.values()):
            conn.execute(f"ATTACH DATABASE ? AS legacy{number}", (str(path),))
            # Held to the end: no other program may even read it while it moves (an older
            # ShopBot still open on it is refused, not left writing to a renamed file).
            conn.execute(f"PRAGMA legacy{number}.locking_mode = EXCLUSIVE")
        try:
            conn.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as exc:
            conn.close()  # (with the locks it got on the files before the one held elsewhere)
            raise _in_use(present, exc) from exc
        try:
            for number, (store, path) in enumerate(present.items()):
                _copy_one(conn, f"legacy{number}", store, path)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS main.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "INSERT OR REPLACE INTO main.meta VALUES (?, ?)", (MOVED_KEY, utc_timestamp())
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        if cannot_write(exc, moving):
            where = f"the new ShopBot database {moving}"
            raise StorageError(cannot_write_text(where, exc, moving)) from exc
        raise StorageError(unusable_text("ShopBot database", moving, exc)) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _in_use(present: dict[LegacyStore, Path], exc: sqlite3.OperationalError) -> StorageError:
    """Which old file another program holds (the lock is said of the file it is on)."""
    if not is_busy(exc):
        return StorageError(f"Cannot move this ShopBot home into one database ({exc}).")
    for store, path in present.items():
        probe = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            probe.execute("PRAGMA locking_mode = EXCLUSIVE")
            probe.execute("BEGIN EXCLUSIVE")
            probe.execute("ROLLBACK")
        except sqlite3.OperationalError as held:
            if is_busy(held):
                return StorageError(
                    f"Cannot move the {store.what} at {path} into the ShopBot database: it is "
                    "locked by another program (an older ShopBot window or command that has "
                    "it open?). Close it and try again; nothing was changed."
                )
        finally:
            probe.close()
    return StorageError(
        "Cannot move this ShopBot home into one database: one of its files is in use by "
        "another program. Close it and try again; nothing was changed."
    )


def _copy_one(conn: sqlite3.Connection, db: str, store: LegacyStore, path: Path) -> None:
    """Its schema as it was made (tables, their indexes and triggers), then its rows."""
    objects = conn.execute(
        f"SELECT type, name, sql FROM {db}.sqlite_master WHERE sql IS NOT NULL "  # noqa: S608
        "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, rowid"
    ).fetchall()
    tables = []
    for kind, name, sql in objects:
        if kind == "table" and (name.startswith(_INDEX_TABLES) or name == "sqlite_sequence"):
            continue
        exists = conn.execute(
            "SELECT 1 FROM main.sqlite_master WHERE type = ? AND name = ?", (kind, name)
        ).fetchone()
        if not exists:
            conn.execute(sql)
        # (Not the full-text index's own virtual table either: its trigger fills it.)
        if kind == "table" and name not in _NOT_COPIED and not sql.startswith("CREATE VIRTUAL"):
            tables.append(name)
    if store.file == "audit.sqlite":
        # The audit index's version (see agents/audit/search.py) is the file's user_version.
        (version,) = conn.execute(f"PRAGMA {db}.user_version").fetchone()
        conn.execute(f"PRAGMA main.user_version = {int(version)}")
    for table in tables:
        columns = ", ".join(
            f'"{row[1]}"' for row in conn.execute(f'PRAGMA {db}.table_info("{table}")')
        )
        copied = conn.execute(
            f'INSERT OR REPLACE INTO main."{table}" ({columns}) '  # noqa: S608 - names read back
            f'SELECT {columns} FROM {db}."{table}"'
        ).rowcount
        (expected,) = conn.execute(f'SELECT count(*) FROM {db}."{table}"').fetchone()  # noqa: S608
        if copied != expected:
            raise StorageError(
                f"Moving {path} into the ShopBot database copied {copied} of {expected} rows "
                f"of {table}; nothing was changed."
            )


def _retire(path: Path) -> None:
    """The old file renamed `*.migrated` beside the new one, its write-ahead log with it (as
    SQLite names it for the new name: the kept copy opens whole)."""
    kept = path.with_name(path.name + MIGRATED_SUFFIX)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(kept.with_name(kept.name + suffix))
    if path.exists():
        path.rename(kept)


def _remove(path: Path) -> None:
    for name in (path, path.with_name(path.name + "-journal")):
        with contextlib.suppress(FileNotFoundError):
            name.unlink()
