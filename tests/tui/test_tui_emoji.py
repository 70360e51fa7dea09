"""Emoji joined by zero-width joiners: kept in what is sent and stored, and drawn so that
every terminal gives them the cells the layout counted (the bubble's border stays put)."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len, get_character_cell_size
from textual._xterm_parser import XTermParser

from agents.store.threads import ThreadRegistry
from shopbot_tui.widgets.conversation import CustomerMessage
from tests.support.tui import make_app, painted_text, settle

FAMILY = "👨\u200d👩\u200d👧"
CODER = "👩\u200d💻"
TEXT = f"My family {FAMILY} and I {CODER} wait for ORD-002"


def cells_one_by_one(line: str) -> int:
    """How wide a terminal that measures each character on its own (tmux) draws `line`."""
    return sum(get_character_cell_size(character) for character in line)


async def test_joined_emoji_keep_their_joiners_and_the_bubble_its_border(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-emoji")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.chat.message_input.focus()
        # Key by key, as `tmux send-keys` or an input method sends them: the joiners were
        # dropped, as no printable characters. (Read by Textual's own parser: Pilot's `press`
        # names no character for a joiner.)
        for key in XTermParser().feed(TEXT):
            key.set_sender(app)
            app.post_message(key)
            await pilot.pause()
        assert app.chat.message_input.value == TEXT
        await pilot.press("enter")
        await settle(pilot)
        bubble = app.chat.query_one(CustomerMessage)
        lines = painted_text(app, bubble).splitlines()
        assert any("👨" in line for line in lines)
        for line in lines:
            # As wide to that terminal as to the layout: the right border where it belongs.
            assert cells_one_by_one(line) == cell_len(line) == bubble.region.width, line
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        said = [line.text for line in registry.lines("t-emoji") if line.role == "customer"]
    assert said == [TEXT]
