"""The thread registry: conversations, their status, and a transcript that keeps everything,
in the home's SQLite file and in PostgreSQL (`heavy_backend`: `-m postgres`)."""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.store.sqlite import StorageError
from agents.store.threads import (
    THREAD_ID_PATTERN,
    ChatLine,
    Role,
    ThreadInfo,
    ThreadRegistry,
    validate_thread_id,
)
from tests.support.backends import Backend
from tests.support.postgres_cluster import Cluster
from tests.support.read_only_sqlite import make_sqlite_read_only

TS_PATTERN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


@pytest.fixture
def registry_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "threads.sqlite"


@pytest.fixture
def registry(heavy_backend: Backend, registry_path: Path) -> Iterator[ThreadRegistry]:
    with ThreadRegistry(heavy_backend.where(registry_path)) as threads:
        yield threads


@pytest.fixture
def sqlite_registry(registry_path: Path) -> Iterator[ThreadRegistry]:
    """The registry in a SQLite file, for what only that file has (its lease rows)."""
    with ThreadRegistry(registry_path) as threads:
        yield threads


@pytest.mark.parametrize("value", ["a", "T1", "alex-2025.06_10", "x" * 64, "9lives"])
def test_valid_thread_ids(value: str) -> None:
    assert validate_thread_id(value) == value
    assert re.fullmatch(THREAD_ID_PATTERN.strip("^$"), value)


@pytest.mark.parametrize(
    "value", ["", "-lead", ".hidden", "x" * 65, "with space", "a/b", "../etc", "ünï", "t\n"]
)
def test_invalid_thread_ids_are_refused_everywhere(registry: ThreadRegistry, value: str) -> None:
    with pytest.raises(ValueError, match="Invalid thread id"):
        validate_thread_id(value)
    with pytest.raises(ValueError, match="Invalid thread id"):
        registry.ensure(value, customer="Alex")
    with pytest.raises(ValueError, match="Invalid thread id"):
        registry.get(value)
    with pytest.raises(ValueError, match="Invalid thread id"):
        registry.append_line(value, "customer", "hi")
    assert registry.list() == []


def test_ensure_creates_once(registry: ThreadRegistry) -> None:
    assert registry.get("t1") is None
    info = registry.ensure("t1", customer="Alex")
    assert info == ThreadInfo(
        thread_id="t1",
        customer="Alex",
        title="",
        created_at=info.created_at,
        updated_at=info.created_at,
        active_agent="order_agent",
        status="idle",
        turns=0,
    )
    assert TS_PATTERN.fullmatch(info.created_at)
    assert registry.ensure("t1", customer="Alex") == info
    assert registry.get("t1") == info
    assert info.to_json() == {
        "thread_id": "t1",
        "customer": "Alex",
        "title": "",
        "created_at": info.created_at,
        "updated_at": info.created_at,
        "active_agent": "order_agent",
        "status": "idle",
        "turns": 0,
    }


def test_customer_is_never_overwritten_with_none(registry: ThreadRegistry) -> None:
    registry.ensure("t1", customer="Alex")
    assert registry.ensure("t1", customer=None).customer == "Alex"
    assert registry.ensure("t1", customer="   ").customer == "Alex"
    assert registry.ensure("t1", customer="Sam").customer == "Sam"
    assert registry.ensure("t2", customer=None).customer is None
    assert registry.ensure("t2", customer="Jordan").customer == "Jordan"


def test_update_changes_only_what_is_given(registry: ThreadRegistry) -> None:
    registry.ensure("t1", customer="Alex")
    info = registry.update("t1", active_agent="refund_agent")
    assert (info.active_agent, info.status, info.title) == ("refund_agent", "idle", "")
    info = registry.update("t1", status="awaiting_approval")
    assert (info.active_agent, info.status) == ("refund_agent", "awaiting_approval")
    info = registry.update("t1", status="idle")
    assert (info.status, info.turns, info.customer) == ("idle", 0, "Alex")
    assert info.updated_at >= info.created_at


def test_threads_in_a_status_come_the_one_left_alone_longest_first(
    registry: ThreadRegistry,
) -> None:
    for thread_id in ("t1", "t2", "t3"):
        registry.ensure(thread_id, customer=None)
        registry.update(thread_id, status="awaiting_approval")
    registry.update("t1", active_agent="refund_agent")  # t1 changed last
    registry.update("t2", status="idle")
    assert [info.thread_id for info in registry.with_status("awaiting_approval")] == ["t3", "t1"]


def test_open_turn_starts_a_turn_with_its_message(registry: ThreadRegistry) -> None:
    said = registry.open_turn("t1", customer="Alex", message="Where is ORD-001?")
    info = registry.get("t1")
    assert info is not None
    assert (info.customer, info.status, info.turns, info.title) == (
        "Alex",
        "answering",
        1,
        "Where is ORD-001?",
    )
    assert registry.lines("t1") == [said]
    assert (said.role, said.text, said.agent) == ("customer", "Where is ORD-001?", None)
    registry.update("t1", active_agent="refund_agent", status="idle")
    registry.open_turn("t1", customer=None, message="and a refund?")
    info = registry.get("t1")
    assert info is not None
    assert (info.customer, info.status, info.turns, info.active_agent) == (
        "Alex",
        "answering",
        2,
        "refund_agent",
    )


def test_open_turn_records_all_or_nothing(
    registry: ThreadRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.open_turn("t1", customer="Alex", message="first")
    registry.update("t1", status="idle")

    def full_disk(*args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(registry, "_append", full_disk)
    for thread_id in ("t1", "t2"):
        with pytest.raises(sqlite3.OperationalError):
            registry.open_turn(thread_id, customer="Sam", message="second")
    # Neither a new thread without its message, nor an old one answering a message it lacks.
    assert registry.get("t2") is None
    info = registry.get("t1")
    assert info is not None and (info.status, info.turns, info.customer) == ("idle", 1, "Alex")
    assert [line.text for line in registry.lines("t1")] == ["first"]


def test_a_draft_is_kept_until_sent_or_cleared(heavy_backend: Backend, registry_path: Path) -> None:
    with ThreadRegistry(heavy_backend.where(registry_path)) as registry:
        assert registry.draft("t1") == ""
        registry.save_draft("t1", "Where is ORD-00")  # a thread not started yet
        registry.save_draft("t2", "for Sam")
        registry.save_draft("t1", "Where is ORD-001?")
    with ThreadRegistry(heavy_backend.where(registry_path)) as registry:  # across quitting
        assert (registry.draft("t1"), registry.draft("t2")) == ("Where is ORD-001?", "for Sam")
        registry.open_turn("t1", customer="Alex", message="Where is ORD-001?")
        assert registry.draft("t1") == ""  # sent: no longer a draft
        registry.save_draft("t2", "  \n ")
        assert registry.draft("t2") == ""
        registry.save_draft("t3", "my key is sk-" + "a1b2c3d4" * 4)
        assert "a1b2c3d4" not in registry.draft("t3")  # never stored
        # A new conversation's (its id is made afresh at each start): apart from every thread.
        registry.save_draft(None, "typed before any message")
        assert registry.draft(None) == "typed before any message"
        with pytest.raises(ValueError, match="Invalid thread id"):
            registry.draft("")
        registry.save_draft(None, "")
        assert registry.draft(None) == ""


def test_update_refuses_unknown_things(registry: ThreadRegistry) -> None:
    with pytest.raises(ValueError, match="Unknown thread 'ghost'"):
        registry.update("ghost", status="idle")
    registry.ensure("t1", customer=None)
    with pytest.raises(ValueError, match="Unknown agent"):
        registry.update("t1", active_agent="supervisor")
    with pytest.raises(ValueError, match="Unknown status"):
        registry.update("t1", status="done")  # type: ignore[arg-type]
    info = registry.get("t1")
    assert info is not None and (info.active_agent, info.status) == ("order_agent", "idle")


def test_title_comes_from_the_first_customer_message(registry: ThreadRegistry) -> None:
    registry.ensure("t1", customer="Alex")
    registry.append_line("t1", "note", "Thread opened")
    registry.append_line("t1", "assistant", "Hello! How can I help?", agent="order_agent")
    assert registry.get("t1").title == ""  # type: ignore[union-attr]
    long = "My   headphones\narrived broken and I would like my money back please, order ORD-001"
    registry.append_line("t1", "customer", long)
    title = registry.get("t1").title  # type: ignore[union-attr]
    assert len(title) == 60
    assert title.startswith("My headphones arrived broken") and title.endswith("…")
    registry.open_turn("t1", customer=None, message="second message")
    assert registry.get("t1").title == title  # type: ignore[union-attr]

    registry.open_turn("t2", customer=None, message="  Where is ORD-002?  ")
    assert registry.get("t2").title == "Where is ORD-002?"  # type: ignore[union-attr]


def test_list_is_most_recently_updated_first(registry: ThreadRegistry) -> None:
    for thread in ["a", "b", "c"]:
        registry.ensure(thread, customer=None)
    assert [t.thread_id for t in registry.list()] == ["c", "b", "a"]
    registry.update("a", status="idle")
    assert [t.thread_id for t in registry.list()] == ["a", "c", "b"]
    registry.append_line("b", "customer", "hello")
    assert [t.thread_id for t in registry.list()] == ["b", "a", "c"]
    registry.ensure("a", customer=None)  # nothing changed: not "updated"
    assert [t.thread_id for t in registry.list(limit=2)] == ["b", "a"]
    assert [t.thread_id for t in registry.list(limit=None)] == ["b", "a", "c"]


def test_list_matching_searches_every_thread_in_any_case(registry: ThreadRegistry) -> None:
    registry.ensure("t-old", customer="Łukasz")
    for number in range(5):
        registry.ensure(f"t-{number}", customer="Sam")
    registry.append_line("t-3", "customer", "My ŁUKASZ-branded lamp")
    # Matched by customer, title, id or agent, and the limit counts matches only.
    assert [t.thread_id for t in registry.list(limit=2, matching=" łukasz ")] == ["t-3", "t-old"]
    assert [t.thread_id for t in registry.list(limit=1, matching="łUKASZ")] == ["t-3"]
    assert [t.thread_id for t in registry.list(matching="T-OLD")] == ["t-old"]
    assert len(registry.list(matching="order agent")) == 6
    assert registry.list(matching="nobody") == []


def test_list_among_ids_reads_those_threads_of_the_whole_registry(
    registry: ThreadRegistry,
) -> None:
    """The conversation list's views (escalated, with a draft) name their threads by id: found
    however old, the most recent first, an id of no thread (a draft of a conversation never
    started) left out; more ids than SQLite takes in one query too."""
    count = 1200
    for number in range(count):
        registry.ensure(f"t-{number:04d}", customer="Łukasz" if number == 3 else "Sam")
    registry.append_line("t-0002", "customer", "hello")  # now the most recent
    among = {"t-0003", "t-0002", "t-1100", "never-started"}
    assert [t.thread_id for t in registry.list(limit=None, among=among)] == [
        "t-0002",
        "t-1100",
        "t-0003",
    ]
    assert [t.thread_id for t in registry.list(limit=2, among=among)] == ["t-0002", "t-1100"]
    assert [t.thread_id for t in registry.list(matching="łukasz", among=among)] == ["t-0003"]
    assert registry.list(among=set()) == []
    everyone = {f"t-{number:04d}" for number in range(count)}
    assert len(registry.list(limit=None, among=everyone)) == count
    assert registry.count() == count


def test_count_counts_every_thread(registry: ThreadRegistry) -> None:
    assert registry.count() == 0
    registry.ensure("a", customer=None)
    registry.save_draft("never-started", "hi")  # a draft is no thread
    assert registry.count() == 1


def test_transcript_keeps_order_and_every_character(registry: ThreadRegistry) -> None:
    registry.ensure("t1", customer="Alex")
    registry.ensure("t2", customer="Sam")
    texts: list[tuple[Role, str, str | None]] = [
        ("customer", "Где мой заказ? [bold]ORD-001[/bold] 100% _now_", None),
        ("assistant", "订单 ORD-001 已送达。", "order_agent"),
        ("note", "Handed to refund_agent", None),
        ("customer", "x" * 100_000, None),
    ]
    written = [registry.append_line("t1", role, text, agent) for role, text, agent in texts]
    registry.append_line("t2", "customer", "other thread")
    lines = registry.lines("t1")
    assert lines == written
    assert [(line.role, line.text, line.agent) for line in lines] == texts
    assert [line.id for line in lines] == sorted(line.id for line in lines)
    assert registry.lines("t1", limit=2) == written[-2:]
    assert registry.lines("t1", limit=0) == []
    assert registry.lines("never") == []
    assert dataclasses.asdict(lines[1]) == {
        "id": lines[1].id,
        "thread_id": "t1",
        "ts": lines[1].ts,
        "role": "assistant",
        "text": "订单 ORD-001 已送达。",
        "agent": "order_agent",
    }
    assert isinstance(lines[0], ChatLine) and TS_PATTERN.fullmatch(lines[0].ts)


def test_lone_surrogates_are_stored_not_crashed(registry: ThreadRegistry) -> None:
    registry.ensure("t1", customer=None)
    line = registry.append_line("t1", "customer", "broken \ud83d paste")
    assert registry.lines("t1") == [line]
    assert line.text == "broken \ufffd paste"


def test_append_line_needs_a_started_thread_and_a_known_role(registry: ThreadRegistry) -> None:
    with pytest.raises(ValueError, match="Unknown thread 'ghost'"):
        registry.append_line("ghost", "customer", "hi")
    registry.ensure("t1", customer=None)
    with pytest.raises(ValueError, match="Unknown role"):
        registry.append_line("t1", "system", "hi")  # type: ignore[arg-type]
    assert registry.lines("t1") == []


def test_data_survives_reopening(heavy_backend: Backend, registry_path: Path) -> None:
    with ThreadRegistry(heavy_backend.where(registry_path)) as first:
        first.open_turn("t1", customer="Alex", message="hello")
        first.update("t1", status="error")
    with ThreadRegistry(heavy_backend.where(registry_path)) as second:
        info = second.get("t1")
        assert info is not None and (info.status, info.turns, info.title) == ("error", 1, "hello")
        assert [line.text for line in second.lines("t1")] == ["hello"]


def test_damaged_file_names_the_file(registry_path: Path) -> None:
    registry_path.parent.mkdir(parents=True)
    registry_path.write_bytes(b"not sqlite " * 400)
    with pytest.raises(StorageError, match=re.escape(str(registry_path))):
        ThreadRegistry(registry_path)


def test_read_only_file_is_named_when_a_write_is_refused(
    registry_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ThreadRegistry(registry_path) as first:
        first.ensure("t1", customer="Alex")
    make_sqlite_read_only(monkeypatch, registry_path.parent)
    # SQLite opens a read-only file without complaint; the first write is refused.
    with ThreadRegistry(registry_path) as read_only:
        assert read_only.get("t1") is not None
        named = rf"^Cannot write to {re.escape(str(registry_path))} "
        with pytest.raises(StorageError, match=named):
            read_only.claim_turn("t1", "me")
        with pytest.raises(StorageError, match="readonly database"):
            read_only.ensure("t2", customer=None)
        assert [info.thread_id for info in read_only.list()] == ["t1"]


def test_unencodable_customer_and_title_are_stored_not_half_made(registry: ThreadRegistry) -> None:
    # Callers vet names and messages first; the registry still never meets a lone surrogate
    # with a failed INSERT (a thread created by ensure() and never titled).
    info = registry.ensure("t1", customer="Sam\udcff")
    assert info.customer == "Sam\ufffd"
    registry.open_turn("t1", customer=None, message="Where is ORD-002 \udcff")
    info = registry.get("t1")
    assert info is not None and (info.title, info.turns) == ("Where is ORD-002 \ufffd", 1)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_lease_of_a_process_that_ended_unreaped_is_taken_over(
    sqlite_registry: ThreadRegistry,
) -> None:
    registry = sqlite_registry
    registry.ensure("z1", customer=None)
    # A `shopbot chat` that ended (killed) while its parent, say a supervisor, has not
    # reaped it yet: it still answers kill(pid, 0).
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stat = Path(f"/proc/{child.pid}/stat")
        deadline = time.monotonic() + 30
        while stat.read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never ended"
            time.sleep(0.01)
        with registry._lock, registry._conn:  # its lease, as that process left it
            registry._conn.execute(
                "INSERT INTO turn_leases VALUES (?, ?, ?, ?, ?)",
                ("z1", socket.gethostname(), child.pid, "gone", time.time() + 600),
            )
        assert registry.claim_turn("z1", "me")
    finally:
        child.wait()
    # A live process's lease is still respected.
    registry.release_turn("z1", "me")
    assert registry.claim_turn("z1", "here")
    with registry._lock, registry._conn:
        registry._conn.execute(
            "UPDATE turn_leases SET pid = ?, owner = 'live' WHERE thread_id = 'z1'",
            (os.getpid(),),
        )
    assert not registry.claim_turn("z1", "me")


def test_a_turn_held_elsewhere_is_told_only_while_its_lease_is_live(
    sqlite_registry: ThreadRegistry,
) -> None:
    registry = sqlite_registry
    registry.ensure("h1", customer=None)
    assert not registry.turn_held_elsewhere("h1", "me")  # no lease
    assert registry.claim_turn("h1", "me")
    assert not registry.turn_held_elsewhere("h1", "me")  # mine
    assert registry.turn_held_elsewhere("h1", "window-2")
    with registry._lock, registry._conn:  # expired: as good as gone
        registry._conn.execute("UPDATE turn_leases SET expires_at = 0 WHERE thread_id = 'h1'")
    assert not registry.turn_held_elsewhere("h1", "window-2")
    registry.release_turn("h1", "me")
    assert not registry.turn_held_elsewhere("h1", "window-2")


def test_a_line_holding_a_key_is_stored_redacted(registry: ThreadRegistry) -> None:
    # Every source redacts what it says first; the transcript catches one that forgot.
    registry.ensure("t-key", customer="Alex")
    line = registry.append_line("t-key", "note", "failed: Authorization: Bearer abc123def456ghi")
    assert line.text == "failed: Authorization: [REDACTED]"
    assert [stored.text for stored in registry.lines("t-key")] == [line.text]


def test_a_postgres_turn_lease_is_an_advisory_lock_that_ends_with_its_session(
    postgres_cluster: Cluster, postgres_url: str, tmp_path: Path
) -> None:
    where = Backend("postgres", tmp_path, postgres_url).where()
    dbname = postgres_url.rsplit("/", 1)[1]
    with ThreadRegistry(where) as one, ThreadRegistry(where) as two:
        one.ensure("l1", customer=None)
        assert one.claim_turn("l1", "first")
        assert not two.claim_turn("l1", "second")
        assert two.turn_holder("l1", "second") == (socket.gethostname(), os.getpid())
        with postgres_cluster.admin() as admin:
            # The lease is the server's lock, held by one session, whatever the rows say.
            holders = admin.execute(
                "SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
                " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = %s",
                (dbname,),
            ).fetchall()
            assert len(holders) == 1
            # Its process dies without a word (killed, its machine gone): the session ends.
            admin.execute("SELECT pg_terminate_backend(%s)", holders[0])
        # (The server takes a moment to end the session; it then frees its locks.)
        deadline = time.monotonic() + 10
        while not two.claim_turn("l1", "second") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert two.turn_holder("l1", "first") == (socket.gethostname(), os.getpid())
        assert not one.renew_turn("l1", "first")  # its holder learns that it lost it
        assert not one.claim_turn("l1", "first")
        two.release_turn("l1", "second")
        assert one.claim_turn("l1", "first")


def test_a_postgres_lease_row_is_committed_without_waiting_for_the_disk(
    postgres_cluster: Cluster, postgres_url: str, tmp_path: Path
) -> None:
    """The lease is the advisory lock; its row only names the holder, so its commits (two a
    turn) do not wait for a flush. The stores' own sessions keep the server's durability."""
    where = Backend("postgres", tmp_path, postgres_url).where()
    with ThreadRegistry(where) as registry:
        registry.ensure("l2", customer=None)
        assert registry.claim_turn("l2", "first")
        sessions = registry._leases._held  # type: ignore[attr-defined]
        (lease_session,) = sessions.values()
        assert lease_session.execute("SHOW synchronous_commit").fetchone()[0] == "off"
        store_session = registry._conn.raw  # type: ignore[attr-defined]
        assert store_session.execute("SHOW synchronous_commit").fetchone()[0] != "off"
        registry.release_turn("l2", "first")
