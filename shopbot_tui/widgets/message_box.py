"""The box a message is typed (or pasted) into."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from textual import events
from textual.binding import BindingType
from textual.widgets import Input

from agents.backend import visible


def _quiet_editing_keys() -> list[BindingType]:
    """Input's keys, working as ever but left out of the keys panel (system bindings), except
    Enter: 30 lines of cursor moves and deletions came first there, and ShopBot's own keys
    (copy, export, stop, side panel) only below the fold. Page up and down are left to the
    chat, which scrolls the conversation with them (a one-line box has nothing to page)."""
    keys = Input._merge_bindings().key_to_bindings
    return [
        replace(binding, description="Send") if key == "enter" else replace(binding, system=True)
        for key, bindings in keys.items()
        if key not in ("pageup", "pagedown")
        for binding in bindings
    ]


# Zero-width joiner and non-joiner: they join emoji (👩‍💻) and shape Indic and Persian words.
JOINERS = ("\u200d", "\u200c")


def one_line(text: str) -> str:
    """A pasted e-mail as one message: its lines joined by spaces, blank lines dropped."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


class MessageBox(Input, inherit_bindings=False):
    """A single-line input that keeps all of a multi-line paste.

    Textual's `Input` keeps only the first line of a paste; pasting a customer's e-mail
    must not silently drop the rest of it.
    """

    BINDING_GROUP_TITLE = "Message"
    BINDINGS: ClassVar[list[BindingType]] = _quiet_editing_keys()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not selected on focus: tabbed back to, the whole draft was selected and the next
        # key typed replaced it.
        kwargs.setdefault("select_on_focus", False)
        super().__init__(*args, **kwargs)

    async def _on_key(self, event: events.Key) -> None:
        # The joiners are no printable characters to Python, so `Input` dropped them: the
        # family emoji 👨‍👩‍👧, typed or sent by a terminal key by key, arrived as three people.
        if event.character in JOINERS:
            event.stop()
            event.prevent_default()
            self.insert_text_at_cursor(event.character)
            return
        await super()._on_key(event)

    def _on_paste(self, event: events.Paste) -> None:
        # Runs before `Input._on_paste`; preventing the default skips that one.
        event.prevent_default()
        event.stop()
        # Escape sequences as visible signs (␛), as the conversation shows them: raw in the
        # box they were sent as typed, and the terminal may obey them when the box is drawn.
        if text := visible(one_line(event.text)):
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)

    def take_sent(self, text: str) -> None:
        """`text` was sent: out of the box; what was typed since it was sent stays."""
        if self.value.startswith(text):
            self.value = self.value[len(text) :]
            self.cursor_position = len(self.value)
