"""The audit viewer's connections: one per kind of work, kept between openings of the viewer
(the chat keeps them while the app runs), closed with the chat."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agents.audit_log import AuditLog
from agents.sqlite_store import StorageError
from shopbot_tui import audit_connections
from shopbot_tui.audit_connections import AuditConnections
from shopbot_tui.screens.audit_viewer import AuditViewerScreen
from tests.test_tui_helpers import make_app, settle


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
    monkeypatch.setattr(audit_connections, "AuditLog", CountedLog)
    return CountedLog


def test_one_connection_per_role_until_closed(tmp_path: Path, counted: type[CountedLog]) -> None:
    connections = AuditConnections(tmp_path / "audit.sqlite")
    pages = connections.get("pages")
    assert connections.get("pages") is pages
    stats = connections.get("stats")
    assert stats is not pages
    assert counted.opened == [pages, stats]
    connections.close()
    assert sorted(map(id, counted.closed)) == sorted(map(id, [pages, stats]))
    with pytest.raises(sqlite3.ProgrammingError):
        pages.count()
    with pytest.raises(StorageError, match="closed"):
        connections.get("pages")


def test_a_connection_the_file_failed_under_is_replaced_on_next_use(
    tmp_path: Path, counted: type[CountedLog]
) -> None:
    connections = AuditConnections(tmp_path / "audit.sqlite")
    first = connections.get("pages")

    def bad_input(log: AuditLog) -> int:
        raise ValueError("not the file's fault")

    def broken_file(log: AuditLog) -> int:
        raise sqlite3.DatabaseError("database disk image is malformed")

    with pytest.raises(ValueError):
        connections.run("pages", bad_input)
    assert connections.get("pages") is first
    with pytest.raises(sqlite3.DatabaseError):
        connections.run("pages", broken_file)
    assert counted.closed == [first]
    second = connections.get("pages")
    assert second is not first
    assert connections.run("pages", AuditLog.count) == 0
    connections.close()


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
            assert {log.path for log in counted.opened} == {app.settings.audit_path}
            assert len(counted.opened) == 2
            assert counted.closed == []
    # Quitting closes them (on a thread of their own: wait for it).
    for thread in audit_connections.threading.enumerate():
        if thread.name == "audit-close":
            thread.join(timeout=10)
    assert sorted(map(id, counted.closed)) == sorted(map(id, counted.opened))
