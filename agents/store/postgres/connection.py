"""A psycopg connection that speaks the stores' SQL, so the same store classes run on SQLite
and PostgreSQL (agents/store/database.py).

The stores write `?` placeholders and read rows by column name or position, as sqlite3 does;
here the placeholders become psycopg's `%s` and rows support both. A failure that is the
database's condition (lost, a privilege missing, full) becomes a `StorageError` naming it
(errors.py); a connection found lost is opened again before the next statement.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import psycopg
from psycopg.types.string import TextLoader

from agents.store.postgres.errors import session_failure

if TYPE_CHECKING:
    from agents.store.database import Cursor
    from agents.store.postgres.database import PostgresDatabase

# PostgreSQL text cannot hold NUL (SQLite can): stored as U+FFFD, as lone surrogates are.
_NUL, _REPLACEMENT = "\x00", "\ufffd"


class Row:
    """A row read by column name or by position, unpacked like a tuple (sqlite3.Row's ways)."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = tuple(values)

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"


def _row_maker(cursor: Any) -> Any:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Row(index, values)


@functools.lru_cache(maxsize=1024)  # the stores' statements are a few dozen constant texts
def postgres_sql(query: str) -> str:
    """`query` with sqlite3's `?` placeholders as psycopg's `%s` (a `%` kept as `%%`)."""
    out: list[str] = []
    quoted = False
    for char in query:
        if char == "'":
            quoted = not quoted
        if char == "%":
            out.append("%%")
        elif char == "?" and not quoted:
            out.append("%s")
        else:
            out.append(char)
    return "".join(out)


def storable(parameters: Sequence[Any]) -> list[Any]:
    """The parameters as PostgreSQL can store them (lists too: arrays)."""
    return [_storable(value) for value in parameters]


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(_NUL, _REPLACEMENT) if _NUL in value else value
    if isinstance(value, list):
        return [_storable(item) for item in value]
    return value


def raw_connection(url: str) -> psycopg.Connection[Row]:
    """A connection for the stores: autocommit (a statement is its own transaction unless
    `transaction()` says otherwise), rows as `Row`, JSON read as its text."""
    conn: psycopg.Connection[Row] = psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=10,
        application_name="shopbot",
        row_factory=_row_maker,
    )
    # The audit log's details are `json`: the stores decode them themselves, as in SQLite.
    conn.adapters.register_loader("json", TextLoader)
    return conn


class _Pending:
    """A statement sent in a pipelined transaction: its results are waited for when first
    read (a `rowcount` read at once would be -1 before they arrive)."""

    def __init__(self, cursor: psycopg.Cursor[Row], connection: PostgresConnection) -> None:
        self._cursor = cursor
        self._connection = connection

    def _ready(self) -> psycopg.Cursor[Row]:
        if self._cursor.pgresult is None:
            self._connection.sync()
        return self._cursor

    @property
    def rowcount(self) -> int:
        return self._ready().rowcount

    def fetchone(self) -> Row | None:
        return self._ready().fetchone()

    def fetchall(self) -> list[Row]:
        return self._ready().fetchall()

    def __iter__(self) -> Iterator[Row]:
        return iter(self._ready())


class PostgresConnection:
    """The stores' connection to `database`: `execute` and `transaction`.

    A transaction is pipelined (libpq's pipeline mode): its statements go out without waiting
    for one another, and only a result the store reads waits, with everything before it. A
    transaction that reads nothing until its end costs one round trip, BEGIN and COMMIT
    included; run one by one, each statement and each of BEGIN and COMMIT cost one.
    """

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database
        self._raw = database.raw_connection()
        self._pipeline: psycopg.Pipeline | None = None

    def execute(self, query: str, parameters: Sequence[Any] = (), /) -> Cursor:
        if self._pipeline is None:
            self._reconnect_if_lost()
        try:
            cursor = self._raw.execute(postgres_sql(query), storable(parameters))
        except psycopg.Error as exc:
            self._failed(exc)
        return cursor if self._pipeline is None else _Pending(cursor, self)

    def sync(self) -> None:
        """Wait for the results of every statement sent so far in this transaction."""
        assert self._pipeline is not None
        try:
            self._pipeline.sync()
        except psycopg.Error as exc:
            self._failed(exc)

    @contextmanager
    def transaction(self) -> Iterator[PostgresConnection]:
        """BEGIN ... COMMIT (ROLLBACK on error)."""
        self._reconnect_if_lost()
        try:
            with self._raw.pipeline() as pipeline, self._raw.transaction():
                self._pipeline = pipeline
                try:
                    yield self
                finally:
                    self._pipeline = None
        except psycopg.Error as exc:
            self._failed(exc)

    def close(self) -> None:
        self._raw.close()

    @property
    def raw(self) -> psycopg.Connection[Row]:
        """The psycopg connection itself (tests, and what no store needs)."""
        return self._raw

    def _reconnect_if_lost(self) -> None:
        # A server restarted, a connection an idle timeout closed: the next statement gets a
        # new one (never in a transaction's middle: that one is lost, and said so).
        if self._raw.closed:
            self._raw = self._database.raw_connection()

    def _failed(self, exc: psycopg.Error) -> NoReturn:
        named = session_failure(self._database.shown, self._database.user, exc)
        if named is None:
            raise exc
        raise named from exc
