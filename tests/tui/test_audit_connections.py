"""The audit viewer's connections (the local backend's): one per kind of work, kept between
openings of the viewer (the backend keeps them while the app runs), closed with it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agents.audit import log as audit_log_module
from agents.audit.log import AuditLog
from agents.backend.audit_connections import AuditConnections
from agents.store.sqlite import StorageError
from shopbot_tui.audit.screen import AuditViewerScreen
from tests.support.tui import make_app, settle


class CountedLog(AuditLog):
    """An AuditLog that records its openings and closings."""

    opened: ClassVar[list[CountedLog]] = []
    closed: ClassVar[list[CountedLog]] = []

    def __init__(self, path: Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        CountedLog.opened.append(self)

    def close(self) -> None:
        super().close()
        CountedLog.closed.append(self)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[CountedLog]:
    monkeypatch.setattr(CountedLog, "opened", [])
    monkeypatch.setattr(CountedLog, "closed", [])
    monkeypatch.setattr(audit_log_module, "AuditLog", CountedLog)
    return CountedLog


def _itself(log: AuditLog) -> AuditLog:
    return log


def test_one_connection_per_role_until_closed(tmp_path: Path, counted: type[CountedLog]) -> None:
    connections = AuditConnections(tmp_path / "audit.sqlite")
    pages = connections.run("pages", _itself)
    assert connections.run("pages", _itself) is pages
    stats = connections.run("stats", _itself)
    assert stats is not pages
    assert counted.opened == [pages, stats]
    connections.close()
    assert sorted(map(id, counted.closed)) == sorted(map(id, [pages, stats]))
    with pytest.raises(sqlite3.ProgrammingError):
        pages.count()
    with pytest.raises(StorageError, match="closed"):
        connections.run("pages", _itself)
    assert len(counted.opened) == 2  # nothing opened once closed


def _broken_file(log: AuditLog) -> int:
    raise sqlite3.DatabaseError("database disk image is malformed")


def _locked_elsewhere(log: AuditLog) -> int:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    raise error


def test_a_connection_the_file_failed_under_is_replaced_on_next_use(
    tmp_path: Path, counted: type[CountedLog]
) -> None:
    connections = AuditConnections(tmp_path / "audit.sqlite")
    first = connections.run("pages", _itself)

    def bad_input(log: AuditLog) -> int:
        raise ValueError("not the file's fault")

    for passing in (bad_input, _locked_elsewhere):
        with pytest.raises((ValueError, sqlite3.OperationalError)):
            connections.run("pages", passing)
        assert connections.run("pages", _itself) is first
    with pytest.raises(sqlite3.DatabaseError):
        connections.run("pages", _broken_file)
    assert counted.closed == [first]
    second = connections.run("pages", _itself)
    assert second is not first
    assert connections.run("pages", AuditLog.count) == 0
    connections.close()


def test_a_connection_in_use_is_closed_only_when_its_query_ends(
    tmp_path: Path, counted: type[CountedLog]
) -> None:
    """A closed viewer's worker may still be in a query on a kept connection, while another
    query on it fails, or the chat closes them all."""
    connections = AuditConnections(tmp_path / "audit.sqlite")
    inside, finish = threading.Event(), threading.Event()
    counts: list[int] = []

    def slow_count(log: AuditLog) -> int:
        inside.set()
        assert finish.wait(10)
        return log.count()

    for fail_meanwhile in (True, False):
        counted.closed.clear()
        inside.clear()
        finish.clear()
        worker = threading.Thread(
            target=lambda: counts.append(connections.run("stats", slow_count))
        )
        worker.start()
        assert inside.wait(10)
        (in_use,) = [log for log in counted.opened if log not in counted.closed][-1:]
        if fail_meanwhile:
            with pytest.raises(sqlite3.DatabaseError):
                connections.run("stats", _broken_file)
        else:
            connections.close()
        assert counted.closed == []  # the slow query still runs on it
        finish.set()
        worker.join(10)
        assert counts.pop() == 0  # it ran to the end on an open connection
        assert counted.closed == [in_use]


async def test_the_chat_keeps_the_viewers_connections_between_openings(
    tmp_path: Path, counted: type[CountedLog]
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for _ in range(3):
            await pilot.press("ctrl+l")
            viewer = app.screen
            assert isinstance(viewer, AuditViewerScreen)
            await viewer.first_page_shown.wait()
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            assert not isinstance(app.screen, AuditViewerScreen)
            # The first opening connected (a page, the count); the others reuse them.
            assert {log.path for log in counted.opened} == {app.settings.database_path}
            assert len(counted.opened) == 2
            assert counted.closed == []
    # Quitting closes them (the backend closes with the app).
    assert sorted(map(id, counted.closed)) == sorted(map(id, counted.opened))
