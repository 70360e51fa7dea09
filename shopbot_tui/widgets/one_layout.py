"""Widgets laid out once when they come, not a second time a frame later."""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive

# Textual lays the whole screen out a second time, a frame later, after any layout that
# changed a widget's virtual size (`Widget.virtual_size` is declared with layout=True): every
# widget mounted asks for it once, the first time it is laid out, and a growing reply on every
# layout. That second layout finds what the first did for a widget whose size follows from
# its styles and its own content (a line, a note, a card), and for a scrolling column of them
# (the scroll bar coming or going asks for its own layout: `show_vertical_scrollbar`). A class
# declares `virtual_size = VIRTUAL_SIZE_NO_RELAYOUT` to do without it.
VIRTUAL_SIZE_NO_RELAYOUT: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=False)
