"""Threads (new, switch, resume with history), the command palette and the other screens."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.color import Color
from textual.command import CommandInput, CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Input, Tab, Tabs

from agents.backend import AuditQuery
from agents.models.offline.demo_model import OfflineDemoModel
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from agents.store.home import forget_checked
from agents.store.threads import ChatLine
from shopbot_tui.audit.screen import AuditViewerScreen
from shopbot_tui.audit.table import AuditEventTable
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.chat.messages import ThreadLoaded
from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.threads.screen import SHOWN, ThreadsScreen
from shopbot_tui.threads.views import STATUS_MARKS
from shopbot_tui.widgets.conversation import AssistantReply
from shopbot_tui.widgets.side_panel import ENGINE_NOT_RUNNING, AgentCard
from tests.support.damage import damage_thread_state, filled_audit_log, garble_past_first_page
from tests.support.hung_turn import killed_mid_turn
from tests.support.tui import (
    SIZE,
    GatedModel,
    begin_conversation,
    engine_of,
    frame_text,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    make_app,
    notes,
    painted_text,
    palette_command,
    replies,
    send,
    settle,
    transcript_on_screen,
    visible_text,
    wait_until,
)
from tests.tui.test_tui_chat import contrast


async def thread_list(pilot: Pilot[Any]) -> ThreadsScreen:
    """The conversation list, opened with its key."""
    await pilot.press("ctrl+t")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ThreadsScreen)
    return screen


async def list_of_two(pilot: Pilot[Any]) -> ThreadsScreen:
    """Two conversations of Sam's, the app's first on ORD-002 and a new one on ORD-005, and
    their list open."""
    await settle(pilot)
    await send(pilot, "Where is ORD-002?")
    await pilot.press("ctrl+n")
    await settle(pilot)
    await send(pilot, "Where is ORD-005?")
    return await thread_list(pilot)


async def test_new_thread_then_switch_back_with_history(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-one", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?")
        first_screen = transcript_on_screen(app)

        await pilot.press("ctrl+n")
        await settle(pilot)
        new_id = app.chat.thread_id
        assert new_id != "t-one"
        assert notes(app) == [notes(app)[0]] and notes(app)[0].startswith("New conversation")
        assert visible_text(app.chat.query_one("#thread")) == f"ID       {new_id}"
        await send(pilot, "Where is ORD-005?")
        assert "Bluetooth Speaker" in replies(app)[-1]

        screen = await thread_list(pilot)
        table = screen.query_one("#threads", DataTable)
        assert [row.value for row in table.rows] == [new_id, "t-one"]  # newest first
        assert str(table.get_row_at(1)[3]) == "Hi, where is my order ORD-002?"
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert app.chat.thread_id == "t-one"
        # The whole history, from the stored transcript (no welcome line for an old thread).
        assert transcript_on_screen(app) == first_screen[1:]
        assert app.chat.last_reply == replies(app)[-1]


async def test_switching_back_to_a_thread_mid_reply_shows_the_reply_below_its_history(
    tmp_path: Path,
) -> None:
    model = GatedModel(pause_mid_reply=True)
    app = make_app(tmp_path, thread_id="t-one", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model.open()
        model.resume()
        await send(pilot, "Where is my order ORD-005?")
        model.pause_next_reply()
        await send(pilot, "Where is my order ORD-002?", wait=False)
        await wait_until(pilot, lambda: bool(app.chat.query(AssistantReply)), "the reply")
        await pilot.press("ctrl+n")  # away, while the reply is still being written
        await wait_until(pilot, lambda: app.chat.thread_id != "t-one", "a new conversation")
        await wait_until(pilot, lambda: app.chat.thread_ready, "the new conversation")

        # Back, with a slow history read: the rest of the reply arrives while it loads.
        engine = engine_of(app)
        assert engine is not None
        read = engine.transcript

        def slow_transcript(thread_id: str) -> Any:
            time.sleep(0.3)
            return read(thread_id)

        engine.transcript = slow_transcript  # type: ignore[method-assign]
        await app.chat.open_thread("t-one", "Sam")
        model.resume()
        await wait_until(pilot, lambda: "t-one" not in app.chat.busy, "the turn to end")
        await settle(pilot)

        shown = transcript_on_screen(app)
        assert [role for role, _ in shown] == ["customer", "assistant", "customer", "assistant"]
        assert shown[2][1] == "Where is my order ORD-002?"
        assert "ORD-002" in shown[3][1]
        assert shown == [(line.role, line.text) for line in read("t-one")]


async def test_a_thread_opened_again_mid_reply_shows_that_reply_from_its_start(
    tmp_path: Path,
) -> None:
    model = GatedModel(pause_mid_reply=True)  # the reply stops after its first piece
    app = make_app(tmp_path, thread_id="t-one", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model.open()
        await send(pilot, "Where is my order ORD-002?", wait=False)
        await wait_until(pilot, lambda: bool(replies(app)), "the first piece of the reply")
        first_piece = replies(app)[-1]
        assert first_piece
        for away in ("ctrl+n", None):  # back from another thread, or picked in the list again
            if away:
                await pilot.press(away)
                await wait_until(pilot, lambda: app.chat.thread_id != "t-one", "another thread")
                await wait_until(pilot, lambda: app.chat.thread_ready, "the other thread")
            await app.chat.open_thread("t-one", "Sam")
            await wait_until(pilot, lambda: app.chat.thread_ready, "t-one again")
            await wait_until(pilot, lambda: bool(replies(app)), "the reply being written")
            assert replies(app)[-1] == first_piece
        model.resume()
        await wait_until(pilot, lambda: "t-one" not in app.chat.busy, "the turn to end")
        await settle(pilot)
        assert first_piece in replies(app)[-1] and "ORD-002" in replies(app)[-1]
        engine = engine_of(app)
        assert engine is not None
        stored = engine.transcript("t-one")
        assert transcript_on_screen(app) == [(line.role, line.text) for line in stored]


async def test_a_thread_opened_again_while_its_approved_refund_is_answered_asks_nothing(
    tmp_path: Path,
) -> None:
    model = GatedModel(pause_mid_reply=True)
    model.open()
    app = make_app(tmp_path, thread_id="t-one", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "I want a refund for ORD-005, the speaker crackles")
        assert isinstance(app.screen, ApprovalScreen)
        model.pause_next_reply()  # the reply after the approval stops after its first piece
        await pilot.press("a", "enter")
        await wait_until(pilot, lambda: any("refund paid" in n for n in notes(app)), "payment")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-one", "another thread")
        await wait_until(pilot, lambda: app.chat.thread_ready, "the other thread")
        await app.chat.open_thread("t-one", "Sam")
        await wait_until(pilot, lambda: app.chat.thread_ready, "t-one again")
        await pilot.pause()
        # Its stored state still shows the answered question (saved when the run stops):
        # not asked again.
        assert isinstance(app.screen, ChatScreen) and app.chat.pending is None
        model.resume()
        await wait_until(pilot, lambda: "t-one" not in app.chat.busy, "the turn to end")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.pending is None
        assert "approved and processed" in replies(app)[-1]


async def test_a_turn_that_pauses_for_approval_while_its_thread_loads_is_shown_pending(
    tmp_path: Path,
) -> None:
    model = GatedModel()  # every model call waits until the test opens the gate
    app = make_app(tmp_path, thread_id="t-one", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "I want a refund for ORD-005, the speaker crackles", wait=False)
        await wait_until(pilot, lambda: "t-one" in app.chat.busy, "the turn to start")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-one", "a new conversation")
        await wait_until(pilot, lambda: app.chat.thread_ready, "the new conversation")

        # Back to it: the load reads "nothing pending", then the turn runs to its approval
        # and ends before that stale answer is shown.
        engine = engine_of(app)
        assert engine is not None
        read, pending_now = engine.transcript, engine.pending_approval

        async def stale_pending(thread_id: str) -> Any:
            answer = await pending_now(thread_id)
            model.open()
            # Until that turn has ended (it runs on this same loop).
            for _ in range(200):
                if "t-one" not in app.chat.busy:
                    break
                await asyncio.sleep(0.01)
            return answer

        engine.pending_approval = stale_pending  # type: ignore[method-assign]
        await app.chat.open_thread("t-one", "Sam")
        await wait_until(pilot, lambda: "t-one" not in app.chat.busy, "the turn to end")
        await settle(pilot)

        # What the history read saw was from before the pause: the thread is shown again.
        assert app.chat.pending is not None and app.chat.pending.kind == "refund_approval"
        assert isinstance(app.screen, ApprovalScreen)
        shown = transcript_on_screen(app)
        assert shown == [(line.role, line.text) for line in read("t-one")]


async def test_ctrl_n_is_for_the_open_conversations_customer_and_says_whom(
    tmp_path: Path,
) -> None:
    """From a conversation begun without a customer, ctrl+n started one for Sam, the customer
    named last since the app started, and its notification named nobody."""
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.chat.customer == "Sam"
        assert app.notices[-1] == (
            "information",
            "",
            f"New conversation {app.chat.thread_id} for Sam.",
        )
        # A conversation without a customer, from the list (its box emptied).
        screen = await thread_list(pilot)
        screen.query_one("#new-customer", Input).value = ""
        await pilot.press("ctrl+n", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.customer is None
        anonymous = app.chat.thread_id

        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.chat.thread_id != anonymous
        assert app.chat.customer is None
        assert visible_text(app.chat.query_one("#customer")) == "Customer not given"
        assert app.notices[-1][2] == (
            f"New conversation {app.chat.thread_id}, without a customer: ctrl+t starts one "
            "for a customer."
        )


async def test_new_conversation_for_another_customer_from_the_thread_list(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await thread_list(pilot)
        assert screen.query_one("#threads-empty").display
        box = screen.query_one("#new-customer", Input)
        box.value = ""
        await pilot.press("ctrl+n", *"Jordan", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert app.chat.customer == "Jordan"
        assert visible_text(app.chat.query_one("#customer")) == "Customer Jordan"
        await send(pilot, "Where is ORD-003?")
        assert "Processing" in replies(app)[-1]

        # With a name in the box, ctrl+n starts the conversation at once: what is typed next
        # goes to the chat, not onto the end of the name.
        first = app.chat.thread_id
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        app.screen.query_one("#new-customer", Input).value = "Alex"
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert app.chat.customer == "Alex" and app.chat.thread_id != first


async def test_thread_list_filter(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-b", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(app) is not None
        for thread_id, customer in (("t-a", "Sam"), ("t-b", "Alex")):
            engine_of(app).threads.ensure(thread_id, customer=customer)
        screen = await thread_list(pilot)
        await pilot.press("ctrl+f", *"alex")
        table = screen.query_one("#threads", DataTable)
        assert [row.value for row in table.rows] == ["t-b"]
        await pilot.press("escape")
        assert isinstance(app.screen, ChatScreen)
        assert app.chat.thread_id == "t-b"


async def test_the_thread_list_filter_finds_threads_older_than_those_listed(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, thread_id="t-open", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(app) is not None
        # The oldest first: t-005 is far past the most recent SHOWN.
        for number in range(SHOWN + 60):
            customer = "Łukasz" if number == 5 else "Sam"
            engine_of(app).threads.ensure(f"t-{number:03d}", customer=customer)
        screen = await thread_list(pilot)
        table = screen.query_one("#threads", DataTable)
        assert table.row_count == SHOWN and "t-005" not in {row.value for row in table.rows}
        dialog = screen.query_one("#threads-dialog")
        assert str(dialog.border_subtitle) == f"the {SHOWN} most recent · the filter searches all"
        await pilot.press(*"ŁUKASZ")  # any case, beyond ASCII too
        await wait_until(pilot, lambda: table.row_count == 1, "the search of all threads")
        assert [row.value for row in table.rows] == ["t-005"]
        await pilot.press("enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.thread_id == "t-005"


async def test_the_marks_of_the_thread_list_read_in_the_light_theme_too(tmp_path: Path) -> None:
    """The "waits for a decision" mark was pure yellow: 1.2:1 on the light theme's grey."""
    app = make_app(tmp_path, thread_id="t-idle")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(app) is not None
        for thread_id, status in (("t-waits", "awaiting_approval"), ("t-broke", "error")):
            engine_of(app).threads.ensure(thread_id, customer="Sam")
            engine_of(app).threads.update(thread_id, status=status)
        engine_of(app).threads.ensure("t-idle", customer="Sam")  # the newest: the cursor's row
        app.theme = "textual-dark"
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: isinstance(app.screen, ThreadsScreen), "the list")
        for theme in ("textual-dark", "textual-light"):  # switched with the list open
            app.theme = theme
            await settle(pilot)
            marks = [
                segment
                for strip in app.screen._compositor.render_strips()
                for segment in strip
                if segment.text.strip() in ("●", "✗") and segment.style is not None
            ]
            assert len(marks) == 3, marks  # two rows and the Waiting tab
            for mark in marks:
                assert mark.style is not None and mark.style.color and mark.style.bgcolor
                ink = Color.from_rich_color(mark.style.color)
                paper = Color.from_rich_color(mark.style.bgcolor)
                assert contrast(ink, paper) >= 3, (theme, mark.text, ink.hex, paper.hex)


async def test_a_turn_killed_in_another_process_is_listed_as_cut_off(tmp_path: Path) -> None:
    """Listed "answering" (…) for ever, until something opened the engine again."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await asyncio.to_thread(killed_mid_turn, tmp_path, "t-killed")
        screen = await thread_list(pilot)
        table = screen.query_one("#threads", DataTable)
        await wait_until(pilot, lambda: table.row_count >= 1, "the list")
        marks = {
            str(table.get_row_at(i)[1]): str(table.get_row_at(i)[0]) for i in range(table.row_count)
        }
        assert marks["t-killed"] == STATUS_MARKS["cut_off"][0] != STATUS_MARKS["answering"][0]


async def test_command_palette_runs_app_commands(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-palette")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"new conv")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert app.chat.thread_id != "t-palette"

        dark = app.current_theme.dark
        await pilot.press("ctrl+p", *"toggle l")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_theme.dark is not dark


class SlowStartEngine(ShopBotEngine):
    """The engine, its start held until the test lets it go."""

    go = asyncio.Event()

    async def start(self) -> None:
        await self.go.wait()
        await super().start()


async def test_palette_commands_that_need_the_engine_say_it_is_still_loading(
    tmp_path: Path,
) -> None:
    """Offered by the palette while the engine loaded, they did nothing, and said nothing."""
    SlowStartEngine.go = asyncio.Event()
    app = make_app(tmp_path, thread_id="t-early", engine_class=SlowStartEngine)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert engine_of(app) is None
        for said, command in enumerate(("new conv", "switch thr", "export chat"), start=1):
            await pilot.press("ctrl+p")
            await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), "palette")
            # Put in at once, as a paste: a key pressed waits for the app to be idle, which
            # the loading indicator, spinning all along, never is (a second per key).
            app.screen.query_one(CommandInput).value = command
            await wait_until(
                pilot,
                lambda: app.screen.query_one(CommandList).option_count > 0,
                "the palette to find the command",
            )
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ChatScreen), "the chat")
            await wait_until(pilot, lambda n=said: len(app.notices) == n, f"word on {command!r}")
            assert "still loading" in app.notices[-1][2], app.notices[-1]
        assert app.chat.thread_id == "t-early"
        SlowStartEngine.go.set()
        await settle(pilot)
        assert engine_of(app) is not None


class EngineThatCannotStart(ShopBotEngine):
    async def start(self) -> None:
        raise OSError("disk full")


async def test_an_engine_that_could_not_start_is_never_said_to_be_loading(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, engine_class=EngineThatCannotStart)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(app) is None
        assert any("could not start" in notice for notice in iter_notices(app, "error"))
        # The panel does not show the first agent idle, as if ready for a message.
        card = app.chat.query_one("#agent-order_agent", AgentCard)
        assert card.step == ENGINE_NOT_RUNNING and f"▸ {ENGINE_NOT_RUNNING}" in frame_text(app)
        app.notices.clear()
        await send(pilot, "Where is ORD-002?")
        await palette_command(pilot, "new conv")
        await wait_until(pilot, lambda: len(app.notices) == 2, "both said")
        said = " ".join(f"{title}: {text}" for _, title, text in app.notices)
        assert "loading" not in said and said.count("could not start") == 2, said
        assert app.chat.message_input.value == "Where is ORD-002?"


async def test_audit_log_opens_over_the_chat(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-audit")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        await pilot.press("ctrl+l")
        await settle(pilot)
        opened = type(app.screen).__name__
        if opened != "AuditViewerScreen":  # the viewer module is missing from this build
            assert any("unavailable" in notice for notice in iter_notices(app, "error"))
            return
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert app.chat.thread_id == "t-audit"


async def test_an_audit_event_opens_its_conversation(tmp_path: Path) -> None:
    """`o` in the audit viewer opens the conversation of the event under the cursor, with its
    customer; an event of a conversation this ShopBot does not list, or of none, opens none."""
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        assert engine_of(app) is not None
        audit = engine_of(app).audit
        ghost = audit.append("handoff", thread_id="t-ghost", agent="order_agent")
        unthreaded = audit.append("refund_processed", detail={"order_id": "ORD-001"})
        await pilot.press("ctrl+n")
        await settle(pilot)
        new_thread = app.chat.thread_id
        assert new_thread != "t-sam"

        async def viewer_on(event_id: int) -> AuditViewerScreen:
            await pilot.press("ctrl+l")
            await settle(pilot)
            viewer = app.screen
            assert isinstance(viewer, AuditViewerScreen)
            viewer.set_filters()  # every thread's events, not only the open one's
            await settle(pilot)
            assert viewer.query_one(AuditEventTable).move_to_event(event_id)
            await settle(pilot)
            return viewer

        # An event of no conversation: "open" says so, and the viewer stays.
        viewer = await viewer_on(unthreaded.id)
        await pilot.press("o")
        await settle(pilot)
        assert app.screen is viewer
        said = [text for severity, _, text in app.notices if severity == "warning"]
        assert said == ["This event belongs to no conversation."]
        app.notices.clear()

        # Of a conversation not listed: said, and the open one stays.
        assert await viewer_on(ghost.id) is viewer
        await pilot.press("o")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.thread_id == new_thread
        (said,) = iter_notices(app, "warning")
        assert said.startswith("Cannot open it: Conversation t-ghost is not among")

        (sams_event, *_) = audit.page(AuditQuery(thread_id="t-sam"))
        viewer = await viewer_on(sams_event.id)
        await pilot.press("o")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert (app.chat.thread_id, app.chat.customer) == ("t-sam", "Sam")
        assert ("customer", "Where is ORD-002?") in transcript_on_screen(app)


async def test_a_conversation_whose_stored_state_is_damaged_says_so_and_the_app_goes_on(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path, force_offline=True)
    async with ShopBotEngine(settings, model=OfflineDemoModel()) as engine:
        assert (await engine.send("t-hurt", "Where is ORD-002?", customer="Sam")).status == "done"
    damage_thread_state(tmp_path, "t-hurt")
    app = make_app(tmp_path, thread_id="t-hurt")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        (problem,) = iter_notices(app, "error")
        assert problem.startswith("Could not open the conversation: The stored state of")
        assert "conversation t-hurt" in problem and "Start a new conversation" in problem
        # What was said is still shown: only the state behind it cannot be read.
        shown = transcript_on_screen(app)
        assert ("customer", "Where is ORD-002?") in shown
        assert any(role == "assistant" and "In Transit" in text for role, text in shown)
        # A new conversation works as ever.
        await pilot.press("ctrl+n")
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        assert "In Transit" in replies(app)[-1]


async def test_an_audit_event_opens_its_conversation_at_that_moment(tmp_path: Path) -> None:
    """`o` opened the conversation at its end (the open one: not at all), however long ago
    the event was."""
    app = make_app(tmp_path, thread_id="t-long", customer="Sam")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-0O2?")  # a check fails: the event to look at
        for _ in range(6):
            await send(pilot, "Where is ORD-005?")
        log = app.chat.chat_log
        assert log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y
        await pilot.press("ctrl+l")
        await settle(pilot)
        viewer = app.screen
        assert isinstance(viewer, AuditViewerScreen)
        table = viewer.query_one(AuditEventTable)
        (failed,) = [event for event in table.events if event.kind == "gate_failed"]
        assert table.move_to_event(failed.id)
        await pilot.press("o")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.thread_id == "t-long"
        marked = app.chat.query(".-at-event")
        assert len(marked) == 1
        shown = log.content_region
        # The moment is at the top of the view, the conversation's end out of sight below.
        assert shown.contains_region(marked.first().region) or (
            marked.first().region.y == shown.y
        ), (marked.first().region, shown)
        assert log.scroll_y < log.max_scroll_y
        assert "ORD-0O2" in painted_text(app, log)


@pytest.mark.parametrize("how", ["deleted", "emptied"])
async def test_a_lost_database_is_named_and_the_app_makes_no_new_one(
    tmp_path: Path, how: str
) -> None:
    await begin_conversation(tmp_path, "t-kept", "Sam")
    path = tmp_path / "shopbot.sqlite"
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    if how == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"")
    forget_checked()
    state = "is missing" if how == "deleted" else "is empty (0 bytes)"
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(app) is None
        (problem,) = iter_notices(app, "error")
        assert f"The ShopBot database at {path} {state}" in problem
        app.notices.clear()
        await pilot.press("ctrl+l")  # the log, with no engine: it must not set up a new one
        await wait_until(pilot, lambda: bool(app.notices), "the viewer said why")
        assert any(state in text for _, _, text in app.notices)
    assert path.exists() == (how == "emptied")
    again = make_app(tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(again) is None  # still refused: the database was left as found


async def test_a_database_damaged_past_its_first_page_is_named_when_a_read_trips_on_it(
    tmp_path: Path,
) -> None:
    await begin_conversation(tmp_path, "t-kept", "Sam")
    path = tmp_path / "shopbot.sqlite"
    filled_audit_log(path)
    damaged = garble_past_first_page(path)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # (Wherever it trips first, starting or in the audit log, it says which file.)
        await pilot.press("ctrl+l")
        await wait_until(
            pilot, lambda: any("is damaged" in t for _, _, t in app.notices), "the damage named"
        )
        problem = next(t for _, _, t in app.notices if "is damaged" in t)
        assert f"at {path} is damaged" in problem, problem
    assert path.read_bytes() == damaged


async def test_a_history_read_for_an_earlier_opening_of_the_thread_is_not_shown(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        chat = app.chat

        def read(opening: int, text: str) -> ThreadLoaded:
            line = ChatLine(1, chat.thread_id, "2026-11-30T09:00:00.000Z", "customer", text, None)
            loaded = ThreadLoaded(chat.thread_id, None, [line], 0, "order_agent", None)
            loaded.opening = opening
            return loaded

        # Queued before the thread was opened again: its history is the older one.
        chat.post_message(read(chat.opener.opening - 1, "an older history"))
        await settle(pilot)
        assert ("customer", "an older history") not in transcript_on_screen(app)
        chat.post_message(read(chat.opener.opening, "the history of this opening"))
        await settle(pilot)
        assert ("customer", "the history of this opening") in transcript_on_screen(app)


async def test_a_thread_opened_while_another_answers_never_shows_that_ones_step(
    tmp_path: Path,
) -> None:
    model = GatedModel()  # every model call waits until the test opens the gate
    app = make_app(tmp_path, thread_id="t-one", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?", wait=False)
        await wait_until(pilot, lambda: model.held.is_set(), "the turn to reach the model")
        panel = app.chat.panel
        assert panel.step == "answering"
        await app.chat.opener.open("t-two", "Sam")  # what ctrl+n does, before any read
        assert panel.step == "opening…"
        await wait_until(pilot, lambda: app.chat.thread_ready, "the new conversation")
        assert (panel.agent, panel.step) == ("order_agent", "idle")
        model.open()
        await settle(pilot)


async def test_typing_over_the_conversation_list_filters_it(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-one", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        screen = await list_of_two(pilot)
        table = screen.query_one("#threads", DataTable)
        assert app.focused is table and table.row_count == 2
        # No ctrl+f first: typing goes to the filter. (Not a bare "002": a new
        # conversation's id holds the date and the time, which can hold it too.)
        await pilot.press(*"ord-002")
        await pilot.pause()
        assert screen.query_one("#filter", Input).value == "ord-002"
        assert [row.value for row in table.rows] == ["t-one"]
        await pilot.press("enter", "enter")  # the filter hands over to the list, which opens
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.thread_id == "t-one"


async def test_a_paste_over_the_conversation_list_filters_it(tmp_path: Path) -> None:
    """Typing over the list or its New button went to the filter, a paste went nowhere: it
    goes there too now, its lines joined into the filter's one."""
    app = make_app(tmp_path, thread_id="t-one", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        screen = await list_of_two(pilot)
        table = screen.query_one("#threads", DataTable)
        box = screen.query_one("#filter", Input)
        assert app.focused is table and table.row_count == 2
        app.post_message(events.Paste("Where is\nORD-002?\n"))  # as the terminal sends one
        await wait_until(pilot, lambda: box.value != "", "the paste in the filter")
        assert app.focused is box and box.value == "Where is ORD-002?"
        await wait_until(pilot, lambda: table.row_count == 1, "the list filtered")
        assert [row.value for row in table.rows] == ["t-one"]

        box.value = ""
        screen.query_one("#new", Button).focus()
        app.post_message(events.Paste("ORD-005"))
        await wait_until(pilot, lambda: box.value != "", "the paste in the filter")
        assert app.focused is box and box.value == "ORD-005"
        await wait_until(pilot, lambda: table.row_count == 1, "the list filtered anew")
        assert [row.value for row in table.rows] == [app.chat.thread_id]


async def test_the_new_conversation_button_names_the_customer_it_starts_for(
    tmp_path: Path,
) -> None:
    """The name box beside it has no label, and a name typed over the list filters it: a
    person typing "Jordan" there saw no conversation, pressed ctrl+n and got one for Sam."""
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await thread_list(pilot)
        await pilot.press(*"Jordan")  # over the list: the filter
        await pilot.pause()
        assert "New conversation" in painted_text(app, screen.query_one("#new"))
        box = screen.query_one("#new-customer", Input)
        box.focus()
        await pilot.press(*"[b]Jordan")
        await pilot.pause()
        assert "New for [b]Jordan" in painted_text(app, screen.query_one("#new"))


async def test_typing_over_the_list_filters_it_and_keys_with_actions_keep_them(
    tmp_path: Path,
) -> None:
    """A person types to find a conversation: the letters go to the filter, and the list's
    keys still work; the New button (clicked, or ctrl+n) starts a conversation."""
    app = make_app(tmp_path, thread_id="t-one", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        screen = await list_of_two(pilot)
        table = screen.query_one("#threads", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2, "the list loaded")
        table.focus()
        await pilot.press(*"ord-002")
        await pilot.pause()
        box = screen.query_one("#filter", Input)
        assert app.focused is box and box.value == "ord-002"
        assert [row.value for row in table.rows] == ["t-one"]

        # A printable key with an action (here through a keymap) keeps it.
        app.set_keymap({"threads.close": "escape,q"})
        table.focus()
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert box.value == "ord-002"

        # And the button still starts a conversation, for the customer it names.
        app.set_keymap({})
        before = app.chat.thread_id
        screen = await thread_list(pilot)
        screen.query_one("#new-customer", Input).value = "Sam"
        await pilot.click("#new")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert app.chat.thread_id not in (before, "t-one") and app.chat.customer == "Sam"


async def test_enter_in_the_filter_opens_the_selected_match(tmp_path: Path) -> None:
    """Enter in the filter moved the focus to the list: a single match took two enters, and
    down did nothing there."""
    app = make_app(tmp_path, thread_id="t-one", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        screen = await list_of_two(pilot)
        newest = app.chat.thread_id
        table = screen.query_one("#threads", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2, "the list loaded")
        await pilot.press(*"ORD-002", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.thread_id == "t-one"

        # The arrows move the selection from the filter.
        screen = await thread_list(pilot)
        table = screen.query_one("#threads", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2, "the list loaded")
        await pilot.press("ctrl+f", "down")
        assert app.focused is screen.query_one("#filter", Input)
        assert table.cursor_row == 1
        await pilot.press("up")
        assert table.cursor_row == 0
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.thread_id == newest


async def test_an_empty_view_says_so_where_its_rows_would_be(tmp_path: Path) -> None:
    """The Waiting view with nothing in it was a blank table filling the dialog, its one line
    of words at the bottom, easy to miss."""
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        screen = await thread_list(pilot)
        await pilot.press("ctrl+t")  # the next view: Waiting for a decision
        await settle(pilot)
        table = screen.query_one("#threads", DataTable)
        empty = screen.query_one("#threads-empty")
        assert table.row_count == 0 and table.region.height <= 2, table.region
        assert "No conversation is waiting for a decision." in painted_text(app, empty)
        middle = empty.region.y + empty.region.height // 2
        words = next(
            y
            for y, line in enumerate(painted_text(app, empty).splitlines(), start=empty.region.y)
            if "No conversation" in line
        )
        assert abs(words - middle) <= 1, (words, middle)
        await pilot.press("ctrl+t", "ctrl+t", "ctrl+t")  # back to All: its rows again
        await settle(pilot)
        assert table.row_count == 1 and table.region.height > 2


async def test_the_customer_box_is_one_shift_tab_away_and_starts_empty(tmp_path: Path) -> None:
    """It took two shift+tabs from the filter (the New button came first), and it held the
    name of the customer served last."""
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await thread_list(pilot)
        box = screen.query_one("#new-customer", Input)
        assert box.value == ""
        assert "New conversation" in painted_text(app, screen.query_one("#new"))
        await pilot.press("ctrl+f", "shift+tab")
        assert app.focused is box
        screen.query_one("#threads", DataTable).focus()
        await pilot.press("tab")
        assert app.focused is box


def seed_queues(app: Any) -> None:
    """Conversations in every state that needs a person, one of each far older than the
    SHOWN most recent the list loads, and a draft of a conversation never started."""
    engine = engine_of(app)
    assert engine is not None
    threads = engine.threads
    threads.ensure("t-waits-old", customer="Sam")
    threads.update("t-waits-old", status="awaiting_approval")
    threads.ensure("t-esc-old", customer="Łukasz")
    threads.escalate("t-esc-old", agent="refund_agent", reason="refund over the limit")
    threads.ensure("t-draft-old", customer="Jordan")
    threads.save_draft("t-draft-old", "Dear Jordan, about your parcel")
    threads.save_draft("t-never-started", "a draft of no conversation")
    for number in range(SHOWN + 10):
        threads.ensure(f"t-{number:03d}", customer="Sam")
    threads.ensure("t-esc", customer="Alex")
    threads.escalate("t-esc", agent="complaints_agent", reason="customer asked for a manager")
    threads.ensure("t-waits", customer="Alex")
    threads.update("t-waits", status="awaiting_approval")
    threads.ensure("t-open", customer="Alex")  # the open one: its draft is in the box


def row_ids(screen: ThreadsScreen) -> list[str | None]:
    return [row.value for row in screen.query_one("#threads", DataTable).rows]


def tab_labels(screen: ThreadsScreen) -> list[str]:
    return [str(tab.label) for tab in screen.query(Tab)]


@pytest.mark.parametrize(
    ("words", "view", "listed"),
    [
        ("escalated conversations", "escalated", ["t-esc", "t-esc-old"]),
        ("waiting for a decision", "waiting", ["t-waits", "t-waits-old"]),
    ],
)
async def test_the_palette_opens_the_list_at_what_needs_a_person(
    tmp_path: Path, words: str, view: str, listed: list[str]
) -> None:
    app = make_app(tmp_path, thread_id="t-open", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seed_queues(app)
        await palette_command(pilot, words)
        await wait_until(pilot, lambda: isinstance(app.screen, ThreadsScreen), "the list")
        screen = app.screen
        assert isinstance(screen, ThreadsScreen)
        await wait_until(pilot, lambda: row_ids(screen) == listed, f"the {view} view")
        assert screen.query_one("#views", Tabs).active == f"view-{view}"


async def test_the_conversation_list_narrows_to_what_needs_a_person(tmp_path: Path) -> None:
    """A support person working a queue lists only the conversations waiting for a decision,
    escalated or with a draft: each view counted and found in the whole registry, not only
    the most recent the list loads; ctrl+t goes from one to the next."""
    app = make_app(tmp_path, thread_id="t-open", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seed_queues(app)
        await pilot.press(*"Hello Alex")  # in the chat's box: a draft not kept yet
        screen = await thread_list(pilot)
        assert tab_labels(screen) == [
            f"All {SHOWN + 16}",
            "● Waiting for a decision 2",
            "▲ Escalated 2",
            "✎ Drafts 2",  # not the conversation never started
        ]
        assert len(row_ids(screen)) == SHOWN and "t-esc-old" not in row_ids(screen)

        views = {
            "waiting": ["t-waits", "t-waits-old"],
            "escalated": ["t-esc", "t-esc-old"],
            "drafts": ["t-open", "t-draft-old"],
            "all": row_ids(screen),
        }
        for view, listed in views.items():
            await pilot.press("ctrl+t")
            await wait_until(pilot, lambda listed=listed: row_ids(screen) == listed, view)
            assert screen.query_one("#views", Tabs).active == f"view-{view}"
            assert not screen.query_one("#threads-empty").display

        # The text filter narrows the view, over every conversation of it.
        await pilot.press("ctrl+t", "ctrl+t")  # escalated
        await pilot.press(*"łukasz")
        await pilot.pause()
        assert row_ids(screen) == ["t-esc-old"]
        painted = painted_text(app, screen.query_one("#threads"))
        assert "▲" in painted and "t-esc-old" in painted
        await pilot.press("enter", "enter")  # the filter hands over to the list, which opens
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.thread_id == "t-esc-old"


async def test_a_view_with_nothing_in_it_says_why(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-one", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(app) is not None
        for thread_id, customer in (("t-one", "Sam"), ("t-two", "Alex")):
            engine_of(app).threads.ensure(thread_id, customer=customer)
        engine_of(app).threads.escalate("t-two", agent="order_agent", reason="order id still wrong")
        screen = await thread_list(pilot)
        empty = screen.query_one("#threads-empty")

        await pilot.click("#view-waiting")  # the tabs take a click too
        await pilot.pause()
        assert row_ids(screen) == [] and empty.display
        assert "No conversation is waiting for a decision." in painted_text(app, empty)

        await pilot.click("#view-escalated")
        await pilot.pause()
        assert row_ids(screen) == ["t-two"] and not empty.display
        await pilot.press(*"sam")  # typed over the list: to the filter
        await pilot.pause()
        assert row_ids(screen) == [] and empty.display
        assert "No escalated conversation matches 'sam'." in painted_text(app, empty)

        await pilot.press("ctrl+t", "ctrl+t")  # on to All: Sam is there
        await pilot.pause()
        assert row_ids(screen) == ["t-one"] and not empty.display
        assert screen.query_one("#filter", Input).value == "sam"
        await pilot.press("ctrl+f", *"[b]zz")  # shown as typed, not as markup
        await pilot.pause()
        assert "No conversation matches '[b]zz'." in painted_text(app, empty)


async def test_typing_over_the_views_filters_the_list(tmp_path: Path) -> None:
    """The tabs are reached with tab, and take left and right; a letter goes to the filter."""
    app = make_app(tmp_path, thread_id="t-one", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert engine_of(app) is not None
        engine_of(app).threads.ensure("t-one", customer="Sam")
        engine_of(app).threads.save_draft("t-one", "half a sentence")
        screen = await thread_list(pilot)
        tabs = screen.query_one("#views", Tabs)
        await pilot.press("shift+tab")
        assert app.focused is tabs
        await pilot.press("left")  # wraps round to Drafts
        await pilot.pause()
        assert tabs.active == "view-drafts" and row_ids(screen) == ["t-one"]
        await pilot.press(*"one")
        await pilot.pause()
        assert screen.query_one("#filter", Input).value == "one"
        assert row_ids(screen) == ["t-one"]


@pytest.mark.parametrize("size", [(80, 24), (70, 20), (44, 14)])
async def test_the_views_fit_a_small_terminal_and_leave_the_list_rows(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = make_app(tmp_path, thread_id="t-open", customer="Alex")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert engine_of(app) is not None
        for number in range(6):
            engine_of(app).threads.ensure(f"t-{number}", customer="Sam")
            engine_of(app).threads.escalate(f"t-{number}", agent="order_agent", reason="why not")
        screen = await thread_list(pilot)
        await pilot.press("ctrl+t", "ctrl+t")
        await pilot.pause()
        frame = frame_text(app)
        for label in tab_labels(screen):  # each whole, counts and all
            assert label in frame, (label, frame)
        assert "▲ 6" in frame if size[0] < 60 else "Escalated 6" in frame
        assert len([n for n in range(6) if f"t-{n} " in frame]) >= 3, frame
        if size[0] >= 70:
            assert "^t Next view" in frame.splitlines()[-1]
