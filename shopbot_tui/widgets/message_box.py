"""The box a message is typed (or pasted) into."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets import Input


def one_line(text: str) -> str:
    """A pasted e-mail as one message: its lines joined by spaces, blank lines dropped."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


class MessageBox(Input):
    """A single-line input that keeps all of a multi-line paste.

    Textual's `Input` keeps only the first line of a paste; pasting a customer's e-mail
    must not silently drop the rest of it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not selected on focus: tabbed back to, the whole draft was selected and the next
        # key typed replaced it.
        kwargs.setdefault("select_on_focus", False)
        super().__init__(*args, **kwargs)

    def _on_paste(self, event: events.Paste) -> None:
        # Runs before `Input._on_paste`; preventing the default skips that one.
        event.prevent_default()
        event.stop()
        if text := one_line(event.text):
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)

    def take_sent(self, text: str) -> None:
        """`text` was sent: out of the box; what was typed since it was sent stays."""
        if self.value.startswith(text):
            self.value = self.value[len(text) :]
            self.cursor_position = len(self.value)
