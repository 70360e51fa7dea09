"""The command palette's ShopBot commands (ctrl+p): the same actions as the bindings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from shopbot_tui.chat.screen import ChatScreen

Command = tuple[str, str, Callable[[], Any]]

# Other words a person may type for a command: the app says "conversation", yet "thread" is
# what `shopbot` command lines, the audit log and older habits call one, and the fuzzy match
# on the name alone finds neither "thread" in "New conversation" nor "switch thread".
ALSO_FOUND_AS: dict[str, tuple[str, ...]] = {
    "New conversation": ("New thread",),
    "Switch conversation…": ("Switch thread", "Open thread", "Threads"),
}


class ShopBotCommands(Provider):
    """Conversation commands while the chat is on top; theme commands everywhere."""

    def _commands(self) -> Iterator[Command]:
        screen = self.screen
        if isinstance(screen, ChatScreen):
            yield (
                "New conversation",
                "Start one for the same customer (ctrl+n)",
                screen.action_new_thread,
            )
            yield (
                "Switch conversation…",
                "Open or resume a conversation (ctrl+t)",
                screen.action_threads,
            )
            # The list's views of what needs a person, straight from the palette.
            yield (
                "Escalated conversations",
                "The conversation list's Escalated view: those waiting for a person",
                partial(screen.commands.choose_thread, "escalated"),
            )
            yield (
                "Conversations waiting for a decision",
                "The conversation list's Waiting view: refunds and complaints to decide",
                partial(screen.commands.choose_thread, "waiting"),
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
            score = matcher.match(name)
            also = max(map(matcher.match, ALSO_FOUND_AS.get(name, ())), default=0.0)
            if score > 0 and score >= also:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
            elif also > 0:
                # Found by another word: the name is shown unmarked, as its letters did not match.
                yield Hit(also, Content(name), callback, text=name, help=help_text)
