"""ShopBot in an 80x24 and a 70x20 terminal: the keys that matter show in every footer, and
no button is cut."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Button, HelpPanel
from textual.widgets._toast import Toast

from shopbot_tui.app import ShopBotApp
from shopbot_tui.audit.screen import AuditViewerScreen
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.threads.screen import ThreadsScreen
from shopbot_tui.widgets.conversation import AssistantReply, CustomerMessage
from tests.support.tui import (
    GatedModel,
    engine_of,
    frame_text,
    instant_approval,  # noqa: F401 - autouse fixture
    make_app,
    painted_text,
    send,
    settle,
    wait_until,
)

# Every screen at two small sizes: a long sweep, run in its own group (docs/testing.md).
pytestmark = pytest.mark.slow

SIZES = [(80, 24), (70, 20)]
REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"
COMPLAINT = "This is unacceptable! My parcel is two weeks late and nobody answers my emails!!!"


def footer_line(app: object) -> str:
    return frame_text(app).rstrip("\n").splitlines()[-1]  # type: ignore[arg-type]


@pytest.mark.parametrize("size", SIZES)
async def test_the_footers_show_the_keys_that_matter(tmp_path: Path, size: tuple[int, int]) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        footer = footer_line(app)
        for key in ("^n New", "^t Conversations", "^l Audit", "^q Quit", "^p palette"):
            assert key in footer, footer

        await send(pilot, REFUND)
        assert isinstance(app.screen, ApprovalScreen)
        footer = footer_line(app)
        for key in ("a Approve", "r Reject", "e Escalate", "esc Later"):
            assert key in footer, footer
        await pilot.press("escape")  # decide later: the chat offers ctrl+r
        await settle(pilot)
        footer = footer_line(app)
        for key in ("^r Decide", "^l Audit", "^q Quit"):
            assert key in footer, footer
        # Copy and export are still keys, and in the command palette.
        ids = {binding.id for binding in ChatScreen.BINDINGS if isinstance(binding, Binding)}
        assert {"chat.copy_reply", "chat.export"} <= ids

        await pilot.press("ctrl+l")
        await wait_until(pilot, lambda: isinstance(app.screen, AuditViewerScreen), "the viewer")
        await settle(pilot)
        footer = footer_line(app)
        for key in ("esc Back", "/ Search", "t Thread", "k Kind", "w When", "x Export"):
            assert key in footer, footer
        if size[0] >= 80:
            assert "r Refresh" in footer and "o Open" in footer, footer
        await pilot.press("escape")

        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: isinstance(app.screen, ThreadsScreen), "the threads")
        footer = footer_line(app)
        for key in ("esc Close", "^n New", "^f Filter"):
            assert key in footer, footer


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("text", [REFUND, COMPLAINT])
async def test_every_button_label_shows_whole(
    tmp_path: Path, size: tuple[int, int], text: str
) -> None:
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await send(pilot, text)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        frame = frame_text(app)
        for button in screen.query(Button):
            assert str(button.label) in frame, (str(button.label), frame)


async def open_list_of_six(pilot: Pilot[Any]) -> None:
    """The conversation list, with six conversations in it."""
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, ShopBotApp) and engine_of(app) is not None
    for n in range(6):
        engine_of(app).threads.ensure(f"t-{n}", customer="Sam")
    await pilot.press("ctrl+t")
    await wait_until(pilot, lambda: isinstance(app.screen, ThreadsScreen), "the threads")
    await settle(pilot)


@pytest.mark.parametrize("size", [(44, 14), (70, 20), (80, 24)])
async def test_the_conversation_list_shows_rows_in_a_short_terminal(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """At 44x14 the filter, the new-conversation row and the hint left the list no row."""
    app = make_app(tmp_path, thread_id="t-0", customer="Sam")
    async with app.run_test(size=size) as pilot:
        await open_list_of_six(pilot)
        frame = frame_text(app)
        shown = [n for n in range(6) if f"t-{n} " in frame]
        assert len(shown) >= 3, frame
        # What the list is for stays on screen: the filter and a way to start a conversation.
        for selector in ("#filter", "#new-customer", "#new"):
            widget = app.screen.query_one(selector)
            assert widget.display and widget.region.height >= 1, selector


@pytest.mark.parametrize("size", SIZES)
async def test_the_conversation_list_fits_the_width_of_a_small_terminal(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """With the app's own thread ids (20261130-235936-6f4fe0) the list needed 105 columns:
    at 80 the time each conversation was last updated sat behind a horizontal scrollbar.
    Narrow, each row shows the end of its id, its customer, its first words and its time."""
    app = make_app(tmp_path, thread_id=None, customer="Sam")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-002?")
        screen_thread = app.chat.thread_id
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: isinstance(app.screen, ThreadsScreen), "the threads")
        await settle(pilot)
        assert engine_of(app) is not None
        (info,) = engine_of(app).list_threads()
        table = app.screen.query_one("#threads")
        assert table.virtual_size.width <= table.scrollable_content_region.width
        row = next(line for line in painted_text(app, table).splitlines() if "Sam" in line)
        assert screen_thread[-13:] in row, row
        assert "Where is" in row, row
        assert info.updated_at[5:16].replace("T", " ") in row, row


@pytest.mark.parametrize("size", [(44, 14), (60, 20)])
async def test_a_toast_in_a_small_terminal_covers_no_row_of_the_list(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """At 44x14 a toast stood five rows tall over the conversation list and the
    new-conversation row: in a small terminal it is one full-width line, above the footer."""
    app = make_app(tmp_path, thread_id="t-0", customer="Sam")
    async with app.run_test(size=size, notifications=True) as pilot:
        await open_list_of_six(pilot)
        app.notify("Copied the last reply (133 characters).")
        await wait_until(pilot, lambda: bool(app.screen.query(Toast)), "the toast")
        await pilot.pause()
        toast = app.screen.query_one(Toast).region
        assert toast.height == 1, toast
        assert "Copied the last reply (133 characters)." in frame_text(app)
        for selector in ("#threads", "#filter", "#new-customer", "#new"):
            widget = app.screen.query_one(selector)
            assert not toast.overlaps(widget.content_region), (selector, toast)


async def test_the_keys_panel_shows_shopbots_keys_and_leaves_the_chat_its_width(
    tmp_path: Path,
) -> None:
    """The keys panel (ctrl+p, Keys) listed the message box's 30 cursor and deletion keys
    first, ShopBot's own below the fold of a 30-row terminal; and beside the side panel it
    left a reply 29 columns, a word a line."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-002?")
        assert app.chat.panel.region.width > 0
        await pilot.press("ctrl+p", *"keys")
        await settle(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.chat.query(HelpPanel)), "the keys panel")
        await pilot.pause()
        shown = painted_text(app, app.chat.query_one(HelpPanel))
        # ("Stop reply" is listed while a reply is written: nothing runs now.)
        for key in ("Send", "^y Copy", "^s Export", "^b Panel", "Scroll up"):
            assert key in shown, (key, shown)
        assert "Delete character left" not in shown, shown
        # Each key's tooltip reads on from its name, shown beside it: not "New New conversation".
        for line in shown.splitlines():
            words = line.split()
            for first, second in itertools.pairwise(words):
                assert first.casefold() != second.casefold(), line
        # The conversation keeps the width: the side panel makes room while the keys show.
        assert app.chat.panel.region.width == 0
        assert app.chat.chat_log.region.width >= 60, app.chat.chat_log.region
        await pilot.press("ctrl+p", *"keys")
        await settle(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.chat.query(HelpPanel), "no keys panel")
        await pilot.pause()
        assert app.chat.panel.region.width > 0


async def test_the_message_boxs_editing_keys_still_work(tmp_path: Path) -> None:
    """Left out of the keys panel, not out of the box."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        box = app.chat.message_input
        await pilot.press(*"where is my order", "ctrl+w")
        assert box.value == "where is my "
        await pilot.press("ctrl+a", "delete", "ctrl+e", "backspace")
        assert box.value == "here is my"
        await pilot.press("ctrl+u")
        assert box.value == ""


def writing(app: ShopBotApp) -> bool:
    """A reply is on screen, unfinished."""
    written = app.chat.query(AssistantReply)
    return bool(written) and bool(written.last().source) and not written.last().complete


CHAT_KEYS = ("^n New", "^t Conversations", "^l Audit", "^q Quit", "^p palette")


@pytest.mark.parametrize("size", SIZES)
async def test_the_footer_offers_esc_while_a_reply_is_written(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """esc stops a reply, and nothing said so until a second message was refused: while the
    open conversation's turn runs the footer shows it, beside the other keys, and only then."""
    model = GatedModel(pause_mid_reply=True)
    app = make_app(tmp_path, customer="Sam", model=model)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert "Stop reply" not in footer_line(app)
        await send(pilot, "Hi, where is my order ORD-002?", wait=False)
        model.open()
        await wait_until(pilot, lambda: writing(app), "the reply to be written")
        await wait_until(pilot, lambda: "esc Stop reply" in footer_line(app), "esc in the footer")
        for key in CHAT_KEYS:
            assert key in footer_line(app), footer_line(app)
        model.resume()
        await settle(pilot)
        assert not writing(app) and "t-test" not in app.chat.busy
        assert "Stop reply" not in footer_line(app), footer_line(app)

        # Pressed, it goes at once (stopping), and does not come back when the turn ends.
        model.pause_next_reply()
        await send(pilot, "Where is my order ORD-002?", wait=False)
        await wait_until(pilot, lambda: "esc Stop reply" in footer_line(app), "esc again")
        await pilot.press("escape")
        await wait_until(pilot, lambda: "Stop reply" not in footer_line(app), "esc to go")
        await settle(pilot)
        assert "t-test" not in app.chat.busy
        assert "Stop reply" not in footer_line(app), footer_line(app)


async def test_an_escalated_conversations_footer_fits_80_columns_while_a_reply_is_written(
    tmp_path: Path,
) -> None:
    """The longest chat footer: "^g Handled" and "esc Stop reply" beside the usual keys."""
    model = GatedModel(pause_mid_reply=True, free_calls=1000)
    model.resume()
    app = make_app(tmp_path, customer="Alex", model=model)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await send(pilot, "Refund ORD-004 please, the monitor has dead pixels")  # over the limit
        assert app.chat.escalated_here
        model.pause_next_reply()
        await send(pilot, "Where is my order ORD-001?", wait=False)
        await wait_until(pilot, lambda: "esc Stop reply" in footer_line(app), "esc in the footer")
        for key in (*CHAT_KEYS, "^g Handled"):
            assert key in footer_line(app), footer_line(app)
        model.resume()
        await settle(pilot)


@pytest.mark.parametrize("size", [(44, 14), (70, 20), (80, 24), (120, 40)])
async def test_the_agent_its_step_and_the_model_show_at_every_width(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """Below 90 columns the side panel hid, and with it the live agent and step."""
    model = GatedModel()
    app = make_app(tmp_path, thread_id="t-w", customer="Sam", model=model)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        status = app.chat.query_one("#status")
        assert painted_text(app, status).strip().startswith("▸ Order agent · idle")
        box = app.chat.message_input
        box.value = REFUND
        box.focus()
        await pilot.press("enter")
        await wait_until(pilot, model.held.is_set, "the model to be asked")
        await pilot.pause()
        shown = painted_text(app, status).strip()
        assert shown.startswith("▸ ") and " · " in shown, shown
        assert app.chat.panel.step in shown, (app.chat.panel.step, shown)
        model.open()
        await settle(pilot)
        await pilot.press("escape")  # the approval, for later
        await settle(pilot)
        line = painted_text(app, status).strip()
        expected = "▸ Refund agent · waiting for approval · offline demo"
        # Cut at its end when narrow: the agent and its step first.
        assert expected.startswith(line.rstrip("…")) and len(line) >= len("▸ Refund agent"), line
        if size[0] >= 70:
            assert line == expected
        # The header names the conversation and its customer.
        assert "ShopBot — Sam · t-w" in frame_text(app).splitlines()[0]


async def test_bubbles_keep_a_readable_width_on_a_wide_terminal(tmp_path: Path) -> None:
    """At 200 columns a reply and a message ran 150 columns wide."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order? " * 12 + "ORD-002")
        for widget in (app.chat.query_one(CustomerMessage), app.chat.query_one(AssistantReply)):
            assert widget.region.width <= 100, (widget, widget.region)
        # One column: the message ends where the reply begins plus the same width.
        message = app.chat.query_one(CustomerMessage).region
        reply = app.chat.query_one(AssistantReply).region
        assert message.right - reply.x == 100 + 12, (message, reply)


@pytest.mark.parametrize(
    ("size", "keys"), [((80, 24), ["^y Copy", "^b Panel"]), ((120, 40), ["^y Copy", "^s Export"])]
)
async def test_the_footer_shows_copy_export_and_the_panel_key_when_they_apply(
    tmp_path: Path, size: tuple[int, int], keys: list[str]
) -> None:
    """`^n ^t ^l ^q` only: ctrl+y, ctrl+s and ctrl+b never showed."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        footer = footer_line(app)
        assert "Copy" not in footer and "Export" not in footer  # nothing to copy yet
        await pilot.press("ctrl+y")  # still a key, saying why nothing happened
        assert app.notices[-1][2] == "There is no reply to copy yet."
        await send(pilot, "Where is ORD-002?")
        footer = footer_line(app)
        for key in [*keys, "^q Quit"]:
            assert key in footer, footer
        if size[0] < 90:
            await pilot.press("ctrl+b")  # shown: the key leaves the footer, and hides it again
            await settle(pilot)
            assert app.chat.panel.display and "^b Panel" not in footer_line(app)
            await pilot.press("ctrl+b")
            await settle(pilot)
            assert not app.chat.panel.display and "^b Panel" in footer_line(app)


async def test_ctrl_o_is_in_the_footer_while_another_conversation_waits(tmp_path: Path) -> None:
    """The side panel said "ctrl+o opens it", and the footer did not have it."""
    app = make_app(tmp_path, thread_id="t-sam", customer="Sam")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await send(pilot, REFUND)
        await pilot.press("escape")  # decided later: it waits
        await pilot.press("ctrl+n")
        await settle(pilot)
        app.chat.waiting.look()
        await settle(pilot)
        footer = footer_line(app)
        assert "^o Next decision" in footer and "^q Quit" in footer, footer
        await pilot.press("ctrl+o")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.chat.thread_id == "t-sam"
        footer = footer_line(app)
        assert "^o Next decision" not in footer and "^r Decide" in footer, footer


async def test_esc_closes_the_keys_panel(tmp_path: Path) -> None:
    """It stayed until the palette's Keys was chosen again; esc did nothing."""
    app = make_app(tmp_path, customer="Sam")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"keys")
        await settle(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(app.chat.query(HelpPanel)), "the keys panel")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.chat.query(HelpPanel), "no keys panel")
        assert app.chat.panel.region.width > 0  # the side panel is back
        assert isinstance(app.screen, ChatScreen)
