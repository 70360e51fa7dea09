"""The conversation: customer messages, streamed Markdown replies and quiet system lines.

Customer and model text is untrusted: it goes through `agents.safety.text.visible` (escape
sequences become visible signs) and into `Content` or Rich's Markdown (which keeps text as
text), never into console markup.
"""

from __future__ import annotations

import asyncio
import re
from copy import copy
from dataclasses import dataclass, field
from functools import cache, cached_property
from io import StringIO
from time import monotonic
from typing import TYPE_CHECKING

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Static

from agents.backend import AGENT_TITLES, visible
from shopbot_tui.textual_private import KeepsPaintedLines
from shopbot_tui.widgets.one_layout import VIRTUAL_SIZE_NO_RELAYOUT

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown as RichMarkdown

# Emoji joined by a zero-width joiner (👨‍👩‍👧) are one glyph two cells wide to Rich and to a
# terminal that joins them, and three glyphs six cells wide to one that does not (tmux):
# there the bubble's right border moved and wrapped onto the next line. Shown side by side
# (👨👩👧), they take as many cells everywhere. Only on screen: the stored text keeps them.
_EMOJI_JOINER = re.compile(
    "(?<=[\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff])\u200d"
)


def shown(text: str) -> str:
    """Untrusted text as the conversation shows it: `visible`, emoji joins undone."""
    return _EMOJI_JOINER.sub("", visible(text))


# Why not Textual's `Markdown` widget fed by a `MarkdownStream`: its `append` keeps
# `App.batch_update` open while it awaits the mounting of new blocks, and it re-mounts a
# whole list (four widgets per item) for every token that lands in one. At 500 tokens/s
# the batch was open nearly all the time: 4 frames a second, keystrokes shown 0.2-0.5 s
# late (tests/perf). A reply is instead one widget that renders its Markdown with Rich
# into lines it keeps: settled blocks are rendered once per width, and only the few
# newest blocks are rendered again as tokens arrive. A block settles once the next one has
# begun (a list not even then: an item to come would continue it).
SETTLE_AFTER_BLOCKS = 1
LAYOUT_EVERY = 0.1
ROOM_FOR_SECONDS = 4 * LAYOUT_EVERY
MAX_ROOM_LINES = 20
ROOM_SHARE_OF_CHAT = 4  # room is at most a quarter of the chat's height
KEEP_OPEN_BLOCKS = 1


@cache
def _parser() -> MarkdownIt:
    """The parser Rich's Markdown builds for itself, built once: Rich builds one per document,
    which was most of the cost of rendering a short streamed tail. Imported on first use
    (with Rich's Markdown): nothing on the first frame needs it."""
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")


@cache
def _rich_template() -> RichMarkdown:
    from rich.markdown import Markdown

    # hyperlinks=False: a link a model wrote shows its address and is not clickable.
    return Markdown("", hyperlinks=False)


def rich_markdown(source: str) -> RichMarkdown:
    """Rich's Markdown of `source`, parsed with the shared parser."""
    markdown = copy(_rich_template())
    markdown.markup = source
    markdown.parsed = _parser().parse(source)
    return markdown


def prepare_markdown() -> None:
    """Import and exercise the Markdown renderer (Rich's Markdown, markdown-it, Pygments for
    code) ahead of the first reply, off the event loop: done on the first token, it held
    the first frames of a streamed reply back by tens of milliseconds."""
    console = Console(width=40, file=StringIO(), color_system="truecolor")
    console.render_lines(rich_markdown(_WARM_UP), console.options, pad=True)


_WARM_UP = "# A\n\n*b* **c** `d`\n\n- e\n\n1. f\n\n> g\n\n```python\nh = 1\n```\n\n---\n"


@dataclass
class _Rendered:
    """A chunk of Markdown source and its lines at one (width, style, lead)."""

    source: str
    # Segments, not Strips: a Strip carries seven caches, and a long reply kept as Strips
    # gave every full garbage collection tens of thousands more objects to walk.
    lines: list[list[Segment]] = field(default_factory=list)
    key: tuple[int, Style, str] | None = None

    @cached_property
    def _blocks(self) -> list[tuple[int, str]]:
        """(first line, token type) of each top-level block: the source is parsed once."""
        tokens = _parser().parse(self.source)
        return [
            (t.map[0], t.type)
            for t in tokens
            if t.level == 0 and t.nesting != -1 and t.map is not None
        ]

    @property
    def block_count(self) -> int:
        return len(self._blocks)

    @property
    def ends_with_rule(self) -> bool:
        return bool(self._blocks) and self._blocks[-1][1] == "hr"

    def split(self, keep: int) -> tuple[str, str]:
        """(the source up to its last `keep` blocks, the rest); the two join back to it. A
        list just before the rest goes with the rest: an item still to come would continue
        it (its numbering, its spacing), even after a blank line."""
        cut = len(self._blocks) - keep
        while cut > 0 and self._blocks[cut - 1][1] in _CONTINUABLE:
            cut -= 1
        if cut <= 0:
            return "", self.source
        lines = self.source.splitlines(keepends=True)
        first_kept = self._blocks[cut][0]
        return "".join(lines[:first_kept]), "".join(lines[first_kept:])


_CONTINUABLE = {"bullet_list_open", "ordered_list_open"}
_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)


# Rich decides the blank line before a block from the block before it (a rule brings its
# own), and a list brings one of its own too. So a chunk is rendered after a stand-in for
# the block before it, whose lines are then dropped: chunks join exactly as the whole would.
_AFTER_BLOCK = "x\n\n"
_AFTER_RULE = "---\n\n"
_LEAD_LINES: dict[tuple[int, str], int] = {}  # how many lines a stand-in takes, by width


class MarkdownLines:
    """Markdown as terminal lines: settled chunks (rendered once per width and style) and an
    open tail (rendered again when it changes)."""

    def __init__(self, source: str = "") -> None:
        self.chunks: list[_Rendered] = []
        self.tail = _Rendered(source)

    @property
    def source(self) -> str:
        return "".join(chunk.source for chunk in self.chunks) + self.tail.source

    def append(self, text: str) -> None:
        self.tail = _Rendered(self.tail.source + text)
        # A new block starts only on a new line: no need to parse the tail otherwise.
        if "\n" in text and self.tail.block_count > SETTLE_AFTER_BLOCKS:
            self.settle(keep=KEEP_OPEN_BLOCKS)

    def settle(self, *, keep: int = 0) -> None:
        """Move all but the last `keep` blocks of the tail into a settled chunk."""
        if not keep:
            if self.tail.source:
                self.chunks.append(self.tail)  # its lines are kept: nothing to render again
                self.tail = _Rendered("")
            if len(self.chunks) > 1 and _LINK_DEFINITION.search(self.source):
                # `[text][name]` takes its address from a `[name]: url` line anywhere in the
                # document, often at the end: render the finished reply once, whole.
                self.chunks = [_Rendered(self.source)]
            return
        settled, rest = self.tail.split(keep)
        if settled:
            self.chunks.append(_Rendered(settled))
            self.tail = _Rendered(rest)

    def lines(self, console: Console, width: int, style: Style) -> list[list[Segment]]:
        out: list[list[Segment]] = []
        before: _Rendered | None = None
        for part in [*self.chunks, self.tail]:
            if not part.source.strip():
                continue
            lead = "" if before is None else _AFTER_RULE if before.ends_with_rule else _AFTER_BLOCK
            out.extend(self._render(part, lead, console, width, style))
            before = part
        return out

    @staticmethod
    def _render(
        part: _Rendered, lead: str, console: Console, width: int, style: Style
    ) -> list[list[Segment]]:
        if part.key != (width, style, lead):
            options = console.options.update_width(width)

            def render(source: str) -> list[list[Segment]]:
                return console.render_lines(rich_markdown(source), options, style=style, pad=True)

            skip = 0
            if lead:
                skip = _LEAD_LINES.get((width, lead)) or len(render(lead))
                _LEAD_LINES[width, lead] = skip
            part.lines = render(lead + part.source)[skip:]
            part.key = (width, style, lead)
        return part.lines


class CustomerMessage(Static):
    """What the customer wrote, exactly as written."""

    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT

    def __init__(self, text: str, customer: str | None) -> None:
        super().__init__(Content(shown(text)))
        self.border_title = Content(visible(customer) if customer else "Customer")


class AssistantReply(KeepsPaintedLines):
    """One reply of a specialist, as Markdown; streamed into while it is being written."""

    DEFAULT_CSS = "AssistantReply { height: auto; }"
    # (A growing reply changes its virtual size and the chat's on every layout: each cost two.)
    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT

    def __init__(self, agent: str, markdown: str = "", *, complete: bool = True) -> None:
        super().__init__()
        self.agent = agent
        self.complete = complete
        self._markdown = MarkdownLines(shown(markdown))
        self._lines: list[list[Segment]] = []
        self._lines_key: tuple[int, Style] | None = None
        self._style: Style | None = None
        # The height the screen was last laid out with (at `_held_width`), kept while a
        # taller one waits; when that was, and how many blank lines it left below the text.
        self._held_height: int | None = None
        self._held_width = 0
        self._room_given = 0
        self._room_cap = 0
        self._exact_next = False
        self._last_layout = 0.0
        self._started = self._last_append = monotonic()
        self._grow_timer: asyncio.TimerHandle | None = None
        # A layout asked for (queued or requested) and not made yet, and when: no second
        # one meanwhile.
        self._layout_asked: float | None = None
        self._trim_timer: Timer | None = None
        self._show_title()

    @property
    def source(self) -> str:
        return self._markdown.source

    def append(self, text: str) -> None:
        """Add streamed text (already made visible) to the end of the reply."""
        before = self._lines
        self._markdown.append(text)
        self._lines_key = None
        # The width laid out (`laid_out`), not `content_size`: before its first layout that
        # asks the compositor to lay out the whole screen to find the widget (13-30 ms on
        # the first token of a reply).
        width = self._held_width
        if width <= 0 or self._held_height is None:
            self.refresh(layout=True)  # not laid out yet
            return
        lines = self._repaint_changes(before, width)
        now = self._last_append = monotonic()
        if self._layout_waits(now):
            return
        if len(lines) > self._held_height:
            # Text below the last line laid out is not on screen: no throttle and no
            # waiting for a booked layout, or the reply stalls in view (a 44 ms frame gap
            # at 500 tokens/s when a list arrived faster than the room below it was used).
            self._grow()
            return
        if self._grow_timer is not None:
            return
        # A taller reply means laying out the whole screen (and scrolling the chat): at most
        # every LAYOUT_EVERY seconds, while text within the lines shows at once. It is laid
        # out as soon as half the room below the text is used (if its pace still asks for
        # more), not when the text has run out.
        running_low = len(lines) > self._held_height - self._room_given // 2
        if not (running_low and self._wanted(len(lines), now) > self._held_height):
            return
        wait = self._last_layout + LAYOUT_EVERY - now
        if now - self._started < 2 * LAYOUT_EVERY:
            wait = 0  # its pace is not known yet: no room below it, so no holding back
        if wait <= 0:
            # After the frame that shows this text: the two together made the longest frames.
            self._layout_asked = now
            self.call_after_refresh(self._grow)
        else:
            # Booked when the room runs low, not when it has run out: text that waits
            # below the last line for the layout shows as a stalled reply. A loop timer:
            # Textual's `set_timer` drops a one-shot whose wait is shorter than a hiccup of
            # the loop (it skips missed beats), and this wait can be a fraction of a ms.
            self._grow_timer = asyncio.get_running_loop().call_later(
                wait, self.call_next, self._grow
            )

    def _repaint_changes(self, before: list[list[Segment]], width: int) -> list[list[Segment]]:
        """The lines now, with those that differ from `before` marked for painting: repainting
        all the reply's visible lines for every few tokens was most of the time a frame took."""
        lines = self._content_lines(width)
        first = _first_difference(before, lines)
        last = min(max(len(before), len(lines)), self._held_height or 0)
        if first < last:
            self.refresh(Region(0, first, width, last - first))
        return lines

    def _grow(self) -> None:
        if self._grow_timer is not None:
            self._grow_timer.cancel()  # booked, then overtaken by `pause()`
        self._grow_timer = None
        self._layout_asked = monotonic()
        # Layout only: `append` repainted the lines whose text changed.
        self.refresh(Region(0, 0, 0, 0), layout=True)

    def _layout_waits(self, now: float) -> bool:
        """Whether a layout this reply asked for is still to come (tokens that arrive before
        it must not ask again: the second one, a frame later, had nothing left to do). Not
        waited on for ever: a layout that never came is asked for again."""
        asked = self._layout_asked
        return asked is not None and now - asked < 2 * LAYOUT_EVERY

    def laid_out(self, size: Size) -> None:
        # (KeepsPaintedLines: a reply that only grew taller keeps its painted lines, or each
        # layout of a streamed reply repaints all of it on screen.)
        # The size laid out is the held one, whether or not `get_content_height` was asked:
        # Textual reuses a box model it cached for this container width, so after the chat
        # narrowed, widened and narrowed again (the side panel shown, hidden, shown), the
        # held height was the one line of another width, and the lines below were blank.
        gutter = self.styles.gutter
        self._held_width = size.width - gutter.width
        self._held_height = size.height - gutter.height

    def replace(self, markdown: str) -> None:
        """Show `markdown` instead of what was streamed."""
        self._markdown = MarkdownLines(shown(markdown))
        self._lines_key = None
        self._stop_timers()
        self.refresh(layout=True)  # every line may differ

    def mark_complete(self) -> None:
        """Done: the whole reply is settled and the title loses its "writing…"."""
        before = self._lines
        self._markdown.settle()  # may render it again whole (a reference link)
        self._lines_key = None
        if width := self.content_size.width:
            self._repaint_changes(before, width)
        self.complete = True
        self.pause()  # the exact height: no more room for lines to come
        # A title, not a CSS class: a class change restyles the widget and its layout.
        self._show_title()

    def pause(self) -> None:
        """No more text for now (the stream stalled, another agent took over, or it is
        done): lay the reply out at the height of its text, without the room below it."""
        self._stop_timers()
        self._exact_next = True
        self._grow()

    def on_unmount(self) -> None:
        self._stop_timers()  # the loop timer is not the widget's: it would outlive it

    def _stop_timers(self) -> None:
        if self._grow_timer is not None:
            self._grow_timer.cancel()
        if self._trim_timer is not None:
            self._trim_timer.stop()
        self._grow_timer = self._trim_timer = None

    def _trim_if_stalled(self) -> None:
        self._trim_timer = None
        if self.complete or not self._room_given:
            return
        idle = monotonic() - self._last_append
        if idle >= 0.9 * ROOM_FOR_SECONDS:  # not to the last float: no timer a moment long
            self.pause()
        else:
            self._trim_timer = self.set_timer(ROOM_FOR_SECONDS - idle, self._trim_if_stalled)

    def _show_title(self) -> None:
        title = AGENT_TITLES.get(self.agent, self.agent)
        self.border_title = Content(title if self.complete else f"{title} · writing…")

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style = None  # a theme or CSS change: render with the new style

    @property
    def _base_style(self) -> Style:
        # `rich_style` walks every ancestor's styles: too slow to ask for on each line.
        if self._style is None:
            self._style = self.rich_style
        return self._style

    def _content_lines(self, width: int) -> list[list[Segment]]:
        key = (max(1, width), self._base_style)
        if self._lines_key != key:
            self._lines = self._markdown.lines(self.app.console, *key)
            self._lines_key = key
        return self._lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if (
            self._held_height is not None
            and self._grow_timer is not None
            and width == self._held_width
        ):
            return self._held_height
        lines = len(self._content_lines(width))
        now = monotonic()
        self._room_cap = min(MAX_ROOM_LINES, container.height // ROOM_SHARE_OF_CHAT)
        height = lines
        if (
            not self.complete
            and not self._exact_next
            and self._held_height is not None
            and width == self._held_width
        ):
            # While a reply is written it does not shrink (a layout each time a Markdown
            # re-render takes a line back), and a fast one keeps room below its text for
            # the lines to come: they show without laying the screen out.
            kept = min(self._held_height, lines + self._room_cap)
            height = max(kept, self._wanted(lines, now))
        self._exact_next = False
        self._layout_asked = None
        self._held_height, self._held_width, self._last_layout = height, width, now
        self._room_given = height - lines
        if self._room_given and self._trim_timer is None:
            self._trim_timer = self.set_timer(ROOM_FOR_SECONDS, self._trim_if_stalled)
        return height

    def _wanted(self, lines: int, now: float) -> int:
        """The height for `lines` of text and room for what the next few layout intervals
        will bring at the pace written so far. No room when that pace leaves a layout for
        each new line: then the reply has no blank lines to lose when it is done."""
        elapsed = now - self._started
        if elapsed < LAYOUT_EVERY:
            return lines
        per_second = lines / elapsed
        if per_second * LAYOUT_EVERY <= 1:
            return lines
        return lines + min(self._room_cap, int(per_second * ROOM_FOR_SECONDS))

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        lines = self._content_lines(width)
        if y >= len(lines) or (self._held_height is not None and y >= self._held_height):
            return Strip.blank(width, self._base_style)
        return Strip(lines[y], width)


def _first_difference(old: list[list[Segment]], new: list[list[Segment]]) -> int:
    """The index of the first line that differs; settled lines are the very same lists."""
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a is not b and a != b:
            return index
    return min(len(old), len(new))


class SystemNote(Static):
    """A quiet line about what happened between messages (a hand-off, a gate, a retry)."""

    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT

    def __init__(self, text: str) -> None:
        super().__init__(Content(shown(text)))


class ChatLog(VerticalScroll):
    """Scrolls the conversation; anchored to the bottom until the person scrolls up."""

    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT  # (anchored, it scrolls during the first layout)

    def on_mount(self) -> None:
        self.anchor()


class ReplyWriter:
    """Streams one reply into the chat log; `finish` replaces the text only if the final one
    differs from what was streamed."""

    def __init__(self, log: ChatLog, agent: str) -> None:
        self.log = log
        self.agent = agent
        self.widget: AssistantReply | None = None

    async def write(self, text: str) -> None:
        if self.widget is None:
            self.widget = AssistantReply(self.agent, complete=False)
            await self.log.mount(self.widget)
        self.widget.append(shown(text))

    async def finish(self, text: str) -> None:
        """The reply is complete and `text` is exactly what the engine recorded."""
        final = shown(text)
        if self.widget is None:
            self.widget = AssistantReply(self.agent, final)
            await self.log.mount(self.widget)
        elif self.widget.source != final:
            # Normally the streamed text is already exact.
            self.widget.replace(final)
        self.widget.mark_complete()

    def pause(self) -> None:
        """Nothing more is coming for now (another agent took over)."""
        if self.widget is not None:
            self.widget.pause()

    async def discard(self) -> None:
        if self.widget is not None:
            await self.widget.remove()
            self.widget = None
