"""What a person typed and did not send stays with its conversation, and outlasts quitting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable

from shopbot_tui.screens.chat import ChatScreen
from shopbot_tui.screens.threads import ThreadsScreen
from tests.test_tui_helpers import SIZE, make_app, send, settle


async def type_text(pilot: Pilot[Any], text: str) -> None:
    """Key by key, as a person types (a space is the "space" key)."""
    await pilot.press(*("space" if char == " " else char for char in text))
    await pilot.pause()


def box(pilot: Pilot[Any]) -> str:
    return str(pilot.app.chat.message_input.value)


async def open_from_list(pilot: Pilot[Any], thread_id: str) -> None:
    await pilot.press("ctrl+t")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ThreadsScreen)
    table = screen.query_one("#threads", DataTable)
    table.move_cursor(row=[row.value for row in table.rows].index(thread_id))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ChatScreen) and pilot.app.chat.thread_id == thread_id


async def test_a_draft_stays_with_its_conversation(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        await type_text(pilot, "and ORD-005 too")
        await pilot.press("ctrl+n")  # a new conversation: a message for Sam does not follow
        await settle(pilot)
        assert box(pilot) == ""
        await send(pilot, "Where is ORD-006?")
        await type_text(pilot, "half a thought")
        await open_from_list(pilot, "t-sam")
        assert box(pilot) == "and ORD-005 too"
        assert pilot.app.chat.message_input.cursor_position == len("and ORD-005 too")
        new_id = next(t.thread_id for t in app.engine.list_threads() if t.thread_id != "t-sam")
        await open_from_list(pilot, new_id)
        assert box(pilot) == "half a thought"


async def test_a_draft_is_there_after_quitting_until_it_is_sent(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        await type_text(pilot, "I want a refund for ORD-005")
    # (Quit with the box full.)

    again = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert box(pilot) == "I want a refund for ORD-005"
        await type_text(pilot, " please")
        await pilot.press("enter")
        await settle(pilot)
        assert box(pilot) == ""
        assert again.engine is not None and again.engine.draft("t-sam") == ""

    third = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with third.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert box(pilot) == ""  # sent: no draft comes back


async def test_text_typed_before_choosing_a_conversation_goes_along(tmp_path: Path) -> None:
    first = make_app(tmp_path, thread_id="t-old", customer="Sam")
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")

    app = make_app(tmp_path, thread_id=None, customer="Sam")  # a new, empty conversation
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "any news on it?")
        await open_from_list(pilot, "t-old")  # ...then the person picks the one it is about
        assert box(pilot) == "any news on it?"


async def test_text_typed_while_a_conversation_opens_is_not_replaced(tmp_path: Path) -> None:
    first = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        await type_text(pilot, "old draft")

    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        # Typed as the app starts, before the conversation's history (and draft) is read.
        await type_text(pilot, "new words")
        await settle(pilot)
        assert box(pilot) == "new words"
