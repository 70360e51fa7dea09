"""Pictures of the chat mid-conversation and of the approval modal (read the SVG diff
before accepting a change: `uv run pytest tests/tui/test_tui_snapshots.py --snapshot-update`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from agents.audit import writer as audit_writer
from agents.reviewer import login_name
from agents.store import escalations as escalation_queue
from shopbot_tui.chat.approval_screen import ApprovalScreen
from tests.support.tui import (
    SIZE,
    instant_approval,  # noqa: F401 - autouse fixture
    make_app,
    send,
    settle,
)

SnapCompare = Callable[..., bool]
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(autouse=True)
def reviewer_named_pat(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The approval dialogs name the login deciding: the same one on every machine."""
    monkeypatch.setenv("LOGNAME", "pat")
    login_name.cache_clear()
    yield
    login_name.cache_clear()  # (the next test sees the real one)


@pytest.fixture(autouse=True)
def escalated_at_half_past_nine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The side panel says since when a conversation is escalated: the same time every run."""
    half_past_nine = "2026-11-30T09:30:00.000Z"
    monkeypatch.setattr(escalation_queue, "utc_timestamp", lambda: half_past_nine)
    # (What the audit writer stores for the registry is stamped when it is said.)
    monkeypatch.setattr(audit_writer, "utc_timestamp", lambda: half_past_nine)


async def steady(pilot: Pilot[Any]) -> None:
    """No blinking cursor, no toast with a timer: the same picture on every run."""
    await settle(pilot)
    pilot.app.chat.query_one("#message", Input).cursor_blink = False
    pilot.app.clear_notifications()
    await pilot.pause()


def test_chat_mid_conversation(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="demo-chat", customer="Alex")

    async def converse(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-004?")
        await send(pilot, "I want a refund for ORD-004, the monitor has dead pixels all over")
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=converse)


def test_approval_modal(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="demo-refund", customer="Sam")

    async def ask_for_refund(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await send(pilot, "I want a refund for ORD-005, the speaker crackles at any volume")
        assert isinstance(pilot.app.screen, ApprovalScreen)
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=ask_for_refund)


def test_complaint_review_modal(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="demo-complaint", customer="Alex")

    async def complain(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await send(
            pilot,
            "This is unacceptable! My parcel is two weeks late and nobody answers my emails!!!",
        )
        assert isinstance(pilot.app.screen, ApprovalScreen)
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=complain)


def test_an_80x24_terminal_keeps_the_agent_and_its_step_in_sight(
    snap_compare: SnapCompare, tmp_path: Path
) -> None:
    """The side panel folds away below 90 columns; the status line above the message box
    still says who answers and what they are doing, and the header whose conversation it is."""
    app = make_app(tmp_path, thread_id="demo-narrow", customer="Sam")

    async def refund_left_for_later(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await send(pilot, "I want a refund for ORD-005, the speaker crackles at any volume")
        assert isinstance(pilot.app.screen, ApprovalScreen)
        await pilot.press("escape")  # decide later: the Refund agent waits for approval
        await steady(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=refund_left_for_later)


@pytest.mark.skipif(
    not os.environ.get("SHOPBOT_WRITE_DOCS"), reason="set SHOPBOT_WRITE_DOCS=1 to rewrite it"
)
async def test_write_docs_screenshot(tmp_path: Path) -> None:
    """`SHOPBOT_WRITE_DOCS=1 uv run pytest tests/tui/test_tui_snapshots.py -k docs` rewrites
    docs/screenshot.svg (the README's picture; the refund reference differs each time)."""
    app = make_app(tmp_path, thread_id="demo", customer="Sam")
    async with app.run_test(size=(120, 38)) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, where is my order ORD-002?")
        await send(pilot, "I want a refund for ORD-005, the speaker crackles at any volume")
        await pilot.press("a", "enter")
        await settle(pilot)
        box = app.chat.query_one("#message", Input)
        box.value = "Thanks! When will the phone case arrive?"
        box.cursor_position = len(box.value)
        await steady(pilot)
        app.save_screenshot("screenshot.svg", path=str(DOCS))
