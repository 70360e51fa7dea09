"""The conversation: customer messages, streamed Markdown replies and quiet system lines.

Customer and model text is untrusted: it goes through `agents.text_safety.visible` (escape
sequences become visible signs) and into `Content` or Rich's Markdown (which keeps text as
text), never into console markup.
"""

from __future__ import annotations

from copy import copy
from dataclasses import dataclass, field
from functools import cache, cached_property
from time import monotonic
from typing import TYPE_CHECKING

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from agents.facade import AGENT_TITLES, visible

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown as RichMarkdown

# Why not Textual's `Markdown` widget fed by a `MarkdownStream`: its `append` keeps
# `App.batch_update` open while it awaits the mounting of new blocks, and it re-mounts a
# whole list (four widgets per item) for every token that lands in one. At 500 tokens/s
# the batch was open nearly all the time: 4 frames a second, keystrokes shown 0.2-0.5 s
# late (tests/perf). A reply is instead one widget that renders its Markdown with Rich
# into lines it keeps: settled blocks are rendered once per width, and only the few
# newest blocks are rendered again as tokens arrive.
SETTLE_AFTER_BLOCKS = 2
LAYOUT_EVERY = 0.1
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
        """(the source up to its last `keep` blocks, the rest); the two join back to it."""
        if len(self._blocks) <= keep:
            return "", self.source
        lines = self.source.splitlines(keepends=True)
        cut = self._blocks[-keep][0]
        return "".join(lines[:cut]), "".join(lines[cut:])


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

    def __init__(self, text: str, customer: str | None) -> None:
        super().__init__(Content(visible(text)))
        self.border_title = Content(visible(customer) if customer else "Customer")


class AssistantReply(Widget):
    """One reply of a specialist, as Markdown; streamed into while it is being written."""

    DEFAULT_CSS = "AssistantReply { height: auto; }"

    def __init__(self, agent: str, markdown: str = "", *, complete: bool = True) -> None:
        super().__init__()
        self.agent = agent
        self.complete = complete
        self._markdown = MarkdownLines(visible(markdown))
        self._lines: list[list[Segment]] = []
        self._lines_key: tuple[int, Style] | None = None
        self._style: Style | None = None
        # The height the screen was last laid out with, kept while a taller one waits.
        self._held_height: int | None = None
        self._last_layout = 0.0
        self._grow_timer: Timer | None = None
        self._show_title()

    @property
    def source(self) -> str:
        return self._markdown.source

    def append(self, text: str) -> None:
        """Add streamed text (already made visible) to the end of the reply."""
        self._markdown.append(text)
        self._lines_key = None
        width = self.content_size.width
        if not width or self._held_height is None:
            self.refresh(layout=True)  # not laid out yet
            return
        if len(self._content_lines(width)) != self._held_height and self._grow_timer is None:
            # A taller reply means laying out the whole screen (and scrolling the chat);
            # at most every LAYOUT_EVERY seconds, while text within the lines shows at once.
            wait = self._last_layout + LAYOUT_EVERY - monotonic()
            if wait <= 0:
                self._grow()
                return
            self._grow_timer = self.set_timer(wait, self._grow)
        self.refresh()  # only this widget is painted again

    def _grow(self) -> None:
        self._grow_timer = None
        self._held_height = None
        self.refresh(layout=True)

    def replace(self, markdown: str) -> None:
        """Show `markdown` instead of what was streamed."""
        self._markdown = MarkdownLines(visible(markdown))
        self._lines_key = None
        self._grow()

    def mark_complete(self) -> None:
        """Done: the whole reply is settled and the title loses its "writing…"."""
        self._markdown.settle()
        if self._grow_timer is not None:
            self._grow_timer.stop()
            self._grow()
        # A title, not a CSS class: a class change restyles the widget and its layout.
        self.complete = True
        self._show_title()

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
        if self._held_height is None or self._grow_timer is None:
            self._held_height = len(self._content_lines(width))
            self._last_layout = monotonic()
        return self._held_height

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        lines = self._content_lines(width)
        if y >= len(lines) or (self._held_height is not None and y >= self._held_height):
            return Strip.blank(width, self._base_style)
        return Strip(lines[y], width)


class SystemNote(Static):
    """A quiet line about what happened between messages (a hand-off, a gate, a retry)."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(visible(text)))


class ChatLog(VerticalScroll):
    """Scrolls the conversation; anchored to the bottom until the person scrolls up."""

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
        self.widget.append(visible(text))

    async def finish(self, text: str) -> None:
        """The reply is complete and `text` is exactly what the engine recorded."""
        final = visible(text)
        if self.widget is None:
            self.widget = AssistantReply(self.agent, final)
            await self.log.mount(self.widget)
        elif self.widget.source != final:
            # Normally the streamed text is already exact.
            self.widget.replace(final)
        self.widget.mark_complete()

    async def discard(self) -> None:
        if self.widget is not None:
            await self.widget.remove()
            self.widget = None
