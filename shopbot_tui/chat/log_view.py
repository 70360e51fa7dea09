"""What the chat log shows of the open thread: its stored history, then what its running turn
reports as it comes. What the turn reports while the history loads is held: mounted at once,
it would land above the history. A streamed reply stays only once the engine confirms it
(live_reply.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agents.backend import redact, visible
from shopbot_tui.chat.live_reply import LiveReply
from shopbot_tui.chat.messages import (
    LiveReport,
    NoteAdded,
    ProviderRetrying,
    ReplyChunk,
    ReplyComplete,
    TurnEnded,
)
from shopbot_tui.widgets.chat_history import history_widgets
from shopbot_tui.widgets.conversation import ChatLog, CustomerMessage, SystemNote

if TYPE_CHECKING:
    from textual.widget import Widget

    from agents.backend import ChatLine
    from shopbot_tui.chat.notices import ChatNotices

HeldLive = LiveReport | TurnEnded


class ThreadView:
    """The open thread in the chat log that `log` returns (composed after this is made)."""

    def __init__(
        self,
        log: Callable[[], ChatLog],
        notices: ChatNotices,
        *,
        reply_shown: Callable[[str], None] = lambda _reply: None,
    ) -> None:
        """`reply_shown`: told the last whole reply on screen each time it changes ("" for
        none), for the keys that copy it."""
        self._log = log
        self._notices = notices
        self._reply_shown = reply_shown
        self._reply = LiveReply(log)
        # What the running turn reported while the history loads (None: it is not loading).
        self._held: list[HeldLive] | None = None
        # Whether to show the thread again from its transcript when its running turn ends.
        self.reopen_after_turn = False
        self._last_reply = ""
        # (When each line of the history shown was said, and its widget.)
        self._said_at: list[tuple[str, Widget]] = []
        # A thread's history has been shown: before, the log says what it waits for.
        self._history_shown = False

    @property
    def last_reply(self) -> str:
        return self._last_reply

    @last_reply.setter
    def last_reply(self, text: str) -> None:
        self._last_reply = text
        self._reply_shown(text)

    async def leave(self) -> None:
        """Another thread (or this one again) is opened: drop what no ReplyDone confirmed."""
        await self._reply.drop_unconfirmed()

    async def start_loading(self, reply_so_far: ReplyChunk | None) -> None:
        """Empty the log for the history; `reply_so_far` is what the thread's running turn
        has written of its current reply."""
        self.last_reply = ""
        # The reply so far shows below the history, from its start.
        self._held = [] if reply_so_far is None else [reply_so_far]
        self.reopen_after_turn = False
        # What the log said before the first history ("Loading the engine…") stays until that
        # history replaces it, in the same layout: emptied here, the log was laid out and
        # drawn empty for the moment the history takes to read.
        if self._history_shown:
            await self._log().remove_children()

    async def show_history(
        self, lines: Sequence[ChatLine], hidden_lines: int, customer: str | None
    ) -> None:
        log = self._log()
        widgets = history_widgets(lines, hidden_lines, customer)
        async with log.batch():  # (one layout: what it replaces goes as it comes)
            if not self._history_shown:
                await log.remove_children()
            self._history_shown = True
            await log.mount_all(widgets)
        # (The widgets after the note of hidden lines, if any, are the lines, in order.)
        shown = widgets[len(widgets) - len(lines) :]
        self._said_at = list(zip([line.ts for line in lines], shown, strict=True))
        log.scroll_end(animate=False, immediate=True)
        replies = [line.text for line in lines if line.role == "assistant"]
        self.last_reply = replies[-1] if replies else ""

    def show_moment(self, ts: str) -> None:
        """Scroll to what was said up to `ts` (an audit event's time), marked, with what
        follows below it: the event's conversation opened there, not at its end."""
        # Strictly before: a line stamped in the event's own millisecond is what the event
        # led to (a turn's lines are stamped as they are said, after its audit events).
        before = [widget for said, widget in self._said_at if said < ts]
        target = before[-1] if before else next((w for _, w in self._said_at), None)
        if target is None:
            return
        log = self._log()
        log.release_anchor()  # (back to the end, and following it, with the next message)
        target.add_class("-at-event")
        # Once laid out: the widgets were only just mounted.
        log.call_after_refresh(log.scroll_to_widget, target, top=True, animate=False)

    def take_held(self) -> list[HeldLive]:
        """The history is shown: what the turn reported meanwhile, to show now, in order;
        from now on nothing is held."""
        held, self._held = self._held or [], None
        return held

    def reopen_when_turn_ends(self) -> None:
        """Shown as it streams for now, the thread is shown again from its transcript when its
        turn ends: the transcript was read while that turn wrote, a reply may be in both."""
        self.reopen_after_turn = True

    def _hold(self, message: HeldLive) -> bool:
        """Keep `message` for later while the history loads; False when it can show now."""
        if self._held is None:
            return False
        self._held.append(message)
        return True

    async def show_sent(self, text: str, customer: str | None) -> None:
        """The customer's message the engine took, as it took it: a pasted API key or token
        redacted (the transcript, the model and a reopened thread never see it either)."""
        await self._log().mount(CustomerMessage(redact(visible(text).strip()), customer))

    async def show_note(self, text: str) -> None:
        """A quiet line of what happened, under the conversation (as the transcript has it)."""
        await self._log().mount(SystemNote(text))

    def scroll_to_end(self) -> None:
        self._log().scroll_end(animate=False, immediate=True)

    async def show_live(self, message: HeldLive) -> None:
        """What the running turn reports: held while the history loads, else shown now."""
        if self._hold(message):
            return
        if isinstance(message, ReplyChunk):
            await self._reply.write(message.agent, message.text)
        elif isinstance(message, ReplyComplete):
            await self._reply.finish(message.agent, message.text)
            self.last_reply = message.text
        elif isinstance(message, NoteAdded):
            await self._log().mount(SystemNote(message.text))
        elif isinstance(message, ProviderRetrying):
            # Tokens of the failed attempt are not part of any reply.
            await self._reply.drop_unconfirmed()
            self._notices.provider_retrying(message)

    async def turn_ended(self, message: TurnEnded) -> None:
        # Ended while the history loads: what that read saw of the turn is unknown, so the
        # thread is shown again from its transcript once it has loaded.
        self._hold(message)
        # Only replies the engine confirmed (ReplyDone) stay on screen, as in the transcript.
        await self._reply.drop_unconfirmed()
