"""A refund above the auto-refund limit in the approval dialog: a reviewer whose limit
covers it decides it there (approve pays once); anyone else sees why they cannot, and no
key or button decides it."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button

from agents.reviewer import login_name
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.chat.screen import ChatScreen
from tests.support.tui import (
    SIZE,
    audit_details,
    engine_of,
    instant_approval,  # noqa: F401 - autouse fixture
    make_app,
    send,
    settle,
    visible_text,
)

OVER_LIMIT = "Refund ORD-004 please, the monitor has dead pixels"


def reviewers(home: Path, limit: str, name: str | None = None) -> None:
    home.mkdir(parents=True, exist_ok=True)
    who = name or login_name()
    (home / "reviewers.toml").write_text(f'[reviewers]\n"{who}" = "{limit}"\n', encoding="utf-8")


async def test_a_reviewer_whose_limit_covers_it_approves_it_in_the_dialog(tmp_path: Path) -> None:
    reviewers(tmp_path, "2000.00")
    app = make_app(tmp_path, customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, OVER_LIMIT)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        facts = visible_text(screen.query_one("#approval-facts"))
        assert "a refund limit of at least $649.00" in facts
        assert not screen.query("#approval-authority")
        await pilot.press("a", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert engine_of(app) is not None
        paid = engine_of(app).shop.refund_for("ORD-004")
        assert paid is not None and str(paid.amount) == "649.00"
        decided = audit_details(app, "t-test", "approval_decided")
        assert [d["decided_by"] for d in decided] == [login_name()]


async def test_someone_without_the_authority_sees_why_and_cannot_decide(tmp_path: Path) -> None:
    reviewers(tmp_path, "2000.00", name="dana")  # someone else may; this login may not
    app = make_app(tmp_path, customer="Alex")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, OVER_LIMIT)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        why = visible_text(screen.query_one("#approval-authority"))
        assert "You cannot decide this" in why and f"{login_name()}'s limit is $500.00" in why
        assert all(button.disabled for button in screen.query(Button))
        await pilot.press("a", "enter", "r", "enter")
        await settle(pilot)
        assert app.screen is screen  # nothing decided, the dialog still asks
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ChatScreen)
        assert engine_of(app) is not None
        assert engine_of(app).shop.refunds() == []
        assert app.chat.pending is not None  # still waiting, for someone who can
        assert audit_details(app, "t-test", "approval_decided") == []
