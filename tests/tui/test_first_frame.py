"""What the first frame waits for, and what it leaves for later: the chat says "Loading"
before the side panel's lines are built, and whatever the backend, the first reply does not
load the Markdown renderer on the event loop; and the footer is not built again for nothing.
What the first frame shows is styled once: nothing of it is restyled or updated once it is
up only to show what it showed already."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey

from shopbot_tui.chat import conversation_reads, thread_opening
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.widgets.conversation import SystemNote, _parser
from shopbot_tui.widgets.keys_footer import KeysFooter
from shopbot_tui.widgets.side_panel import AgentCard, SidePanel
from tests.support.tui import (
    SIZE,
    frame_text,
    make_app,
    painted_text,
    send,
    settle,
    wait_until,
)


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


def restyled_nodes(monkeypatch: pytest.MonkeyPatch) -> list[DOMNode]:
    """Every node whose styles are worked out again (a class or `display` set), from now on."""
    restyled: list[DOMNode] = []
    update_styles = App.update_styles

    def counted(app: App[Any], node: DOMNode, *args: Any, **kwargs: Any) -> None:
        restyled.append(node)
        update_styles(app, node, *args, **kwargs)

    monkeypatch.setattr(App, "update_styles", counted)
    return restyled


async def test_a_narrow_terminal_is_drawn_narrow_from_the_first_frame(tmp_path: Path) -> None:
    """At 80 columns the first frame showed the side panel, and the conversation 42 columns
    wide, until the width class came with the first Resize and restyled the whole screen."""
    app = make_app(tmp_path)
    at_first_frame: list[tuple[bool, int]] = []
    display = app._display

    def first_frame(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None and not at_first_frame:
            panel = app.chat.query_one(SidePanel)
            at_first_frame.append((panel.display, app.chat.query_one("#conversation").size.width))

    app._display = first_frame  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert at_first_frame == [(False, 80)]
        assert app.chat.panel_hidden  # "^b Panel": it can be shown


async def test_the_footer_is_composed_once_at_start_up_and_its_keys_styled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each key was styled compact then not as it mounted, the footer was composed two or three
    times (once per signal, twice for the same keys), and again for `^n` and `^t` to stop
    being dimmed once the engine ran: now those two keys are restyled where they are."""
    composed: list[int] = []
    recompose = KeysFooter.recompose

    async def counted(footer: KeysFooter) -> None:
        composed.append(1)
        await recompose(footer)

    monkeypatch.setattr(KeysFooter, "recompose", counted)
    restyled = restyled_nodes(monkeypatch)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert composed == [1]  # (the first frame's footer is empty: the keys come next)
        keys = app.chat.query(FooterKey)
        assert not [key.key for key in keys if key.has_class("-disabled")]
        assert sorted(node.key for node in restyled if isinstance(node, FooterKey)) == [
            "ctrl+n",
            "ctrl+t",
        ]
        # Enabled where they are: a click on one does what its key does.
        before = app.chat.thread_id
        await pilot.click(next(key for key in keys if key.key == "ctrl+n"))
        await wait_until(pilot, lambda: app.chat.thread_id != before, "a new conversation")


async def test_the_side_panel_lines_are_made_showing_what_they_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mounted blank, the lines were then filled one by one, the active agent's card restyled,
    and the engine's start and the thread's opening set the same lines again: each a layout."""
    restyled = restyled_nodes(monkeypatch)
    updated: list[Static] = []
    update = Static.update

    def counted(line: Static, *args: Any, **kwargs: Any) -> None:
        updated.append(line)
        update(line, *args, **kwargs)

    monkeypatch.setattr(Static, "update", counted)
    app = make_app(tmp_path, thread_id="t-lines", customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.chat.query_one(SidePanel)
        assert panel.filled
        assert [node for node in restyled if panel in node.ancestors_with_self] == []
        assert [line.id for line in updated if line.parent is panel] == []
        shown = painted_text(app, panel)
        assert "t-lines" in shown and "Sam" in shown and "offline demo" in shown


async def test_the_loading_note_stays_until_the_history_replaces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log was emptied as the thread began to open, and drawn empty for as long as its
    history took to read."""
    read_history = conversation_reads.read_history
    reading = asyncio.Event()
    may_finish = asyncio.Event()

    async def slow_read(backend: Any, thread_id: str) -> Any:
        reading.set()
        await may_finish.wait()
        return await read_history(backend, thread_id)

    monkeypatch.setattr(thread_opening, "read_history", slow_read)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, reading.is_set, "the history to be read")
        for _ in range(3):
            await pilot.pause()  # (frames are drawn meanwhile)
        assert "Loading" in painted_text(app, app.chat.chat_log)
        may_finish.set()
        await settle(pilot)
        assert [type(line) for line in app.chat.chat_log.children] == [SystemNote]  # new thread
        assert "Loading" not in painted_text(app, app.chat.chat_log)


async def test_a_note_in_the_conversation_is_laid_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every widget mounted laid the screen out twice: once for it, once more, a frame later,
    because the first layout gave it a virtual size (Textual's `virtual_size`, layout=True)."""
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        layouts: list[int] = []
        refresh_layout = Screen._refresh_layout

        def counted(screen: Screen[Any], *args: Any, **kwargs: Any) -> None:
            layouts.append(1)
            refresh_layout(screen, *args, **kwargs)

        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        await app.chat.view.show_note("The order was handed to the courier.")
        await settle(pilot)
        assert layouts == [1]


async def test_a_dialog_is_drawn_for_the_terminal_s_size_from_its_first_frame(
    tmp_path: Path,
) -> None:
    """The approval dialog's first frame at 80x24 was drawn as on a tall terminal (its size
    classes came with its first Resize, and restyled it all)."""
    app = make_app(tmp_path, thread_id="t-dialog", customer="Sam")
    classes_at_first_frame: dict[str, set[str]] = {}
    display = app._display

    def frame(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None:
            classes_at_first_frame.setdefault(type(screen).__name__, set(screen.classes))

    app._display = frame  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await send(pilot, "I want a refund for ORD-005, the speaker crackles at any volume")
        dialog = app.screen
        assert isinstance(dialog, ApprovalScreen)
        size_classes = {name for _, name in dialog.HORIZONTAL_BREAKPOINTS} | {
            name for _, name in dialog.VERTICAL_BREAKPOINTS
        }
        now = set(dialog.classes) & size_classes
        assert now == {"-wide", "-short"}
        assert classes_at_first_frame["ApprovalScreen"] & size_classes == now
