"""The chat's keys, and which of them the footer shows now.

The footer shows what applies now (Textual's `check_action`): `^r Decide` while a decision
waits, `^o Next decision` while another conversation waits for one (the side panel says to
press it), `esc Stop reply` while a reply is written, `^g Handled` while the conversation is
escalated; and, while none of those asks for a person, `^y Copy` once there is a reply and
`^b Panel` while the side panel is hidden.
Such a key keeps working while it does not apply, through a twin binding out of sight (an
`unshown` parameter), so that it can say why nothing happens ("no reply to copy yet").

Short descriptions, export only at 90 columns and wider (and in the command palette), so
the keys that matter and the app's `^q Quit` fit an 80- or 70-column footer.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

# The parameter of a key's twin that works, out of sight, while the key does not apply.
UNSHOWN = "unshown"


def while_it_applies(
    key: str, action: str, description: str, *, tooltip: str = "", id: str
) -> list[Binding]:
    """`key` in the footer while `action` applies, and working out of sight while not."""
    return [
        Binding(key, action, description, tooltip=tooltip, id=id),
        # (A system binding: not listed twice in the keys panel.)
        Binding(key, f"{action}('{UNSHOWN}')", description, show=False, system=True),
    ]


# Tooltips read on from the description (the keys panel shows them side by side).
CHAT_BINDINGS: list[Binding] = [
    Binding(
        "ctrl+n",
        "new_thread",
        "New",
        tooltip="A conversation for the same customer",
        id="chat.new_thread",
    ),
    Binding(
        "ctrl+t",
        "threads",
        "Conversations",
        tooltip="Open or start a conversation",
        id="chat.threads",
    ),
    Binding("ctrl+r", "decide", "Decide", tooltip="Reopen the approval", id="chat.decide"),
    *while_it_applies(
        "ctrl+o",
        "next_decision",
        "Next decision",
        tooltip="Open the conversation waiting longest for a decision",
        id="chat.next_decision",
    ),
    Binding(
        "ctrl+g",
        "escalation_handled",
        "Handled",
        tooltip="Mark this conversation's escalation handled (your name goes in the log)",
        id="chat.escalation_handled",
    ),
    # esc stopping a reply was found only by sending a second message while it was written.
    Binding(
        "escape",
        "stop_reply",
        "Stop reply",
        tooltip="Its unfinished text goes; the conversation carries on",
        id="chat.stop_reply",
    ),
    Binding(
        "ctrl+l",
        "audit_log",
        "Audit",
        tooltip="Log of every check and decision",
        id="chat.audit_log",
    ),
    *while_it_applies(
        "ctrl+y", "copy_reply", "Copy", tooltip="The last reply, as Markdown", id="chat.copy_reply"
    ),
    *while_it_applies(
        "ctrl+s",
        "export_chat",
        "Export",
        tooltip="The whole conversation to a Markdown file",
        id="chat.export",
    ),
    *while_it_applies(
        "ctrl+b",
        "toggle_panel",
        "Panel",
        tooltip="Show or hide the side panel",
        id="chat.toggle_panel",
    ),
    Binding("pageup", "scroll_chat(-1)", "Scroll up", show=False, id="chat.page_up"),
    Binding("pagedown", "scroll_chat(1)", "Scroll down", show=False, id="chat.page_down"),
]


@dataclass(frozen=True)
class KeyState:
    """What decides which of the chat's keys apply; the footer is built again only when it
    changes (a rebuild is 40 ms and a layout, and a turn changes state many times)."""

    engine: bool = False
    pending: bool = False
    escalated: bool = False
    reply_running: bool = False
    reply: bool = False
    waiting_elsewhere: bool = False
    panel_hidden: bool = False
    wide: bool = True

    def applies(self, action: str) -> bool | None:
        """Whether the key of `action` applies now (None: it is not one that comes and goes)."""
        if action == "next_decision":
            return self.engine and self.waiting_elsewhere
        # The conveniences give way to what asks for a person (and leave `^q Quit` room).
        quiet = not (self.pending or self.escalated or self.reply_running)
        quiet = quiet and not (self.engine and self.waiting_elsewhere)
        if action == "copy_reply":
            return self.reply and quiet
        if action == "export_chat":
            return self.engine and self.reply and self.wide and quiet
        if action == "toggle_panel":
            return self.panel_hidden and quiet
        return None

    def check(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`check_action` for the chat: True shown and working, False neither (its twin, if
        it has one, works instead), None shown dimmed (the engine is still loading)."""
        applies = self.applies(action)
        if applies is not None:
            return applies != (parameters == (UNSHOWN,))
        if action == "stop_reply":
            return self.reply_running
        if action == "decide":
            return self.pending
        if action == "escalation_handled":
            return self.escalated
        if action in ("new_thread", "threads"):
            return True if self.engine else None
        return True
