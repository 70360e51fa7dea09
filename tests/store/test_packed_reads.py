"""Reads packed into one row (sqlite_store.fetch_packed): the same values as row by row, and
every column of the tables they read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agents.audit import log as audit_log
from agents.audit.log import AuditLog
from agents.store import threads as thread_registry
from agents.store.sqlite import fetch_packed
from agents.store.threads import ThreadRegistry

AWKWARD_TEXT = [
    'quotes " and \\\\ backslashes',
    "line\nbreaks\tand tabs\r\n",
    "control \x00\x01\x1b[31m characters",
    "Łukasz 注文の詳細 🙂",
    "",
]


def test_packed_rows_hold_the_values_row_by_row_reads_return() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT, n INTEGER, x REAL)")
    values = [
        (1, text, n, x)
        for text, n, x in zip(
            [*AWKWARD_TEXT, None],
            [0, -1, 2**63 - 1, -(2**63), 2**53 + 1, None],
            [0.1, 1e300, -2.5, 89.99, None, 3.0],
            strict=True,
        )
    ]
    rows = [(index, *row[1:]) for index, row in enumerate(values, start=1)]
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    packed = fetch_packed(conn, ("id", "text", "n", "x"), "SELECT * FROM t ORDER BY id")
    packed.sort(key=lambda row: row["id"])
    assert [(r["id"], r["text"], r["n"], r["x"]) for r in packed] == rows
    assert fetch_packed(conn, ("id",), "SELECT * FROM t WHERE id < 0") == []


def test_a_blob_where_text_belongs_reads_as_its_literal_not_as_a_failed_list(
    tmp_path: Path,
) -> None:
    """Bytes another program wrote into a conversation's title: the list still reads."""
    registry = ThreadRegistry(tmp_path / "threads.sqlite")
    registry.open_turn("t1", customer="Alex", message="Where is ORD-001?")
    registry.open_turn("t2", customer="Sam", message="Where is ORD-002?")
    with sqlite3.connect(tmp_path / "threads.sqlite") as conn:
        conn.execute("UPDATE threads SET title = x'00ff' WHERE thread_id = 't1'")
    titles = {info.thread_id: info.title for info in registry.list()}
    assert titles == {"t1": "x'00FF'", "t2": "Where is ORD-002?"}
    # One thread read alone reads the same: a customer too (a `bytes` one failed a turn).
    with sqlite3.connect(tmp_path / "threads.sqlite") as conn:
        conn.execute("UPDATE threads SET customer = x'00ff' WHERE thread_id = 't1'")
    info = registry.get("t1")
    assert info is not None and (info.title, info.customer) == ("x'00FF'", "x'00FF'")


def _columns(path: Path, table: str) -> tuple[str, ...]:
    with sqlite3.connect(path) as conn:
        return tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))


@pytest.mark.parametrize(
    ("store", "table", "columns"),
    [
        (ThreadRegistry, "threads", thread_registry._THREAD_COLUMNS),
        (ThreadRegistry, "lines", thread_registry._LINE_COLUMNS),
        (AuditLog, "events", audit_log._EVENT_COLUMNS),
    ],
)
def test_packed_reads_name_every_column_of_their_table(
    tmp_path: Path, store: type[ThreadRegistry | AuditLog], table: str, columns: tuple[str, ...]
) -> None:
    path = tmp_path / "store.sqlite"
    store(path).close()
    assert columns == _columns(path, table)


def test_a_transcript_and_the_list_read_back_awkward_text_in_order(tmp_path: Path) -> None:
    with ThreadRegistry(tmp_path / "threads.sqlite") as registry:
        registry.open_turn("t-one", customer="Łukasz", message="first")
        for text in AWKWARD_TEXT:
            registry.append_line("t-one", "assistant", text, agent="order_agent")
        registry.open_turn("t-two", customer=None, message="second")
        lines = registry.lines("t-one")
        assert [line.text for line in lines] == ["first", *AWKWARD_TEXT]
        assert [line.id for line in lines] == sorted(line.id for line in lines)
        assert [line.text for line in registry.lines("t-one", limit=2)] == AWKWARD_TEXT[-2:]
        listed = registry.list()
        assert [(info.thread_id, info.customer) for info in listed] == [
            ("t-two", None),
            ("t-one", "Łukasz"),
        ]
        assert [info.thread_id for info in registry.list(matching="łukasz")] == ["t-one"]


def test_an_event_whose_detail_is_no_json_object_reads_as_it_is(tmp_path: Path) -> None:
    """Bytes another program wrote as an event's detail: the page still reads."""
    log = AuditLog(tmp_path / "audit.sqlite")
    log.append("turn_started", thread_id="t1", detail={"chars": 5})
    with sqlite3.connect(tmp_path / "audit.sqlite") as conn:
        conn.execute(
            "INSERT INTO events (ts, thread_id, agent, kind, detail) "
            "VALUES ('2026-12-01T10:00:00.000Z', 't1', NULL, 'turn_finished', x'7b7d00ff')"
        )
    details = [event.detail for event in log.page()]
    assert details == [{"unreadable": "x'7B7D00FF'"}, {"chars": 5}]
    log.close()
