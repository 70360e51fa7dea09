"""The command palette's ShopBot commands (ctrl+p): the same actions as the bindings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from shopbot_tui.screens.chat import ChatScreen

Command = tuple[str, str, Callable[[], Any]]


class ShopBotCommands(Provider):
    """Conversation commands while the chat is on top; theme commands everywhere."""

    def _commands(self) -> Iterator[Command]:
        screen = self.screen
        if isinstance(screen, ChatScreen):
            yield ("New conversation", "Start a new thread (ctrl+n)", screen.action_new_thread)
            yield (
                "Switch thread…",
                "Open or resume a conversation (ctrl+t)",
                screen.action_threads,
            )
            yield (
                "Open audit log",
                "Every gate, hand-off and decision (ctrl+l)",
                screen.action_audit_log,
            )
            yield (
                "Export chat to Markdown",
                # Help texts are read as markup: a path is text, escaped as such.
                f"Write this conversation under {escape(str(screen.settings.home / 'exports'))}"
                " (ctrl+s)",
                screen.action_export_chat,
            )
            yield (
                "Copy last reply",
                "Put the last reply on the clipboard (ctrl+y)",
                screen.action_copy_reply,
            )
            if screen.thread_id in screen.busy:
                yield (
                    "Stop the reply",
                    "Stop the answer being written (esc)",
                    screen.action_stop_reply,
                )
            if screen.pending is not None:
                yield (
                    "Decide pending approval",
                    "Reopen the approval (ctrl+r)",
                    screen.action_decide,
                )
            if screen.escalated_here:
                yield (
                    "Escalation handled",
                    "Mark this conversation's escalation handled, in your name (ctrl+g)",
                    screen.action_escalation_handled,
                )
            waiting = len(screen.waiting.elsewhere)
            yield (
                "Next decision waiting",
                f"Open the conversation waiting longest for a decision ({waiting} waiting; ctrl+o)",
                screen.action_next_decision,
            )
            yield (
                "Toggle side panel",
                "Show or hide the agents panel (ctrl+b)",
                screen.action_toggle_panel,
            )
        toggle: Callable[[], Any] = getattr(self.app, "action_toggle_dark", lambda: None)
        yield ("Toggle light/dark theme", "Switch between a light and a dark theme", toggle)

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            if (score := matcher.match(name)) > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
