"""Conversations and their complete transcript, in one local SQLite file.

The graph summarises its own history as it grows; this transcript never is, so a person
can always read back everything that was said ("nothing is ever lost").
"""

from __future__ import annotations

import builtins
import re
import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from agents.names import AGENT_TITLES, AGENTS, DEFAULT_AGENT
from agents.safety.redaction import redact
from agents.safety.text import quoted
from agents.store.database import Connection, Cursor, Location
from agents.store.escalations import ESCALATIONS_SCHEMA, EscalationQueue
from agents.store.leases import LEASES_SCHEMA, LeaseBook, LeaseTable, TurnLeases, lease_alive
from agents.store.sqlite import storable_text, utc_timestamp

if TYPE_CHECKING:
    from agents.settings import Settings
    from agents.store.postgres.database import PostgresDatabase

THREAD_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_THREAD_ID = re.compile(THREAD_ID_PATTERN)
# "answering" from a message until its turn is recorded: a thread left so by a crash is read
# back from its checkpoint, never assumed idle.
ThreadStatus = Literal["idle", "answering", "awaiting_approval", "error"]
THREAD_STATUSES: tuple[ThreadStatus, ...] = ("idle", "answering", "awaiting_approval", "error")
# What a list shows: a thread stored "answering" whose turn no live process holds any more
# (it was killed) is "cut_off", not answering for ever (the engine closes it when it next
# looks; a list need not wait for that).
ListedStatus = ThreadStatus | Literal["cut_off"]
Role = Literal["customer", "assistant", "note"]
ROLES: tuple[Role, ...] = ("customer", "assistant", "note")
TITLE_LENGTH = 60

_SCHEMA = (
    # `touched` orders the list: a counter, unlike a timestamp, never ties.
    """CREATE TABLE IF NOT EXISTS threads (
        thread_id TEXT PRIMARY KEY,
        customer TEXT,
        title TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        active_agent TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('idle', 'answering', 'awaiting_approval', 'error')),
        turns INTEGER NOT NULL DEFAULT 0,
        touched INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS threads_touched ON threads(touched)",
    """CREATE TABLE IF NOT EXISTS lines (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id TEXT NOT NULL REFERENCES threads(thread_id),
        ts TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('customer', 'assistant', 'note')),
        text TEXT NOT NULL,
        agent TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS lines_thread ON lines(thread_id, id)",
    # What a person typed in a conversation and has not sent, kept when they switch away or
    # quit (a thread that was never started may have one: no reference to `threads`).
    """CREATE TABLE IF NOT EXISTS drafts (
        thread_id TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        saved_at TEXT NOT NULL
    )""",
    LEASES_SCHEMA,
    ESCALATIONS_SCHEMA,
)
# Thread ids a query asks for by name (`_rows_among`).
_IDS_A_QUERY = 500
# The tables' columns, for reads packed into one row (sqlite.fetch_packed).
_THREAD_COLUMNS = (
    "thread_id",
    "customer",
    "title",
    "created_at",
    "updated_at",
    "active_agent",
    "status",
    "turns",
    "touched",
)
_LINE_COLUMNS = ("id", "thread_id", "ts", "role", "text", "agent")
# A list reads each thread with its turn lease, if any: who (if anyone alive) answers it
# (the leases' `listing`).
_LISTED_COLUMNS = (*_THREAD_COLUMNS, "lease_host", "lease_pid", "lease_expires")
# Every write bumps `touched` past all others: inside SQLite's write transaction (one writer
# at a time), from a sequence in PostgreSQL (agents/store/postgres/schema.py).
_NEXT_TOUCH = {
    "sqlite": "(SELECT coalesce(max(touched), 0) + 1 FROM threads)",
    "postgres": "nextval('threads_touched_seq')",
}


def validate_thread_id(value: str) -> str:
    """`value` if it is a usable thread id, else ValueError saying what is allowed."""
    # fullmatch, not match: with `$`, match() accepts a trailing newline ("t1\n").
    if not isinstance(value, str) or not _THREAD_ID.fullmatch(value):
        raise ValueError(
            f"Invalid thread id {quoted(value)}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return value


@dataclass(frozen=True)
class ThreadInfo:
    """One conversation as listed in the thread picker and `shopbot threads`."""

    thread_id: str
    customer: str | None
    title: str
    created_at: str
    updated_at: str
    active_agent: str
    status: ListedStatus
    turns: int

    def to_json(self) -> dict[str, Any]:
        """Plain data for `--json` output."""
        return asdict(self)

    def matches(self, needle: str) -> bool:
        """Whether `needle` is in its id, customer, first message or agent, in any case."""
        if not needle:
            return True
        agent = AGENT_TITLES.get(self.active_agent, "")
        haystack = " ".join((self.thread_id, self.customer or "", self.title, agent))
        return needle.casefold() in haystack.casefold()


@dataclass(frozen=True)
class ChatLine:
    """One line of the transcript."""

    id: int
    thread_id: str
    ts: str
    role: Role
    text: str
    agent: str | None


def agent_read_only(settings: Settings, thread_id: str) -> str | None:
    """The thread's active agent as stored, read without writing (or making) anything: for a
    look at a home its checks have not opened (a command stopped as it started)."""
    if settings.database_url is not None:
        from agents.store.postgres.database import read_only_value

        return read_only_value(
            settings.database_url,
            "SELECT active_agent FROM threads WHERE thread_id = %s",
            (thread_id,),
        )
    path = settings.database_path
    if not path.exists():
        return None
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
            row = conn.execute(
                "SELECT active_agent FROM threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        conn.close()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None


def make_title(text: str) -> str:
    """One storable line of at most TITLE_LENGTH characters, cut with `…`."""
    line = " ".join(storable_text(text).split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


class ThreadRegistry(TurnLeases, EscalationQueue):
    """Threads and transcripts at `where`: a SQLite file, or a PostgreSQL database
    (thread-safe)."""

    WHAT = "thread registry"
    SCHEMA = _SCHEMA

    def __init__(self, where: Location) -> None:
        super().__init__(where)
        self._leases: LeaseBook
        if self.path is not None:
            self._leases = LeaseTable(self._lock, self._sqlite)
        else:
            from agents.store.postgres.leases import AdvisoryLeases

            self._leases = AdvisoryLeases(cast("PostgresDatabase", where))
        touch = _NEXT_TOUCH[self._dialect.name]
        self._next_touch = touch
        self._touch = f"touched = {touch}, updated_at = ?"

    def close(self) -> None:
        try:
            self._leases.close()
        finally:
            super().close()

    def get(self, thread_id: str) -> ThreadInfo | None:
        """The thread, or None when it was never started."""
        validate_thread_id(thread_id)
        with self._lock:
            return self._get(thread_id)

    def _get(self, thread_id: str) -> ThreadInfo | None:
        # Packed like the list: bytes another program wrote read as their literal here too,
        # never as a `bytes` customer name that fails deep inside a turn.
        select = "SELECT * FROM threads WHERE thread_id = ?"
        found = self._rows(_THREAD_COLUMNS, select, (thread_id,))
        return _info(found[0]) if found else None

    def shown(self, thread_id: str) -> ThreadInfo | None:
        """The thread as a list shows it: a turn whose process is gone reads `cut_off`."""
        validate_thread_id(thread_id)
        with self._lock:
            found = self._rows(
                _LISTED_COLUMNS,
                f"{self._leases.listing} WHERE thread_id = ?",
                (thread_id,),
            )
        return _listed(found[0]) if found else None

    def ensure(self, thread_id: str, *, customer: str | None) -> ThreadInfo:
        """The thread, created if missing; a given customer name replaces the stored one."""
        validate_thread_id(thread_id)
        with self._lock, self._transaction() as conn:
            self._ensure(conn, thread_id, customer, utc_timestamp())
            info = self._get(thread_id)
        assert info is not None
        return info

    def _ensure(self, conn: Connection, thread_id: str, customer: str | None, now: str) -> None:
        # Storable, or the INSERT would fail with the thread half made (callers vet the name).
        customer = storable_text((customer or "").strip()) or None
        # One statement (a round trip less in PostgreSQL). Never back to None: `shopbot chat`
        # without --customer keeps the known name.
        conn.execute(
            "INSERT INTO threads (thread_id, customer, created_at, updated_at, active_agent,"  # noqa: S608
            f" status, touched) VALUES (?, ?, ?, ?, ?, 'idle', {self._next_touch})"
            " ON CONFLICT(thread_id) DO UPDATE SET customer = excluded.customer"
            " WHERE excluded.customer IS NOT NULL"
            " AND (threads.customer IS NULL OR threads.customer <> excluded.customer)",
            (thread_id, customer, now, now, DEFAULT_AGENT),
        )

    def open_turn(self, thread_id: str, *, customer: str | None, message: str) -> ChatLine:
        """A customer's message starts a turn: the thread is created if new (see `ensure`),
        its turn counted, its status "answering" and the message added to its transcript, all
        in one transaction: no thread is left answering a message it does not show."""
        validate_thread_id(thread_id)
        with self._lock, self._transaction() as conn:
            now = utc_timestamp()
            self._ensure(conn, thread_id, customer, now)
            # Sent: no longer a draft (a draft of it would come back after a crash).
            conn.execute("DELETE FROM drafts WHERE thread_id = ?", (thread_id,))
            return self._append(conn, thread_id, "customer", message, None, now, True)

    def update(
        self,
        thread_id: str,
        *,
        active_agent: str | None = None,
        status: ThreadStatus | None = None,
    ) -> ThreadInfo:
        """Change what is given."""
        _check_update(thread_id, active_agent, status)
        with self._lock, self._transaction() as conn:
            updated = self._update(conn, thread_id, active_agent, status, utc_timestamp())
            # Read back before the count is looked at: in PostgreSQL both answers then come
            # in one round trip (a pipelined transaction, agents/store/postgres/connection.py).
            info = self._get(thread_id)
            if not updated.rowcount:
                raise ValueError(f"Unknown thread {thread_id!r}: start it first.")
        assert info is not None
        return info

    def _update(
        self,
        conn: Connection,
        thread_id: str,
        active_agent: str | None,
        status: ThreadStatus | None,
        now: str,
    ) -> Cursor:
        return conn.execute(
            f"UPDATE threads SET {self._touch},"  # noqa: S608 - constant text
            " active_agent = coalesce(?, active_agent), status = coalesce(?, status)"
            " WHERE thread_id = ?",
            (now, active_agent, status, thread_id),
        )

    def write_together(
        self, writes: Sequence[RegistryWrite], then: Callable[[Connection], object]
    ) -> None:
        """The audit writer's batch in ONE transaction: `writes` (what `open_turn`,
        `append_line`, `escalate` and `update` do, each stamped with the time it was said),
        then `then` on the same connection (the batch's audit events). One commit, and in
        PostgreSQL two round trips, where each write on its own costs a transaction. A write
        that cannot be made (an unknown thread, role, agent or status) raises ValueError with
        nothing of the batch written: the writer then makes them one by one, as ever."""
        for write in writes:
            _check_write(write)
        with self._lock, self._transaction() as conn:
            # (Rowcounts read at the end: in PostgreSQL the statements go out together.)
            touched: list[tuple[Cursor, str]] = []
            for write in writes:
                touched += self._write(conn, write)
            then(conn)
            for cursor, thread_id in touched:
                if not cursor.rowcount:
                    raise ValueError(f"Unknown thread {thread_id!r}: start it first.")

    def _write(self, conn: Connection, write: RegistryWrite) -> list[tuple[Cursor, str]]:
        """One write of a batch; the statements whose rowcount says the thread exists."""
        op, args, now = write.op, write.args, write.ts
        if op == "update":
            thread_id, agent, status = args
            return [(self._update(conn, thread_id, agent, status, now), thread_id)]
        if op == "escalate":
            thread_id, agent, reason = args
            self._escalate(conn, thread_id, agent, reason, now)
            return []
        if op == "open_turn":
            thread_id, customer, message = args
            self._ensure(conn, thread_id, customer, now)
            conn.execute("DELETE FROM drafts WHERE thread_id = ?", (thread_id,))
            return [self._add_line(conn, thread_id, "customer", message, None, now, True)]
        thread_id, role, text, agent = args
        return [self._add_line(conn, thread_id, role, text, agent, now)]

    def _touch_for_line(
        self,
        conn: Connection,
        thread_id: str,
        role: Role,
        text: str,
        ts: str,
        opening: bool,
    ) -> tuple[str, Cursor]:
        """The line's text as stored, and the UPDATE that touches its thread for it (titled
        by its first customer line; with `opening`, its turn counted and its status
        "answering"), whose rowcount says whether the thread exists."""
        # Every source redacts what it says; this catches one that forgot (as the audit log).
        text = redact(storable_text(text))
        title = make_title(text) if role == "customer" else None
        turn = ", status = 'answering', turns = turns + 1" if opening else ""
        touched = conn.execute(
            f"UPDATE threads SET {self._touch}{turn},"  # noqa: S608 - constant text
            " title = CASE WHEN title = '' THEN coalesce(?, '') ELSE title END"
            " WHERE thread_id = ?",
            (ts, title, thread_id),
        )
        return text, touched

    def _add_line(
        self,
        conn: Connection,
        thread_id: str,
        role: Role,
        text: str,
        agent: str | None,
        ts: str,
        opening: bool = False,
    ) -> tuple[Cursor, str]:
        """`_append` without reading the line's id back (nor, yet, whether the thread was
        there: the caller reads the UPDATE's rowcount before it commits)."""
        text, touched = self._touch_for_line(conn, thread_id, role, text, ts, opening)
        # Only into a thread that exists (in SQLite nothing else would refuse it).
        conn.execute(
            "INSERT INTO lines (thread_id, ts, role, text, agent)"
            " SELECT ?, ?, ?, ?, ? WHERE EXISTS"
            " (SELECT 1 FROM threads WHERE thread_id = ?)",
            (thread_id, ts, role, text, agent, thread_id),
        )
        return touched, thread_id

    # `builtins.list` below: inside the class, `list` is this method.
    def list(
        self, limit: int | None = 200, matching: str = "", among: Collection[str] | None = None
    ) -> builtins.list[ThreadInfo]:
        """Threads, the most recently updated first: at most `limit` (all with None), and with
        `matching` only those it `matches` (searched here, in Python: SQLite's LIKE and lower()
        fold only ASCII letters, and a customer may well be called Łukasz); with `among`, only
        those of these ids (an id of no thread is left out)."""
        needle = matching.strip()
        # (No limit: a search counts only the threads that match.)
        bound = self._dialect.no_limit if limit is None or needle else limit
        with self._lock:
            if among is not None:
                rows = self._rows_among(among)
            else:
                rows = self._rows(
                    _LISTED_COLUMNS,
                    f"{self._leases.listing} ORDER BY touched DESC LIMIT ?",
                    (bound,),
                )
                rows.sort(key=_recent_first)
        found: builtins.list[ThreadInfo] = []
        for row in rows:
            if limit is not None and len(found) >= limit:
                break
            info = _listed(row)
            if info.matches(needle):
                found.append(info)
        return found

    def _rows_among(self, thread_ids: Collection[str]) -> builtins.list[dict[str, Any]]:
        # A few hundred ids a query: SQLite before 3.32 allows 999 parameters (and JSON, which
        # would take them in one, is optional before 3.38).
        ids = sorted(set(thread_ids))
        rows: builtins.list[dict[str, Any]] = []
        for start in range(0, len(ids), _IDS_A_QUERY):
            chunk = ids[start : start + _IDS_A_QUERY]
            marks = ", ".join("?" * len(chunk))
            rows += self._rows(
                _LISTED_COLUMNS,
                f"{self._leases.listing} WHERE thread_id IN ({marks})",
                chunk,
            )
        rows.sort(key=_recent_first)
        return rows

    def count(self) -> int:
        """How many threads there are (the list may show only the most recent)."""
        with self._lock:
            (count,) = self._conn.execute("SELECT count(*) FROM threads").fetchone()
        return int(count)

    def with_status(self, status: ThreadStatus) -> builtins.list[ThreadInfo]:
        """Threads in `status` ("answering": their last turn has not ended, running elsewhere
        or its process died), the one left alone longest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT * FROM threads WHERE status = ? ORDER BY touched", (status,)
            ).fetchall()
        return [_info(row) for row in rows]

    def append_line(
        self, thread_id: str, role: Role, text: str, agent: str | None = None
    ) -> ChatLine:
        """Add a line to the transcript; the first customer line also titles the thread."""
        validate_thread_id(thread_id)
        if role not in ROLES:
            raise ValueError(f"Unknown role {role!r}; known: {', '.join(ROLES)}")
        with self._lock, self._transaction() as conn:
            return self._append(conn, thread_id, role, text, agent, utc_timestamp())

    def _append(
        self,
        conn: Connection,
        thread_id: str,
        role: Role,
        text: str,
        agent: str | None,
        ts: str,
        opening: bool = False,
    ) -> ChatLine:
        """The line added (and the thread touched; with `opening`, its turn counted and its
        status "answering", in the same statement)."""
        text, touched = self._touch_for_line(conn, thread_id, role, text, ts, opening)
        if not touched.rowcount:
            raise ValueError(f"Unknown thread {thread_id!r}: start it first.")
        line_id = self._dialect.inserted_id(
            conn,
            "INSERT INTO lines (thread_id, ts, role, text, agent) VALUES (?, ?, ?, ?, ?)",
            (thread_id, ts, role, text, agent),
        )
        return ChatLine(line_id, thread_id, ts, role, text, agent)

    def lines(self, thread_id: str, *, limit: int | None = None) -> builtins.list[ChatLine]:
        """The transcript oldest first; with `limit`, only the last `limit` lines."""
        validate_thread_id(thread_id)
        with self._lock:
            rows = self._rows(
                _LINE_COLUMNS,
                "SELECT * FROM lines WHERE thread_id = ? ORDER BY id DESC LIMIT ?",
                (thread_id, self._dialect.no_limit if limit is None else max(limit, 0)),
            )
        rows.sort(key=lambda row: int(row["id"]))
        return [_line(r) for r in rows]

    def last_line(self, thread_id: str, role: Role) -> ChatLine | None:
        """The newest line of `role` in the transcript, however long ago it was written."""
        validate_thread_id(thread_id)
        with self._lock:
            r = self._conn.execute(
                "SELECT * FROM lines WHERE thread_id = ? AND role = ? ORDER BY id DESC LIMIT 1",
                (thread_id, role),
            ).fetchone()
        return _line(r) if r else None

    def save_draft(self, thread_id: str | None, text: str) -> None:
        """Keep what was typed in `thread_id` and not sent (blank: forget it); None: in a new
        conversation nobody has written in yet (the next one takes it). Redacted like every
        line stored: a key pasted into the box is not kept."""
        key = _draft_key(thread_id)
        text = redact(storable_text(text))
        with self._lock, self._transaction() as conn:
            if text.strip():
                conn.execute(
                    "INSERT INTO drafts VALUES (?, ?, ?) ON CONFLICT (thread_id)"
                    " DO UPDATE SET text = excluded.text, saved_at = excluded.saved_at",
                    (key, text, utc_timestamp()),
                )
            else:
                conn.execute("DELETE FROM drafts WHERE thread_id = ?", (key,))

    def draft(self, thread_id: str | None) -> str:
        """What was typed in `thread_id` (None: a new conversation) and not sent, or ""."""
        key = _draft_key(thread_id)
        with self._lock:
            row = self._conn.execute(
                "SELECT text FROM drafts WHERE thread_id = ?", (key,)
            ).fetchone()
        return str(row["text"]) if row else ""

    def drafted(self) -> set[str]:
        """The threads with a draft kept (a new conversation's is none of them)."""
        with self._lock:
            rows = self._conn.execute("SELECT thread_id FROM drafts WHERE thread_id != ''")
            return {str(row["thread_id"]) for row in rows}


def _draft_key(thread_id: str | None) -> str:
    # A new conversation's id is made afresh each time the app starts: its draft is kept
    # under "", which no thread id can be.
    return "" if thread_id is None else validate_thread_id(thread_id)


def _line(r: Any) -> ChatLine:
    return ChatLine(r["id"], r["thread_id"], r["ts"], r["role"], r["text"], r["agent"])


def _recent_first(row: Mapping[str, Any]) -> int:
    return -int(row["touched"])


def _listed(row: Mapping[str, Any]) -> ThreadInfo:
    """A thread as a list shows it: answering only while a live process holds its turn."""
    info = _info(row)
    if info.status == "answering" and not lease_alive(
        row["lease_host"], row["lease_pid"], row["lease_expires"]
    ):
        return replace(info, status="cut_off")
    return info


@dataclass(frozen=True)
class RegistryWrite:
    """One write of `ThreadRegistry.write_together`: the name of the method it does
    ("open_turn", "append_line", "escalate", "update"), its arguments in order, and when it
    was said (ISO-8601 UTC)."""

    op: str
    args: tuple[Any, ...]
    ts: str


def _check_update(thread_id: str, active_agent: str | None, status: str | None) -> None:
    validate_thread_id(thread_id)
    if active_agent is not None and active_agent not in AGENTS:
        raise ValueError(f"Unknown agent {active_agent!r}; known: {', '.join(AGENTS)}")
    if status is not None and status not in THREAD_STATUSES:
        raise ValueError(f"Unknown status {status!r}; known: {', '.join(THREAD_STATUSES)}")


def _check_write(write: RegistryWrite) -> None:
    """What the write's own method refuses before it writes (ValueError)."""
    if write.op == "update":
        _check_update(*write.args)
        return
    if write.op not in ("open_turn", "append_line", "escalate"):
        raise ValueError(f"Unknown registry write {write.op!r}")
    validate_thread_id(write.args[0])
    if write.op == "append_line" and write.args[1] not in ROLES:
        raise ValueError(f"Unknown role {write.args[1]!r}; known: {', '.join(ROLES)}")


def _info(row: Any) -> ThreadInfo:
    return ThreadInfo(
        thread_id=row["thread_id"],
        customer=row["customer"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        active_agent=row["active_agent"],
        status=cast(ThreadStatus, row["status"]),
        turns=row["turns"],
    )
