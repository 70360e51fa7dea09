"""Textual's footer, composed again only when the keys it shows change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.widgets import Footer

from shopbot_tui.textual_private import FooterKey, enable_footer_key

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.binding import Binding
    from textual.screen import Screen

# Whether each key is enabled (or shown dimmed) and its tooltip, in the footer's order.
KeyStates = tuple[tuple[bool, str], ...]


class KeysFooter(Footer):
    """Textual's `Footer` recomposes (removes and mounts every key: 12-25 ms and a layout) at
    each signal that the bindings may have changed, whether or not the keys it shows did, once
    per signal even when several come before it has (two at start-up). The chat signals often
    with the same keys: at the start of a turn, and at the end of a streamed reply, where that
    recompose was the longest frame (tests/perf). This one keeps what it last composed, skips
    a recompose that would compose the same, and when only whether keys are enabled changed
    (the engine has started: `^n New` and `^t Conversations` no longer dimmed), updates those
    keys where they are."""

    _composed: tuple[Any, ...] | None = None
    _states: KeyStates = ()
    _follow_queued = False
    _compositions = 0

    def _keys_shown(self) -> tuple[tuple[Any, ...], KeyStates]:
        """What `Footer.compose` reads: the keys it shows (others: composed again), and the
        state of each FooterKey it yields, in order (others: updated in place)."""
        app = self.app
        bindings = self.screen.active_bindings
        first: dict[str, tuple[Binding, bool, str]] = {}  # (Footer shows an action's first)
        for _, binding, enabled, tip in bindings.values():
            if binding.show:
                first.setdefault(binding.action, (binding, enabled, tip))
        # A group's keys take their tooltip from elsewhere: any change composes them again.
        grouped = any(binding.group is not None for binding, _, _ in first.values())
        keys = tuple(
            (b.key, app.get_key_display(b), b.description, b.action, b.group)
            + ((enabled, tip) if grouped else ())
            for b, enabled, tip in first.values()
        )
        states = tuple((enabled, tip) for _, enabled, tip in first.values())
        palette = bindings.get(app.COMMAND_PALETTE_BINDING)
        palette_key = None
        if palette is not None and self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            _, binding, enabled, _ = palette
            palette_key = (binding.key, app.get_key_display(binding), binding.description)
            states += ((enabled, binding.tooltip or binding.description),)
        return (keys, palette_key, self.show_command_palette, app.ENABLE_COMMAND_PALETTE), states

    def compose(self) -> ComposeResult:
        self._compositions += 1
        self._composed, self._states = (None, ())
        if self._bindings_ready:
            self._composed, self._states = self._keys_shown()
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                # A key sets its class from its `compact` as it mounts, and Footer binds that
                # to its own (all but the palette key's) after the key's default, True: each
                # key was styled again, twice, once mounted. Both are set first here.
                # (Not `widget.compact`: read before it mounts, it sets the class anyway.)
                bound = not widget.has_class("-command-palette")
                compact = self.compact if bound else True  # (FooterKey's default)
                widget.set_reactive(FooterKey.compact, compact)
                widget.set_class(compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen[Any]) -> None:
        # (As Footer: the keys are ready from the first signal; none followed without focus.)
        self._bindings_ready = True
        if not screen.app.app_focus or screen is not self.screen or not self.is_attached:
            return
        if not self._follow_queued:
            self._follow_queued = True
            # After the refresh, as Footer: the screen's bindings have settled by then.
            self.call_after_refresh(self._follow_bindings)

    async def _follow_bindings(self) -> None:
        """Compose again, or update the keys, until they show the bindings as they are now (a
        signal while this runs is not queued again: it is seen here)."""
        try:
            while self.is_attached:
                keys, states = self._keys_shown()
                if keys != self._composed:
                    composed = self._compositions
                    await self.recompose()
                    if self._compositions == composed:
                        return  # (not composed: the footer is being removed)
                    continue
                if states != self._states:
                    for key, (enabled, tip) in zip(self.query(FooterKey), states, strict=True):
                        enable_footer_key(key, enabled)
                        key.tooltip = tip or None
                    self._states = states
                return
        finally:
            self._follow_queued = False
