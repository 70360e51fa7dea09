"""Textual's footer, composed again only when the keys it shows change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.widgets import Footer

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.screen import Screen


class KeysFooter(Footer):
    """Textual's `Footer` recomposes (removes and mounts every key: 12-25 ms and a layout) at
    each signal that the bindings may have changed, whether or not the keys it shows did. The
    chat signals often with the same keys: at the start of a turn, and at the end of a
    streamed reply, where that recompose was the longest frame (tests/perf). This one keeps
    what it last composed and skips a recompose that would compose the same."""

    _composed: tuple[Any, ...] | None = None

    def _keys_shown(self) -> tuple[Any, ...]:
        """Everything `Footer.compose` reads: the same tuple, the same footer."""
        app = self.app
        keys = tuple(
            (b.key, app.get_key_display(b), b.description, b.action, b.group, enabled, tip)
            for (_, b, enabled, tip) in self.screen.active_bindings.values()
            if b.show
        )
        palette = self.screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
        palette_key = None
        if palette is not None:
            _, binding, enabled, tip = palette
            palette_key = (binding.key, app.get_key_display(binding), enabled, tip)
        return (keys, palette_key, self.show_command_palette, app.ENABLE_COMMAND_PALETTE)

    def compose(self) -> ComposeResult:
        self._composed = self._keys_shown() if self._bindings_ready else None
        yield from super().compose()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if (
            self._composed is not None
            and screen is self.screen
            and self._keys_shown() == self._composed
        ):
            return
        super().bindings_changed(screen)
