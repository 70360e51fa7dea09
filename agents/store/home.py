"""A ShopBot home: one SQLite file holding everything, and a marker that says it holds data.

The database (`shopbot.sqlite`) keeps the conversations' checkpoints, their transcripts, the
shop and its refund ledger and the audit log together, so a refund, its ledger row and its
audit event commit as one. The marker (`home.json`) is written when the database is made: a
home with a marker and no database (deleted, emptied, on a disk not mounted) lost its data,
and is refused by name instead of starting afresh in silence, which would forget every
pending decision, every conversation and the ledger that stops a second refund. A brand-new
folder starts with no questions asked; starting afresh on purpose is moving the folder aside.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from agents.store.sqlite import StorageError, open_database, unusable_text, utc_timestamp

DATABASE_FILE = "shopbot.sqlite"
MARKER_FILE = "home.json"
WHAT = "ShopBot database"
# Where this home's identity lives inside the database (the shop's `meta` table).
_META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
# Homes checked by this process: checking again costs a file read and a query per store
# opening, and nothing in a home is moved by ShopBot while it runs.
_checked: set[Path] = set()
_checking = threading.Lock()


@dataclass(frozen=True)
class Marker:
    home_id: str
    created_at: str

    @classmethod
    def read(cls, path: Path) -> Marker | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StorageError(
                f"The ShopBot home marker at {path} cannot be read ({exc}); ShopBot left it as "
                "it is. Put it back from a backup, or delete it if the database beside it is "
                "the right one."
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("home_id"), str):
            raise StorageError(
                f"The ShopBot home marker at {path} is not one ShopBot wrote; ShopBot left it "
                "as it is. Delete it if the database beside it is the right one."
            )
        return cls(data["home_id"], str(data.get("created_at", "")))

    def write(self, path: Path) -> Marker:
        """Written whole or not at all (a temporary file linked into place): two processes
        making a home at once agree on one, and a full disk leaves no empty marker."""
        text = json.dumps(
            {"home_id": self.home_id, "created_at": self.created_at, "database": DATABASE_FILE},
            indent=2,
        )
        made = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
        try:
            made.write_text(text + "\n", encoding="utf-8")
            os.link(made, path)  # (fails if another process linked its own first)
        except FileExistsError:
            found = Marker.read(path)
            assert found is not None
            return found
        except OSError as exc:
            raise StorageError(unusable_folder(path.parent, exc)) from exc
        finally:
            made.unlink(missing_ok=True)
        return self


def unusable_folder(folder: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return (
            f"Cannot write to the ShopBot folder {folder}: the disk holding {folder} is full "
            f"({exc.strerror}). Nothing was changed. Free some space on it, or set SHOPBOT_HOME "
            "to a folder on another disk."
        )
    return (
        f"Cannot use the ShopBot folder {folder}: {exc.strerror or exc}. Make it a folder you "
        "can write to, or set SHOPBOT_HOME to one."
    )


def database_path(home: Path) -> Path:
    return home / DATABASE_FILE


def holds_nothing(path: Path) -> bool:
    """No database at `path`, or one emptied to 0 bytes. (A write-ahead log beside an
    emptied file holds only the last writes, not the database: it is no database either.)"""
    try:
        return path.stat().st_size == 0
    except FileNotFoundError:
        return True


def checked_home(home: Path) -> Path:
    """The home's database, after making sure it is this home's: created in a brand-new
    folder (or moved over from the four files of older versions), refused by name when the
    home's marker says it held data that is gone, or when it is another home's database."""
    home = home.expanduser()
    path = database_path(home)
    with _checking:
        if path in _checked and not holds_nothing(path):
            return path
        _check(home, path)
        _checked.add(path)
    return path


def _check(home: Path, path: Path) -> None:
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(unusable_folder(home, exc)) from exc
    marker_path = home / MARKER_FILE
    marker = Marker.read(marker_path)
    if holds_nothing(path):
        if marker is not None or _log_beside(path):
            raise StorageError(_missing_text(path, marker_path, marker))
        from agents.store.migration import migrate_legacy_home

        migrate_legacy_home(home, path)  # (nothing to do in a brand-new folder)
    found = _identity(path, home)
    if marker is None:
        Marker(found.home_id, found.created_at).write(marker_path)
    elif marker.home_id != found.home_id:
        raise StorageError(
            f"The {WHAT} at {path} belongs to another ShopBot home (made {found.created_at}) "
            f"than its folder's marker {marker_path} (made {marker.created_at}); ShopBot left "
            "both as they are. Put this home's database back, or, to use this one, delete "
            "the marker."
        )


def _log_beside(path: Path) -> bool:
    wal = path.with_name(f"{path.name}-wal")
    return wal.exists() and wal.stat().st_size > 0


def _reconcile(path: Path) -> None:
    """The ledger and the audit log of a moved home put in step, once: older versions wrote
    them to two files, so a kill between the two could leave one without the other (one
    database writes both in one transaction now)."""
    from agents.audit.log import AuditLog
    from agents.store.migration import RECONCILED_KEY
    from agents.store.refund_reconcile import reconcile_refunds
    from agents.store.shop import ShopData

    with ShopData(path) as shop, AuditLog(path) as audit:
        reconcile_refunds(shop, audit, settled_after=0)
        shop.note(RECONCILED_KEY, utc_timestamp())


def _missing_text(path: Path, marker_path: Path, marker: Marker | None) -> str:
    state = "is empty (0 bytes)" if path.exists() else "is missing"
    since = (
        f"this home has held ShopBot data since {marker.created_at or 'it was made'} "
        f"({marker_path})"
        if marker is not None
        else "its write-ahead log beside it says it held data"
    )
    return (
        f"The {WHAT} at {path} {state}, but {since}: its conversations, decisions waiting, "
        "refund ledger and audit log would be lost. Nothing was created or changed. Put the "
        "file back (from a backup); to start afresh on purpose, move the folder aside "
        f"(mv '{path.parent}' '{path.parent}.old')."
    )


def _identity(path: Path, home: Path) -> Marker:
    """The database's home id, made when it is first opened (the database created then).
    Read first: an existing home is opened without writing to it (nor waiting for a lock).
    A move from four files killed before it was finished is finished here."""
    from agents.store.migration import finish_move

    conn = open_database(path, what=WHAT)
    try:
        if finish_move(home, conn):
            conn.close()
            _reconcile(path)
            conn = open_database(path, what=WHAT)
        rows = _identity_rows(conn)
        if len(rows) < 2:
            conn.execute(_META)
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('home_id', ?), ('home_created_at', ?)",
                (secrets.token_hex(8), utc_timestamp()),
            )
            rows = _identity_rows(conn)
    except sqlite3.DatabaseError as exc:
        raise StorageError(unusable_text(WHAT, path, exc)) from exc
    finally:
        conn.close()
    return Marker(str(rows["home_id"]), str(rows["home_created_at"]))


def _identity_rows(conn: sqlite3.Connection) -> dict[str, str]:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return {}
    return dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('home_id', 'home_created_at')"
        ).fetchall()
    )


def forget_checked() -> None:
    """Check every home again at its next opening (tests that move files between runs)."""
    with _checking:
        _checked.clear()


__all__ = [
    "DATABASE_FILE",
    "MARKER_FILE",
    "WHAT",
    "checked_home",
    "database_path",
    "forget_checked",
    "holds_nothing",
]
