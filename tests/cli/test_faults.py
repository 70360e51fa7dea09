"""Faults never cost money or data, through the `shopbot` command as a person runs it: an
approved refund the ledger cannot take stays pending (and pays once later), never a reply
that says a colleague will follow up while nobody does."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.store import sqlite as sqlite_store
from agents.store.home import forget_checked
from agents.store.shop import ShopData
from shopbot_tui.cli.main import main
from tests.cli.conftest import audit_events, one_line, run_json
from tests.support.held_lock import locked_at_payment
from tests.support.hung_turn import killed_mid_turn
from tests.support.small_disk import fill, small_disk

REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"


def refunds(home: Path) -> list[str]:
    with ShopData(home / "shopbot.sqlite") as shop:
        return [record.order_id for record in shop.refunds()]


@pytest.fixture
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock held past the busy timeout, without waiting the real 10 s for it."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 300)


@pytest.fixture
def asked(home: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Path]:
    """Sam asked for a refund of ORD-005; the approval waits."""
    code, said, _ = run_json(capsys, "chat", "r1", REFUND, "--customer", "Sam", "--offline")
    assert code == 0 and said["status"] == "awaiting_approval", said
    yield home


@pytest.mark.usefixtures("short_waits")
def test_an_approval_the_ledger_cannot_take_stays_pending_and_pays_once_later(
    asked: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with locked_at_payment(monkeypatch) as tried:
        code, said, err = run_json(capsys, "resume", "r1", "approve", "--offline")
    assert tried, "the payment was never tried"
    # Not "done" with a reply promising a colleague: the command fails, and says why.
    assert code == 2, said
    assert said["status"] == "error"
    line = one_line(err)
    assert "ORD-005" in line and "locked by another program" in line, line
    assert "nothing was paid" in line and "pending again" in line, line
    # The decision was not used up: the same refund waits, and nothing moved.
    assert said["pending"]["kind"] == "refund_approval"
    assert said["pending"]["order_id"] == "ORD-005"
    assert refunds(asked) == []
    kinds = [event["kind"] for event in audit_events(capsys, "r1")]
    assert "refund_failed" in kinds and "refund_processed" not in kinds
    failed = next(e for e in audit_events(capsys, "r1") if e["kind"] == "refund_failed")
    assert failed["detail"]["outcome"] == "pending again"
    assert main(["threads", "--only", "waiting"]) == 0
    assert "r1" in capsys.readouterr().out
    # Once the other program lets go, the next approval pays, exactly once.
    code, said, _ = run_json(capsys, "resume", "r1", "approve", "--offline")
    assert code == 0 and said["status"] == "done", said
    assert refunds(asked) == ["ORD-005"]
    code, said, err = run_json(capsys, "resume", "r1", "approve", "--offline")
    assert code == 2 and "no decision pending" in err
    assert refunds(asked) == ["ORD-005"]
    kinds = [event["kind"] for event in audit_events(capsys, "r1")]
    assert kinds.count("refund_processed") == 1


@pytest.mark.usefixtures("short_waits")
def test_the_decision_taken_after_a_failed_payment_is_the_one_that_counts(
    asked: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph keeps the answer of a node that failed and hands it to the node again on
    the next resume: a "reject" after a failed "approve" would have paid."""
    with locked_at_payment(monkeypatch):
        code, _, _ = run_json(capsys, "resume", "r1", "approve", "--offline")
    assert code == 2
    code, said, _ = run_json(capsys, "resume", "r1", "reject", "--offline")
    assert code == 0 and said["status"] == "done", said
    assert refunds(asked) == []
    decided = [
        e["detail"]["decision"]
        for e in audit_events(capsys, "r1")
        if e["kind"] == "approval_decided"
    ]
    assert decided == ["approve", "reject"]


def test_a_ledger_damaged_past_its_first_page_decides_nothing(
    asked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shop = asked / "shopbot.sqlite"
    with sqlite3.connect(shop) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = [
            row[0]
            for row in conn.execute(
                "SELECT rootpage FROM sqlite_master WHERE tbl_name = 'refunds' AND rootpage > 1"
            )
        ]
    conn.close()
    sound = shop.read_bytes()
    page_size = 4096
    damaged = bytearray(sound)
    for page in pages:
        start = (page - 1) * page_size
        damaged[start : start + page_size] = b"\xa5" * page_size
    shop.write_bytes(bytes(damaged))
    code, said, err = run_json(capsys, "resume", "r1", "approve", "--offline")
    assert code == 2, said
    line = one_line(err)
    assert "damaged" in line and str(shop) in line, line
    # (What waits cannot be read with the ledger: the listing says it still does.)
    assert main(["threads", "--only", "waiting"]) == 0
    assert "r1" in capsys.readouterr().out
    # The file put back as it was, the approval pays once.
    shop.write_bytes(sound)
    code, said, _ = run_json(capsys, "resume", "r1", "approve", "--offline")
    assert code == 0 and said["status"] == "done", said
    assert refunds(asked) == ["ORD-005"]


def test_a_turn_whose_process_was_killed_is_listed_as_cut_off(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    killed_mid_turn(home, "k1")
    assert main(["threads", "--json"]) == 0
    (listed,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert listed["thread_id"] == "k1" and listed["status"] == "cut_off", listed
    assert main(["threads"]) == 0
    assert capsys.readouterr().out.split("\t")[1] == "cut_off"
    # The conversation carries on: the next message closes the cut-off turn first.
    code, said, _ = run_json(capsys, "chat", "k1", "Where is ORD-005?", "--offline")
    assert code == 0 and said["status"] == "done", said
    assert main(["threads", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "idle"


def test_a_turn_whose_process_was_killed_is_shown_as_cut_off(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`shopbot show` is what a person reads before acting on a conversation: a turn whose
    process is gone read "Status: answering" there for ever, as the list did before."""
    killed_mid_turn(home, "k1")
    assert main(["show", "k1"]) == 0
    shown = capsys.readouterr().out
    assert "answering" not in shown and "cut" in shown, shown


def test_a_full_disk_is_said_as_one_and_everything_carries_on_once_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        home = disk / "home"
        monkeypatch.setenv("SHOPBOT_HOME", str(home))
        code, said, _ = run_json(capsys, "chat", "f1", REFUND, "--customer", "Sam", "--offline")
        assert code == 0 and said["status"] == "awaiting_approval", said
        filler = fill(disk)
        for argv in (
            ["chat", "f2", "Where is ORD-002?", "--customer", "Sam", "--offline"],
            ["resume", "f1", "approve", "--offline"],
            ["threads"],
            ["audit", "--limit", "3"],
            ["show", "f1"],
        ):
            assert main(argv) == 2, argv
            line = one_line(capsys.readouterr().err)
            # A full disk by name, with the folder: never "damaged ... move the file aside".
            assert f"the disk holding {home} is full" in line, (argv, line)
            assert "damaged" not in line and "mv " not in line, (argv, line)
        filler.unlink()
        code, said, _ = run_json(capsys, "resume", "f1", "approve", "--offline")
        assert code == 0 and said["status"] == "done", said
        assert refunds(home) == ["ORD-005"]


def lose(database: Path, how: str) -> None:
    for side in ("-wal", "-shm"):
        database.with_name(database.name + side).unlink(missing_ok=True)
    if how == "deleted":
        database.unlink()
    else:
        database.write_bytes(b"")


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_lost_database_is_refused_by_every_command_and_nothing_is_made(
    asked: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    database = asked / "shopbot.sqlite"
    lose(database, how)
    forget_checked()
    for argv in (
        ["resume", "r1", "approve", "--offline"],
        ["chat", "r2", "Where is ORD-002?", "--customer", "Sam", "--offline"],
        ["threads"],
        ["audit"],
        ["show", "r1"],
        ["handled", "r1"],
    ):
        assert main(argv) == 2, argv
        line = one_line(capsys.readouterr().err)
        state = "is missing" if how == "deleted" else "is empty (0 bytes)"
        assert f"The ShopBot database at {database} {state}" in line, (argv, line)
        assert "Nothing was created or changed" in line, line
    # Left as it was found: no new, empty database in its place.
    assert database.exists() == (how == "emptied")
    assert not database.exists() or database.stat().st_size == 0


def test_a_brand_new_home_starts_with_no_questions_asked(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said, _ = run_json(
        capsys, "chat", "n1", "Where is ORD-002?", "--customer", "Sam", "--offline"
    )
    assert code == 0 and said["status"] == "done", said
    assert (home / "shopbot.sqlite").exists() and (home / "home.json").exists()
