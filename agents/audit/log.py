"""The append-only audit log: what every agent, gate, tool and human decided, and when.

In the home's SQLite file or a PostgreSQL database. Either way the database refuses UPDATE
and DELETE (triggers), a trigram index serves free-text search (SQLite's FTS5 kept in sync by
a trigger, see audit/search.py; PostgreSQL's pg_trgm over each event's text, see
store/postgres/schema.py), and pages are keyed by id, so a deep page of 100k events costs
what the first one does. Details are redacted before they are stored.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from datetime import time as day_time
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from agents.audit.search import (
    INDEX_VERSION,
    REINDEX,
    SEARCH_SCHEMA,
    Term,
    contains,
    parse_search,
    text_clause,
)
from agents.safety.redaction import redact, redact_data
from agents.safety.text import visible
from agents.store.database import Connection, Location, Store
from agents.store.sqlite import (
    apply_schema,
    storable_text,
    utc_timestamp,
)

AUDIT_KINDS: frozenset[str] = frozenset(
    {
        "handoff",
        "gate_passed",
        "gate_failed",
        "correction",
        "escalated",
        "escalation_closed",
        "approval_requested",
        "approval_withdrawn",
        "approval_decided",
        "tool_called",
        "tool_failed",
        "tool_refused",
        "refund_processed",
        "refund_failed",
        "decision_refused",
        "message_refused",
        "limit_reached",
        "provider_error",
        "turn_started",
        "turn_finished",
        "summarised",
        # One try of a `shopbot eval` flow, in the try's throwaway home (agents/eval).
        "eval_result",
    }
)
MAX_PAGE = 10_000
# Up to this many rows left by the other filters, testing each row's text (~4 µs) beats
# walking the FTS index for a common word.
_PROBE_ROWS = 5_000

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts TEXT NOT NULL,
        thread_id TEXT,
        agent TEXT,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
    )""",
    "CREATE INDEX IF NOT EXISTS events_thread ON events(thread_id, id)",
    "CREATE INDEX IF NOT EXISTS events_kind ON events(kind, id)",
    "CREATE INDEX IF NOT EXISTS events_ts ON events(ts)",
    """CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'audit events are append-only: UPDATE refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'audit events are append-only: DELETE refused'); END""",
    *SEARCH_SCHEMA,
)
# An event's columns (a page reads them packed: see fetch_packed).
_EVENT_COLUMNS = ("id", "ts", "thread_id", "agent", "kind", "detail")
# What _SCHEMA creates, by name: when all are there, opening the log writes nothing.
_SCHEMA_NAMES = tuple(re.findall(r"IF NOT EXISTS (\w+)", "\n".join(_SCHEMA)))


# An event as `insert_rows` stores it: ts, thread_id, agent, kind, the detail's JSON.
EventRow = tuple[str, str | None, str | None, str, str]

INSERT_EVENT = "INSERT INTO events (ts, thread_id, agent, kind, detail) VALUES (?, ?, ?, ?, ?)"
# The same for many events at once in PostgreSQL (SQLite's is in `_insert_rows`).
_INSERT_UNNESTED = (
    "INSERT INTO events (ts, thread_id, agent, kind, detail)"
    " SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::json[])"
)


def prepared_event(
    kind: str,
    thread_id: str | None,
    agent: str | None,
    detail: Mapping[str, Any] | None,
    ts: str | None = None,
    secrets: Iterable[str] = (),
) -> tuple[str, str | None, str | None, str, dict[str, Any]]:
    """An event as it is stored: its kind checked, its detail and agent redacted."""
    check_kind(kind)
    clean = redact_data(_plain(dict(detail or {})), secrets)
    safe_agent = redact(agent, secrets) if agent is not None else None
    return ts or utc_timestamp(), thread_id, safe_agent, kind, clean


def event_values(event: tuple[str, str | None, str | None, str, dict[str, Any]]) -> tuple[Any, ...]:
    """The parameters of INSERT_EVENT for a `prepared_event`."""
    ts, thread_id, agent, kind, clean = event
    return ts, thread_id, agent, kind, _dumps(clean)


def check_kind(kind: str) -> None:
    """ValueError unless `kind` is one of AUDIT_KINDS."""
    if kind not in AUDIT_KINDS:
        raise ValueError(f"Unknown audit kind {kind!r}; known: {', '.join(sorted(AUDIT_KINDS))}")


@dataclass(frozen=True)
class AuditEvent:
    """One stored audit record."""

    id: int
    ts: str
    thread_id: str | None
    agent: str | None
    kind: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The record as the `audit --json` contract prints it."""
        return {
            "id": self.id,
            "ts": self.ts,
            "thread_id": self.thread_id,
            "agent": self.agent,
            "kind": self.kind,
            "detail": self.detail,
        }

    def summary(self, width: int = 80) -> str:
        """The detail as one short printable line (`key=value ...`), cut with `…`."""
        parts = [
            f"{key}={value if isinstance(value, str) else _dumps(value)}"
            for key, value in self.detail.items()
        ]
        # Control characters become visible signs (ESC -> ␛), as everywhere on screen.
        line = visible(" ".join(" ".join(parts).split()))
        return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


@dataclass(frozen=True)
class AuditQuery:
    """Filters for reading the log; `since` is inclusive, `until` exclusive (ISO-8601)."""

    thread_id: str | None = None
    kinds: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    text: str | None = None


class AuditLog(Store):
    """The audit log at `where`: a SQLite file, or a PostgreSQL database (thread-safe,
    multi-process safe)."""

    WHAT = "audit log"
    SCHEMA = _SCHEMA

    def __init__(
        self,
        where: Location,
        *,
        secrets: Iterable[str] = (),
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._indexed = False
        super().__init__(where)
        self._secrets = tuple(s for s in secrets if s)
        self._clock = clock or (lambda: datetime.now(UTC))
        if self.path is not None:
            self._sqlite.create_function("shopbot_contains", 2, contains, deterministic=True)
            if not self._indexed:
                # A log from before the index held what the rows show: index it anew, once
                # (about 3 s per 100k events; two processes racing here both just rebuild).
                apply_schema(self._sqlite, REINDEX, path=self.path, what=self.WHAT)

    def _schema_in_place(self) -> bool:
        # Viewers and engines open their connections while another one may be writing: the
        # schema's write transaction would wait for that writer's lock (up to the busy
        # timeout) for nothing. One read says whether it is needed.
        names = ", ".join("?" * len(_SCHEMA_NAMES))
        present, version = self._conn.execute(
            f"SELECT (SELECT count(*) FROM sqlite_master WHERE name IN ({names})), "  # noqa: S608
            "(SELECT user_version FROM pragma_user_version)",
            _SCHEMA_NAMES,
        ).fetchone()
        self._indexed = version >= INDEX_VERSION
        return bool(present == len(_SCHEMA_NAMES))

    def _prepare(
        self,
        kind: str,
        thread_id: str | None,
        agent: str | None,
        detail: Mapping[str, Any] | None,
        ts: str | None = None,
    ) -> tuple[str, str | None, str | None, str, dict[str, Any]]:
        return prepared_event(
            kind, thread_id, agent, detail, ts or utc_timestamp(self._clock()), self._secrets
        )

    def append(
        self,
        kind: str,
        *,
        thread_id: str | None = None,
        agent: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        """Store one event (its detail redacted first) and return it as stored."""
        ts, thread_id, agent, kind, clean = self._prepare(kind, thread_id, agent, detail)
        with self._lock:
            event_id = self._dialect.inserted_id(
                self._conn, INSERT_EVENT, (ts, thread_id, agent, kind, _dumps(clean))
            )
        return AuditEvent(event_id, ts, thread_id, agent, kind, clean)

    def flush(self) -> None:
        """Nothing to wait for: `append` stores before it returns (see AuditWriter)."""

    def append_many(self, events: Iterable[Mapping[str, Any]], *, batch: int = 2_000) -> int:
        """Bulk `append`: mappings with kind/thread_id/agent/detail (and `ts`, when the event
        happened before it is stored, as with `AuditWriter`)."""
        total = 0
        rows: list[EventRow] = []
        for event in events:
            rows.append(self.stored_row(event))
            if len(rows) >= batch:
                total += self._insert_rows(rows)
                rows = []
        return total + self._insert_rows(rows)

    def stored_row(self, event: Mapping[str, Any]) -> EventRow:
        """An event mapping (as `append_many` takes) as the row `insert_rows` stores: kind
        checked, redacted, its detail as JSON."""
        ts, thread_id, agent, kind, clean = self._prepare(
            event["kind"],
            event.get("thread_id"),
            event.get("agent"),
            event.get("detail"),
            event.get("ts"),
        )
        return ts, thread_id, agent, kind, _dumps(clean)

    def _insert_rows(self, rows: list[EventRow]) -> int:
        # A short transaction per batch lets other processes' appends interleave.
        with self._lock:
            return self.insert_rows(self._conn, rows)

    def insert_rows(self, conn: Connection, rows: list[EventRow]) -> int:
        """Store `stored_row`s with ONE statement on `conn` (this log's own, or another
        store's of the same database inside its transaction: audit/writer.py)."""
        # One INSERT for the whole batch: FTS5 flushes its index at every statement, so
        # row-by-row inserts through the sync trigger cost 3x more.
        if not rows:
            return 0
        if self._dialect.name == "postgres":
            # The columns as arrays, unnested: one statement, one round trip.
            columns = [list(column) for column in zip(*rows, strict=True)]
            conn.execute(_INSERT_UNNESTED, columns)
            return len(rows)
        conn.execute(
            "INSERT INTO events (ts, thread_id, agent, kind, detail) "
            "SELECT value->>0, value->>1, value->>2, value->>3, value->>4 FROM json_each(?)",
            (_dumps(rows),),
        )
        return len(rows)

    def page(
        self, query: AuditQuery | None = None, *, limit: int = 100, before_id: int | None = None
    ) -> list[AuditEvent]:
        """Up to `limit` matching events, newest first, older than `before_id` when given."""
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        with self._lock:
            source, params, order = self._plan(query or AuditQuery(), before_id)
            columns = ", ".join(f"e.{name}" for name in _EVENT_COLUMNS)
            page = f"SELECT {columns} FROM {source} ORDER BY {order} DESC LIMIT ?"  # noqa: S608
            rows = self._rows(_EVENT_COLUMNS, page, (*params, limit))
        # `order` is the event's id either way (f.rowid = e.id): newest first.
        rows.sort(key=lambda row: int(row["id"]), reverse=True)
        return [_event(row) for row in rows]

    def count(self, query: AuditQuery | None = None) -> int:
        """How many events match."""
        with self._lock:
            source, params, _ = self._plan(query or AuditQuery(), None)
            sql = f"SELECT count(*) FROM {source}"  # noqa: S608 - built from constant clauses
            return int(self._conn.execute(sql, params).fetchone()[0])

    def get(self, event_id: int) -> AuditEvent | None:
        """The event with this id, or None."""
        with self._lock:
            row = self._conn.execute("SELECT * FROM events WHERE id = ?", (event_id,)).fetchone()
        return _event(row) if row else None

    def thread_ids(self) -> list[str]:
        """Threads that have events, the most recently active first."""
        with self._lock:
            rows = self._rows(
                ("thread_id", "last"),
                "SELECT thread_id, max(id) AS last FROM events WHERE thread_id IS NOT NULL "
                "GROUP BY thread_id",
            )
        rows.sort(key=lambda row: int(row["last"]), reverse=True)
        return [row["thread_id"] for row in rows]

    def iter_events(
        self, query: AuditQuery | None = None, *, page_size: int = 500
    ) -> Iterator[AuditEvent]:
        """Every matching event, newest first, read a page at a time."""
        before_id: int | None = None
        while True:
            events = self.page(query, limit=page_size, before_id=before_id)
            yield from events
            if len(events) < page_size:
                return
            before_id = events[-1].id

    def export_jsonl(self, dest: Path | TextIO, query: AuditQuery | None = None) -> int:
        """Write matching events as JSON lines (newest first) and return how many."""
        if isinstance(dest, Path):
            with dest.open("w", encoding="utf-8", newline="\n") as out:
                return self.export_jsonl(out, query)
        written = 0
        for event in self.iter_events(query):
            dest.write(export_line(event))
            written += 1
        return written

    def _plan(self, query: AuditQuery, before_id: int | None) -> tuple[str, list[Any], str]:
        """`FROM ... WHERE ...`, its parameters, and the id column to order by (lock held)."""
        clauses, params = _structured(query)
        terms = parse_search(query.text or "")
        if self._dialect.name == "postgres":
            # Each event's own text, through the trigram index or not, as the planner sees fit.
            if terms:
                from agents.store.postgres.search import postgres_text_clause

                search, text_params = postgres_text_clause(terms)
                clauses.append(search)
                params.extend(text_params)
            order, source = "e.id", "events e"
        else:
            order, source = self._fts_plan(clauses, params, terms)
        if before_id is not None:
            clauses.append(f"{order} < ?")
            params.append(before_id)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        return source + where, params, order

    def _fts_plan(
        self, clauses: list[str], params: list[Any], terms: list[Term]
    ) -> tuple[str, str]:
        """SQLite's FTS5 search: its clauses added, the id column to order by and the source."""
        # Free text: walk the FTS index in rowid order (a page stops after `limit` hits), unless
        # the other filters leave few rows: then test just those rows' text. Either way alone
        # has a 100 ms case: a common word within a rare kind, a rare word within a common one.
        probe = bool(terms and clauses) and self._rows_matching(clauses, params) <= _PROBE_ROWS
        order = "f.rowid" if terms and not probe else "e.id"
        source = "events e"
        if terms:
            search, text_params = text_clause(terms, index=not probe)
            if probe:
                exists = "EXISTS (SELECT 1 FROM events_fts f WHERE f.rowid = e.id AND {})"
                clauses.append(exists.format(search))
            else:
                source = "events_fts f JOIN events e ON e.id = f.rowid"
                clauses.append(search)
            params.extend(text_params)
        return order, source

    def _rows_matching(self, clauses: list[str], params: list[Any]) -> int:
        # Indexed (thread, kind, ts): about a millisecond even over 100k events.
        sql = f"SELECT count(*) FROM events e WHERE {' AND '.join(clauses)}"  # noqa: S608
        return int(self._conn.execute(sql, params).fetchone()[0])


def _structured(query: AuditQuery) -> tuple[list[str], list[Any]]:
    """WHERE clauses (on `e`) for every filter but the free text."""
    clauses: list[str] = []
    params: list[Any] = []
    if query.thread_id is not None:
        clauses.append("e.thread_id = ?")
        params.append(query.thread_id)
    if query.kinds:
        unknown = sorted(set(query.kinds) - AUDIT_KINDS)
        if unknown:
            raise ValueError(f"Unknown audit kind(s): {', '.join(unknown)}")
        clauses.append(f"e.kind IN ({', '.join('?' * len(query.kinds))})")
        params.extend(query.kinds)
    if query.since:
        clauses.append("e.ts >= ?")
        params.append(normalise_ts(query.since))
    if query.until:
        clauses.append("e.ts < ?")
        params.append(normalise_ts(query.until))
    return clauses, params


def normalise_ts(value: str) -> str:
    """An ISO-8601 date or time as stored stamps are written (UTC): they compare as text."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise ValueError(f"Not an ISO-8601 date or time: {value!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return utc_timestamp(moment)
    except OverflowError:
        # A valid moment whose UTC falls outside years 1-9999 ("0001-01-01T00:00+14:00"):
        # it lies before or after every stored event, as the text bounds below do.
        return "0000" if moment.year == 1 else "9999-12-31T23:59:59.999Z~"


def _event(row: sqlite3.Row | Mapping[str, Any]) -> AuditEvent:
    return AuditEvent(
        id=row["id"],
        ts=row["ts"],
        thread_id=row["thread_id"],
        agent=row["agent"],
        kind=row["kind"],
        detail=_detail(row["detail"]),
    )


def _detail(stored: Any) -> dict[str, Any]:
    """The stored detail; one another program wrote that is no JSON object (bytes, read as
    their literal, see `fetch_packed`) is shown as it is rather than failing its whole page."""
    try:
        detail = json.loads(stored)
    except (TypeError, ValueError):
        detail = None
    return detail if isinstance(detail, dict) else {"unreadable": str(stored)}


def export_line(event: AuditEvent) -> str:
    """One event as a line of `shopbot audit --json` and of an export (newline included)."""
    return _dumps(event.to_json()) + "\n"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """JSON-ready data: Decimal, datetime, Path, models and the rest become strings/lists."""
    if isinstance(value, str):
        return storable_text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {storable_text(str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=str)
    if isinstance(value, datetime | date | day_time):
        return value.isoformat()
    if isinstance(value, Enum):
        return _plain(value.value)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return _plain(model_dump(mode="json"))
    return str(value)
