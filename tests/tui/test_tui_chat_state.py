"""The chat screen owns its state, and its footer follows it: setting the state is all it
takes for the keys that apply to show (no refresh placed by hand)."""

from __future__ import annotations

from pathlib import Path

from agents.store.escalations import Escalation
from tests.support.tui import SIZE, frame_text, make_app, settle


def footer(app: object) -> str:
    return frame_text(app).rstrip("\n").splitlines()[-1]  # type: ignore[arg-type]


async def test_the_footer_follows_the_chats_state_by_itself(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        chat = app.chat
        assert "Handled" not in footer(app)
        # Only the state changes, as a read of the escalations changes it: nothing else.
        chat.escalation = Escalation(chat.thread_id, "2026-01-01T00:00:00Z", None, "angry")
        await pilot.pause()
        assert chat.check_action("escalation_handled", ())
        assert "Handled" in footer(app)
        chat.escalation = None
        await pilot.pause()
        assert "Handled" not in footer(app)


async def test_the_stop_key_shows_while_the_open_conversation_answers(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        chat = app.chat
        assert "Stop reply" not in footer(app)
        chat.answering = frozenset({chat.thread_id})
        await pilot.pause()
        assert "Stop reply" in footer(app)
        chat.answering = frozenset({"another-thread"})  # answering, but not on screen
        await pilot.pause()
        assert "Stop reply" not in footer(app)
