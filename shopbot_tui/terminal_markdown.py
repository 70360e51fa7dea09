"""Markdown on a terminal for text a model or a customer wrote (`shopbot chat`, `show`).

Rich's `Markdown` reads HTML and drops it (`Your order <ORD-001> ships` printed "Your order
ships"), and draws an image as "🌆 alt" with its address hidden. Here HTML is text, as it
was written, and an image reads as its text and its address, like a link.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import ImageItem, Markdown
from rich.text import Text


class _ImageAsLink(ImageItem):
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        alt = self.text.plain if self.text else ""
        yield Text(f"{alt} ({self.destination})" if alt else self.destination, end="")


class WrittenMarkdown(Markdown):
    """Markdown with no HTML and no hidden addresses (see the module's docstring)."""

    elements = {**Markdown.elements, "image": _ImageAsLink}  # noqa: RUF012 - Rich's own ClassVar

    def __init__(self, markup: str) -> None:
        super().__init__(markup, hyperlinks=False)
        # Rich parses with the "commonmark" preset, HTML on; the same rules with it off.
        parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
        self.parsed = parser.parse(markup)
