"""Markdown on a terminal for text a model or a customer wrote (`shopbot chat`, `show`).

Rich's `Markdown` reads HTML and drops it (`Your order <ORD-001> ships` printed "Your order
ships"), and draws an image as "🌆 alt" with its address hidden. Here HTML is text, as it
was written, and an image reads as its text and its address, like a link.
"""

from __future__ import annotations

import sys

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import ImageItem, Markdown
from rich.text import Text

from agents.backend import visible


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


def print_markdown(text: str) -> None:
    """A reply or a transcript as Markdown on a terminal (a person read `**ORD-002**` and
    `- Status:`), as written into a pipe or file (a script, or a person who pastes it on)."""
    if not sys.stdout.isatty():
        print(visible(text))
        return
    from rich.console import Console

    # Made visible first: what the model wrote is text, never terminal control. HTML shows
    # as written, links and images with their address, never hidden behind their text.
    Console(highlight=False).print(WrittenMarkdown(visible(text)))
