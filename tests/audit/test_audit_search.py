"""Audit search finds what a row shows: `key=value` as printed, several terms all at once, and
whatever a person types (quotes, FTS5 operators) as text, never as an SQL error."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.audit.log import AUDIT_KINDS, AuditEvent, AuditLog, AuditQuery
from agents.audit.search import MAX_TERMS, parse_search
from agents.errors import InputError
from agents.graph.validation import GateCheck
from tests.support.backends import Backend


@pytest.fixture
def log(heavy_backend: Backend, tmp_path: Path) -> Iterator[AuditLog]:
    """The log in a SQLite file, and in PostgreSQL (`-m postgres`)."""
    with AuditLog(heavy_backend.where(tmp_path / "audit.sqlite")) as audit:
        yield audit


def _gate(ok: bool, gate: str, detail: str, order_id: str, codes: tuple[str, ...] = ()) -> Any:
    # The detail the gating node writes: the check, the attempt, what was extracted.
    check = GateCheck(gate, ok, detail, codes).to_json()
    return {**check, "attempt": 0, "extracted": {"order_id": order_id, "query_type": "status"}}


@pytest.fixture
def events(log: AuditLog) -> dict[str, AuditEvent]:
    """Events shaped like a real turn's, by name."""
    written = {
        "id_failed": ("gate_failed", _gate(False, "order_id", "bad format", "ORD-01", ("f",))),
        "id_passed": ("gate_passed", _gate(True, "order_id", "well-formed and exists", "ORD-001")),
        "owner_passed": (
            "gate_passed",
            _gate(True, "ownership", "order belongs to the customer", "ORD-001"),
        ),
        "owner_failed": (
            "gate_failed",
            _gate(False, "ownership", "not theirs", "ORD-002", ("ownership.other",)),
        ),
        "lookup": (
            "tool_called",
            {
                "tool": "lookup_order",
                "args": {"order_id": "ORD-001"},
                "result": "Order ORD-001: Wireless Headphones | Status: Delivered",
            },
        ),
        "decided": (
            "approval_decided",
            {"decision": "approve", "order_id": "ORD-004", "amount": 649.0, "note": None},
        ),
        "complaint": (
            "escalated",
            {"summary": "Customer says:\nthe stand\tarrived\r\nbroken", "sentiment": "angry"},
        ),
    }
    return {
        name: log.append(kind, thread_id=f"t-{name}", agent="refund_agent", detail=detail)
        for name, (kind, detail) in written.items()
    }


def _found(log: AuditLog, text: str) -> list[set[int]]:
    """The ids found for `text`, through the index and by testing each row (a filter that
    leaves few rows), with `count` agreeing each time."""
    results = []
    for query in (AuditQuery(text=text), AuditQuery(text=text, kinds=tuple(AUDIT_KINDS))):
        found = {event.id for event in log.page(query)}
        assert log.count(query) == len(found), text
        results.append(found)
    return results


def _names(events: dict[str, AuditEvent], ids: set[int]) -> set[str]:
    return {name for name, event in events.items() if event.id in ids}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Booleans, null, numbers and lists as the row prints them.
        ("ok=true", {"id_passed", "owner_passed"}),
        ("OK=FALSE", {"id_failed", "owner_failed"}),
        ("codes=[]", {"id_passed", "owner_passed"}),
        ('codes=["f"]', {"id_failed"}),
        ("note=null", {"decided"}),
        ("amount=649.0", {"decided"}),
        ("attempt=0 ok=false", {"id_failed", "owner_failed"}),
        # Several pairs: every one must be shown.
        ("gate=order_id ok=false", {"id_failed"}),
        ("gate=ownership ok=true", {"owner_passed"}),
        ("gate=ownership ok=true gate=order_id", set()),
        # A nested pair, as the row prints its parent (JSON) and as people type it.
        ('extracted={"order_id":"ORD-001"', {"id_passed", "owner_passed"}),
        ('args={"order_id":"ORD-001"}', {"lookup"}),
        ("order_id=ORD-001 ok=true", {"id_passed", "owner_passed"}),
        ("order_id=ORD-001", {"id_passed", "owner_passed", "lookup"}),
        ("order_id=ORD-00", {"id_passed", "owner_passed", "owner_failed", "lookup", "decided"}),
        # Values with spaces: quoted, one phrase; unquoted, each word.
        ('detail="order belongs to the customer"', {"owner_passed"}),
        ('"belongs to the customer" ok=true', {"owner_passed"}),
        ("detail=order belongs customer", {"owner_passed"}),
        ('detail="order customer"', set()),
        # A line break or tab in a value is a space on screen.
        ('"says: the stand arrived broken"', {"complaint"}),
        # Plain words mixed with pairs; thread, agent and kind are shown, so found too.
        ("ownership customer ok=true", {"owner_passed"}),
        ("gate_failed ORD-002", {"owner_failed"}),
        ("t-lookup Headphones", {"lookup"}),
        # The detail pane's JSON form, and `key: value` as the index used to hold it.
        ('"ok": true', {"id_passed", "owner_passed"}),
        ('"ok": true,', {"id_passed", "owner_passed"}),  # a line copied whole
        ('"detail": "order belongs to the customer",', {"owner_passed"}),
        ('"gate": "order_id" "ok": false', {"id_failed"}),
        ("decision: approve", {"decided"}),
        ("Status: Delivered", {"lookup"}),  # `key: value` text inside a value still matches
        ("ok: 1", set()),  # a boolean is shown as true/false, never 1/0
    ],
)
def test_a_search_finds_what_the_row_shows(
    log: AuditLog, events: dict[str, AuditEvent], text: str, expected: set[str]
) -> None:
    for found in _found(log, text):
        assert _names(events, found) == expected, text


def test_every_searched_pair_is_in_the_rows_summary(
    log: AuditLog, events: dict[str, AuditEvent]
) -> None:
    # What the table and `shopbot audit` print is what was found.
    (found, _) = _found(log, "gate=order_id ok=false")
    assert found == {events["id_failed"].id}
    summary = events["id_failed"].summary(240)
    assert "gate=order_id ok=false" in summary


def _shown(event: AuditEvent) -> str:
    return "\n".join((event.thread_id or "", event.agent or "", event.kind, event.summary(10**6)))


@pytest.mark.parametrize(
    "text",
    [
        '"',
        '"unterminated',
        'a"b',
        '""',
        '"""',
        "*",
        "ORD*",
        "-",
        "-ok=true",
        ":",
        "(",
        ")",
        "(ok=true",
        "NEAR",
        "NEAR(ok true)",
        "ok=true AND",
        "AND OR NOT",
        "ok=true OR ok=false",
        "^gate",
        "{",
        "'",
        "\\",
        "%",
        "_",
        "ok=true\x00",
        "\x00",
    ],
)
def test_search_operators_and_quotes_are_plain_text(
    log: AuditLog, events: dict[str, AuditEvent], text: str
) -> None:
    # Every word must be shown on the row, characters and all; none is an FTS5 operator.
    words = text.replace("\x00", " ").split()
    expected = {
        event.id
        for event in events.values()
        if all(word.casefold() in _shown(event).casefold() for word in words)
    }
    for found in _found(log, text):
        assert found == expected, text


def test_plain_operators_find_their_text(log: AuditLog) -> None:
    near = log.append("escalated", detail={"summary": "lives NEAR the depot AND (some-times)"})
    log.append("escalated", detail={"summary": "lives far away"})
    for text in ["NEAR", "AND (some", '"the depot AND"', "NEAR depot", "-", '"-times)"']:
        assert _found(log, text) == [{near.id}] * 2, text


def test_a_very_long_term_is_found_both_ways_and_soon(log: AuditLog) -> None:
    # A pasted detail, say: longer than SQLite takes as a LIKE pattern (50,000 bytes), and
    # repetitive, which made matching it as one FTS5 phrase take minutes.
    long = log.append("escalated", detail={"summary": "x" * 70_000 + " end"})
    log.append("escalated", detail={"summary": "x" * 100})  # the term's start, not the term
    start = time.perf_counter()
    assert _found(log, "x" * 60_000 + " end") == [{long.id}] * 2
    assert time.perf_counter() - start < 10


def test_many_terms_work_both_ways_and_too_many_are_refused_clearly(log: AuditLog) -> None:
    words = [f"{letter}{digit}" for letter in "abcdefghij" for digit in range(10)]
    assert len(words) == MAX_TERMS  # two characters each: every one tested on the row's text
    every = log.append("escalated", detail={"words": " ".join(words)})
    log.append("escalated", detail={"words": " ".join(words[1:])})
    assert _found(log, " ".join(words)) == [{every.id}] * 2
    for query in (
        AuditQuery(text=" ".join([*words, "z1"])),
        AuditQuery(text=" ".join(f"w{n}" for n in range(1500))),
    ):
        with pytest.raises(InputError, match=r"The search has [\d,]+ words; at most 100 "):
            log.page(query)


# The index trigger as ShopBot wrote it before the index held what the rows show.
_OLD_TRIGGER = """CREATE TRIGGER IF NOT EXISTS events_fts_sync AFTER INSERT ON events BEGIN
    INSERT INTO events_fts(rowid, body) VALUES (
        new.id,
        coalesce(new.thread_id, '') || char(10) || coalesce(new.agent, '') || char(10)
        || new.kind || char(10) || coalesce((
            SELECT group_concat(
                CASE WHEN typeof(key) = 'text' THEN key || ': ' ELSE '' END
                || coalesce(atom, ''), char(10))
            FROM json_tree(new.detail)), '')
    );
END"""


def _make_old_log(path: Path) -> None:
    """A log as the previous ShopBot left it: its trigger, its index, user_version 0."""
    with AuditLog(path):
        pass
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TRIGGER events_fts_sync")
        conn.execute(_OLD_TRIGGER)
        conn.execute("DELETE FROM events_fts")
        conn.execute("PRAGMA user_version = 0")
        detail = '{"gate":"order_id","ok":true,"extracted":{"order_id":"ORD-001"}}'
        conn.execute(
            "INSERT INTO events (ts, thread_id, agent, kind, detail) VALUES (?, ?, ?, ?, ?)",
            ("2025-06-10T09:00:00.000Z", "t1", "order_agent", "gate_passed", detail),
        )
    conn.close()


def test_an_older_log_is_indexed_anew_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    _make_old_log(path)
    with AuditLog(path) as log:
        assert [e.id for e in log.page(AuditQuery(text="order_id=ORD-001 ok=true"))] == [1]
        assert log.count(AuditQuery(text="ok: 1")) == 0  # the old index's text is gone
        later = log.append("gate_failed", detail={"ok": False})
        assert [e.id for e in log.page(AuditQuery(text="ok=false"))] == [later.id]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] >= 1
    conn.close()


def test_an_older_shopbot_opening_the_log_keeps_the_new_index(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    with AuditLog(path):
        pass
    # What an older ShopBot runs on open; then it appends.
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(_OLD_TRIGGER)
        conn.execute(
            "INSERT INTO events (ts, kind, detail) VALUES (?, 'gate_passed', '{\"ok\":true}')",
            ("2025-06-10T09:00:00.000Z",),
        )
    conn.close()
    with AuditLog(path) as log:
        assert [e.id for e in log.page(AuditQuery(text="ok=true"))] == [1]


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("gate=order_id ok=false", [("gate=order_id",), ("ok=false",)]),
        ('reason="it  broke"   x', [("reason=it broke",), ("x",)]),
        ('"two words"', [("two words",)]),
        ('"order_id": "ORD-1"', [("order_id=ORD-1", "order_id: ORD-1")]),
        ("Status: Delivered", [("Status=Delivered", "Status: Delivered")]),
        ("ok:", [("ok=", "ok:")]),
        ('"ok": true,', [("ok=true", "ok: true,")]),
        ('"why": "it broke",', [("why=it broke", "why: it broke")]),
        ('"two words",', [("two words",)]),
        ('"never', [('"never',)]),
        ('"order_id":"ORD-1"', [('"order_id":"ORD-1"',)]),
        ('""', [('""',)]),
        ('key=""', [("key=",)]),
        ("a\x00b", [("a",), ("b",)]),
        ("x x", [("x",)]),
        ("   ", []),
    ],
)
def test_parse_search(text: str, terms: list[tuple[str, ...]]) -> None:
    assert parse_search(text) == terms
