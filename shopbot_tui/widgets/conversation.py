"""The conversation: customer messages, streamed Markdown replies and quiet system lines.

Customer and model text is untrusted: it goes through `agents.text_safety.visible` (escape
sequences become visible signs) and into `Content`, never into console markup.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from agents.events import AGENT_TITLES
from agents.text_safety import visible


class CustomerMessage(Static):
    """What the customer wrote, exactly as written."""

    def __init__(self, text: str, customer: str | None) -> None:
        super().__init__(Content(visible(text)))
        self.border_title = Content(visible(customer) if customer else "Customer")


# Textual lays out every block of a Markdown widget on each frame, so a reply streamed into
# one widget slows down as it grows (a 4,000-token reply fell to a frame a second). Past
# FREEZE_AFTER_BLOCKS blocks, all but the last KEEP_LIVE_BLOCKS are rendered once into a
# single widget and the live Markdown starts again from there: layout stays small.
FREEZE_AFTER_BLOCKS = 12
KEEP_LIVE_BLOCKS = 2


def block_starts(source: str) -> list[int]:
    """Line numbers where the top-level Markdown blocks of `source` start."""
    tokens = MarkdownIt("gfm-like").parse(source)
    return [t.map[0] for t in tokens if t.level == 0 and t.nesting != -1 and t.map is not None]


def split_frozen(source: str, keep: int) -> tuple[str, str]:
    """(`source` up to its last `keep` blocks, the rest); the two join back to `source`."""
    starts = block_starts(source)
    if len(starts) <= keep:
        return "", source
    lines = source.splitlines(keepends=True)
    cut = starts[-keep]
    return "".join(lines[:cut]), "".join(lines[cut:])


class FrozenMarkdown(Static):
    """Finished blocks of a long reply, rendered once into one widget (Rich's Markdown)."""

    def __init__(self, source: str) -> None:
        super().__init__(RichMarkdown(source, hyperlinks=False))
        self.source = source


class LiveMarkdown(Markdown):
    """The part of a reply still being written (or all of a short one)."""

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
        self.live = LiveMarkdown()
        self._show_title()

    def compose(self) -> ComposeResult:
        frozen, rest = "", self._initial
        while len(block_starts(rest)) > FREEZE_AFTER_BLOCKS:
            head, rest = split_frozen(rest, len(block_starts(rest)) - FREEZE_AFTER_BLOCKS)
            frozen += head
            yield FrozenMarkdown(head)
        self.live = LiveMarkdown(rest)
        yield self.live

    @property
    def source(self) -> str:
        frozen = "".join(part.source for part in self.query_children(FrozenMarkdown))
        return frozen + self.live.source

    async def freeze(self) -> bool:
        """Move all but the last blocks of the live Markdown into a frozen widget."""
        frozen, rest = split_frozen(self.live.source, KEEP_LIVE_BLOCKS)
        if not frozen:
            return False
        await self.mount(FrozenMarkdown(frozen), before=self.live)
        await self.live.update(rest)
        return True

    async def replace(self, markdown: str) -> None:
        """Show `markdown` instead of what was streamed."""
        self._initial = visible(markdown)
        await self.recompose()

    def mark_complete(self) -> None:
        # A title, not a CSS class: a class change restyles every block of a long reply.
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
    what is already shown (a long reply moves to a new stream each time older blocks are
    frozen); `finish` replaces the text only if the final one differs."""

    def __init__(self, log: ChatLog, agent: str) -> None:
        self.log = log
        self.agent = agent
        self.widget: AssistantReply | None = None
        self._stream: MarkdownStream | None = None

    async def write(self, text: str) -> None:
        if self.widget is None:
            self.widget = AssistantReply(self.agent, complete=False)
            await self.log.mount(self.widget)
            self._stream = Markdown.get_stream(self.widget.live)
        if self._stream is None:
            return
        await self._stream.write(visible(text))
        if len(self.widget.live.children) > FREEZE_AFTER_BLOCKS:
            await self._stream.stop()
            await self.widget.freeze()
            self._stream = Markdown.get_stream(self.widget.live)

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
            # Normally the streamed text is already exact: rebuilding a long reply is slow.
            await self.widget.replace(final)
        self.widget.mark_complete()

    async def discard(self) -> None:
        await self.stop()
        if self.widget is not None:
            await self.widget.remove()
            self.widget = None
