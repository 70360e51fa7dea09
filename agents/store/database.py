"""Where a deployment keeps its data, and the one base every store is built on.

One setting picks the place: the home's SQLite file (agents/store/home.py) by default, or the
PostgreSQL database of SHOPBOT_DATABASE_URL (agents/store/postgres/). The stores (threads,
shop, audit log) are the same classes on both: they write SQL both understand, with `?`
placeholders, and ask their `Dialect` for the little that differs (a transaction that
takes SQLite's write lock up front, reads packed into one row for sqlite3, the id a row got).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeAlias, cast

from agents.store.sqlite import (
    StorageError,
    apply_schema,
    created_names,
    damaged_text,
    fetch_packed,
    immediate_transaction,
    is_damage,
    open_database,
)

if TYPE_CHECKING:
    from agents.settings import Settings
    from agents.store.postgres.database import PostgresDatabase

# A store's place: the home's SQLite file, or a PostgreSQL database.
Location: TypeAlias = "Path | PostgresDatabase"


class Cursor(Protocol):
    """What the stores read from a statement (sqlite3's cursor, psycopg's)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What the stores ask of a connection: sqlite3's, or `PostgresConnection`."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...

    def close(self) -> None: ...


class Dialect:
    """SQLite's ways; `PostgresDialect` has PostgreSQL's."""

    name = "sqlite"
    # LIMIT that takes every row.
    no_limit: int | None = -1

    def transaction(self, conn: Connection) -> AbstractContextManager[Connection]:
        return cast(
            AbstractContextManager[Connection],
            immediate_transaction(cast(sqlite3.Connection, conn)),
        )

    def rows(
        self, conn: Connection, columns: Sequence[str], select: str, params: Sequence[Any] = ()
    ) -> list[dict[str, Any]]:
        """The rows of `select` as dicts of `columns`, in no promised order."""
        return fetch_packed(cast(sqlite3.Connection, conn), columns, select, params)

    def inserted_id(self, conn: Connection, insert: str, params: Sequence[Any]) -> int:
        """Run `insert` (one row into a table keyed by `id`) and return the row's id."""
        cursor = cast(sqlite3.Cursor, conn.execute(insert, params))
        assert cursor.lastrowid is not None
        return cursor.lastrowid


class PostgresDialect(Dialect):
    name = "postgres"
    no_limit = None

    def transaction(self, conn: Connection) -> AbstractContextManager[Connection]:
        return cast(AbstractContextManager[Connection], _postgres(conn).transaction())

    def rows(
        self, conn: Connection, columns: Sequence[str], select: str, params: Sequence[Any] = ()
    ) -> list[dict[str, Any]]:
        # (Packing is sqlite3's remedy for its per-row GIL waits; psycopg reads a result whole.)
        return [{name: row[name] for name in columns} for row in conn.execute(select, params)]

    def inserted_id(self, conn: Connection, insert: str, params: Sequence[Any]) -> int:
        (row_id,) = conn.execute(f"{insert} RETURNING id", params).fetchone()
        return int(row_id)


SQLITE = Dialect()
POSTGRES = PostgresDialect()


def _postgres(conn: Connection) -> Any:
    return conn  # a PostgresConnection (imported lazily: psycopg only when it is used)


class Store:
    """A ShopBot store: one connection shared by threads behind a lock. In a SQLite file its
    `SCHEMA` is applied once; a PostgreSQL database has every store's tables already
    (agents/store/postgres/schema.py)."""

    WHAT = "local database"
    SCHEMA: tuple[str, ...] = ()

    def __init__(self, where: Location) -> None:
        self._lock = threading.Lock()
        self.where = where
        if isinstance(where, Path):
            self.path: Path | None = where
            self._dialect = SQLITE
            self._conn: Connection = open_database(where, what=self.WHAT, check_same_thread=False)
            if not self._schema_in_place():
                apply_schema(self._sqlite, self.SCHEMA, path=where, what=self.WHAT)
        else:
            self.path = None
            self._dialect = POSTGRES
            self._conn = where.connect()

    @property
    def _sqlite(self) -> sqlite3.Connection:
        """The connection, for what only SQLite has (pragmas, functions, its schema)."""
        return cast(sqlite3.Connection, self._conn)

    def _transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction (the caller holds `_lock`)."""
        return self._dialect.transaction(self._conn)

    def _rows(
        self, columns: Sequence[str], select: str, params: Sequence[Any] = ()
    ) -> list[dict[str, Any]]:
        return self._dialect.rows(self._conn, columns, select, params)

    @contextmanager
    def damage_named(self) -> Iterator[None]:
        """A query that trips on damage past the file's first page (opening checks only that
        one) names this store's file and what to do, instead of a bare "malformed"."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) or not is_damage(exc):
                raise
            assert self.path is not None  # (only SQLite's errors are sqlite3's)
            raise StorageError(damaged_text(self.WHAT, self.path, exc)) from exc

    def _schema_in_place(self) -> bool:
        """Whether the file already holds this store's current schema, so opening it takes
        no write transaction (which would wait for another writer's lock for nothing): every
        table and index SCHEMA creates is there."""
        names = created_names(self.SCHEMA)
        if not names:
            return False
        marks = ", ".join("?" * len(names))
        (present,) = self._conn.execute(
            f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})",  # noqa: S608
            names,
        ).fetchone()
        return bool(present == len(names))

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def location_of(settings: Settings) -> Location:
    """Where the stores are, unchecked (nothing is reached or made): for a front that checks
    it before each opening (`checked_database`)."""
    if settings.database_url is not None:
        from agents.store.postgres.database import PostgresDatabase

        return PostgresDatabase(settings.database_url)
    return settings.database_path


def checked_database(settings: Settings) -> Location:
    """Where this deployment's stores are, checked: the PostgreSQL database of
    SHOPBOT_DATABASE_URL (reached, its tables made on first use), else the home's SQLite
    file (see `checked_home`). A `StorageError` with one line when it cannot be used."""
    if settings.database_url is not None:
        from agents.store.postgres.database import checked_postgres

        return checked_postgres(settings.database_url)
    from agents.store.home import checked_home

    return checked_home(settings.home)
