"""What the first frame waits for, and what it leaves for later: the chat says "Loading"
before the side panel's lines are built, and whatever the backend, the first reply does not
load the Markdown renderer on the event loop; and the footer is not built again for nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Footer

from shopbot_tui.widgets.conversation import _parser
from shopbot_tui.widgets.side_panel import AgentCard, SidePanel
from tests.support.tui import SIZE, frame_text, make_app, painted_text, send, settle


async def test_the_first_frame_comes_before_the_side_panel_lines_which_then_show_all(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, thread_id="t-first", customer="Sam")
    lines_at_first_frame: list[int] = []
    display = app._display

    def first_frame(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None and not lines_at_first_frame:
            lines_at_first_frame.append(len(app.chat.query_one(SidePanel).children))

    app._display = first_frame  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert lines_at_first_frame == [0]
        panel = app.chat.query_one(SidePanel)
        assert len(panel.query(AgentCard)) == 3
        # What the screen told the panel before its lines were there is drawn now.
        shown = painted_text(app, panel)
        assert "t-first" in shown and "Sam" in shown and "offline demo" in shown
        active = [card.agent for card in panel.query(AgentCard) if card.has_class("-active")]
        assert active == ["order_agent"]


async def test_the_markdown_renderer_is_ready_before_the_first_reply_whatever_the_backend(
    tmp_path: Path,
) -> None:
    _parser.cache_clear()
    # make_app gives the app its own backend factory, as a remote or test backend would.
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.chat.last_reply == ""  # no reply yet
        assert _parser.cache_info().currsize == 1


async def test_the_footer_is_composed_again_only_when_its_keys_change(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        footer = app.chat.query_one(Footer)
        composed: list[int] = []
        recompose = footer.recompose

        async def counted() -> None:
            composed.append(1)
            await recompose()

        footer.recompose = counted  # type: ignore[method-assign]
        before = frame_text(app).rstrip("\n").splitlines()[-1]
        assert "^y" not in before  # no reply to copy yet
        app.chat.refresh_bindings()  # the signal, with the same keys
        await settle(pilot)
        assert composed == []
        await send(pilot, "Where is my order ORD-002?")
        await settle(pilot)
        assert composed  # a reply to copy: a new key
        assert "^y" in frame_text(app).rstrip("\n").splitlines()[-1]
