"""A home's one database: made in a brand-new folder, refused by name when the home held data
that is gone, never another home's; and a home of four files moved into it with nothing lost."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.store.home import (
    DATABASE_FILE,
    MARKER_FILE,
    checked_home,
    database_path,
    forget_checked,
)
from agents.store.sqlite import StorageError
from tests.support.engine import decide, open_engine, say
from tests.support.legacy_home import LEGACY_TABLES, split_into_legacy_files

REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"


@pytest.fixture(autouse=True)
def fresh_checks() -> Iterator[None]:
    forget_checked()
    yield
    forget_checked()


def test_a_brand_new_folder_gets_a_database_and_its_marker(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    path = checked_home(home)
    assert path == database_path(home) == home / DATABASE_FILE and path.exists()
    marker = json.loads((home / MARKER_FILE).read_text(encoding="utf-8"))
    assert marker["database"] == DATABASE_FILE
    with sqlite3.connect(path) as conn:
        (home_id,) = conn.execute("SELECT value FROM meta WHERE key = 'home_id'").fetchone()
    conn.close()
    assert marker["home_id"] == home_id
    forget_checked()
    assert checked_home(home) == path  # and again, as it is


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_database_lost_from_a_home_that_held_data_is_refused_and_nothing_is_made(
    tmp_path: Path, how: str
) -> None:
    path = checked_home(tmp_path)
    for side in ("-wal", "-shm"):
        path.with_name(path.name + side).unlink(missing_ok=True)
    if how == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"")
    forget_checked()
    with pytest.raises(StorageError) as refused:
        checked_home(tmp_path)
    said = str(refused.value)
    state = "is missing" if how == "deleted" else "is empty (0 bytes)"
    assert f"The ShopBot database at {path} {state}" in said
    assert "Nothing was created or changed" in said and f"mv '{tmp_path}'" in said
    assert path.exists() == (how == "emptied") and not path.with_name(path.name + "-wal").exists()


def test_another_homes_database_is_refused(tmp_path: Path) -> None:
    mine, theirs = checked_home(tmp_path / "mine"), checked_home(tmp_path / "theirs")
    mine.unlink()
    theirs.rename(mine)
    forget_checked()
    with pytest.raises(StorageError, match="belongs to another ShopBot home"):
        checked_home(tmp_path / "mine")


def test_a_database_without_its_marker_is_adopted(tmp_path: Path) -> None:
    checked_home(tmp_path)
    (tmp_path / MARKER_FILE).unlink()
    forget_checked()
    checked_home(tmp_path)
    assert (tmp_path / MARKER_FILE).exists()


def test_a_marker_not_shopbots_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / MARKER_FILE).write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(StorageError, match="is not one ShopBot wrote"):
        checked_home(tmp_path)
    assert (tmp_path / MARKER_FILE).read_text(encoding="utf-8") == "[1, 2]"
    assert not (tmp_path / DATABASE_FILE).exists()


async def test_a_home_of_four_files_is_moved_in_with_nothing_lost(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "done", "Where is ORD-002?", "Sam")
        asked = await say(engine, "waits", REFUND, "Sam")
        assert asked.result.pending is not None
        engine.save_draft("done", "a draft kept")
    rows = split_into_legacy_files(tmp_path)
    assert rows["events"] > 10 and rows["checkpoints"] > 0 and rows["lines"] > 0
    assert not (tmp_path / DATABASE_FILE).exists()
    forget_checked()
    async with open_engine(tmp_path) as engine:
        path = database_path(tmp_path)
        with sqlite3.connect(path) as conn:
            for table, count in rows.items():
                if table in ("turn_leases", "meta"):
                    continue  # (processes of before the move; the move's own notes)
                (now,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
                assert now == count, table
        conn.close()
        # The decision that waited still waits, and pays once; the rest is there as it was.
        pending = await engine.pending_approval("waits")
        assert pending is not None and pending.payload["order_id"] == "ORD-005"
        assert engine.draft("done") == "a draft kept"
        done = await decide(engine, "waits", "approve")
        assert done.result.status == "done"
        assert [r.order_id for r in engine.shop.refunds()] == ["ORD-005"]
        # The audit index was moved with it: a search finds the events of before.
        from agents.audit.log import AuditQuery

        assert engine.audit.count(AuditQuery(text="ORD-002")) > 0
    for file in LEGACY_TABLES:
        assert not (tmp_path / file).exists() and (tmp_path / f"{file}.migrated").exists()
    assert (tmp_path / MARKER_FILE).exists()


def listing(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


@pytest.mark.parametrize("lost", sorted(LEGACY_TABLES))
async def test_a_home_of_four_files_missing_one_is_refused_by_name(
    tmp_path: Path, lost: str
) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "waits", REFUND, "Sam")
    split_into_legacy_files(tmp_path)
    (tmp_path / lost).unlink()
    before = listing(tmp_path)
    forget_checked()
    with pytest.raises(StorageError) as refused:
        checked_home(tmp_path)
    said = str(refused.value)
    assert f"({tmp_path / lost})" in said and "Nothing was created or changed" in said
    assert listing(tmp_path) == before
