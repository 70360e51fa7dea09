"""What a person typed and did not send stays with its conversation, and outlasts quitting."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.threads.screen import ThreadsScreen
from tests.support.tui import SIZE, engine_of, make_app, send, settle, wait_until

# Drafts across conversations and restarts: long journeys, run in their own group (docs/testing.md).
pytestmark = pytest.mark.slow


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


async def left_earlier(tmp_path: Path, thread_id: str, *, sent: str, typed: str = "") -> None:
    """An earlier session: `sent` sent in `thread_id`, then `typed` typed, then quit."""
    app = make_app(tmp_path, thread_id=thread_id, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, sent)
        if typed:
            await type_text(pilot, typed)


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
        new_id = next(t.thread_id for t in engine_of(app).list_threads() if t.thread_id != "t-sam")
        await open_from_list(pilot, new_id)
        assert box(pilot) == "half a thought"


async def test_a_draft_is_there_after_quitting_until_it_is_sent(tmp_path: Path) -> None:
    await left_earlier(
        tmp_path, "t-sam", sent="Where is ORD-002?", typed="I want a refund for ORD-005"
    )

    again = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert box(pilot) == "I want a refund for ORD-005"
        await type_text(pilot, " please")
        await pilot.press("enter")
        await settle(pilot)
        assert box(pilot) == ""
        assert engine_of(again) is not None and engine_of(again).draft("t-sam") == ""

    third = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with third.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert box(pilot) == ""  # sent: no draft comes back


async def test_text_typed_before_choosing_a_conversation_goes_along(tmp_path: Path) -> None:
    await left_earlier(tmp_path, "t-old", sent="Where is ORD-002?")
    app = make_app(tmp_path, thread_id=None, customer="Sam")  # a new, empty conversation
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "any news on it?")
        await open_from_list(pilot, "t-old")  # ...then the person picks the one it is about
        assert box(pilot) == "any news on it?"


async def test_text_typed_while_a_conversation_opens_is_not_replaced(tmp_path: Path) -> None:
    await left_earlier(tmp_path, "t-sam", sent="Where is ORD-002?", typed="old draft")
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        # Typed as the app starts, before the conversation's history (and draft) is read.
        await type_text(pilot, "new words")
        await settle(pilot)
        assert box(pilot) == "new words"


async def test_a_message_sent_as_its_conversation_is_left_is_not_its_draft(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Enter, then another conversation before the turn was accepted: the message sent came
    back in the box as a draft, to be sent twice."""
    from agents.runner.turn_recovery import TurnRecovery

    where_it_stands = TurnRecovery.where_it_stands
    holding, switched = asyncio.Event(), asyncio.Event()

    async def slowly(self: TurnRecovery, thread_id: str) -> Any:
        if holding.is_set():
            await switched.wait()  # a slow disk: the turn is accepted after the switch
        return await where_it_stands(self, thread_id)

    monkeypatch.setattr(TurnRecovery, "where_it_stands", slowly)
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        await type_text(pilot, "and ORD-005")
        holding.set()
        await pilot.press("enter", "ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-sam", "the new conversation")
        switched.set()
        await settle(pilot)
        assert box(pilot) == ""
        await open_from_list(pilot, "t-sam")
        assert box(pilot) == ""
        assert engine_of(app) is not None and engine_of(app).draft("t-sam") == ""


async def test_a_draft_stays_when_its_conversation_is_left_before_it_showed(
    tmp_path: Path,
) -> None:
    """Left before its history was read, a conversation counted as one with no messages: its
    draft went along to the next one."""
    app = make_app(tmp_path, thread_id="t-a", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        chat = app.chat
        await chat.open_thread("t-b", "Sam")
        await settle(pilot)
        await send(pilot, "Where is ORD-001?")
        await type_text(pilot, "for B")
        await chat.open_thread("t-a", "Sam")
        await settle(pilot)
        await chat.open_thread("t-b", "Sam")
        assert box(pilot) == "for B"
        await chat.open_thread("t-c", "Sam")  # before t-b's history is read
        await wait_until(pilot, lambda: chat.thread_ready, "t-c to open")
        await settle(pilot)
        assert box(pilot) == ""


async def test_text_going_along_keeps_the_draft_already_there(tmp_path: Path) -> None:
    await left_earlier(tmp_path, "t-old", sent="Where is ORD-002?", typed="kept draft")
    app = make_app(tmp_path, thread_id=None, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "any news?")
        await open_from_list(pilot, "t-old")
        assert box(pilot) == "kept draft any news?"  # it was written over, and lost


async def test_text_going_along_keeps_a_draft_typed_there_this_session(tmp_path: Path) -> None:
    await left_earlier(tmp_path, "t-old", sent="Where is ORD-002?")
    app = make_app(tmp_path, thread_id="t-old", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "sam text")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await type_text(pilot, "typed in new")
        await open_from_list(pilot, "t-old")
        assert box(pilot) == "sam text typed in new"  # the new one's text was lost
    again = make_app(tmp_path, thread_id="t-old", customer="Sam")
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert box(pilot) == "sam text typed in new"


async def test_a_new_conversations_draft_is_in_the_next_new_conversation(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id=None, customer="Sam")  # a new conversation, as usual
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first_id = app.chat.thread_id
        await type_text(pilot, "Where is ORD-002")
    # (Quit before sending: that conversation's id is never opened again.)

    again = make_app(tmp_path, thread_id=None, customer="Sam")
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.chat.thread_id != first_id
        assert box(pilot) == "Where is ORD-002"
        assert engine_of(again) is not None and engine_of(again).draft(None) == ""  # taken
        await pilot.press("enter")
        await settle(pilot)
        sent_in = again.chat.thread_id
        await pilot.press("ctrl+n")  # taken once: not in every new conversation after it
        await settle(pilot)
        assert box(pilot) == ""

    third = make_app(tmp_path, thread_id=None, customer="Sam")
    async with third.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert box(pilot) == ""  # sent: neither here nor in the conversation it went to
        assert engine_of(third) is not None
        assert engine_of(third).draft(sent_in) == "" and engine_of(third).draft(None) == ""
        lines = engine_of(third).transcript(sent_in)
        assert [line.text for line in lines if line.role == "customer"] == ["Where is ORD-002"]


def titles(pilot: Pilot[Any]) -> dict[str, str]:
    """The conversation list's first-message column, by thread."""
    table = pilot.app.screen.query_one("#threads", DataTable)
    return {str(row.value): str(table.get_row_at(index)[3]) for index, row in enumerate(table.rows)}


async def test_the_conversation_list_marks_the_ones_with_a_draft(tmp_path: Path) -> None:
    await left_earlier(tmp_path, "t-kept", sent="Where is ORD-005?", typed="and a refund")
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        await type_text(pilot, "for later")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await send(pilot, "Where is ORD-006?")
        new_id = app.chat.thread_id
        await pilot.press("ctrl+t")
        await settle(pilot)
        shown = titles(pilot)
        assert shown["t-kept"] == "✎ Where is ORD-005?"  # kept from an earlier session
        assert shown["t-sam"] == "✎ Where is ORD-002?"  # left with text in the box just now
        assert shown[new_id] == "Where is ORD-006?"
        await pilot.press("escape")
        await settle(pilot)
        await open_from_list(pilot, "t-sam")
        await pilot.press("ctrl+a", "ctrl+k")  # the draft deleted, not sent
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert titles(pilot)["t-sam"] == "Where is ORD-002?"
