"""The chat screen, driven the way a person uses it, with the offline demo model."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.color import Color
from textual.command import Command, CommandList
from textual.widgets import Input

from agents.audit.log import AuditQuery
from agents.backend import TURN_STOPPED_NOTE
from agents.events import EngineEvent, ReplyDone, StepChanged, from_wire
from agents.graph.context import RetryBudget
from agents.graph.other_orders import other_orders_sentence
from agents.runner.engine import ShopBotEngine
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.chat.notices import NOTHING_LEFT_TO_STOP, STILL_PAYING
from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.threads.screen import ThreadsScreen
from shopbot_tui.widgets.conversation import AssistantReply, CustomerMessage, SystemNote
from shopbot_tui.widgets.side_panel import AgentCard, SidePanel
from tests.support.tui import (
    SIZE,
    GatedModel,
    ProviderDownModel,
    audit_kinds,
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


def active_card(app: object) -> str:
    cards = [card for card in app.chat.query(AgentCard) if card.has_class("-active")]  # type: ignore[attr-defined]
    assert len(cards) == 1
    return cards[0].agent


async def test_order_status_turn(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-order", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?")
        lines = transcript_on_screen(app)
        assert lines[-2] == ("customer", "Hi, where is my order ORD-002?")
        role, reply = lines[-1]
        assert role == "assistant"
        assert "ORD-002" in reply and "In Transit" in reply
        assert app.chat.query_one("#message", Input).value == ""
        assert app.chat.last_reply == reply
        assert active_card(app) == "order_agent"
        kinds = audit_kinds(app, "t-order")
        assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
        assert {"gate_passed", "tool_called"} <= set(kinds)
        # The screen and the stored transcript say the same thing.
        assert engine_of(app) is not None
        stored = [(line.role, line.text) for line in engine_of(app).transcript("t-order")]
        assert stored == [line for line in lines if not line[1].startswith("New conversation")]


async def test_a_second_order_in_a_message_is_named_back_on_screen(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-two", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where are ORD-001 and ORD-002?")
        reply = replies(app)[-1]
        assert "Wireless Headphones" in reply
        assert reply.endswith(other_orders_sentence(["ORD-002"]))
        # On screen, where the customer reads it, with nothing of Sam's order.
        frame = " ".join(frame_text(app).split())
        assert "You also mentioned ORD-002" in frame
        assert "Phone Case" not in frame and "In Transit" not in frame


async def test_a_reply_streams_into_one_markdown_widget(tmp_path: Path) -> None:
    model = GatedModel(pause_mid_reply=True)
    app = make_app(tmp_path, model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?", wait=False)
        model.open()
        await wait_until(
            pilot,
            lambda: (
                bool(app.chat.query(AssistantReply))
                and bool(app.chat.query_one(AssistantReply).source)
            ),
            "streaming to start",
        )
        streaming = app.chat.query_one(AssistantReply)
        assert not streaming.complete
        assert streaming.border_title == "Order agent · writing…"
        assert "In Transit" not in streaming.source
        model.resume()
        await settle(pilot)
        assert app.chat.query_one(AssistantReply) is streaming
        assert streaming.complete and streaming.border_title == "Order agent"
        assert "In Transit" in streaming.source


async def test_esc_stops_a_reply_and_the_conversation_goes_on(tmp_path: Path) -> None:
    model = GatedModel(pause_mid_reply=True)
    app = make_app(tmp_path, thread_id="t-stop", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("escape")  # nothing runs: nothing happens, nothing is said
        await send(pilot, "Hi, where is my order ORD-002?", wait=False)
        model.open()
        await wait_until(
            pilot,
            lambda: (
                bool(app.chat.query(AssistantReply).last().source)
                if app.chat.query(AssistantReply)
                else False
            ),
            "streaming to start",
        )
        # A second message while it writes is refused with a notice naming the way out.
        await send(pilot, "hello?", wait=False)
        assert any("esc to stop" in notice for notice in iter_notices(app, "warning"))
        await pilot.press("escape")
        await wait_until(pilot, lambda: "t-stop" not in app.chat.busy, "the turn to stop")
        await settle(pilot)
        assert not app.chat.query(AssistantReply)  # the unfinished reply is not kept
        assert notes(app)[-1] == TURN_STOPPED_NOTE
        assert app.chat.panel.step == "idle"
        engine = engine_of(app)
        assert engine is not None
        finished = engine.audit.page(AuditQuery(thread_id="t-stop", kinds=("turn_finished",)))
        assert finished[0].detail == {"status": "stopped"}
        # The screen says what the stored transcript says.
        stored = [(line.role, line.text) for line in engine_of(app).transcript("t-stop")]
        assert stored[-1] == ("note", TURN_STOPPED_NOTE)
        assert app.chat.message_input.value == "hello?"  # the refused message is kept

        model.resume()
        app.chat.message_input.value = ""
        await send(pilot, "Where is my order ORD-002?")
        assert "In Transit" in replies(app)[-1]


class TailHeldEngine(ShopBotEngine):
    """The engine, its graph run held (until `release`) right after it reports the reply
    whole or the question asked: the run goes on a moment then, to save its checkpoint."""

    held = asyncio.Event()
    release = asyncio.Event()

    async def start(self) -> None:
        await super().start()
        graph, held, release = self.graph, self.held, self.release

        class Held:
            def __getattr__(self, name: str) -> Any:
                return getattr(graph, name)

            async def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                async for item in graph.astream(*args, **kwargs):
                    yield item
                    data = from_wire(item[1])  # (the graph streams JSON objects)
                    asked = isinstance(data, StepChanged) and data.step == "waiting_for_approval"
                    if isinstance(data, ReplyDone) or asked:
                        held.set()
                        await release.wait()

        self.graph = Held()


@pytest.mark.parametrize(
    "text", ["Hi, where is my order ORD-002?", "I want a refund for ORD-005, it crackles badly"]
)
async def test_esc_once_the_reply_is_whole_or_the_question_asked_stops_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """Stopped there, a whole reply got "stopped before it was finished" under it, and a
    refund's question was lost."""
    monkeypatch.setattr(TailHeldEngine, "held", asyncio.Event())
    monkeypatch.setattr(TailHeldEngine, "release", asyncio.Event())
    app = make_app(tmp_path, thread_id="t-tail", customer="Sam", engine_class=TailHeldEngine)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, text, wait=False)
        await wait_until(pilot, TailHeldEngine.held.is_set, "the reply or the question")
        assert "t-tail" in app.chat.busy  # the turn is still running
        await pilot.press("escape")
        # Said, or esc would seem broken.
        assert list(iter_notices(app, "warning")) == [f"Not stopped: {NOTHING_LEFT_TO_STOP}"]
        TailHeldEngine.release.set()
        await settle(pilot)
        assert TURN_STOPPED_NOTE not in notes(app)
        assert engine_of(app) is not None
        stored = [line.text for line in engine_of(app).transcript("t-tail")]
        assert TURN_STOPPED_NOTE not in stored
        if "refund" in text:
            # The question is asked; esc in its dialog only closes the dialog, as ever.
            assert isinstance(app.screen, ApprovalScreen)
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, ChatScreen) and app.chat.pending is not None
            assert TURN_STOPPED_NOTE not in notes(app)
        else:
            assert "In Transit" in replies(app)[-1]


async def test_esc_while_a_decision_is_answered_keeps_the_refund_paid(tmp_path: Path) -> None:
    model = GatedModel(pause_mid_reply=True, free_calls=1000)
    model.resume()  # the refund request runs through; its answer after the decision pauses
    app = make_app(tmp_path, thread_id="t-paid", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "I want a refund for ORD-005, the speaker crackles at any volume")
        assert isinstance(app.screen, ApprovalScreen)
        model.pause_next_reply()
        await pilot.press("a", "enter")
        await wait_until(
            pilot,
            lambda: bool(app.chat.query(AssistantReply)) and "t-paid" in app.chat.busy,
            "the refund agent to write",
        )
        await pilot.press("escape", "escape")  # twice: stopped once
        await wait_until(pilot, lambda: "t-paid" not in app.chat.busy, "the turn to stop")
        await settle(pilot)
        assert engine_of(app) is not None
        assert engine_of(app).shop.refund_for("ORD-005") is not None  # the money moved: it stays
        shown = notes(app)
        assert shown.count(TURN_STOPPED_NOTE) == 1
        paid = next(note for note in shown if note.startswith("refund paid: ORD-005"))
        assert shown.index(paid) < shown.index(TURN_STOPPED_NOTE)
        stored = [(line.role, line.text) for line in engine_of(app).transcript("t-paid")]
        assert ("note", paid) in stored and stored[-1] == ("note", TURN_STOPPED_NOTE)
        assert not app.chat.query(AssistantReply)  # the unfinished reply is gone
        assert app.chat.pending is None and isinstance(app.screen, ChatScreen)
        model.resume()
        await send(pilot, "Where is my order ORD-002?")
        assert "In Transit" in replies(app)[-1]


async def test_esc_while_an_approved_refund_is_paid_says_it_cannot_stop_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(tmp_path, thread_id="t-paying", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "I want a refund for ORD-005, the speaker crackles at any volume")
        assert isinstance(app.screen, ApprovalScreen) and engine_of(app) is not None
        # The ledger write (in a worker thread) is slow: the shop database is busy, say.
        entered, release = threading.Event(), threading.Event()
        record_refund = engine_of(app).shop.record_refund

        def slow_record(*args: object, **kwargs: object) -> object:
            entered.set()
            release.wait(30)
            return record_refund(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(engine_of(app).shop, "record_refund", slow_record)
        await pilot.press("a", "enter")
        await wait_until(pilot, entered.is_set, "the refund to be paid")
        await pilot.press("escape")
        assert list(iter_notices(app, "warning")) == [f"Not stopped: {STILL_PAYING}"]
        release.set()
        await settle(pilot)
        assert engine_of(app).shop.refund_for("ORD-005") is not None
        assert TURN_STOPPED_NOTE not in notes(app)
        assert "refund" in replies(app)[-1].lower()


async def test_handoff_shows_in_side_panel_and_chat(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert active_card(app) == "order_agent"
        await send(pilot, "I want a refund for ORD-004, the monitor has dead pixels all over")
        assert active_card(app) == "refund_agent"
        card = app.chat.query_one("#agent-refund_agent", AgentCard)
        lines = painted_text(app, card).splitlines()
        assert "Refund agent" in lines[1] and lines[1].rstrip(" │╯╮").endswith("Active")
        assert "→ Order, Complaints" in lines[2]
        assert lines[3].strip(" │").startswith("▸ ")
        idle = painted_text(app, app.chat.query_one("#agent-order_agent", AgentCard))
        assert "Active" not in idle and "▸" not in idle and "→ Refund, Complaints" in idle
        shown = notes(app)
        assert "→ handed to Refund agent" in shown
        assert any(note.startswith("gate: refund rejected") for note in shown)
        assert "escalated to a human (refund above the auto-refund limit)" in shown
        assert "senior" in replies(app)[-1]
        gates = visible_text(app.chat.query_one("#gates"))
        assert "✓ order id" in gates and "✗ refund" in gates
        assert "handoff" in audit_kinds(app, "t-test")


async def test_markup_and_escape_sequences_show_literally(tmp_path: Path) -> None:
    customer = "[b]Eve[/b]"
    app = make_app(tmp_path, customer=customer)
    text = "[bold]x[/] [link=http://x]y[/link] \x1b[31mred[/]"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, text)
        message = app.chat.query(CustomerMessage).last()
        rendered = message.render()
        assert rendered.plain == "[bold]x[/] [link=http://x]y[/link] ␛[31mred[/]"
        assert not rendered.spans  # nothing became bold, red or a link
        assert message.border_title == "\\[b]Eve\\[/b]"  # the title, escaped as markup
        customer_line = visible_text(app.chat.query_one("#customer"))
        assert customer_line == "Customer [b]Eve[/b]"
        svg = app.export_screenshot()
        assert "[bold]x[/]" in svg.replace("&#160;", " ")


async def test_provider_error_is_a_notification_and_the_thread_survives(tmp_path: Path) -> None:
    app = make_app(
        tmp_path, model=ProviderDownModel(), retry=RetryBudget(attempts=2, base_delay=0.01)
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?")
        errors = list(iter_notices(app, "error"))
        assert any("HTTP 503" in notice for notice in errors), errors
        assert any("HTTP 503" in notice for notice in iter_notices(app, "warning"))
        assert isinstance(app.screen, ChatScreen)
        assert transcript_on_screen(app)[1:] == [
            ("customer", "Hi, where is my order ORD-002?"),
            ("note", notes(app)[1]),
            ("note", notes(app)[2]),
        ]
        assert notes(app)[1].startswith("model provider failed, retrying in")
        assert notes(app)[2].startswith("⚠ The model provider is unavailable (HTTP 503)")
        assert "provider_error" in audit_kinds(app, "t-test")
        # Still usable: the next message is taken (and fails the same way, cleanly).
        await send(pilot, "Are you there?")
        assert ("customer", "Are you there?") in transcript_on_screen(app)
        assert not app.chat.busy
        assert engine_of(app) is not None
        assert [line.role for line in engine_of(app).transcript("t-test")].count("customer") == 2


async def test_second_message_while_answering_is_refused_and_kept(tmp_path: Path) -> None:
    model = GatedModel()
    app = make_app(tmp_path, model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?", wait=False)
        await wait_until(
            pilot, lambda: bool(app.chat.query(CustomerMessage)), "the first message to show"
        )
        box = app.chat.query_one("#message", Input)
        await pilot.press(*"thanks")  # typing is never blocked
        assert box.value == "thanks"
        await pilot.press("enter")
        assert box.value == "thanks"
        assert any("still answering" in notice for notice in iter_notices(app, "warning"))
        model.open()
        await settle(pilot)
        assert "In Transit" in replies(app)[-1]
        await pilot.press("enter")
        await settle(pilot)
        assert box.value == ""
        assert transcript_on_screen(app)[-2] == ("customer", "thanks")


async def test_input_errors_keep_the_text(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "   ")
        assert any("empty" in notice for notice in iter_notices(app, "warning"))
        assert app.chat.query_one("#message", Input).value == "   "
        assert not app.chat.query(CustomerMessage)
        await send(pilot, "x" * 16_001)
        assert any("too long" in notice for notice in iter_notices(app, "warning"))
        assert len(app.chat.query_one("#message", Input).value) == 16_001


async def test_a_draft_survives_the_focus_leaving_the_box_and_coming_back(
    tmp_path: Path,
) -> None:
    """Tab to the conversation and back selected the whole draft, and the next key typed
    replaced it."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.chat.message_input
        await pilot.press(*"my draft")
        await pilot.press("tab")
        assert app.focused is not box
        await pilot.press("shift+tab")
        assert app.focused is box
        await pilot.press("!")
        assert box.value == "my draft!"


async def test_typing_while_the_conversation_has_the_focus_goes_into_the_box(
    tmp_path: Path,
) -> None:
    """Clicked (to scroll or read) or tabbed to, the conversation kept the focus, and the
    letters typed next went nowhere."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")
        box = app.chat.message_input
        await pilot.click("#chat-log")
        assert app.focused is app.chat.chat_log
        await pilot.press(*"thanks")
        assert box.value == "thanks" and app.focused is box
        await pilot.press("tab")  # to the conversation again
        assert app.focused is not box
        await pilot.press("space", *"a lot")
        assert box.value == "thanks a lot" and app.focused is box
        await pilot.press("enter")
        await settle(pilot)
        assert transcript_on_screen(app)[-2] == ("customer", "thanks a lot")


async def test_a_multi_line_paste_is_kept_whole(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Jordan")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.chat.query_one("#message", Input)
        box.focus()
        email = "Hello, I need help with ORD-003.\r\n\nIt was due last week.\nWhere is it?\n"
        await pilot.press("O", "K", "space")
        box.post_message(events.Paste(email))
        await pilot.pause()
        assert box.value == "OK Hello, I need help with ORD-003. It was due last week. Where is it?"
        await pilot.press("enter")
        await settle(pilot)
        engine = engine_of(app)
        assert engine is not None
        said = [line.text for line in engine.transcript("t-test") if line.role == "customer"]
        assert said == ["OK Hello, I need help with ORD-003. It was due last week. Where is it?"]


async def test_typing_on_right_after_enter_keeps_only_the_new_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        engine = engine_of(app)
        assert engine is not None
        accept = asyncio.Event()
        answer = engine.run_turn

        async def slow_to_accept(*args: Any, **kwargs: Any) -> AsyncIterator[EngineEvent]:
            await accept.wait()  # the turn is taken a moment after Enter
            async for event in answer(*args, **kwargs):
                yield event

        monkeypatch.setattr(engine, "run_turn", slow_to_accept)
        await send(pilot, "Where is my order ORD-002?", wait=False)
        box = app.chat.query_one("#message", Input)
        box.insert_text_at_cursor("thanks")  # typed before the turn was taken
        accept.set()
        await settle(pilot)
        assert box.value == "thanks"
        said = [line.text for line in engine.transcript("t-test") if line.role == "customer"]
        assert said == ["Where is my order ORD-002?"]


async def test_loading_state_paints_before_the_engine(tmp_path: Path) -> None:
    class SlowEngine(ShopBotEngine):
        async def start(self) -> None:
            await gate.wait()
            await super().start()

    gate = asyncio.Event()
    app = make_app(tmp_path, engine_class=SlowEngine)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert engine_of(app) is None
        loading = app.chat.query_one("#loading SystemNote")
        assert "Loading the engine" in visible_text(loading)
        panel = app.chat.query_one(SidePanel)
        assert "Model    offline demo" in visible_text(panel.query_one("#model"))
        gate.set()
        await settle(pilot)
        assert engine_of(app) is not None
        assert notes(app)[0].startswith("New conversation")


async def test_a_message_sent_while_the_engine_loads_goes_once_it_is_up(tmp_path: Path) -> None:
    """It was refused ("still loading the engine; your message is kept"), to send again."""

    class SlowEngine(ShopBotEngine):
        async def start(self) -> None:
            await gate.wait()
            await super().start()

    gate = asyncio.Event()
    app = make_app(tmp_path, engine_class=SlowEngine)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await send(pilot, "Where is ORD-002?", wait=False)
        await pilot.pause()
        assert engine_of(app) is None
        assert list(iter_notices(app, "information")) == [
            "Sending soon: ShopBot is still loading the engine; your message goes as soon as "
            "it is up."
        ]
        assert not list(iter_notices(app, "warning"))
        gate.set()
        await settle(pilot)
        assert transcript_on_screen(app)[1] == ("customer", "Where is ORD-002?")
        assert "In Transit" in replies(app)[-1]
        assert app.chat.message_input.value == ""


async def test_a_message_taken_back_while_the_engine_loads_is_not_sent(tmp_path: Path) -> None:
    class SlowEngine(ShopBotEngine):
        async def start(self) -> None:
            await gate.wait()
            await super().start()

    gate = asyncio.Event()
    app = make_app(tmp_path, engine_class=SlowEngine)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await send(pilot, "Where is ORD-002?", wait=False)
        app.chat.message_input.value = "Where is ORD-005?"  # changed: not what was sent
        gate.set()
        await settle(pilot)
        assert [role for role, _ in transcript_on_screen(app)] == ["note"]
        assert app.chat.message_input.value == "Where is ORD-005?"


def test_the_app_module_does_not_import_langchain_or_the_markdown_renderer() -> None:
    code = (
        "import sys, shopbot_tui.launch, shopbot_tui.cli.main, shopbot_tui.app\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain', 'langchain_core', 'langgraph', 'langchain_mistralai')]\n"
        "heavy += [m for m in sys.modules if m == 'agents.runner.engine']\n"
        # Their dataclasses take 20-40 ms to create: loaded with the engine, after the frame.
        "heavy += [m for m in sys.modules if m in ('agents.events', 'agents.audit.log')]\n"
        # The Markdown renderer (markdown-it, Pygments, Textual's Markdown widget: ~70 ms) is
        # for replies and the keys panel, both after the first frame.
        "heavy += [m for m in sys.modules if m.split('.')[0] in ('markdown_it', 'pygments')]\n"
        "heavy += [m for m in sys.modules if m in ('textual.widgets._markdown', 'rich.markdown')]\n"
        "print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


async def test_copy_last_reply_and_export_chat(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002? [bold]keep[/]")
        await pilot.press("ctrl+y")
        assert app.clipboard == replies(app)[-1]
        await pilot.press("ctrl+s")
        await settle(pilot)
        exports = list((tmp_path / "exports").glob("t-test-*.md"))
        assert len(exports) == 1
        text = exports[0].read_text(encoding="utf-8")
        assert "# ShopBot conversation t-test" in text
        assert "> Hi, where is my order ORD-002? \\[bold\\]keep\\[/\\]" in text
        assert "In Transit" in text
        assert any(str(exports[0]) in notice for notice in iter_notices(app, "information"))


async def test_an_order_id_before_a_long_run_of_one_character_is_not_redacted(
    tmp_path: Path,
) -> None:
    """`ORD-002` and 3,000 x's showed as `ORD-[REDACTED]`: nothing is a secret here."""
    message = "Where is ORD-002" + "x" * 3_000
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, message)
        assert transcript_on_screen(app)[1] == ("customer", message)
        assert engine_of(app) is not None
        stored = [line.text for line in engine_of(app).transcript("t-test")]
        assert stored[0] == message and "REDACTED" not in " ".join(stored)


async def test_correction_loop_is_shown(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "where is ORD-0O1?")
        shown = notes(app)
        assert any(note.startswith("gate: order id rejected: Order ID 'ORD-0O1'") for note in shown)
        assert "correcting (1/2)" in shown
        assert "correction" in audit_kinds(app, "t-test")
        assert engine_of(app) is not None
        stored = [line.text for line in engine_of(app).transcript("t-test") if line.role == "note"]
        assert stored == shown[1:]


async def test_notes_of_a_misread_order_id_are_whole_and_read_as_what_happened(
    tmp_path: Path,
) -> None:
    """They were cut ("…format ORD-XXX (three digits, example: ORD…"), and on this path,
    which ends with the order found, "lookup_order refused: Refused, not executed: …" read
    as an error."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=(80, 40)) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-02?")
        assert "In Transit" in replies(app)[-1]  # it ends well
        shown = notes(app)[1:]
        assert shown == [
            "gate: order id rejected: Order ID 'ORD-02' does not match the required format "
            "ORD-XXX (three digits, example: ORD-001)",
            "correcting (1/2)",
        ]  # (then the corrected call runs: no "refused" note on a path that ends well)
        # Wrapped on screen, not cut.
        painted = " ".join(
            " ".join(painted_text(app, note).split()) for note in app.chat.query(SystemNote)
        )
        assert "(three digits, example: ORD-001)" in painted and "…" not in painted


async def test_customer_of_a_stored_thread_wins(tmp_path: Path) -> None:
    await begin_conversation(tmp_path, "t-sam", "Sam")
    second = make_app(tmp_path, thread_id="t-sam", customer="Alex")
    async with second.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert second.chat.customer == "Sam"
        assert any("belongs to Sam" in notice for notice in iter_notices(second, "warning"))
        assert transcript_on_screen(second)[0] == ("customer", "Where is ORD-002?")


async def test_a_conversation_begun_without_a_customer_stays_without_one(tmp_path: Path) -> None:
    await begin_conversation(tmp_path, "t-anon", None)
    second = make_app(tmp_path, thread_id="t-anon", customer="Alex")
    async with second.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert second.chat.customer is None
        warnings = list(iter_notices(second, "warning"))
        assert any("began without a customer" in notice for notice in warnings)
        await send(pilot, "And ORD-001?")  # goes on, as before, for nobody in particular
        assert "Wireless Headphones" in replies(second)[-1]
        assert engine_of(second) is not None and engine_of(second).thread("t-anon").customer is None
        # A new conversation is still for the customer the app was started for.
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert second.chat.customer == "Alex"
        await send(pilot, "Where is ORD-002?")
        assert "In Transit" not in replies(second)[-1]  # Sam's order: not shown to Alex
        new = engine_of(second).thread(second.chat.thread_id)
        assert new is not None and new.customer == "Alex"


async def test_quitting_while_a_turn_runs_is_clean(tmp_path: Path) -> None:
    model = GatedModel()  # never opened: the turn is still waiting when the app quits
    app = make_app(tmp_path, model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?", wait=False)
        await wait_until(pilot, lambda: bool(app.chat.query(CustomerMessage)), "the turn")
        await pilot.press("ctrl+q")
    assert app.return_code == 0
    # The next start finds the thread usable.
    again = make_app(tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-005?")
        assert "Bluetooth Speaker" in replies(again)[-1]


async def test_the_side_panels_values_line_up(tmp_path: Path) -> None:
    """`Model`'s value stood one column right of `ID`'s and `Customer`'s."""
    app = make_app(tmp_path, thread_id="t-aligned", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lines = painted_text(app, app.chat.panel).splitlines()

        def column(label: str, value: str) -> int:
            (line,) = [line for line in lines if line.lstrip("▏ ").startswith(label)]
            return line.index(value)

        model = column("Model", "offline demo")
        assert column("ID", "t-aligned") == model == column("Customer", "Sam")
        assert column("rule-based", "rule-based") == model


async def test_a_narrow_terminal_hides_the_side_panel_and_ctrl_b_brings_it_back(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        panel = app.chat.panel
        assert not panel.display
        assert app.chat.chat_log.size.width > 70  # the reply gets the width
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        assert panel.display
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert not panel.display
        await pilot.press("ctrl+b")
        await settle(pilot)
        assert panel.display and panel.size.width > 0


async def test_a_reply_keeps_every_word_when_the_side_panel_narrows_the_chat(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my parcel?")
        reply = app.chat.query(AssistantReply).last()
        assert len(painted_text(app, reply).splitlines()) == 2  # its title, and one line
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        for _ in range(2):  # the panel comes and goes: each time the reply re-wraps
            await pilot.press("ctrl+b")
            await settle(pilot)
            shown = painted_text(app, reply).split()
            assert all(word in shown for word in reply.source.split()), shown


def contrast(one: Color, other: Color) -> float:
    """The WCAG contrast ratio of two opaque colours (3 is the floor for UI lines)."""

    def luminance(colour: Color) -> float:
        def linear(channel: int) -> float:
            value = channel / 255
            return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

        r, g, b = (linear(channel) for channel in colour.rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


async def test_side_panel_lines_show_in_the_dark_and_the_light_theme(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause()
            panel = app.chat.panel
            idle = next(card for card in panel.query(AgentCard) if not card.has_class("-active"))
            background = panel.styles.background
            for what, (_, colour) in (
                ("separator", panel.styles.border_left),
                ("card border", idle.styles.border_top),
            ):
                painted = background + colour  # a colour with alpha is blended on the panel
                assert contrast(painted, background) >= 3, (theme, what, painted.hex)


def palette_hits(app: Any) -> list[tuple[str, str]]:
    """(name, help) of each command the open palette lists."""
    listed = app.screen.query_one(CommandList)
    return [
        (str(option.hit.text), str(option.hit.help or ""))
        for option in listed.options
        if isinstance(option, Command)
    ]


async def test_a_conversation_is_called_one_yet_thread_still_finds_it(tmp_path: Path) -> None:
    """The footer said "Threads", its dialog "Conversations", the palette both: one word
    now. "thread" and "switch thread", as the issue asked for them, still find the commands."""
    app = make_app(tmp_path, thread_id="t-words", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        footer = frame_text(app).rstrip("\n").splitlines()[-1]
        assert "^t Conversations" in footer and "Thread" not in footer, footer
        session = painted_text(app, app.chat.panel)
        assert "ID       t-words" in session and "Thread" not in session, session

        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: len(palette_hits(app)) > 5, "the palette's commands")
        listed = palette_hits(app)
        assert "New conversation" in dict(listed) and "Switch conversation…" in dict(listed)
        assert not [hit for hit in listed if "thread" in " ".join(hit).casefold()], listed

        await pilot.press(*"thread")
        found = ("New conversation", "Switch conversation…")
        await wait_until(
            pilot,
            lambda: set(found) <= {name for name, _ in palette_hits(app)},
            "both commands found by 'thread'",
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.chat, "the palette closed")

        await palette_command(pilot, "switch thread")
        await wait_until(pilot, lambda: isinstance(app.screen, ThreadsScreen), "the list")
