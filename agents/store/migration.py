"""A home of four files (older versions kept the checkpoints, the conversations, the shop and
the audit log apart) moved into the one database, once, in place, with nothing lost.

Every row is copied in one transaction that holds the four files' write locks, counted, and
only then are the old files renamed `*.migrated` (kept, not deleted). A home whose four files
are not all there while one of them holds data is refused by name: moving it over would make
a lost store permanent (a deleted conversation store drops every decision waiting, a deleted
shop re-seeds the demo shop and forgets the refund ledger).
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from agents.store.sqlite import StorageError, open_database, unusable_text

log = logging.getLogger("shopbot.storage")


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


def migrate_legacy_home(home: Path, target: Path) -> bool:
    """Move the four files of an older home into `target`; False when there were none."""
    files = {store: home / store.file for store in LEGACY_STORES}
    present = {store: path for store, path in files.items() if _present(path)}
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
    _copy(present, target)
    for path in present.values():
        _retire(path)
    log.warning("moved the four files of %s into %s", home, target)
    return True


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


def _copy(present: dict[LegacyStore, Path], target: Path) -> None:
    conn = open_database(target, what="ShopBot database")
    try:
        for number, path in enumerate(present.values()):
            conn.execute(f"ATTACH DATABASE ? AS legacy{number}", (str(path),))
        # IMMEDIATE takes the write lock of every attached file: no older ShopBot still
        # running writes to them between the copy and the renaming.
        conn.execute("BEGIN IMMEDIATE")
        try:
            for number, (store, path) in enumerate(present.items()):
                _copy_one(conn, f"legacy{number}", store, path)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        for number in range(len(present)):
            conn.execute(f"DETACH DATABASE legacy{number}")
    except sqlite3.DatabaseError as exc:
        raise StorageError(unusable_text("ShopBot database", target, exc)) from exc
    finally:
        conn.close()


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
    """The old file, its write-ahead log folded in, renamed `*.migrated` beside the new one."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists() and side.stat().st_size == 0:
            side.unlink()
    path.rename(path.with_name(path.name + ".migrated"))
