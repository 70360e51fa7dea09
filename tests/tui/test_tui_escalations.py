"""An escalated conversation waits for a person in the app: the side panel says so (and
counts the others), the conversation list marks them, a new one elsewhere is said once with
the bell, and ctrl+g marks one handled under the person's name, in the conversation and the
audit log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from agents.backend import AuditQuery, Escalation, Reviewer
from agents.events import EngineEvent, Escalated
from agents.models.offline.demo_model import OfflineDemoModel
from agents.reviewer import login_name
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from shopbot_tui.chat import decisions_waiting
from shopbot_tui.chat.decisions_waiting import DecisionsRead
from shopbot_tui.threads.screen import ThreadsScreen
from tests.support.tui import (
    SIZE,
    GatedModel,
    RecordingApp,
    engine_of,
    frame_text,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    make_app,
    notes,
    palette_command,
    send,
    settle,
    visible_text,
    wait_until,
)

OVER_LIMIT = "Refund ORD-004 please, the monitor has dead pixels"
ESCALATED = "Escalated to a person: "
NEW_T_BIG = (
    "Escalated to a person: Conversation t-big escalated by the Refund agent: refund above the "
    "auto-refund limit."
)
NEW_T_CLI = (
    "Escalated to a person: Conversation t-cli escalated by the Refund agent: refund above the "
    "auto-refund limit."
)


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


async def handled_elsewhere(home: Path, thread_id: str) -> None:
    """Another front (`shopbot handled`) marks a conversation's escalation handled."""
    settings = Settings(home=home, force_offline=True)
    async with ShopBotEngine(settings, model=OfflineDemoModel()) as engine:
        closed = await asyncio.to_thread(
            engine.close_escalation, thread_id, Reviewer("dana", "cli")
        )
        assert closed is not None


def notices_naming(app: RecordingApp, thread_id: str) -> list[str]:
    return [f"{title}: {text}" for _, title, text in app.notices if thread_id in text]


def escalation_notices(app: RecordingApp) -> list[str]:
    return [text for text in iter_notices(app, "warning") if text.startswith(ESCALATED)]


class ReadCounter:
    """Counts the side panel's reads of the registry, to wait for the next periodic ones."""

    def __init__(self, app: RecordingApp, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        waiting = app.chat.waiting
        read = waiting.read

        async def counted(message: DecisionsRead) -> None:
            await read(message)
            self.count += 1

        monkeypatch.setattr(waiting, "read", counted)

    async def more(self, pilot: Pilot[int], reads: int = 2) -> None:
        until = self.count + reads
        await wait_until(pilot, lambda: self.count >= until, f"{reads} more reads")


@pytest.fixture
def quick_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry is read again every 0.2 s rather than every few seconds."""
    monkeypatch.setattr(decisions_waiting, "LOOK_EVERY_SECONDS", 0.2)


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
        assert engine_of(app) is not None
        closed = engine_of(app).audit.page(AuditQuery(kinds=("escalation_closed",)), limit=5)
        assert [(e.thread_id, e.detail["decided_by"], e.detail["via"]) for e in closed] == [
            ("t-big", name, "app")
        ]
        # The conversation keeps the line: opened again, it is there.
        assert engine_of(app).transcript("t-big")[-1].text == f"escalation handled by {name} (app)"


async def test_other_escalated_conversations_are_counted_and_marked_in_the_list(
    tmp_path: Path,
) -> None:
    await escalate_elsewhere(tmp_path, "t-one")
    await escalate_elsewhere(tmp_path, "t-two")
    app = make_app(tmp_path, thread_id="t-quiet", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert escalation_notices(app) == [
            "Escalated to a person: 2 conversations (t-one and t-two) are escalated and "
            "waiting for a person: marked ▲ in ctrl+t."
        ]
        assert app.bells == 0
        await send(pilot, "Where is my order ORD-002?")
        await settle(pilot)
        assert escalated_line(app) == "2 conversations escalated · marked ▲ in ctrl+t"
        # Nothing to mark handled here: no key, no command.
        assert "^g Handled" not in footer(app)
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert engine_of(app) is not None
        assert len(engine_of(app).escalations()) == 2

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
        assert [e.thread_id for e in engine_of(app).escalations()] == ["t-two"]
        assert escalated_line(app) == "1 conversation escalated · marked ▲ in ctrl+t"


async def test_an_escalation_handled_in_another_window_is_not_closed_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ctrl+g is pressed before the app reads the registry again: its periodic look waits (on
    # a loaded machine it could come first, and the key would be gone from the footer).
    monkeypatch.setattr(decisions_waiting, "LOOK_EVERY_SECONDS", 3600.0)
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
        assert engine_of(app) is not None
        closed_events = engine_of(app).audit.page(AuditQuery(kinds=("escalation_closed",)), limit=5)
        assert [e.detail["decided_by"] for e in closed_events] == ["dana"]
        assert escalated_line(app) == ""


@pytest.mark.usefixtures("quick_reads")
async def test_an_escalation_by_another_process_is_said_once_with_the_bell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(tmp_path, thread_id="t-quiet", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        reads = ReadCounter(app, monkeypatch)
        await reads.more(pilot)
        assert escalation_notices(app) == [] and app.bells == 0

        await escalate_elsewhere(tmp_path, "t-cli")
        await wait_until(pilot, lambda: escalated_line(app) != "", "the registry read again")
        assert escalation_notices(app) == [NEW_T_CLI]
        assert app.bells == 1
        # The next periodic reads find it again: nothing more is said.
        await reads.more(pilot)
        assert escalation_notices(app) == [NEW_T_CLI]
        assert app.bells == 1

        # Marked handled (`shopbot handled`), then escalated again: new, and said again.
        await handled_elsewhere(tmp_path, "t-cli")
        await wait_until(pilot, lambda: escalated_line(app) == "", "the escalation to go")
        await escalate_elsewhere(tmp_path, "t-cli")
        await wait_until(pilot, lambda: escalated_line(app) != "", "the registry read again")
        assert escalation_notices(app) == [NEW_T_CLI, NEW_T_CLI]
        assert app.bells == 2


@pytest.mark.usefixtures("quick_reads")
async def test_the_open_conversations_own_escalation_is_not_a_notification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chat and the panel say it: a toast would say it twice; nor once it is left."""
    app = make_app(tmp_path, thread_id="t-big", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        reads = ReadCounter(app, monkeypatch)
        await send(pilot, OVER_LIMIT)
        await reads.more(pilot)
        assert escalated_line(app).startswith("Escalated to a person: refund above")
        assert escalation_notices(app) == [] and app.bells == 0

        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-big", "a new conversation")
        await reads.more(pilot)
        assert escalated_line(app) == "1 conversation escalated · marked ▲ in ctrl+t"
        assert escalation_notices(app) == [] and app.bells == 0


async def test_an_escalation_reached_after_leaving_its_conversation_is_said(
    tmp_path: Path,
) -> None:
    """A turn of this app, left answering in the background, escalates: the person is on
    another conversation and saw nothing of it in the chat."""
    model = GatedModel()
    app = make_app(tmp_path, thread_id="t-big", customer="Alex", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, OVER_LIMIT, wait=False)
        await wait_until(pilot, model.held.is_set, "the turn to be under way")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-big", "a new conversation")
        model.open()
        await settle(pilot)
        await wait_until(pilot, lambda: escalated_line(app) != "", "the escalation counted")
        await settle(pilot)
        # One notice for the one event: not "has a new reply" beside it (that said it twice).
        assert notices_naming(app, "t-big") == [NEW_T_BIG]
        assert app.bells == 1


async def test_a_background_reply_without_an_escalation_is_said_as_a_reply(
    tmp_path: Path,
) -> None:
    """Said with the registry's read after the turn (to see an escalation it reached): still
    said, once."""
    model = GatedModel()
    app = make_app(tmp_path, thread_id="t-order", customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?", wait=False)
        await wait_until(pilot, model.held.is_set, "the turn to be under way")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-order", "a new conversation")
        model.open()
        await settle(pilot)
        await wait_until(pilot, lambda: bool(notices_naming(app, "t-order")), "the reply said")
        await settle(pilot)
        assert notices_naming(app, "t-order") == [": Conversation t-order has a new reply."]
        assert app.bells == 0


class EscalationHeldEngine(ShopBotEngine):
    """Holds a turn right after its escalation (then in the registry) until `release`."""

    held = asyncio.Event()
    release = asyncio.Event()

    def run_turn(
        self, thread_id: str, text: str, *, customer: str | None = None
    ) -> AsyncIterator[EngineEvent]:
        events = super().run_turn(thread_id, text, customer=customer)
        held, release = self.held, self.release

        async def held_after_escalation() -> AsyncIterator[EngineEvent]:
            async for event in events:
                yield event
                if isinstance(event, Escalated):
                    held.set()
                    await release.wait()

        return held_after_escalation()


@pytest.mark.usefixtures("quick_reads")
async def test_an_escalation_read_while_its_background_turn_still_answers_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry has the escalation while the turn still writes its reply: a read then
    said it, and the turn's end said "has a new reply" too. It is said once the turn ends."""
    monkeypatch.setattr(EscalationHeldEngine, "held", asyncio.Event())
    monkeypatch.setattr(EscalationHeldEngine, "release", asyncio.Event())
    model = GatedModel()
    app = make_app(
        tmp_path, thread_id="t-big", customer="Alex", model=model, engine_class=EscalationHeldEngine
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        reads = ReadCounter(app, monkeypatch)
        await send(pilot, OVER_LIMIT, wait=False)
        await wait_until(pilot, model.held.is_set, "the turn to be under way")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-big", "a new conversation")
        model.open()
        await wait_until(pilot, EscalationHeldEngine.held.is_set, "the escalation")
        await reads.more(pilot)  # they find it in the registry, its turn still answering
        assert "t-big" in app.chat.busy
        EscalationHeldEngine.release.set()
        await wait_until(pilot, lambda: "t-big" not in app.chat.busy, "the turn to end")
        await reads.more(pilot)
        assert notices_naming(app, "t-big") == [NEW_T_BIG]
        assert app.bells == 1


async def test_escalations_open_at_start_are_said_in_one_notification(tmp_path: Path) -> None:
    await escalate_elsewhere(tmp_path, "t-one")
    await escalate_elsewhere(tmp_path, "t-two")
    app = make_app(tmp_path, thread_id="t-one", customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # The open one is in the panel (and the chat): only the other is said, and no bell,
        # as nothing happened just now.
        assert escalation_notices(app) == [
            "Escalated to a person: Conversation t-two is escalated and waiting for a person: "
            "marked ▲ in ctrl+t."
        ]
        assert app.bells == 0


async def test_an_escalation_said_at_one_start_is_not_said_at_the_next(tmp_path: Path) -> None:
    """The start-up notification named the same escalation at every launch until someone
    marked it handled."""
    await escalate_elsewhere(tmp_path, "t-one")
    first = make_app(tmp_path, thread_id="t-quiet", customer="Sam")
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert escalation_notices(first) == [
            "Escalated to a person: Conversation t-one is escalated and waiting for a person: "
            "marked ▲ in ctrl+t."
        ]
    await escalate_elsewhere(tmp_path, "t-two")  # (while no app runs)
    for launch in range(2):
        again = make_app(tmp_path, thread_id="t-quiet", customer="Sam")
        async with again.run_test(size=SIZE) as pilot:
            await settle(pilot)
            # Still escalated, still counted; said once: only t-two, and only the first time.
            assert "2 conversations escalated" in escalated_line(again)
            said = escalation_notices(again)
            assert said == (
                [
                    "Escalated to a person: Conversation t-two is escalated and waiting for a "
                    "person: marked ▲ in ctrl+t."
                ]
                if launch == 0
                else []
            ), said


async def test_several_escalations_new_in_one_read_are_one_notification(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-quiet", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert escalation_notices(app) == []
        # As a read finds them after two `shopbot chat` runs between two of its turns.
        since = "2026-12-01T09:30:00.000Z"
        both = [
            Escalation("t-a", since, "refund_agent", "refund above the auto-refund limit"),
            Escalation("t-b", since, None, "order id still wrong after 2 corrections"),
        ]
        await app.chat.waiting.read(DecisionsRead([], escalations=both))
        assert escalation_notices(app) == [
            "Escalated to a person: 2 conversations were escalated (t-a and t-b): "
            "marked ▲ in ctrl+t."
        ]
        assert app.bells == 1

        # One more, with no agent and a long reason that looks like markup: said as text, cut.
        odd = Escalation("t-c", since, None, "[b]not bold[/b] " * 8)
        await app.chat.waiting.read(DecisionsRead([], escalations=[*both, odd]))
        assert escalation_notices(app)[1:] == [
            "Escalated to a person: Conversation t-c escalated: "
            "[b]not bold[/b] [b]not bold[/b] [b]not bold[/b] [b]not bold…"
        ]
        assert app.bells == 2


async def test_a_read_overtaken_by_a_newer_one_does_not_say_an_escalation_twice(
    tmp_path: Path,
) -> None:
    """The periodic read and ctrl+o's run in their own workers: an older one that arrived
    last forgot the escalation the newer one had said, and the next read said it again."""
    app = make_app(tmp_path, thread_id="t-quiet", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        waiting = app.chat.waiting
        new = Escalation("t-a", "2026-12-01T09:30:00.000Z", "refund_agent", "over the limit")
        await waiting.read(DecisionsRead([], escalations=[new], number=1000))
        assert app.bells == 1
        await waiting.read(DecisionsRead([], escalations=[], number=999))  # began earlier
        await waiting.read(DecisionsRead([], escalations=[new], number=1001))
        assert len(escalation_notices(app)) == 1 and app.bells == 1


@pytest.mark.usefixtures("quick_reads")
async def test_an_escalation_seen_in_its_chat_is_not_said_again_when_left_mid_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person saw the escalation in the chat, then left while the reply was written:
    what is new when the turn ends is the reply only."""
    monkeypatch.setattr(EscalationHeldEngine, "held", asyncio.Event())
    monkeypatch.setattr(EscalationHeldEngine, "release", asyncio.Event())
    app = make_app(tmp_path, thread_id="t-big", customer="Alex", engine_class=EscalationHeldEngine)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        reads = ReadCounter(app, monkeypatch)
        await send(pilot, OVER_LIMIT, wait=False)
        await wait_until(pilot, EscalationHeldEngine.held.is_set, "the escalation")
        await wait_until(pilot, lambda: app.chat.escalated_here, "the escalation in the panel")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.chat.thread_id != "t-big", "a new conversation")
        await reads.more(pilot)
        EscalationHeldEngine.release.set()
        await wait_until(pilot, lambda: "t-big" not in app.chat.busy, "the turn to end")
        await reads.more(pilot)
        assert notices_naming(app, "t-big") == [": Conversation t-big has a new reply."]
        assert app.bells == 0
