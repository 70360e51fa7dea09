"""The approval modal: refunds and complaint reviews decided by a human, by key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual import events
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Button, Input
from textual.widgets._toast import Toast, ToastRack

from agents.graph.replies import COMPLAINT_DECISIONS
from agents.models.offline.demo_model import OfflineDemoModel
from agents.reviewer import login_name
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from agents.store import sqlite as sqlite_store
from shopbot_tui.chat import decisions_waiting
from shopbot_tui.chat.approval_screen import TINY_BELOW, ApprovalScreen
from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.threads.screen import ThreadsScreen
from tests.support.held_lock import locked_at_payment
from tests.support.tui import (
    SIZE,
    RecordingApp,
    audit_details,
    audit_kinds,
    engine_of,
    frame_text,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    make_app,
    notes,
    painted_text,
    replies,
    send,
    settle,
    transcript_on_screen,
    visible_text,
    wait_until,
)

REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"
CLI_REFUND = "I want a refund for ORD-006, the keys stick constantly"
COMPLAINT = "This is unacceptable! My parcel is two weeks late and nobody answers my emails!!!"


def decision_note(decision: str) -> str:
    """The conversation's note for a decision taken in this app."""
    return f"decision: {decision}, by {login_name()} (app)"


def modal_text(screen: ApprovalScreen) -> str:
    return "\n".join(
        visible_text(screen.query_one(selector))
        for selector in ("#approval-message", "#approval-facts", "#approval-gates")
    )


async def refund_asked_from_the_command_line(home: Path) -> None:
    """What `shopbot chat t-test "<CLI_REFUND>" --customer Jordan` does: its own engine on the
    same SHOPBOT_HOME, a turn that stops to wait for a decision."""
    settings = Settings(home=home, force_offline=True)
    async with ShopBotEngine(settings, model=OfflineDemoModel()) as engine:
        result = await engine.send("t-test", CLI_REFUND, customer="Jordan")
    assert result.pending is not None


async def dialog_after(pilot: Pilot[None], text: str) -> ApprovalScreen:
    """Send `text` and return the approval dialog it must open."""
    await send(pilot, text)
    screen = pilot.app.screen
    assert isinstance(screen, ApprovalScreen)
    return screen


async def later_then_reopen_and_press(pilot: Pilot[None], key: str, *, kept: str) -> None:
    """Decide later (the refused message `kept` in the box), reopen with ctrl+r, press `key`."""
    await pilot.press("escape")
    await settle(pilot)
    assert pilot.app.chat.query_one("#message", Input).value == kept
    await pilot.press("ctrl+r")
    assert isinstance(pilot.app.screen, ApprovalScreen)
    await pilot.press(key, "enter")
    await settle(pilot)


async def test_refund_opens_the_modal_and_approve_by_key(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await dialog_after(pilot, REFUND)
        text = modal_text(screen)
        for expected in ("Refund of ORD-005 for $59.50", "Sam", "Bluetooth Speaker"):
            assert expected in text
        assert "speaker crackles at any volume" in text
        assert "✓ order id" in text and "✓ refund" in text
        labels = [str(button.label) for button in screen.query(Button)]
        assert labels == ["[a] Approve", "[r] Reject", "[e] Escalate"]
        assert app.bells == 1
        assert not app.notices  # the dialog says what is asked; no toast repeats it over it
        subtitle = str(screen.query_one("#approval-dialog").border_subtitle)
        assert subtitle == f"thread t-test · deciding as {login_name()}"
        assert "waiting for a human decision: refund approval" in notes(app)
        assert "approval_requested" in audit_kinds(app, "t-test")

        await pilot.press("a")  # chooses: the button has the focus, nothing is decided yet
        await pilot.pause()
        assert app.screen is screen and app.focused is screen.query_one("#option-approve")
        assert "approval_decided" not in audit_kinds(app, "t-test")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert decision_note("approve") in notes(app)
        assert "approved and processed" in replies(app)[-1]
        kinds = audit_kinds(app, "t-test")
        assert kinds.index("approval_decided") < kinds.index("refund_processed")
        decided = audit_details(app, "t-test", "approval_decided")
        assert [(d["decided_by"], d["via"]) for d in decided] == [(login_name(), "app")]
        assert app.chat.pending is None
        assert engine_of(app) is not None
        stored_notes = [
            line.text for line in engine_of(app).transcript("t-test") if line.role == "note"
        ]
        assert stored_notes == notes(app)[1:]  # the welcome line is not stored


async def test_an_approval_the_ledger_cannot_take_is_asked_again_and_pays_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_MS", 300)
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await dialog_after(pilot, REFUND)
        with locked_at_payment(monkeypatch):  # another program, writing as long as it likes
            await pilot.press("a", "enter")
            await settle(pilot)
        # Not a reply promising a colleague: the same question, saying what went wrong.
        screen = app.screen
        assert isinstance(screen, ApprovalScreen), type(screen)
        text = modal_text(screen)
        assert "Not done" in text and "nothing was paid" in text, text
        assert "locked by another program" in " ".join(iter_notices(app, "error")) or any(
            "locked by another program" in note for note in notes(app)
        )
        assert engine_of(app) is not None and engine_of(app).shop.refunds() == []
        await pilot.press("a", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert [r.order_id for r in engine_of(app).shop.refunds()] == ["ORD-005"]
        assert audit_kinds(app, "t-test").count("refund_processed") == 1


async def test_enter_pressed_twice_to_decide_says_nothing_of_an_empty_message(
    tmp_path: Path,
) -> None:
    """The second Enter reached the empty message box: "Not sent: the message is empty"."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await dialog_after(pilot, REFUND)
        await pilot.press("a", "enter", "enter")
        await settle(pilot)
        assert decision_note("approve") in notes(app)
        assert not list(iter_notices(app, "warning")), app.notices
        assert app.focused is app.chat.message_input


async def test_refund_reject(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await dialog_after(pilot, REFUND)
        await pilot.press("r", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert decision_note("reject") in notes(app)
        kinds = audit_kinds(app, "t-test")
        assert "approval_decided" in kinds and "refund_processed" not in kinds
        assert replies(app)[-1]


async def test_complaint_review(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await dialog_after(pilot, COMPLAINT)
        text = modal_text(screen)
        assert "angry" in text and "two weeks late" in text and "Alex" in text
        labels = [str(button.label) for button in screen.query(Button)]
        assert labels == [
            "[s] Senior review",
            "[c] Compensate",
            "[t] Close ticket",
        ]
        # Keys of the other kind of decision do nothing here.
        await pilot.press("a")
        assert app.screen is screen
        await pilot.press("c", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert replies(app)[-1] == COMPLAINT_DECISIONS["provide_compensation"]
        assert "→ handed to Complaints agent" in notes(app)
        # In words, as the other notes are (it read "decision: provide_compensation").
        assert decision_note("provide compensation") in notes(app)
        assert "approval_decided" in audit_kinds(app, "t-test")


async def test_the_dialog_reads_the_ledger_when_it_opens(tmp_path: Path) -> None:
    """Left for later, then ORD-005 refunded in another window: ctrl+r showed "✓ refund action
    · … not refunded before", and no earlier decision (the approval just made)."""
    app = make_app(tmp_path, thread_id="t-later", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await dialog_after(pilot, REFUND)
        await pilot.press("escape")
        await settle(pilot)

        settings = Settings(home=tmp_path, force_offline=True)
        async with ShopBotEngine(settings, model=OfflineDemoModel()) as other:
            await other.send("t-other", REFUND, customer="Sam")
            assert (await other.decide("t-other", "approve")).status == "done"
            (paid,) = other.shop.refunds()

        await pilot.press("ctrl+r")
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await settle(pilot)
        text = modal_text(screen)
        assert f"already paid ({paid.reference})" in text, text
        assert f"✗ refund action · refunded since this was asked (reference {paid.reference})" in (
            text
        )
        assert "not refunded before" not in text
        assert f"approved by {login_name()}" in text and "conversation t-other" in text
        # The side panel's checks say it too.
        assert "✗ refund action" in visible_text(app.chat.query_one("#gates"))
        # Any decision only closes it: nothing is paid twice.
        await pilot.press("a", "enter")
        await settle(pilot)
        assert engine_of(app) is not None and len(engine_of(app).shop.refunds()) == 1


async def test_the_complaint_dialog_names_the_order_and_what_each_answer_does(
    tmp_path: Path,
) -> None:
    """It had no order, and "Compensate" said nothing of what it gives."""
    app = make_app(tmp_path, customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-001?")
        screen = await dialog_after(
            pilot, "This is unacceptable! ORD-001 is broken and nobody answers my emails!!!"
        )
        facts = visible_text(screen.query_one("#approval-facts"))
        assert facts.splitlines()[0].split() == ["Order", "ORD-001"], facts
        effects = " ".join(visible_text(screen.query_one("#approval-effects")).split())
        assert "Compensate the customer is told the team will be in touch within 24 hours" in (
            effects
        )
        assert "ShopBot pays nothing itself" in effects
        assert "stays escalated until someone marks the promise kept" in effects
        assert "Senior review a senior agent" in effects and "Close ticket" in effects


async def test_modal_reappears_after_restart(tmp_path: Path) -> None:
    first = make_app(tmp_path, thread_id="t-restart", customer="Sam")
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        assert isinstance(first.screen, ApprovalScreen)
        await pilot.press("escape")  # decide later
        await settle(pilot)
        assert isinstance(first.screen, ChatScreen)
        assert first.chat.pending is not None

    second = make_app(tmp_path, thread_id="t-restart", customer=None)
    async with second.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = second.screen
        assert isinstance(screen, ApprovalScreen)
        assert "Refund of ORD-005" in modal_text(screen)
        assert second.bells == 1
        # The side panel shows the checks that led here, as it did before the restart.
        gates = visible_text(second.chat.query_one("#gates"))
        assert "✓ order id" in gates and "✓ refund" in gates
        await pilot.press("a", "enter")
        await settle(pilot)
        assert "approved and processed" in replies(second)[-1]
        assert "refund_processed" in audit_kinds(second, "t-restart")
        assert second.chat.customer == "Sam"  # from the stored thread


async def test_message_while_decision_pending_reopens_the_modal(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        await pilot.press("escape")
        await settle(pilot)
        assert any("still pending" in notice for notice in iter_notices(app, "information"))
        await send(pilot, "hello?")
        assert isinstance(app.screen, ApprovalScreen)
        assert any("waits for this decision" in notice for notice in iter_notices(app, "warning"))
        await later_then_reopen_and_press(pilot, "e", kept="hello?")
        assert decision_note("escalate") in notes(app)


async def test_still_pending_is_said_once_while_its_toast_shows(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Sam")
    app.NOTIFICATION_TIMEOUT = 60  # the toast outlives the test, however slow
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        await pilot.press("escape")  # later: "still pending"
        await settle(pilot)
        await send(pilot, "hello?")  # the dialog opens again (the toast hides under it)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("escape")  # later again: its toast is back, not a second one
        await settle(pilot)
        pending = [n for n in iter_notices(app, "information") if "still pending" in n]
        assert len(pending) == 1


@asynccontextmanager
async def refund_dialog(
    tmp_path: Path,
) -> AsyncIterator[tuple[RecordingApp, Pilot[None], ApprovalScreen]]:
    """The app with Sam's refund of ORD-005 waiting in the dialog."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        yield app, pilot, await dialog_after(pilot, REFUND)


@pytest.fixture
def arming_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dialog's keys wake only when the test calls `arm()` (a person gets a delay)."""
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY", 3600.0)


@pytest.mark.usefixtures("arming_by_hand")
async def test_stray_keys_cannot_decide_before_the_modal_is_armed(tmp_path: Path) -> None:
    async with refund_dialog(tmp_path) as (app, pilot, screen):
        await pilot.press("o", "k", "space", "g", "r", "e", "a", "t", "enter")  # still typing
        await pilot.pause()
        assert app.screen is screen
        assert all(button.disabled for button in screen.query(Button))
        assert screen.typed == "ok great"
        screen.arm()
        await pilot.press("enter")  # no option has the focus: Enter alone decides nothing
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("a", "enter")
        await settle(pilot)
        assert decision_note("approve") in notes(app)
        # What was typed into the modal is not lost: it waits in the message box.
        assert app.chat.query_one("#message", Input).value == "ok great"
        assert "approval_decided" in audit_kinds(app, "t-test")


@pytest.mark.usefixtures("arming_by_hand")
async def test_a_word_after_a_pause_that_starts_with_an_option_key_decides_nothing(
    tmp_path: Path,
) -> None:
    async with refund_dialog(tmp_path) as (app, pilot, screen):
        screen.arm()  # the person paused long enough for the keys to wake
        await pilot.press("a", "n", "space", "e", "r", "r", "o", "r")  # "an error"
        await pilot.pause()
        assert app.screen is screen and not screen.armed
        assert screen.typed == "an error"
        screen.arm()
        await pilot.press("e", "r", "r", "o", "r")  # option keys first, one after another
        await pilot.pause()
        assert app.screen is screen and screen.typed == "an errorerror"
        assert "approval_decided" not in audit_kinds(app, "t-test")


@pytest.mark.usefixtures("arming_by_hand")
async def test_a_burst_of_keys_or_a_paste_into_the_dialog_is_kept_as_text(tmp_path: Path) -> None:
    async with refund_dialog(tmp_path) as (app, pilot, screen):
        screen.arm()
        await pilot.press("a", "l", "l", "space")  # "all " arriving together
        screen.post_message(events.Paste("good,\nthanks"))
        await pilot.pause()
        assert app.screen is screen and screen.typed == "all good, thanks"
        await pilot.press("escape")
        await settle(pilot)
        assert app.chat.query_one("#message", Input).value == "all good, thanks"
        assert "approval_decided" not in audit_kinds(app, "t-test")


@pytest.mark.usefixtures("arming_by_hand")
async def test_enter_hard_on_an_option_key_is_the_end_of_a_typed_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ApprovalScreen, "CONFIRM_GAP", 3600.0)  # every Enter comes "soon"
    async with refund_dialog(tmp_path) as (app, pilot, screen):
        screen.arm()
        await pilot.press("a", "enter")  # "… a⏎" typed at speed
        await pilot.pause()
        assert app.screen is screen and not screen.armed
        assert screen.typed == "a"
        screen.arm()
        await pilot.press("tab", "enter")  # a button reached with Tab is a choice made
        await settle(pilot)
        assert decision_note("approve") in notes(app)


@pytest.mark.usefixtures("arming_by_hand")
async def test_typing_on_once_armed_puts_the_keys_back_to_sleep(tmp_path: Path) -> None:
    async with refund_dialog(tmp_path) as (app, pilot, screen):
        screen.arm()
        assert not any(button.disabled for button in screen.query(Button))
        # A pause, then typing goes on: the first letter is no option's key.
        await pilot.press("s", "o", "r", "r", "y", "backspace")
        await pilot.pause()
        assert app.screen is screen and not screen.armed
        assert all(button.disabled for button in screen.query(Button))
        await pilot.press("escape")  # decide later: the words go back, nothing is decided
        await settle(pilot)
        assert app.chat.query_one("#message", Input).value == "sorr"
        assert app.chat.pending is not None
        assert "approval_decided" not in audit_kinds(app, "t-test")


@pytest.mark.usefixtures("arming_by_hand")
async def test_words_typed_into_the_dialog_outlast_quitting(tmp_path: Path) -> None:
    async with refund_dialog(tmp_path) as (_app, pilot, screen):
        await pilot.press("s", "o", "r", "r", "y")  # typing ran on as the dialog opened
        await pilot.pause()
        assert screen.typed == "sorry"
    # (Quit with the dialog open.)
    again = make_app(tmp_path, customer="Sam")
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(again.screen, ApprovalScreen)  # still asked
        await pilot.press("escape")
        await settle(pilot)
        assert again.chat.query_one("#message", Input).value == "sorry"


async def test_decision_taken_elsewhere_is_refused_and_the_thread_reloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decided elsewhere before the app's next look at the registry (which would close the
    dialog, see below): the decision made here is refused, and the thread shows the other."""
    # No look in between: on a busy machine one fell there, and ctrl+r then opened nothing.
    monkeypatch.setattr(decisions_waiting, "LOOK_EVERY_SECONDS", 3600.0)
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        await pilot.press("escape")
        await settle(pilot)
        assert engine_of(app) is not None
        await engine_of(app).decide("t-test", "reject")  # as `shopbot resume t-test reject` would
        await pilot.press("ctrl+r", "a", "enter")
        await settle(pilot)
        assert any("already answered" in notice for notice in iter_notices(app, "warning"))
        assert app.chat.pending is None
        assert f"decision: reject, by {login_name()} (ShopBot's engine)" in notes(app)
        assert "refund_processed" not in audit_kinds(app, "t-test")


@pytest.mark.parametrize("dialog_open", [True, False], ids=["dialog open", "decide later"])
async def test_a_decision_answered_elsewhere_is_not_offered_any_more(
    tmp_path: Path, dialog_open: bool
) -> None:
    """Seen at the next look at the registry (every few seconds): the dialog closes, or
    ctrl+r no longer opens it, and the conversation shows the decision taken."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        assert isinstance(app.screen, ApprovalScreen)
        if not dialog_open:
            await pilot.press("escape")
            await settle(pilot)
        assert engine_of(app) is not None
        app.notices.clear()
        await engine_of(app).decide("t-test", "reject")  # as `shopbot resume t-test reject` would
        app.chat.waiting.look()  # (what the app does every few seconds)
        await wait_until(pilot, lambda: app.chat.pending is None, "the decision is gone")
        await settle(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        said = list(iter_notices(app, "warning"))
        # Who took it, as the audit log names them.
        who = f"was rejected by {login_name()} (ShopBot's engine)"
        assert any(who in notice and "while it was shown here" in notice for notice in said), said
        assert not any("still pending" in notice for _, _, notice in app.notices)
        assert f"decision: reject, by {login_name()} (ShopBot's engine)" in notes(app)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert "refund_processed" not in audit_kinds(app, "t-test")


@pytest.mark.parametrize("size", [(80, 24), (70, 20)])
@pytest.mark.parametrize("text", [REFUND, COMPLAINT])
async def test_every_option_shows_in_a_small_terminal(
    tmp_path: Path, size: tuple[int, int], text: str
) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        screen = await dialog_after(pilot, text)
        await pilot.pause()
        dialog = screen.query_one("#approval-dialog").region
        for button in screen.query(Button):
            # Wholly on screen and inside the dialog, label and all: the details scroll instead.
            assert dialog.contains_region(button.region), (str(button.label), button.region)
            # A row tall in a tiny terminal: the rows go to the details.
            assert button.region.height == (3 if size[1] >= TINY_BELOW else 1)
        hint = screen.query_one("#approval-hint").region
        assert dialog.contains_region(hint) and hint.height == 1
        assert not any(hint.overlaps(button.region) for button in screen.query(Button))
        # A notice said while the dialog is up sits above the options, inside the dialog.
        app.notify("Thread t-other has a new reply.", markup=False)
        await pilot.pause()
        notice = screen.query_one("#approval-notice").region
        assert dialog.contains_region(notice) and notice.height >= 1
        for decides in [*screen.query(Button), screen.query_one("#approval-hint")]:
            assert not notice.overlaps(decides.region), decides
        # The details scroll above the options: the last check can be brought into view.
        scroller = screen.query_one("#approval-body", VerticalScroll)
        scroller.scroll_end(animate=False)
        await pilot.pause()
        last_check = screen.query_one("#approval-gates").region
        options = screen.query_one("#approval-options").region
        assert dialog.contains_region(last_check) and last_check.bottom <= options.y


async def test_only_the_details_scroll_never_the_options(tmp_path: Path) -> None:
    """A scrollbar ran down the dialog's right edge, across the buttons and the hint."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=(70, 20)) as pilot:
        await settle(pilot)
        # (A refund's four checks fit 70x20 since its buttons are a row tall there: asked
        # again, the dialog also says what was decided before, and that does not fit.)
        await dialog_after(pilot, REFUND)
        await pilot.press("r", "enter")
        await settle(pilot)
        screen = await dialog_after(pilot, REFUND)
        await pilot.pause()
        scrolling = [w for w in screen.query("*") if w.is_scrollable and w.show_vertical_scrollbar]
        assert len(scrolling) == 1, scrolling  # short terminal: something scrolls here
        # The scrollbar runs beside the details only, not down the rows of the options.
        bar = scrolling[0].vertical_scrollbar.region
        footer = screen.query_one("#approval-footer").region
        assert bar.bottom <= footer.y, (bar, footer)
        dialog = screen.query_one("#approval-dialog").content_region
        assert dialog.contains_region(footer), (dialog, footer)
        # What scrolls is the details, and all of them: the options are outside it.
        assert scrolling[0].id == "approval-body"


def check_lines(screen: ApprovalScreen) -> list[str]:
    """The dialog's checks, one a line as it words them (spaces evened out)."""
    return [" ".join(line.split()) for line in screen._gates_content().plain.splitlines()]


def details_shown(app: RecordingApp, screen: ApprovalScreen) -> str:
    """The details as the terminal shows them now, scrolled out of view or not there at all,
    their lines joined by a space (a check wrapped in two reads as one line)."""
    region = screen.query_one("#approval-body", VerticalScroll).scrollable_content_region
    strips = app.screen._compositor.render_strips()[region.y : region.bottom]
    return " ".join(" ".join(strip.crop(region.x, region.right).text.split()) for strip in strips)


def assert_options_whole(app: RecordingApp, screen: ApprovalScreen) -> None:
    """Every option's button is on screen, label and all, in the dialog, below the details."""
    dialog = screen.query_one("#approval-dialog").region
    body = screen.query_one("#approval-body").region
    for option in screen.request.options:
        button = screen.query_one(f"#option-{option}", Button)
        assert dialog.contains_region(button.region), (option, button.region)
        assert not button.region.overlaps(body), (option, button.region, body)
        assert screen._button_label(option).plain in painted_text(app, button), option


@pytest.mark.parametrize("size", [(80, 24), (70, 20)])
async def test_every_check_shows_above_the_options_in_a_small_terminal(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """At 80x24 only the first of a refund's four checks showed above the options, the rest
    scrolled out of view: a short terminal's dialog spends no rows on blank space. At 70x20
    two were out of view: there the buttons are one row tall."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await dialog_after(pilot, REFUND)
        await pilot.pause()
        checks = check_lines(screen)
        assert len(checks) == 4, checks
        shown = details_shown(app, screen)
        for expected in [
            *checks,
            "Refund of ORD-005 for $59.50",
            "Bluetooth Speaker",
            "the speaker crackles at any volume",
        ]:
            assert expected in shown, (expected, shown)
        assert screen.query_one("#approval-body", VerticalScroll).max_scroll_y == 0
        assert_options_whole(app, screen)
        await pilot.press("e", "enter")
        await settle(pilot)
        assert decision_note("escalate") in notes(app)


@pytest.mark.parametrize("size", [(80, 24), (70, 20)])
async def test_every_check_is_reached_with_the_arrow_keys_and_the_options_stay(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """When the details do not fit (a refund asked again says what was decided before; 70x20
    has less room), the down arrow scrolls them to every check, under the options' row."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await dialog_after(pilot, REFUND)
        await pilot.press("r", "enter")
        await settle(pilot)
        screen = await dialog_after(pilot, REFUND)
        await pilot.pause()
        checks = check_lines(screen)
        seen: set[str] = set()
        for _ in range(20):
            shown = details_shown(app, screen)
            seen.update(check for check in checks if check in shown)
            assert_options_whole(app, screen)
            if seen == set(checks):
                break
            await pilot.press("down")
            await pilot.pause()
        assert seen == set(checks), (checks, seen)
        await pilot.press("a", "enter")
        await settle(pilot)
        assert decision_note("approve") in notes(app)


async def test_a_decision_the_command_line_asked_for_opens_when_a_message_is_refused(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, customer="Jordan")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await refund_asked_from_the_command_line(tmp_path)
        await send(pilot, "hello?")
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert "Refund of ORD-006" in modal_text(screen)
        warnings = list(iter_notices(app, "warning"))
        assert any("waits for this decision" in w for w in warnings), warnings
        assert not any("shopbot resume" in w for w in warnings)  # a command line, not here
        # The thread is shown as stored: the message sent from the command line is in it.
        assert ("customer", CLI_REFUND) in transcript_on_screen(app)
        await later_then_reopen_and_press(pilot, "a", kept="hello?")
        assert "refund_processed" in audit_kinds(app, "t-test")


async def test_choosing_the_open_thread_in_the_list_shows_it_as_stored(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Jordan")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await refund_asked_from_the_command_line(tmp_path)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        await pilot.press("enter")  # the open thread, the only one
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert "Refund of ORD-006" in modal_text(screen)
        assert ("customer", CLI_REFUND) in transcript_on_screen(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.chat.pending is not None


@pytest.mark.parametrize("size", [(80, 24), (70, 20)])
async def test_a_notification_shows_once_and_never_over_the_dialog(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = make_app(tmp_path, customer="Sam")
    app.NOTIFICATION_TIMEOUT = 60  # what is said outlives the test, however slow
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        await dialog_after(pilot, REFUND)
        await pilot.press("escape")  # decide later: a toast on the chat says ctrl+r reopens
        await settle(pilot)
        assert "still pending" in frame_text(app)
        # A message while the decision is pending: refused, and the dialog opens again.
        await send(pilot, "hello?")
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        # The chat's toast, shown on the dialog too until its time is up: its time is up now
        # (on a busy machine the dialog's own notice could go first, its time counted alike).
        app.clear_notifications()
        await wait_until(pilot, lambda: not screen.query(Toast), "no toast on the dialog")
        frame = frame_text(app)
        # Said once, in the dialog; the chat's toast does not show through its backdrop.
        assert frame.count("Not sent") == 1, frame
        assert "still pending" not in frame, frame
        assert not any(rack.display for rack in app.chat.query(ToastRack))
        notice = screen.query_one("#approval-notice")
        # Worded for where it shows: in the dialog, not pointing to it.
        said = visible_text(notice)
        assert "waits for this decision" in said, said
        assert "dialog" not in said and "ctrl+r" not in said, said
        for decides in screen.query(Button):
            assert not notice.region.overlaps(decides.region)
        # The details are still there to read (scrolled to if the terminal is short).
        assert "Refund of ORD-005" in frame
        # Once decided, what was said in the dialog does not come back as a toast.
        await pilot.press("r", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert "Not sent" not in frame_text(app)


async def test_notices_in_the_dialog_keep_an_error_readable_and_go_in_time(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await dialog_after(pilot, "Refund ORD-005 please, the speaker crackles")
        notice = screen.query_one("#approval-notice")
        app.notify("The export failed: disk full.", severity="error", timeout=60)
        # A lesser notice, said just after: long enough to be seen beside the error on a
        # loaded machine (a pause there can take most of a second).
        app.notify("Copied the last reply.", timeout=2)
        await pilot.pause()
        said = visible_text(notice)
        assert "disk full" in said and "Copied" in said  # the error is not pushed out
        assert notice.has_class("-error")  # styled as the gravest of the two
        # Each goes when its time is up, as a toast would; the error stays until then.
        await wait_until(pilot, lambda: "Copied" not in visible_text(notice), "the copy notice")
        assert "disk full" in visible_text(notice) and notice.display
        app.notify("Thread t-other has a new reply.", timeout=0.1)
        app.notify("Thread t-third has a new reply.", timeout=0.1)
        await pilot.pause()
        # Two at most: the newest pair.
        assert "disk full" not in visible_text(notice)
        await wait_until(pilot, lambda: not notice.display, "every notice to go")


async def test_a_long_summary_wraps_under_its_value_not_under_the_labels(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=(70, 30)) as pilot:
        await settle(pilot)
        screen = await dialog_after(pilot, COMPLAINT)
        await pilot.pause()
        facts = screen.query_one("#approval-facts")
        lines = painted_text(app, facts).splitlines()
        first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Summary"))
        value_at = lines[first].index("Summary") + len("Summary")
        value_at += len(lines[first][value_at:]) - len(lines[first][value_at:].lstrip())
        rest = [line for line in lines[first + 1 :] if line.strip()]
        assert rest, "the summary should wrap at 70 columns"
        for line in rest:  # each following line starts where the value starts
            assert line[:value_at].strip() == "" and line[value_at] != " ", lines
        summary = screen.request.payload["issue_summary"]
        shown = " ".join([lines[first][value_at:].strip(), *(line.strip() for line in rest)])
        assert shown == " ".join(summary.split())


@pytest.mark.parametrize("size", [(60, 20), (64, 20), (80, 24), (100, 30)])
@pytest.mark.parametrize("asked", [REFUND, COMPLAINT])
async def test_every_option_reads_in_full_at_any_width(
    tmp_path: Path, size: tuple[int, int], asked: str
) -> None:
    """At 60 columns the complaint's first button read "[s] Senior rev…": in a narrow
    terminal the buttons are stacked, one a line, and every label shows whole."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await dialog_after(pilot, asked)
        await pilot.pause()
        dialog = screen.query_one("#approval-dialog").content_region
        for option in screen.request.options:
            button = screen.query_one(f"#option-{option}", Button)
            shown = painted_text(app, button)
            assert screen._button_label(option).plain in shown, (option, shown)
            assert "…" not in shown, shown
            assert dialog.contains_region(button.region), (dialog, button.region)
        # The options keep their row count whatever the width: the details keep their room.
        options = screen.query_one("#approval-options").region
        assert options.height == 3, options


async def test_a_refund_turned_down_before_says_so_in_the_dialog(tmp_path: Path) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = await dialog_after(pilot, REFUND)
        assert "Before" not in modal_text(first)
        await pilot.press("r", "enter")
        await settle(pilot)
        again = await dialog_after(pilot, REFUND)
        text = modal_text(again)
        assert f"Before    rejected by {login_name()} (app), " in text
        assert "UTC, conversation t-test" in text
