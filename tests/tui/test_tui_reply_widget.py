"""The streamed reply: Markdown rendered into kept lines, and what the screen pays per token.

- Streaming a reply in pieces shows exactly what rendering the finished reply shows (the
  settled chunks join as Rich would have rendered the whole).
- A taller reply lays the screen out at most every LAYOUT_EVERY seconds (not while it has
  just begun); text within the lines already there is painted at once, and a fast reply
  keeps room below its text so its next lines need no layout. A layout repaints only the
  new lines, and what it keeps is what a full repaint shows.
- Full garbage collections wait while a turn runs, and come back after it.
- The app paints at up to 120 frames a second (Textual's beat), unless the person says.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip

from shopbot_tui.collector import FULL_COLLECTION_EVERY, CollectorPause, set_aside_long_lived
from shopbot_tui.widgets import conversation
from shopbot_tui.widgets.conversation import (
    LAYOUT_EVERY,
    MAX_ROOM_LINES,
    ROOM_FOR_SECONDS,
    ROOM_SHARE_OF_CHAT,
    SETTLE_AFTER_BLOCKS,
    AssistantReply,
    ChatLog,
    MarkdownLines,
)

BLOCKS = [
    "# Your order",
    "## Delivery",
    "### Update 3",
    "Your order left our warehouse this morning and the courier expects to deliver it "
    "within two business days, so there is nothing you need to do right now.",
    "A short line with **bold**, *emphasis*, `code` and [a link](https://example.com).",
    "- first item of a list\n- second item, a little longer than the first one\n- third",
    "1. open the box\n2. check the screen\n3. write to us",
    "- a list that a later item continues",
    "> what the customer said\n> over two lines",
    "```python\nrefund = order.total\nprint(refund)\n```",
    "---",
    "| order | status |\n|---|---|\n| ORD-001 | Delivered |",
    "[bold]not markup[/bold] and \\[escaped]",
    "See [the returns policy][policy] before you send it back.",
    "[policy]: https://example.com/returns",
]


def plain(lines: list[list[Segment]]) -> list[str]:
    return ["".join(segment.text for segment in line).rstrip() for line in lines]


def whole_and_streamed(document: str, cuts: list[int], width: int) -> tuple[list[str], list[str]]:
    console = Console(width=200, color_system=None)
    style = Style()
    whole = MarkdownLines(document)
    streamed = MarkdownLines()
    start = 0
    for cut in sorted({c % (len(document) + 1) for c in cuts} | {len(document)}):
        streamed.append(document[start:cut])
        start = cut
        streamed.lines(console, width, style)  # rendered as it streams, as on screen
    streamed.settle()
    return plain(whole.lines(console, width, style)), plain(streamed.lines(console, width, style))


@settings(max_examples=60, deadline=None)
# A list settled before the item that continues it, after a blank line, once streamed apart.
@example(blocks=["---", BLOCKS[6], BLOCKS[6]], cuts=[58], width=20)
# A reference link settled long before the line that gives its address.
@example(blocks=[BLOCKS[-2], *BLOCKS[:4], BLOCKS[-1]], cuts=list(range(0, 400, 7)), width=60)
@given(
    blocks=st.lists(st.sampled_from(BLOCKS), min_size=1, max_size=9),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=40),
    width=st.integers(min_value=20, max_value=100),
)
def test_a_streamed_reply_renders_exactly_as_the_whole(
    blocks: list[str], cuts: list[int], width: int
) -> None:
    document = "\n\n".join(blocks) + "\n"
    whole, streamed = whole_and_streamed(document, cuts, width)
    assert streamed == whole


def test_a_long_reply_settles_into_chunks_and_keeps_its_source() -> None:
    document = "\n\n".join(BLOCKS * 3) + "\n"
    lines = MarkdownLines()
    for start in range(0, len(document), 7):
        lines.append(document[start : start + 7])
    # Older blocks were settled while streaming: only the newest few are rendered again.
    assert len(lines.chunks) >= 3
    assert len(lines.tail.source.split("\n\n")) <= SETTLE_AFTER_BLOCKS + 1
    assert lines.source == document


def test_markup_in_a_reply_is_text() -> None:
    whole, streamed = whole_and_streamed("[bold]hi[/] [link=http://evil]x[/link]\n", [3, 9], 60)
    assert whole == streamed == ["[bold]hi[/] [link=http://evil]x[/link]"]


async def test_a_reference_link_defined_at_the_end_shows_its_address_when_done(
    clock: Clock,
) -> None:
    async with ReplyApp().run_test(size=(100, 30)) as pilot:
        reply = pilot.app.query_one(AssistantReply)
        for piece in ["See [the returns policy][policy] first.\n\n", "# A\n\n", "## B\n\n"]:
            reply.append(piece)  # the first paragraph settles long before the definition
            await pilot.pause()
        reply.append("### C\n\n[policy]: https://example.com/returns\n")
        await pilot.pause()
        assert "[policy]" in reply.render_line(0).text
        reply.mark_complete()
        await pilot.pause()
        shown = [strip.text for strip in reply.render_lines(Region(0, 0, *reply.outer_size))]
        assert "See the returns policy (https://example.com/returns) first." in shown[0]


class ReplyApp(App[None]):
    def compose(self) -> ComposeResult:
        with ChatLog():
            yield AssistantReply("order_agent", complete=False)


class Clock:
    """The widget's `monotonic`, moved by hand: when the last layout was is up to the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(conversation, "monotonic", fake)
    return fake


async def until(pilot: Pilot[None], condition: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def first_line(pilot: Pilot[None], clock: Clock, text: str) -> AssistantReply:
    """The reply with one line on screen, laid out at `clock.now`."""
    reply = pilot.app.query_one(AssistantReply)
    clock.now += 1  # long after the layout at mount: this one is not held back
    reply.append(text)
    await until(pilot, lambda: reply.content_size.height == 1, "the first line")
    return reply


async def test_new_text_within_the_lines_shows_and_text_below_them_is_laid_out_at_once(
    clock: Clock,
) -> None:
    async with ReplyApp().run_test(size=(60, 20)) as pilot:
        reply = await first_line(pilot, clock, "First line")
        # More words on the same line: painted, no layout to wait for.
        reply.append(" of the reply.")
        assert reply._grow_timer is None and reply._layout_asked is None
        await pilot.pause()
        assert reply.render_line(0).text.rstrip() == "First line of the reply."
        # Two more paragraphs within LAYOUT_EVERY of that layout: below the one line laid
        # out, so not on screen. Not held back for LAYOUT_EVERY: a stalled reply in view.
        reply.append("\n\nSecond paragraph.")
        assert reply._grow_timer is None and reply._layout_asked == clock.now
        reply.append("\n\nThird paragraph.")  # that layout is still to come: not asked again
        await until(pilot, lambda: reply.content_size.height >= 5, "the new lines")
        assert reply.render_line(4).text.rstrip() == "Third paragraph."
        reply.mark_complete()
        assert reply.complete and reply.border_title == "Order agent"
        await until(pilot, lambda: reply.content_size.height == 5, "the exact height")


async def test_a_reply_just_begun_is_not_held_back(clock: Clock) -> None:
    async with ReplyApp().run_test(size=(60, 20)) as pilot:
        reply = pilot.app.query_one(AssistantReply)
        # Its first lines, right after the layout that mounted it: its pace is unknown, so
        # there is no room below it and nothing waits for LAYOUT_EVERY.
        reply.append("One.\n\nTwo.\n\nThree.")
        assert reply._grow_timer is None
        await until(pilot, lambda: reply.content_size.height == 5, "the first lines")


async def write_fast(pilot: Pilot[None], clock: Clock) -> tuple[AssistantReply, int]:
    """Ten paragraphs in half a second, a layout for each: the reply and the height it got."""
    reply = pilot.app.query_one(AssistantReply)
    for n in range(10):
        clock.now += 0.05
        reply.append(f"{'' if n == 0 else chr(10) * 2}Paragraph {n}.")
        await pilot.pause()
    # A layout booked for later has been made. Its wait here is a fraction of a microsecond
    # (the clock is the test's): Textual's `set_timer` dropped such a one-shot unfired.
    await until(pilot, lambda: reply._grow_timer is None, "the booked layout")
    await pilot.pause()
    return reply, reply.content_size.height


async def test_a_fast_reply_keeps_room_below_and_fills_it_without_a_layout(
    clock: Clock,
) -> None:
    async with ReplyApp().run_test(size=(60, 40)) as pilot:
        reply, height = await write_fast(pilot, clock)
        lines = len(reply._content_lines(reply.content_size.width))
        assert lines == 19
        # 19 lines in 0.5 s: room below for what it writes in the next ROOM_FOR_SECONDS.
        assert lines + 2 <= height <= lines + MAX_ROOM_LINES
        # The next paragraph lands in that room: shown at once, with no layout to wait for
        # (the clock has not moved: without room it would wait for LAYOUT_EVERY).
        before = reply.content_size.height
        reply.append("\n\nParagraph 10.")
        await pilot.pause()
        assert reply.content_size.height == before
        assert reply.render_line(20).text.rstrip() == "Paragraph 10."
        # Done: the room goes.
        reply.mark_complete()
        await until(pilot, lambda: reply.content_size.height == 21, "the exact height")


async def running_low(pilot: Pilot[None], clock: Clock) -> AssistantReply:
    """A fast reply that has used more than half the room below it within LAYOUT_EVERY of
    its last layout: the next layout is booked for later, the new text is on screen."""
    reply, height = await write_fast(pilot, clock)
    assert height >= 19 + 6  # 19 lines and room below them
    for n in range(10, 13):
        reply.append(f"\n\nParagraph {n}.")  # 25 lines: within the room, most of it used
    assert reply._grow_timer is not None and reply.content_size.height == height
    await pilot.pause()
    assert reply.render_line(24).text.rstrip() == "Paragraph 12."
    return reply


async def test_completing_a_reply_with_a_layout_booked_gives_the_exact_height_at_once(
    clock: Clock,
) -> None:
    async with ReplyApp().run_test(size=(60, 40)) as pilot:
        reply = await running_low(pilot, clock)
        reply.mark_complete()
        assert reply._grow_timer is None
        await until(pilot, lambda: reply.content_size.height == 25, "the whole reply")


async def test_text_past_the_room_does_not_wait_for_the_booked_layout(clock: Clock) -> None:
    async with ReplyApp().run_test(size=(60, 40)) as pilot:
        reply = await running_low(pilot, clock)
        height = reply.content_size.height
        more = (height - 25) // 2 + 1  # paragraphs (two lines each) past the lines laid out
        reply.append("".join(f"\n\nMore {n}." for n in range(more)))
        assert reply._grow_timer is None and reply._layout_asked == clock.now
        lines = 25 + 2 * more
        await until(pilot, lambda: reply.content_size.height >= lines, "the new lines")
        assert reply.render_line(lines - 1).text.rstrip() == f"More {more - 1}."


async def test_the_room_is_at_most_a_quarter_of_the_chat(clock: Clock) -> None:
    async with ReplyApp().run_test(size=(60, 24)) as pilot:
        reply, height = await write_fast(pilot, clock)
        # Its pace asks for 15 lines (19 in 0.5 s, for ROOM_FOR_SECONDS): it gets fewer.
        assert 19 < height <= 19 + 24 // ROOM_SHARE_OF_CHAT
        # The terminal gets shorter: the room shrinks with the chat.
        await pilot.resize_terminal(60, 12)
        await until(pilot, lambda: reply.content_size.height <= 19 + 3, "a smaller room")


async def test_text_that_arrives_before_the_asked_layout_does_not_ask_again(
    clock: Clock,
) -> None:
    async with ReplyApp().run_test(size=(60, 40)) as pilot:
        reply, _ = await write_fast(pilot, clock)
        clock.now += LAYOUT_EVERY  # a layout may be made at once
        reply._grow()  # one is asked for; the screen has not made it yet
        grows: list[float] = []
        grow = reply._grow
        reply._grow = lambda: (grows.append(clock.now), grow())[1]  # type: ignore[method-assign]
        many = "".join(f"\n\nMore {n}." for n in range(12))
        reply.append(many)  # more text than the room: it would ask for one
        assert reply._grow_timer is None
        await pilot.pause()  # the layout comes, with room for all of it
        assert grows == []  # and no second one was asked for
        lines = len(reply._content_lines(reply.content_size.width))
        assert reply.content_size.height >= lines
        # That layout made, text asks for the next one when it needs it.
        clock.now += LAYOUT_EVERY
        reply.append("".join(f"\n\nAnd more {n}." for n in range(12)))
        await pilot.pause()
        assert grows or reply._grow_timer is not None
        assert reply.render_line(lines + 23).text.rstrip() == "And more 11."


async def test_a_stalled_or_parked_reply_gives_its_room_back(clock: Clock) -> None:
    async with ReplyApp().run_test(size=(60, 40)) as pilot:
        reply, height = await write_fast(pilot, clock)
        assert height > 19
        clock.now += ROOM_FOR_SECONDS  # nothing written since
        await until(pilot, lambda: reply.content_size.height == 19, "the room trimmed")
        # Writing again brings room back; parking it (another agent took over) drops it.
        for n in range(10, 14):
            clock.now += 0.05
            reply.append(f"\n\nParagraph {n}.")
            await pilot.pause()
        await until(pilot, lambda: reply.content_size.height > 27, "room again")
        reply.pause()
        await until(pilot, lambda: reply.content_size.height == 27, "the exact height")
        assert not reply.complete


async def test_a_reply_at_a_model_pace_gets_no_room(clock: Clock) -> None:
    async with ReplyApp().run_test(size=(60, 40)) as pilot:
        reply = pilot.app.query_one(AssistantReply)
        for n in range(6):  # about 5 lines a second: a layout for each line keeps up
            clock.now += 0.4
            reply.append(f"{'' if n == 0 else chr(10) * 2}Paragraph {n}.")
            await pilot.pause()
        assert reply.content_size.height == 11  # the text, and no blank lines below it


async def test_a_layout_repaints_only_the_new_lines_and_they_match_a_full_repaint(
    clock: Clock,
) -> None:
    async with ReplyApp().run_test(size=(60, 80)) as pilot:
        reply, height = await write_fast(pilot, clock)
        painted: list[int] = []
        paint = reply.render_line

        def counted(y: int) -> Strip:
            painted.append(y)
            return paint(y)

        reply.render_line = counted  # type: ignore[method-assign]
        # Past the room: the reply grows and the screen is laid out again.
        clock.now += 1
        reply.append("".join(f"\n\nMore {n}." for n in range(12)))
        await until(pilot, lambda: reply.content_size.height > height, "the layout")
        await pilot.pause()
        assert painted and min(painted) >= 19  # the 19 lines painted before were kept
        region = Region(0, 0, *reply.outer_size)
        kept = [list(strip) for strip in reply.render_lines(region)]
        reply.refresh()  # forget every painted line
        assert [list(strip) for strip in reply.render_lines(region)] == kept


def test_full_collections_wait_while_a_turn_runs() -> None:
    before = gc.get_threshold()
    pause = CollectorPause()
    try:
        pause.hold("t-1")
        pause.hold("t-2")
        young, middle, full = gc.get_threshold()
        assert (young, middle) == before[:2] and full > 1_000_000
        pause.release("t-1")
        assert gc.get_threshold()[2] == full  # another turn still runs
        pause.release("t-unknown")
        assert pause.held
        pause.release("t-2")
        assert gc.get_threshold() == before and not pause.held
        pause.hold("t-3")
        pause.release_all()
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize("keys", [["a"], ["a", "b", "a"]])
def test_releasing_twice_does_not_change_thresholds(keys: list[str]) -> None:
    before = gc.get_threshold()
    pause = CollectorPause()
    try:
        for key in keys:
            pause.hold(key)
        for key in keys * 2:
            pause.release(key)
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)


class Marker:
    pass


def test_long_lived_objects_are_set_aside_once_and_full_collections_stay_rare(
    collector: None,
) -> None:
    before = gc.get_threshold()
    marker = Marker()  # a tracked object alive right now
    assert gc.get_freeze_count() == 0 and marker in gc.get_objects()
    set_aside_long_lived()
    set_aside_long_lived()  # a second app in the process: no runaway threshold
    assert gc.get_freeze_count() > 0
    assert marker not in gc.get_objects()  # out of the collector's sight
    assert gc.get_threshold() == (before[0], before[1], max(before[2], FULL_COLLECTION_EVERY))


@pytest.mark.parametrize(("preset", "expected"), [(None, "120"), ("30", "30")])
def test_the_app_paints_at_120_frames_a_second_unless_told_otherwise(
    preset: str | None, expected: str
) -> None:
    # A fresh interpreter: in this one, pytest's plugins imported Textual long ago.
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}
    if preset is not None:
        env["TEXTUAL_FPS"] = preset
    code = "import shopbot_tui.app, textual.constants as c; print(c.MAX_FPS)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == expected
