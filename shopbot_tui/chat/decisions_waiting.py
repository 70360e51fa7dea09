"""What waits for a person: the decisions other conversations wait for (counted in the side
panel, opened one after another with ctrl+o, the one left alone longest first) and the
conversations escalated to a person and not handled yet (the open one's said in the panel,
with ctrl+g to mark it handled; the others counted, and each new one said once with the bell),
and the replies of turns left answering in the background, said with the read after them.

A person deciding refunds must not lose one from sight: a decision is asked in whichever
conversation reached it (another window, `shopbot chat`, one left with "decide later"), and
nothing but this count tells the open chat about it. The thread registry knows (its status);
it is read again every few seconds, off the event loop, as another process may ask one.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message
from textual.timer import Timer

from shopbot_tui.chat.escalations_said import EscalationsSaid

if TYPE_CHECKING:
    from textual.worker import Worker

    from agents.backend import Escalation, ThreadInfo, TurnResult
    from shopbot_tui.chat.parts import WaitingChat

log = logging.getLogger("shopbot.tui")

# How often the registry is read again for decisions asked by another process.
LOOK_EVERY_SECONDS = 5.0


@dataclass
class DecisionsRead(Message):
    """The conversations waiting for a decision, as the registry has them, longest first."""

    threads: list[ThreadInfo]
    # Read for ctrl+o: the first of them (not the open one) opens.
    open_next: bool = False
    # Every conversation escalated and not handled yet, the oldest first.
    escalations: list[Escalation] = field(default_factory=list)
    # Conversations whose turn ended in the background with a reply before this read began.
    replies: frozenset[str] = frozenset()
    # Which read this is (`DecisionsWaiting.look` counts them): 0, a read told as it is.
    number: int = 0
    # The first read's: the escalations told about before, by this app or an earlier run.
    said_before: frozenset[tuple[str, str]] = frozenset()


class DecisionsWaiting:
    """Keeps `chat`'s side panel counting the decisions waiting in other conversations."""

    def __init__(self, chat: WaitingChat) -> None:
        self._chat = chat
        # The other conversations waiting, longest first, as last read.
        self.elsewhere: list[ThreadInfo] = []
        # Every conversation seen waiting (the open one too): a toast says only new ones.
        self._seen: set[str] = set()
        # The open escalations as last read, by (thread, since): a conversation closed and
        # escalated again has a new `since`, and is new again. None before the first read,
        # which finds those already open when the app starts.
        self._escalations_seen: set[tuple[str, str]] | None = None
        # Conversations whose background turn ended with a reply not said yet: said with the
        # next read, unless that read finds the turn escalated it (one notice, not two).
        self._replies_to_say: set[str] = set()
        self._timer: Timer | None = None
        # Reads started, and the newest one handled: the periodic read and ctrl+o's run in
        # their own workers, and an older one arriving last would forget an escalation the
        # newer one saw, which the next read would then say (and ring) again.
        self._reads_started = 0
        self._newest_read = 0
        # Escalations said, kept across launches: the first read loads them, and what this
        # app has seen is kept there whenever it changes (said once, not at every start).
        self._said_file = EscalationsSaid(chat.settings.home)
        self._said_kept: frozenset[tuple[str, str]] | None = None

    def start(self) -> None:
        """The engine is up: count now, and again every few seconds."""
        self.look()
        if self._timer is None:
            self._timer = self._chat.set_interval(LOOK_EVERY_SECONDS, self.look)

    def look(self, *, open_next: bool = False) -> None:
        """Read the registry again in a worker (`DecisionsRead` reports it); `open_next`:
        then open the first conversation waiting, other than the open one."""
        chat = self._chat
        backend = chat.backend
        if backend is None:
            return
        replies = frozenset(self._replies_to_say)  # ended before this read: it sees them
        self._reads_started += 1
        number = self._reads_started
        said_file = self._said_file if self._said_kept is None else None

        async def read() -> None:
            try:
                threads = await backend.waiting_for_decision()
                escalations = await backend.escalations()
                said = (
                    await asyncio.to_thread(said_file.load)
                    if said_file is not None
                    else frozenset()
                )
            except Exception:
                # (A locked or damaged registry is said where it matters, on opening.)
                log.exception("reading the conversations waiting for a decision failed")
                if open_next:
                    chat.notices.thread_unreadable("The list of conversations could not be read.")
                return
            chat.post_message(DecisionsRead(threads, open_next, escalations, replies, number, said))

        worker: Worker[None] = chat.run_worker(
            read,
            # A request to open one is not cancelled by the next periodic count.
            group="decisions-next" if open_next else "decisions",
            description="count the decisions waiting",
            exclusive=True,
            exit_on_error=False,
        )
        del worker  # (named for its type only: mypy cannot infer it from a local function)

    async def read(self, message: DecisionsRead) -> None:
        chat = self._chat
        if message.number and message.number < self._newest_read:
            # Overtaken by a newer read: what it says is out of date. A ctrl+o still opens
            # the next one, as the newer read has them.
            if message.open_next:
                await self._open_first()
            return
        self._newest_read = max(self._newest_read, message.number)
        # (A thread this app is answering on has moved past its decision already.)
        self.elsewhere = [
            info
            for info in message.threads
            if info.thread_id != chat.thread_id and info.thread_id not in chat.busy
        ]
        chat.waiting_elsewhere = bool(self.elsewhere)
        listed = {info.thread_id for info in message.threads}
        if chat.pending is not None and chat.thread_id not in listed:
            # Shown waiting, listed no more: answered elsewhere, perhaps (it is read to see).
            await chat.approvals.check_answered_elsewhere()
        chat.panel.show_waiting(len(self.elsewhere))
        here = [e for e in message.escalations if e.thread_id == chat.thread_id]
        chat.escalation = here[0] if here else None
        chat.panel.show_escalations(chat.escalation, others=len(message.escalations) - len(here))
        if self._said_kept is None:
            self._said_kept = message.said_before
        said = self._say_new_escalations(message.escalations)
        self._keep_said()
        self._say_replies(message.replies, escalated=said)
        new = [info for info in self.elsewhere if info.thread_id not in self._seen]
        # Not a thread still answering here: the registry may show the decision it is
        # leaving, or the one it reaches before its turn has ended; it is said once it has.
        self._seen = {info.thread_id for info in message.threads if info.thread_id not in chat.busy}
        if not message.open_next:
            if new:  # (the panel may be hidden: a narrow terminal)
                chat.notices.decisions_waiting(new)
            return
        await self._open_first()

    async def _open_first(self) -> None:
        """ctrl+o: open the conversation waiting longest for a decision, other than this."""
        chat = self._chat
        if not self.elsewhere:
            chat.notices.no_decision_waiting(here=chat.pending is not None)
            return
        first = self.elsewhere[0]
        await chat.open_thread(first.thread_id, first.customer)
        self.elsewhere = self.elsewhere[1:]
        chat.waiting_elsewhere = bool(self.elsewhere)
        chat.panel.show_waiting(len(self.elsewhere))

    def turn_ended_elsewhere(self, thread_id: str, result: TurnResult | None) -> None:
        """A conversation not on screen finished its turn: its reply is said with the next
        read (`ChatScreen` asks for one as a turn ends), or, if that read finds the turn
        escalated it, the escalation's notice says it instead. One that stopped for a decision
        is said by the count of decisions waiting, with its customer and ctrl+o."""
        if result is not None and result.pending is None and result.status == "done":
            self._replies_to_say.add(thread_id)

    def _say_replies(self, replies: frozenset[str], *, escalated: set[str]) -> None:
        """Say the background replies this read was started after, but not those of a
        conversation just said escalated (that notice names it), nor of the open one (its
        reply is on screen), nor one an earlier read said already."""
        for thread_id in sorted(replies & self._replies_to_say):
            self._replies_to_say.discard(thread_id)
            if thread_id not in escalated and thread_id != self._chat.thread_id:
                self._chat.notices.new_reply(thread_id)

    def _say_new_escalations(self, escalations: list[Escalation]) -> set[str]:
        """Say the escalations of other conversations not seen open before: once each, not
        at every read; those open at start-up in one notification. The open conversation's
        is in its chat and its panel already: seen, and never said in a toast. One reached
        by a turn still answering in the background is said once that turn has ended, with
        its reply (the registry has it mid-turn). Returns the conversations said."""
        chat = self._chat
        open_thread = chat.thread_id
        in_background = chat.busy - {open_thread}
        seen = self._escalations_seen
        if seen is None:
            # Told about at an earlier start, or as it happened: not said again now.
            seen = {key for key in self._said_kept or () if key[0] not in in_background}
            at_start = True
        else:
            at_start = False
        # (One seen while its conversation was open, left answering since, stays seen.)
        self._escalations_seen = {
            (e.thread_id, e.since)
            for e in escalations
            if e.thread_id not in in_background or (e.thread_id, e.since) in (seen or ())
        }
        new = [
            e
            for e in escalations
            if e.thread_id != open_thread
            and e.thread_id not in in_background
            and (e.thread_id, e.since) not in seen
        ]
        if new:
            chat.notices.escalated(new, at_start=at_start)
        return {e.thread_id for e in new}

    def _keep_said(self) -> None:
        """Keep the escalations seen open, off the event loop, when they changed: a later
        start says only those it has not told about."""
        seen = frozenset(self._escalations_seen or ())
        if seen == self._said_kept:
            return
        self._said_kept = seen
        said_file = self._said_file
        self._chat.run_worker(
            asyncio.to_thread(said_file.save, seen),
            group="escalations-said",
            description="keep the escalations said",
            exit_on_error=False,
        )
