"""Every private Textual internal ShopBot relies on, in one place: what the `textual<8.3` pin
in pyproject.toml is about. Each has no public equivalent in 8.2; a Textual upgrade is
checked here first (tests/tui exercise each one).

- The streamed reply keeps the lines it has painted when it only grows taller
  (`KeepsPaintedLines`): Textual forgets every painted line of a widget whose size changes.
- A toast is taken back before its time (`withdraw_notifications`): a click on a toast
  removes it with the same private call.
- A footer key is enabled or dimmed where it is (`enable_footer_key`): `FooterKey` takes it
  only when made, and a click on it checks its private `_disabled`.
- The paste-aware input driver (terminal_input.py) parses the terminal's bytes with
  Textual's own xterm parser (`XTermParser`, `ParseError`, `loop_last`).
- Painted lines of widgets long gone are let go (`mend_styles_cache_leak`): 8.2 keeps up to
  1,024 of them alive by a cache on the wrong kind of method.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from textual._loop import loop_last
from textual._parser import ParseError
from textual._styles_cache import StylesCache
from textual._xterm_parser import XTermParser
from textual.widget import Widget
from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App
    from textual.color import Color
    from textual.geometry import Size
    from textual.style import Style


class KeepsPaintedLines(Widget):
    """A widget whose painted lines survive a layout that only made it taller (none of its
    lines moved: no bottom border or padding). `laid_out(size)` is told every size laid out."""

    def laid_out(self, size: Size) -> None:
        """The size the widget was just laid out at (its own bookkeeping)."""

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        old, cache = self.outer_size, self._styles_cache
        keep = old.height - self.styles.gutter.bottom
        kept = (
            {
                y: strip
                for y, strip in cache._cache.items()
                if y < keep and y not in cache._dirty_lines
            }
            if size.width == old.width and size.height > old.height
            else {}
        )
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        self.laid_out(size)
        if kept:
            cache._cache.update(kept)
            cache._dirty_lines.difference_update(kept)
        return changed


def enable_footer_key(key: FooterKey, enabled: bool) -> None:
    """`key` shown enabled, or dimmed (a click only rings the bell), as `FooterKey(disabled=
    not enabled)` makes it."""
    key._disabled = not enabled
    key.set_class(not enabled, "-disabled")


def withdraw_notifications(app: App[Any], title: str) -> None:
    """Remove the app's notifications titled `title`, their toasts with them."""
    stale = [notification for notification in app._notifications if notification.title == title]
    for notification in stale:
        app._unnotify(notification, refresh=False)
    if stale:
        app._refresh_notifications()


def mend_styles_cache_leak() -> None:
    """Let the painted lines of removed widgets go (Textualize/textual#6665).

    `StylesCache.get_inner_outer` is an `lru_cache` on an instance method that was meant to
    be a class method: each of its 1,024 keys holds a widget's `StylesCache`, and with it every
    line that widget last painted. In ShopBot that was some 12,000 objects per chat screen
    left behind, which every full garbage collection then walked (a stall while a reply
    streams). The mended cache is keyed by the two colours alone and runs Textual's own body.
    Nothing changes where Textual has fixed it (the method is then no bare `lru_cache`)."""
    cached = StylesCache.__dict__.get("get_inner_outer")
    body: Callable[..., tuple[Style, Style]] | None = getattr(cached, "__wrapped__", None)
    if body is None or isinstance(cached, (classmethod, staticmethod)):
        return

    @lru_cache(1024)
    def inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
        return body(StylesCache, base_background, background)

    StylesCache.get_inner_outer = staticmethod(inner_outer)  # type: ignore[assignment,method-assign]


__all__ = [
    "FooterKey",
    "KeepsPaintedLines",
    "ParseError",
    "XTermParser",
    "enable_footer_key",
    "loop_last",
    "mend_styles_cache_leak",
    "withdraw_notifications",
]
