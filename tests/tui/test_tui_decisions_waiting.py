"""Decisions waiting in other conversations: counted in the side panel, said once in a
notification, and opened one after another with ctrl+o, the one left alone longest first."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from agents.models.offline.demo_model import OfflineDemoModel
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from shopbot_tui.chat import decisions_waiting
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.chat.decisions_waiting import DecisionsRead
from shopbot_tui.chat.screen import ChatScreen
from tests.support.tui import (
    SIZE,
    GatedModel,
    RecordingApp,
    engine_of,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    make_app,
    palette_command,
    settle,
    visible_text,
    wait_until,
)

REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"
COMPLAINT = "This is unacceptable! My parcel is two weeks late and nobody answers my emails!!!"


async def ask_elsewhere(home: Path, thread_id: str, text: str, customer: str) -> None:
    """A turn of another process (`shopbot chat`) that stops for a decision."""
    settings = Settings(home=home, force_offline=True)
    async with ShopBotEngine(settings, model=OfflineDemoModel()) as engine:
        assert (await engine.send(thread_id, text, customer=customer)).pending is not None


def waiting_line(app: RecordingApp) -> str:
    line = app.chat.panel.query_one("#waiting", Static)
    return visible_text(line) if line.display else ""


async def dialog_for(app: RecordingApp, pilot: Pilot[None]) -> ApprovalScreen:
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, ApprovalScreen)
    return screen


async def test_ctrl_o_opens_the_decisions_waiting_one_after_another(tmp_path: Path) -> None:
    await ask_elsewhere(tmp_path, "t-refund", REFUND, "Sam")
    await ask_elsewhere(tmp_path, "t-complaint", COMPLAINT, "Alex")
    app = make_app(tmp_path, thread_id="t-quiet", customer="Jordan")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert waiting_line(app) == (
            "2 decisions waiting in other conversations · ctrl+o opens the oldest"
        )
        assert list(iter_notices(app, "warning")) == [
            "Decision waiting: 2 conversations wait for a decision: ctrl+o opens the oldest."
        ]

        await pilot.press("ctrl+o")
        dialog = await dialog_for(app, pilot)
        assert (app.chat.thread_id, app.chat.customer) == ("t-refund", "Sam")
        assert dialog.request.kind == "refund_approval"
        assert waiting_line(app) == "A decision waiting in another conversation · ctrl+o opens it"

        await pilot.press("escape")  # decide later: it waits on, and is counted again
        await settle(pilot)
        await pilot.press("ctrl+o")
        dialog = await dialog_for(app, pilot)
        assert app.chat.thread_id == "t-complaint"
        assert dialog.request.kind == "complaint_review"
        assert waiting_line(app) == "A decision waiting in another conversation · ctrl+o opens it"
        await pilot.press("t", "enter")  # close the ticket
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)

        await pilot.press("ctrl+o")
        dialog = await dialog_for(app, pilot)
        assert app.chat.thread_id == "t-refund"
        await pilot.press("a", "enter")
        await settle(pilot)
        assert app.chat.pending is None and waiting_line(app) == ""

        app.notices.clear()
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.chat.thread_id == "t-refund"  # nothing else to open
        assert [text for _, _, text in app.notices] == [
            "No other conversation waits for a decision."
        ]
        # Only the first sight of a waiting decision was a notification.
        assert len(list(iter_notices(app, "warning"))) == 0


async def test_a_decision_asked_by_another_process_is_counted_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decisions_waiting, "LOOK_EVERY_SECONDS", 0.2)
    app = make_app(tmp_path, thread_id="t-quiet", customer="Jordan")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert waiting_line(app) == "" and not list(iter_notices(app, "warning"))
        await ask_elsewhere(tmp_path, "t-cli", REFUND, "Sam")
        await wait_until(pilot, lambda: waiting_line(app) != "", "the registry read again")
        assert waiting_line(app) == "A decision waiting in another conversation · ctrl+o opens it"
        assert list(iter_notices(app, "warning")) == [
            "Decision waiting: Conversation t-cli (Sam) waits for a decision: ctrl+o opens it."
        ]


async def test_the_open_conversations_own_decision_is_not_counted(tmp_path: Path) -> None:
    await ask_elsewhere(tmp_path, "t-refund", REFUND, "Sam")
    app = make_app(tmp_path, thread_id="t-refund", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await dialog_for(app, pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert waiting_line(app) == "" and not list(iter_notices(app, "warning"))
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert [text for _, _, text in app.notices][-1] == (
            "No other conversation waits for a decision. This one does: ctrl+r opens it."
        )
        # Left for another conversation, it counts; it was seen already: no notification.
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert waiting_line(app) == "A decision waiting in another conversation · ctrl+o opens it"
        assert not list(iter_notices(app, "warning"))


async def test_the_command_palette_opens_the_next_decision_too(tmp_path: Path) -> None:
    await ask_elsewhere(tmp_path, "t-refund", REFUND, "Sam")
    app = make_app(tmp_path, thread_id="t-quiet", customer="Jordan")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await palette_command(pilot, "next decision")
        await dialog_for(app, pilot)
        assert app.chat.thread_id == "t-refund"


async def test_a_decision_reached_after_leaving_its_conversation_is_said_once(
    tmp_path: Path,
) -> None:
    """A refund asked, then another conversation opened while ShopBot still answers: when
    the answer stops for a decision, one notification says so, naming the customer and
    ctrl+o. Two used to, in different words: "Thread t-sam waits for your decision: open it
    with ctrl+t." as the turn ended, then "Conversation t-sam (Sam) waits..." from the count."""
    model = GatedModel()
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.chat.message_input
        box.value = REFUND
        box.focus()
        await pilot.press("enter")
        await wait_until(pilot, model.held.is_set, "the turn to be under way")
        await pilot.press("ctrl+n")  # on to the next customer while this one is answered
        await wait_until(pilot, lambda: app.chat.thread_id != "t-sam", "a new conversation")
        # A count that reads the registry as the turn reaches its decision, before the turn
        # has ended here, must not count the decision as said already.
        assert engine_of(app) is not None
        info = engine_of(app).thread("t-sam")
        assert info is not None
        await app.chat.waiting.read(DecisionsRead([replace(info, status="awaiting_approval")]))
        model.open()
        await settle(pilot)
        await wait_until(pilot, lambda: waiting_line(app) != "", "the decision to be counted")
        about_sam = [text for text in iter_notices(app, "warning") if "t-sam" in text]
        assert about_sam == [
            "Decision waiting: Conversation t-sam (Sam) waits for a decision: ctrl+o opens it."
        ]
        await pilot.press("ctrl+o")
        assert (await dialog_for(app, pilot)).request.thread_id == "t-sam"
