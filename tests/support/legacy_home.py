"""A home as older versions kept it, four files (checkpoints, conversations, shop, audit
log), made from a home of today's one database: the same tables and rows, split by store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agents.store.home import DATABASE_FILE, MARKER_FILE

LEGACY_TABLES = {
    "threads.sqlite": ("threads", "lines", "drafts", "turn_leases", "escalations"),
    "shop.sqlite": ("orders", "refunds", "meta"),
    "audit.sqlite": ("events", "events_fts"),
    "checkpoints.sqlite": ("checkpoints", "writes"),
}


def split_into_legacy_files(home: Path) -> dict[str, int]:
    """Replace the home's database (and marker) by the four files; returns the rows of each
    table, to compare after moving them back."""
    source = home / DATABASE_FILE
    rows: dict[str, int] = {}
    with sqlite3.connect(source) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        for file, tables in LEGACY_TABLES.items():
            target = home / file
            conn.execute("ATTACH DATABASE ? AS legacy", (str(target),))
            conn.execute("PRAGMA legacy.journal_mode = WAL")
            marks = ", ".join("?" * len(tables))
            objects = conn.execute(
                f"SELECT type, name, sql FROM main.sqlite_master WHERE tbl_name IN ({marks}) "
                "AND sql IS NOT NULL AND NOT (type = 'table' AND name LIKE 'events_fts_%') "
                "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, rowid",
                tables,
            ).fetchall()
            for _kind, _name, sql in objects:
                conn.execute(_in_legacy(sql))
            for table in tables:
                if table == "events_fts":
                    continue  # (filled by its trigger as events are copied)
                conn.execute(f"INSERT INTO legacy.{table} SELECT * FROM main.{table}")
                (rows[table],) = conn.execute(f"SELECT count(*) FROM main.{table}").fetchone()
            if file == "shop.sqlite":  # (older homes had no identity)
                conn.execute("DELETE FROM legacy.meta WHERE key LIKE 'home_%'")
            if file == "audit.sqlite":
                conn.execute(f"PRAGMA legacy.user_version = {int(version)}")
            conn.commit()
            conn.execute("DETACH DATABASE legacy")
    conn.close()
    for name in (DATABASE_FILE, f"{DATABASE_FILE}-wal", f"{DATABASE_FILE}-shm", MARKER_FILE):
        (home / name).unlink(missing_ok=True)
    return rows


def _in_legacy(sql: str) -> str:
    """A schema statement of the main database, made in the attached one."""
    for made in ("CREATE TABLE ", "CREATE INDEX ", "CREATE TRIGGER ", "CREATE VIRTUAL TABLE "):
        if sql.startswith(made):
            rest = sql[len(made) :]
            rest = rest.removeprefix("IF NOT EXISTS ")
            return f"{made}legacy.{rest}"
    raise AssertionError(f"unexpected schema statement: {sql[:60]}")
