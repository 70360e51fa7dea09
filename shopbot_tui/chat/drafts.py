"""What a person typed in a conversation and has not sent.

It stays with its conversation: opening another one empties the box (a message meant for
Alex never follows the person into Sam's conversation) and opening it again brings the text
back, in this session and after quitting (the thread registry keeps it; sending ends it).
Text typed in a conversation nobody has written in yet belonged to none: it goes along to the
one opened next, after that one's own draft if it has one (neither is lost); left there as
the app closes, the next new conversation takes it (its id is never opened again).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shopbot_tui.chat.newest_wins import NewestWins

if TYPE_CHECKING:
    from shopbot_tui.chat.parts import DraftsChat

log = logging.getLogger("shopbot.tui")


class Drafts:
    def __init__(self, chat: DraftsChat) -> None:
        self._chat = chat
        # Thread id -> the box's text in it, this session (the truth while the app runs).
        self._typed: dict[str, str] = {}
        # (Key None: a new conversation's, see `ShopBotEngine.save_draft`.)
        self._unsaved: NewestWins[str | None, str] = NewestWins()
        # The open conversation is known to have no messages (its history was read): text
        # typed in it goes along when another opens. Not read yet counts as started: a
        # conversation opened and left before its history showed keeps its draft.
        self._empty = False
        # The conversation text went along to, until its history (and own draft) is read.
        self._carried_to: str | None = None

    def drafted(self, stored: set[str]) -> set[str]:
        """The conversations with a draft: `stored` (as the registry has them), as this
        session has them now (what it stores runs behind, in a worker)."""
        typed = {thread_id for thread_id, text in self._typed.items() if text.strip()}
        return (stored - self._typed.keys()) | typed

    def typed(self, thread_id: str, text: str) -> None:
        """The box changed while `thread_id` was open."""
        self._typed[thread_id] = text

    def leave(self, old: str, new: str) -> None:
        """`new` opens in place of `old`: `old`'s text stays with it, the box shows `new`'s."""
        box = self._chat.message_input
        text = box.value
        self._typed.pop(old, None)
        empty, self._empty, self._carried_to = self._empty, False, None
        # (A message going out from `old` makes it started, though not yet accepted.)
        if empty and old not in self._chat.busy:
            # Nobody's yet: it goes along, after what `new` has. Typed there this session,
            # that is known now; else its stored draft comes first when read (`loaded`).
            own = self._typed.get(new, "")
            if not own:
                self._typed[new] = text
                self._carried_to = new
                return
            self._typed[new] = merged = f"{own} {text}" if text.strip() else own
            box.value = merged
            box.cursor_position = len(merged)
            self._save(new, merged)
            return
        self._typed[old] = text
        self._save(old, text)
        box.value = self._typed.get(new, "")
        box.cursor_position = len(box.value)

    def loaded(
        self, thread_id: str, stored: str, *, started: bool, new_draft: bool = False
    ) -> None:
        """`thread_id`'s history is shown: its stored draft too (`new_draft`: the one a new
        conversation left as the app closed), if nothing was typed since, and before the text
        that went along to it, if some did (neither is lost)."""
        self._empty = not started
        carried, self._carried_to = self._carried_to == thread_id, None
        box = self._chat.message_input
        if not carried and (box.value or self._typed.get(thread_id)):
            return  # typed since it opened: that stands
        if not stored or stored == box.value:
            return
        text = f"{stored} {box.value}" if box.value else stored
        box.value = text
        box.cursor_position = len(text)
        self._typed[thread_id] = text
        if new_draft:
            self._save(None, "")  # taken: it is this conversation's now

    def sent(self, thread_id: str, text: str) -> None:
        """`text` went to `thread_id`: the conversation is started, and its draft is over (the
        registry drops its stored one as it records the message). Left as it went, the
        conversation's kept draft loses the text sent (the box, `take_sent`, when it is open)."""
        if thread_id == self._chat.thread_id:
            self._empty = False
            self._typed.pop(thread_id, None)
            return
        typed = self._typed.get(thread_id)
        if typed is not None and typed.startswith(text):
            self._typed[thread_id] = typed[len(text) :]
            self._save(thread_id, typed[len(text) :])

    async def keep(self) -> None:
        """Store every draft of this session not stored yet (as the app closes); the open
        conversation's as a new conversation's when nobody has written in it yet."""
        open_now = self._chat.thread_id
        dialog = self._chat.approvals.dialog
        if dialog is not None and dialog.typed:
            # Typing that ran on into the approval dialog goes back to the box when it closes
            # (`ApprovalFlow._keep_typed`); closing with the app, it goes to the draft.
            self._typed[open_now] = self._typed.get(open_now, "") + dialog.typed
        for thread_id, text in self._typed.items():
            if thread_id == open_now and self._empty and open_now not in self._chat.busy:
                self._unsaved.want(None, text)
                self._unsaved.want(thread_id, "")
            else:
                self._unsaved.want(thread_id, text)
        await self._flush()

    def _save(self, thread_id: str | None, text: str) -> None:
        self._unsaved.want(thread_id, text)
        self._chat.run_worker(
            self._flush(),
            group="drafts",
            description="keep a draft",
            exit_on_error=False,
        )

    async def _flush(self) -> None:
        backend = self._chat.backend
        if backend is None:
            return
        try:
            await self._unsaved.aflush(backend.save_draft)
        except Exception:
            # Still in this session's memory; kept for good at the next try or on quitting.
            log.exception("keeping a draft failed")
