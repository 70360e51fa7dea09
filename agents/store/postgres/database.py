"""The PostgreSQL database of SHOPBOT_DATABASE_URL: reached once per process with a clear
line when it cannot be, and given ShopBot's tables on first use.

Making the tables is one transaction under an advisory lock, so processes starting at once
on an empty database wait for one another instead of failing on each other's tables.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from functools import cached_property

import psycopg

from agents.safety.redaction import redact
from agents.settings import database_address, shown_database_url
from agents.store.postgres.connection import PostgresConnection, Row, raw_connection
from agents.store.postgres.errors import connect_failure, first_line, session_failure
from agents.store.postgres.schema import (
    SCHEMA,
    SCHEMA_VERSION,
    TABLES,
    TRIGRAM_EXTENSION,
    TRIGRAM_INDEX,
)
from agents.store.sqlite import StorageError

log = logging.getLogger("shopbot.store")

# ShopBot's advisory locks are keyed (LOCK_SPACE, n): the first key keeps them apart from
# other programs' locks in the same database ("Shop" in ASCII).
LOCK_SPACE = 0x53686F70
SCHEMA_LOCK = 1
CHECKPOINT_SETUP_LOCK = 2
# Turn leases take (LEASE_SPACE, a hash of the thread id): leases.py.
LEASE_SPACE = LOCK_SPACE + 1

_checked: set[str] = set()
_checking = threading.Lock()


@dataclass(frozen=True)
class PostgresDatabase:
    """Where every store lives when SHOPBOT_DATABASE_URL is set. Shown (str) without its
    password; the URL itself stays out of repr()."""

    url: str = field(repr=False)

    dialect = "postgres"

    def __str__(self) -> str:
        return self.shown

    @cached_property
    def shown(self) -> str:
        return shown_database_url(self.url)

    @property
    def user(self) -> str:
        address = database_address(self.url)
        return address[0] if address is not None else "?"

    def raw_connection(self) -> psycopg.Connection[Row]:
        """A new psycopg connection, or a `StorageError` saying why there is none."""
        try:
            return raw_connection(self.url)
        except psycopg.Error as exc:
            raise StorageError(self._connect_failure(exc)) from exc

    def connect(self) -> PostgresConnection:
        """A connection for one store (closed by the store)."""
        return PostgresConnection(self)

    def _connect_failure(self, exc: psycopg.Error) -> str:
        address = database_address(self.url)
        if address is None or isinstance(exc, psycopg.ProgrammingError):
            # (libpq's words on a malformed address name the option, never its value.)
            return (
                "SHOPBOT_DATABASE_URL cannot be read as a PostgreSQL address "
                f"({first_line(exc)}); set it as postgresql://user:password@host:port/database."
            )
        user, host, port, dbname = address
        return connect_failure(self.shown, host, port, user, dbname, exc)


def checked_postgres(url: str) -> PostgresDatabase:
    """The database of `url`, reached and holding ShopBot's tables (made now if missing), or
    a `StorageError` with one line naming it. Checked once per process."""
    if not url.lower().startswith(("postgresql://", "postgres://")):
        raise StorageError(
            "SHOPBOT_DATABASE_URL is not a postgresql:// address; set it as "
            "postgresql://user:password@host:port/database, or unset it to keep the data "
            "in SHOPBOT_HOME."
        )
    database = PostgresDatabase(url)
    with _checking:
        if url not in _checked:
            _make_schema(database)
            _checked.add(url)
    return database


def _make_schema(database: PostgresDatabase) -> None:
    with database.raw_connection() as conn:
        try:
            if _schema_in_place(conn):
                return
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, SCHEMA_LOCK))
                if _schema_in_place(conn):
                    return  # another process made it while this one waited
                for statement in SCHEMA:
                    conn.execute(statement)
                _trigram_index(conn)
                conn.execute(
                    "INSERT INTO meta VALUES ('postgres_schema', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (SCHEMA_VERSION,),
                )
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StorageError(
                f"PostgreSQL user {database.user!r} may not create ShopBot's tables in "
                f"{database.shown} ({first_line(exc)}). Nothing was changed. Grant it CREATE "
                "on the schema (see docs/postgres.md), or let the database's owner start "
                "ShopBot once."
            ) from exc
        except psycopg.Error as exc:
            named = session_failure(database.shown, database.user, exc)
            if named is None:
                raise
            raise named from exc


def _schema_in_place(conn: psycopg.Connection[Row]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
        (list(TABLES),),
    ).fetchone()
    if row is None or row[0] != len(TABLES):
        return False
    version = conn.execute("SELECT value FROM meta WHERE key = 'postgres_schema'").fetchone()
    return version is not None and version[0] == SCHEMA_VERSION


def _trigram_index(conn: psycopg.Connection[Row]) -> None:
    """The audit log's trigram index, when the server has `pg_trgm` and lets us create it;
    without it, search reads every event (said once, here)."""
    try:
        with conn.transaction():  # (a savepoint: its failure leaves the rest standing)
            conn.execute(TRIGRAM_EXTENSION)
            conn.execute(TRIGRAM_INDEX)
    except psycopg.Error as exc:
        log.warning(
            "no trigram index for audit search (%s); search reads every event",
            redact(first_line(exc)),
        )


def read_only_value(url: str, query: str, params: tuple[object, ...]) -> str | None:
    """The first column of `query`'s first row, read in a read-only transaction without
    making anything; None when there is none or the database cannot say (for a look at a
    deployment whose checks have not run: a command stopped as it started)."""
    try:
        with psycopg.connect(
            url, connect_timeout=5, options="-c default_transaction_read_only=on"
        ) as conn:
            row = conn.execute(query, params).fetchone()
    except psycopg.Error:
        return None
    return str(row[0]) if row else None


def forget_checked() -> None:
    """Check every database again at its next opening (tests that drop one)."""
    with _checking:
        _checked.clear()
