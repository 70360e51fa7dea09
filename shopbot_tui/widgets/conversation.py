"""The conversation: customer messages, streamed Markdown replies and quiet system lines.

Customer and model text is untrusted: it goes through `agents.text_safety.visible` (escape
sequences become visible signs) and into `Content`, never into console markup.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from rich.markdown import Markdown as RichMarkdown
from rich.style import Style
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from agents.facade import AGENT_TITLES, visible


class CustomerMessage(Static):
    """What the customer wrote, exactly as written."""

    def __init__(self, text: str, customer: str | None) -> None:
        super().__init__(Content(visible(text)))
        self.border_title = Content(visible(customer) if customer else "Customer")


# Textual lays out every widget of the screen whenever the reply being written grows, and a
# Markdown widget is many nested widgets (a list item is four), so layout time grows with the
# conversation: a 4,000-token reply fell to a frame a second. So only the newest blocks of
# the reply being written live in a Markdown widget (fed by a MarkdownStream); older blocks,
# and every finished reply, are rendered once into a single widget each.
FREEZE_AFTER_BLOCKS = 4
KEEP_LIVE_BLOCKS = 1


def block_starts(source: str) -> list[int]:
    """Line numbers where the top-level Markdown blocks of `source` start."""
    tokens = MarkdownIt("gfm-like").parse(source)
    return [t.map[0] for t in tokens if t.level == 0 and t.nesting != -1 and t.map is not None]


def split_frozen(source: str, keep: int) -> tuple[str, str]:
    """(`source` up to its last `keep` blocks, the rest); the two join back to `source`."""
    if keep <= 0:
        return source, ""
    starts = block_starts(source)
    if len(starts) <= keep:
        return "", source
    lines = source.splitlines(keepends=True)
    cut = starts[-keep]
    return "".join(lines[:cut]), "".join(lines[cut:])


class FrozenMarkdown(Widget):
    """Markdown that will not change again, rendered once per width into lines it keeps.

    Rich's Markdown renders it: it keeps the text as text, so nothing a model writes is read
    as console markup. A `Static` would render the whole document again each time the chat
    scrolls under it (every streamed line, with the view anchored); these lines are kept
    until the width or the theme changes.
    """

    DEFAULT_CSS = "FrozenMarkdown { height: auto; }"

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source
        self._lines: list[Strip] = []
        self._key: tuple[int, Style] | None = None

    def _lines_at(self, width: int) -> list[Strip]:
        base = self.rich_style
        if self._key != (width, base):
            console = self.app.console
            rendered = console.render_lines(
                RichMarkdown(self.source, hyperlinks=False),
                console.options.update_width(max(1, width)),
                style=base,
                pad=True,
            )
            self._lines = [Strip(line, width) for line in rendered]
            self._key = (width, base)
        return self._lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines_at(width))

    def render_line(self, y: int) -> Strip:
        lines = self._lines_at(self.size.width)
        return lines[y] if y < len(lines) else Strip.blank(self.size.width, self.rich_style)


class LiveMarkdown(Markdown):
    """The newest blocks of the reply being written."""

    def __init__(self, markdown: str = "") -> None:
        # Links from a model are not opened on click: ChatScreen copies them instead.
        super().__init__(markdown, open_links=False)


class AssistantReply(Vertical):
    """One reply of a specialist, as Markdown; streamed into while it is being written."""

    def __init__(self, agent: str, markdown: str = "", *, complete: bool = True) -> None:
        super().__init__()
        self.agent = agent
        self.complete = complete
        self._initial = visible(markdown)
        self.live: LiveMarkdown | None = None
        self._show_title()

    def compose(self) -> ComposeResult:
        if self._initial or self.complete:
            yield FrozenMarkdown(self._initial)
        if not self.complete:
            self.live = LiveMarkdown()
            yield self.live

    @property
    def source(self) -> str:
        frozen = "".join(part.source for part in self.query_children(FrozenMarkdown))
        return frozen + (self.live.source if self.live is not None else "")

    async def freeze(self, *, keep: int = KEEP_LIVE_BLOCKS) -> None:
        """Move all but the last `keep` blocks of the live Markdown into a frozen widget."""
        if self.live is None:
            return
        frozen, rest = split_frozen(self.live.source, keep)
        if frozen:
            await self.mount(FrozenMarkdown(frozen), before=self.live)
        if keep:
            await self.live.update(rest)
        else:
            live, self.live = self.live, None
            await live.remove()

    async def replace(self, markdown: str) -> None:
        """Show `markdown` instead of what was streamed."""
        self._initial = visible(markdown)
        self.live = None
        await self.recompose()

    async def mark_complete(self) -> None:
        """Done: the last live blocks join the rest as rendered text."""
        await self.freeze(keep=0)
        # A title, not a CSS class: a class change restyles every block of the reply.
        self.complete = True
        self._show_title()

    def _show_title(self) -> None:
        title = AGENT_TITLES.get(self.agent, self.agent)
        self.border_title = Content(title if self.complete else f"{title} · writing…")


class SystemNote(Static):
    """A quiet line about what happened between messages (a hand-off, a gate, a retry)."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(visible(text)))


class ChatLog(VerticalScroll):
    """Scrolls the conversation; anchored to the bottom until the person scrolls up."""

    def on_mount(self) -> None:
        self.anchor()


class ReplyWriter:
    """Streams one reply into the chat log through a `MarkdownStream`, never re-rendering
    what is already shown (each time older blocks are frozen, the stream starts again on the
    remaining live block); `finish` replaces the text only if the final one differs."""

    def __init__(self, log: ChatLog, agent: str) -> None:
        self.log = log
        self.agent = agent
        self.widget: AssistantReply | None = None
        self._stream: MarkdownStream | None = None

    async def write(self, text: str) -> None:
        if self.widget is None:
            self.widget = AssistantReply(self.agent, complete=False)
            await self.log.mount(self.widget)
        live = self.widget.live
        if live is None:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(live)
        await self._stream.write(visible(text))
        if len(live.children) > FREEZE_AFTER_BLOCKS:
            await self.stop()
            await self.widget.freeze()

    async def stop(self) -> None:
        """No more tokens: let the stream write out what it holds."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    async def finish(self, text: str) -> None:
        """The reply is complete and `text` is exactly what the engine recorded."""
        await self.stop()
        final = visible(text)
        if self.widget is None:
            self.widget = AssistantReply(self.agent, final)
            await self.log.mount(self.widget)
        elif self.widget.source != final:
            # Normally the streamed text is already exact.
            await self.widget.replace(final)
        await self.widget.mark_complete()

    async def discard(self) -> None:
        await self.stop()
        if self.widget is not None:
            await self.widget.remove()
            self.widget = None
