"""An escalated conversation waits for a person in the app: the side panel says so (and
counts the others), the conversation list marks them, and ctrl+g marks one handled under the
person's name, in the conversation and the audit log."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import DataTable, Static

from agents.facade import AuditQuery, Reviewer, ShopBotEngine
from agents.offline.demo_model import OfflineDemoModel
from agents.reviewer import login_name
from agents.settings import Settings
from shopbot_tui.screens.threads import ThreadsScreen
from tests.test_tui_helpers import (
    SIZE,
    RecordingApp,
    frame_text,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    make_app,
    notes,
    palette_command,
    send,
    settle,
    visible_text,
)

OVER_LIMIT = "Refund ORD-004 please, the monitor has dead pixels"


def escalated_line(app: RecordingApp) -> str:
    line = app.chat.panel.query_one("#escalated", Static)
    return visible_text(line) if line.display else ""


def footer(app: RecordingApp) -> str:
    return frame_text(app).rstrip("\n").splitlines()[-1]


async def escalate_elsewhere(home: Path, thread_id: str) -> None:
    """Another front (`shopbot chat`) escalates a conversation."""
    settings = Settings(home=home, force_offline=True)
    async with ShopBotEngine(settings, model=OfflineDemoModel()) as engine:
        await engine.send(thread_id, OVER_LIMIT, customer="Alex")


async def test_an_escalation_is_shown_until_a_person_marks_it_handled(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-big", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert escalated_line(app) == ""
        assert "^g Handled" not in footer(app)

        await send(pilot, OVER_LIMIT)
        await settle(pilot)
        line = escalated_line(app)
        assert line.startswith("Escalated to a person: refund above the auto-refund limit, since ")
        assert line.endswith(" UTC · ctrl+g once handled")
        assert "^g Handled" in footer(app)

        await pilot.press("ctrl+g")
        await settle(pilot)
        name = login_name()
        assert notes(app)[-1] == f"escalation handled by {name} (app)"
        assert "Escalation: Escalation of t-big marked handled." in iter_notices(app, "information")
        assert escalated_line(app) == ""
        assert "^g Handled" not in footer(app)
        assert app.chat.engine is not None
        closed = app.chat.engine.audit.page(AuditQuery(kinds=("escalation_closed",)), limit=5)
        assert [(e.thread_id, e.detail["decided_by"], e.detail["via"]) for e in closed] == [
            ("t-big", name, "app")
        ]
        # The conversation keeps the line: opened again, it is there.
        assert app.chat.engine.transcript("t-big")[-1].text == f"escalation handled by {name} (app)"


async def test_other_escalated_conversations_are_counted_and_marked_in_the_list(
    tmp_path: Path,
) -> None:
    await escalate_elsewhere(tmp_path, "t-one")
    await escalate_elsewhere(tmp_path, "t-two")
    app = make_app(tmp_path, thread_id="t-quiet", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-002?")
        await settle(pilot)
        assert escalated_line(app) == "2 conversations escalated · marked ▲ in ctrl+t"
        # Nothing to mark handled here: no key, no command.
        assert "^g Handled" not in footer(app)
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert app.chat.engine is not None
        assert len(app.chat.engine.escalations()) == 2

        await pilot.press("ctrl+t")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ThreadsScreen)
        table = screen.query_one("#threads", DataTable)
        marks = {row.value: table.get_row(row)[0].plain for row in table.rows}
        assert marks == {"t-one": "▲", "t-two": "▲", "t-quiet": ""}
        await pilot.press("escape")
        await settle(pilot)

        await app.chat.open_thread("t-one", "Alex")
        await settle(pilot)
        assert escalated_line(app).startswith("Escalated to a person: refund above")
        assert escalated_line(app).endswith("1 other conversation escalated · marked ▲ in ctrl+t")
        await palette_command(pilot, "escalation handled")
        await settle(pilot)
        assert [e.thread_id for e in app.chat.engine.escalations()] == ["t-two"]
        assert escalated_line(app) == "1 conversation escalated · marked ▲ in ctrl+t"


async def test_an_escalation_handled_in_another_window_is_not_closed_twice(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, thread_id="t-big", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, OVER_LIMIT)
        await settle(pilot)
        assert "^g Handled" in footer(app)
        # Another window marks it handled before the panel is read again.
        settings = Settings(home=tmp_path, force_offline=True)
        async with ShopBotEngine(settings, model=OfflineDemoModel()) as other:
            closed = await asyncio.to_thread(
                other.close_escalation, "t-big", Reviewer("dana", "app")
            )
            assert closed is not None
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert (
            "Escalation: The escalation of t-big was already marked handled (another window?)."
            in iter_notices(app, "information")
        )
        assert not any(note.startswith("escalation handled by") for note in notes(app))
        assert app.chat.engine is not None
        closed_events = app.chat.engine.audit.page(
            AuditQuery(kinds=("escalation_closed",)), limit=5
        )
        assert [e.detail["decided_by"] for e in closed_events] == ["dana"]
        assert escalated_line(app) == ""
