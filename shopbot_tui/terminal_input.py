r"""A paste arrives whole, whatever it holds: the terminal's input read with pastes cut out
before Textual's parser sees them.

Textual's `XTermParser` (8.2) reads an escape sequence inside a bracketed paste as keys: a
paste of `\x1b[31mRED\x1b[0m status` became the keys `^ [ 3 1 m R E D ...`, typed ahead of
the paste, which kept only the rest (the paste's first words showed after its last ones).
Here everything between the terminal's paste markers is one `Paste` event, as pasted; the
message box then shows escape characters as visible signs (␛), as everywhere else.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder
from collections.abc import Iterable
from time import monotonic

from textual import constants, events
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from shopbot_tui.textual_private import ParseError, XTermParser, loop_last

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"


def _marker_begun(data: str, marker: str) -> int:
    """How many characters at the end of `data` may be the start of `marker`, to hold until
    the next read shows whether they are."""
    for length in range(min(len(marker) - 1, len(data)), 0, -1):
        if data.endswith(marker[:length]):
            return length
    return 0


class WholePasteParser(XTermParser):
    """`XTermParser` with bracketed pastes read whole."""

    def __init__(self, debug: bool = False) -> None:
        super().__init__(debug)
        self._pasted: list[str] | None = None  # inside a paste: its text so far
        # The end of the last read, held: maybe the start of a marker, cut by the read.
        self._held = ""
        self._held_at = 0.0

    def feed(self, data: str) -> Iterable[Message]:
        if not data:  # the end of the input
            held, self._held = self._held, ""
            if self._pasted is not None:
                yield self._paste(held)
            elif held:
                yield from super().feed(held)
            yield from super().feed("")
            return
        data, self._held = self._held + data, ""
        while data:
            if self._pasted is None:
                start = data.find(PASTE_START)
                if start < 0:
                    keep = _marker_begun(data, PASTE_START)
                    yield from self._keys(data[: len(data) - keep])
                    self._hold(data[len(data) - keep :])
                    return
                yield from self._keys(data[:start])
                self._pasted = []
                data = data[start + len(PASTE_START) :]
            else:
                end = data.find(PASTE_END)
                if end < 0:
                    keep = _marker_begun(data, PASTE_END)
                    self._pasted.append(data[: len(data) - keep])
                    self._hold(data[len(data) - keep :])
                    return
                yield self._paste(data[:end])
                data = data[end + len(PASTE_END) :]

    def tick(self) -> Iterable[Message]:
        # What was held as a marker's start and stayed alone was keys: a lone ESC the escape
        # key, after ESCDELAY as Textual's parser has it (not after twice that, once here and
        # once there).
        if (
            self._held
            and self._pasted is None
            and monotonic() - self._held_at >= constants.ESCAPE_DELAY
        ):
            held, self._held = self._held, ""
            if held == "\x1b":
                yield events.Key("escape", "\x1b")
            else:
                yield from super().feed(held)
        yield from super().tick()

    def _keys(self, data: str) -> Iterable[Message]:
        if data:  # (an empty feed is the end of the input)
            yield from super().feed(data)

    def _hold(self, data: str) -> None:
        self._held, self._held_at = data, monotonic()

    def _paste(self, last: str) -> events.Paste:
        assert self._pasted is not None
        text = "".join([*self._pasted, last])
        self._pasted = None
        # NUL dropped, as Textual does (textual#1661).
        return events.Paste(text.replace("\x00", ""))


class WholePasteDriver(LinuxDriver):
    """Textual's Linux driver reading its input with `WholePasteParser`."""

    def run_input_thread(self) -> None:
        # `LinuxDriver.run_input_thread` (Textual 8.2) with the parser swapped: it builds its
        # `XTermParser` inside the method, so there is no other way to give it another one.
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        fileno = self.fileno
        parser = WholePasteParser(self._debug)
        feed, tick = parser.feed, parser.tick
        decode = getincrementaldecoder("utf-8")().decode

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]], final: bool = False
        ) -> None:
            for last, (_key, mask) in loop_last(selector_events):
                if mask & selectors.EVENT_READ:
                    unicode_data = decode(os.read(fileno, 1024 * 4), final=final and last)
                    if not unicode_data:
                        break  # stdin is a pipe, closed
                    for event in feed(unicode_data):
                        self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process_selector_events(selector.select(0.1))
            selector.unregister(self.fileno)
            process_selector_events(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass
