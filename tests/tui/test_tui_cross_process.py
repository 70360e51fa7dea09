"""Two fronts on one SHOPBOT_HOME at once, as an operator works: the app open on a thread
while `shopbot chat` / `shopbot resume` run on it, and two app windows on one thread.

The other front is the installed `shopbot` command in a subprocess where the test only needs
it to have run; where it must be caught mid-turn, it is a second app or a second engine in
this process with a model held at a gate: its own SQLite connections and its own lease
owner, so the app sees it exactly as it sees another process.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from agents.audit.log import AuditLog, AuditQuery
from agents.reviewer import login_name
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from agents.store.shop import ShopData
from shopbot_tui.audit.screen import AuditViewerScreen
from shopbot_tui.chat import decisions_waiting, thread_opening
from shopbot_tui.chat.approval_flow import ANSWERING_ELSEWHERE
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.chat.notices import (
    ANSWERED_WHILE_SHOWN,
    ASKED_ANEW_ELSEWHERE,
    BUSY_ELSEWHERE,
    DECIDED_ELSEWHERE,
    DECIDING_ELSEWHERE,
    decided_by_text,
)
from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.threads.screen import ThreadsScreen
from tests.support.tui import (
    SIZE,
    GatedModel,
    RecordingApp,
    audit_kinds,
    engine_of,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    make_app,
    send,
    settle,
    transcript_on_screen,
    wait_until,
)

# Two fronts and real `shopbot` processes on one home: the longest journeys (docs/testing.md).
pytestmark = pytest.mark.slow

KEPT = "Thanks. Is ORD-002 still on its way?"
REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"
SHOPBOT = Path(sys.executable).with_name("shopbot")


async def shopbot(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `shopbot` command on `home` (PYTHONPATH passed on, as in
    test_cli_process.py), run off the event loop: the app goes on meanwhile."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MISTRAL_", "SHOPBOT_"))}
    done = await asyncio.to_thread(
        subprocess.run,
        [str(SHOPBOT), *args],
        capture_output=True,
        text=True,
        env={**environ, "SHOPBOT_HOME": str(home)},
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def refunds_paid(home: Path) -> list[str]:
    with ShopData(Settings(home=home, force_offline=True).database_path) as shop:
        return [record.order_id for record in shop.refunds()]


def stored(app: RecordingApp, thread_id: str = "t-test") -> list[tuple[str, str]]:
    """The thread's transcript as stored, in the shape `transcript_on_screen` gives."""
    assert engine_of(app) is not None
    return [(line.role, line.text) for line in engine_of(app).transcript(thread_id)]


def warnings(app: RecordingApp) -> list[str]:
    return list(iter_notices(app, "warning"))


@asynccontextmanager
async def engine_elsewhere(home: Path, model: GatedModel) -> AsyncIterator[ShopBotEngine]:
    """Another front's engine on `home` (what `shopbot chat` runs), with its model held."""
    async with ShopBotEngine(Settings(home=home, force_offline=True), model=model) as engine:
        yield engine


async def reopen_from_the_list(pilot: Pilot[None]) -> None:
    """ctrl+t, then enter on the open thread (the list's cursor starts there when it was
    touched last): shown again as stored."""
    await pilot.press("ctrl+t")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ThreadsScreen)
    await pilot.press("enter")
    await settle(pilot)


async def test_a_refund_approved_by_shopbot_resume_is_not_decided_again_in_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The decision sent here is what is refused: the app's periodic look, which closes the
    # dialog by itself once it sees the decision taken (test_tui_approval.py), waits.
    monkeypatch.setattr(decisions_waiting, "LOOK_EVERY_SECONDS", 3600.0)
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        assert isinstance(app.screen, ApprovalScreen)  # asked, and left open
        done = await shopbot(tmp_path, "resume", "t-test", "approve")
        assert done.returncode == 0, done.stderr
        await pilot.press("a", "enter")  # the person here decides too
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen) and app.chat.pending is None
        # Who decided, as the audit log names them.
        said = [w for w in warnings(app) if DECIDED_ELSEWHERE in w]
        assert said and "It was approved by" in said[0] and "(command line)" in said[0], said
        assert refunds_paid(tmp_path) == ["ORD-005"]
        kinds = audit_kinds(app, "t-test")
        assert kinds.count("approval_decided") == kinds.count("refund_processed") == 1
        # The thread as stored: one decision, the refund and the reply the command got.
        assert transcript_on_screen(app) == stored(app)
        decisions = [text for role, text in stored(app) if text.startswith("decision: ")]
        assert decisions == [f"decision: approve, by {login_name()} (command line)"]
        assert stored(app)[-1][0] == "assistant"


async def test_a_decision_being_answered_in_another_window_is_neither_sent_nor_asked_again(
    tmp_path: Path,
) -> None:
    model = GatedModel(free_calls=1000)  # free until the first app has asked its decision
    first = make_app(tmp_path, customer="Sam", model=model)
    second = make_app(tmp_path, customer="Sam")
    async with first.run_test(size=SIZE) as one, second.run_test(size=SIZE) as two:
        await settle(one)
        await settle(two)
        await send(one, REFUND)
        await reopen_from_the_list(two)  # the second window sees the question too
        assert isinstance(second.screen, ApprovalScreen)
        model.hold_from_now()
        await one.press("a", "enter")  # the refund is paid, the reply is held
        await wait_until(one, model.held.is_set, "the first window's reply to be held")
        await two.press("a", "enter")
        await settle(two)
        # Not sent, and not asked again while the first window answers it.
        assert any(DECIDING_ELSEWHERE in w for w in warnings(second)), warnings(second)
        assert isinstance(second.screen, ChatScreen) and second.chat.pending is None
        assert second.chat.panel.step == ANSWERING_ELSEWHERE
        # A message meanwhile is refused too, and kept.
        await send(two, "Is it done?")
        assert any(BUSY_ELSEWHERE in w for w in warnings(second)), warnings(second)
        assert second.chat.query_one("#message", Input).value == "Is it done?"
        assert isinstance(second.screen, ChatScreen)
        model.open()
        await settle(one)
        await reopen_from_the_list(two)
        assert isinstance(second.screen, ChatScreen) and second.chat.pending is None
        assert transcript_on_screen(second) == stored(second)
        assert second.chat.panel.step == "idle"
    assert refunds_paid(tmp_path) == ["ORD-005"]
    with AuditLog(Settings(home=tmp_path).database_path) as audit:
        kinds = [event.kind for event in audit.page(AuditQuery(thread_id="t-test"), limit=1000)]
    assert kinds.count("approval_decided") == kinds.count("refund_processed") == 1


async def test_a_message_while_shopbot_chat_answers_the_open_thread_is_refused_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(thread_opening, "ELSEWHERE_POLL_SECONDS", 0.05)
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-002?")
        model = GatedModel()
        async with engine_elsewhere(tmp_path, model) as other:
            running = asyncio.create_task(other.send("t-test", "And ORD-005?", customer="Sam"))
            await wait_until(pilot, model.held.is_set, "the command's turn to be held")
            await send(pilot, KEPT)
            assert any(BUSY_ELSEWHERE in w for w in warnings(app)), warnings(app)
            assert app.chat.query_one("#message", Input).value == KEPT
            # Shown as stored: the command's message is there, and who is answering.
            assert ("customer", "And ORD-005?") in transcript_on_screen(app)
            assert app.chat.panel.step == ANSWERING_ELSEWHERE
            model.open()
            assert (await running).status == "done"
            # Without ctrl+t: the app sees the other turn end and shows how it ended.
            await wait_until(pilot, lambda: app.chat.panel.step == "idle", "the thread to settle")
            await settle(pilot)
        assert transcript_on_screen(app) == stored(app)
        assert "ORD-005" in transcript_on_screen(app)[-1][1]
        await reopen_from_the_list(pilot)  # as the list shows it too
        assert transcript_on_screen(app) == stored(app)
        assert app.chat.panel.step == "idle"
        await pilot.press("enter")  # the kept message goes now
        await settle(pilot)
        assert ("customer", KEPT) in stored(app)
        assert stored(app)[-1][0] == "assistant"


async def test_shopbot_chat_while_the_apps_own_turn_runs_exits_2_and_changes_nothing(
    tmp_path: Path,
) -> None:
    model = GatedModel()
    app = make_app(tmp_path, customer="Sam", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-002?", wait=False)
        await wait_until(pilot, model.held.is_set, "the app's turn to be held")
        before = stored(app), audit_kinds(app, "t-test")
        done = await shopbot(tmp_path, "chat", "t-test", "And ORD-005?")
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.splitlines() == [
            # The app's process, named as such: not "another ShopBot window" (which it said
            # as well when the turn was another `shopbot chat`'s).
            f"shopbot: Thread t-test is answering a message in another ShopBot process "
            f"(pid {os.getpid()}: the app, or a `shopbot chat` or `shopbot resume` command); "
            "wait for it to finish."
        ]
        assert (stored(app), audit_kinds(app, "t-test")) == before
        model.open()
        await settle(pilot)
        assert app.chat.pending is None and not warnings(app)
        assert transcript_on_screen(app)[-1][0] == "assistant"
        assert [text for role, text in stored(app) if role == "customer"] == [
            "Where is my order ORD-002?"
        ]


async def test_the_audit_viewer_and_the_thread_list_show_what_another_process_wrote(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-002?")
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert isinstance(app.screen, AuditViewerScreen)
        shown_before = len(audit_kinds(app, "t-test"))
        for args in (
            ("chat", "t-test", "And ORD-005?"),
            ("chat", "t-cli", "Where is ORD-001?", "--customer", "Alex"),
        ):
            done = await shopbot(tmp_path, *args)
            assert done.returncode == 0, done.stderr
        new = len(audit_kinds(app, "t-test")) - shown_before
        assert new > 0
        await pilot.press("r")
        await settle(pilot)
        assert ("information", "", f"{new} new events") in app.notices
        assert not list(iter_notices(app, "error")) and not warnings(app)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        table = app.screen.query_one("#threads", DataTable)
        rows = {
            str(table.get_row_at(i)[1]): (str(table.get_row_at(i)[2]), str(table.get_row_at(i)[5]))
            for i in range(table.row_count)
        }
        assert rows == {"t-cli": ("Alex", "1"), "t-test": ("Sam", "2")}


async def test_a_decision_is_never_applied_to_another_request_than_the_one_shown(
    tmp_path: Path,
) -> None:
    # The app asks about ORD-005; meanwhile a command rejects it and, on the customer's next
    # message, the refund is asked again: "approve" here meant the first request.
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        assert isinstance(app.screen, ApprovalScreen)
        first = app.screen.request.request_id
        assert app.screen.request.payload["order_id"] == "ORD-005"
        done = await shopbot(tmp_path, "resume", "t-test", "reject")
        assert done.returncode == 0, done.stderr
        again = "I want a refund for ORD-005, it really does crackle at any volume"
        asked = await shopbot(tmp_path, "chat", "t-test", again, "--json")
        assert asked.returncode == 0 and '"ORD-005"' in asked.stdout, asked.stdout
        second = json.loads(asked.stdout)["pending"]["request_id"]
        assert second != first
        await pilot.press("a", "enter")
        await settle(pilot)
        assert refunds_paid(tmp_path) == []
        # The decision now waiting is asked here, as it is. Said when "approve" was refused,
        # or earlier, if the app's periodic look found the shown one answered first (the
        # keys then went to the message box, refused too: a decision waits).
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.request.request_id == second
        said = warnings(app)
        shown_answered = (ANSWERED_WHILE_SHOWN, decided_by_text("rejected by").split(",")[0])
        assert any(
            ASKED_ANEW_ELSEWHERE in w or any(text in w for text in shown_answered) for w in said
        ), said
        await pilot.press("a", "enter")
        await settle(pilot)
        assert refunds_paid(tmp_path) == ["ORD-005"]
