"""What the chat screen does with what a running turn reports.

A turn reports on its own thread, which need not be the one on screen: every thread's turn
is ended in the turn workers (turn_workers.py), another thread's turn is at most a
notification, and only the open thread's turn changes the chat log and the side panel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shopbot_tui.chat.messages import (
    AgentSwitched,
    ProviderRetrying,
    ReplyChunk,
    ReplyComplete,
    StepUpdate,
)
from shopbot_tui.chat.notices import (
    ASKED_ANEW_ELSEWHERE,
    BUSY_ELSEWHERE,
    DECIDED_ELSEWHERE,
    DECIDING_ELSEWHERE,
    WAITS_FOR_DECISION,
)
from shopbot_tui.widgets.side_panel import step_text

if TYPE_CHECKING:
    from shopbot_tui.chat.log_view import HeldLive
    from shopbot_tui.chat.messages import (
        LiveReport,
        TurnAccepted,
        TurnEnded,
        TurnProgress,
        TurnRefused,
    )
    from shopbot_tui.chat.parts import ReportsChat


def refusal_text(message: TurnRefused) -> str:
    """Why the message or decision was not sent, worded for this app (the engine's words
    name `shopbot` command lines or "another ShopBot process" only)."""
    if message.pending is not None:
        return WAITS_FOR_DECISION if message.decision is None else ASKED_ANEW_ELSEWHERE
    if message.busy_elsewhere:
        return BUSY_ELSEWHERE if message.decision is None else DECIDING_ELSEWHERE
    if message.nothing_pending and message.decision is not None:
        # The backend names who decided, when the audit log says: "...: it was approved by
        # lee (server), 2026-12-02 10:12 UTC."
        _, it_was, who = message.reason.partition(": it was ")
        return f"{DECIDED_ELSEWHERE} It was {who}" if it_was else DECIDED_ELSEWHERE
    return message.reason


class TurnReports:
    """Applies what turns report to `chat`, its open thread and its widgets."""

    def __init__(self, chat: ReportsChat) -> None:
        self._chat = chat

    async def refused(self, message: TurnRefused) -> None:
        chat = self._chat
        chat.turns.over(message.thread_id)
        if message.thread_id != chat.thread_id:
            return
        if message.pending is not None:
            # Asked before the notice, so the dialog says it (a toast would hide under it).
            chat.approvals.ask(message.pending)
        # The text was never taken out of the input: the person can fix and resend it.
        chat.notices.not_sent(refusal_text(message))
        chat.message_input.focus()
        if message.decision is not None or message.pending is not None or message.busy_elsewhere:
            # Someone else answered the decision (`shopbot resume`, another window), asked
            # for one (a `shopbot chat` turn), or is answering now: show the thread as
            # stored, and its question if any (none while another process answers on it).
            await chat.open_thread(chat.thread_id, chat.customer)

    async def accepted(self, message: TurnAccepted) -> None:
        chat = self._chat
        if message.decision is None:
            chat.drafts.sent(message.thread_id, message.text)  # (open or not)
        if message.thread_id != chat.thread_id:
            return
        if message.decision is not None:
            chat.pending = None
        else:
            chat.panel.show_gates([])
            chat.message_input.take_sent(message.text)
            await chat.view.show_sent(message.text, chat.customer)
        # A new turn brings the view back to the newest line, and keeps it there.
        chat.view.scroll_to_end()

    async def wrote(self, message: LiveReport) -> None:
        """A piece or the end of a reply, a note, or a retry that drops what was streamed."""
        so_far = self._chat.turns.replies_so_far
        if isinstance(message, ReplyChunk):
            so_far.add(message)  # every thread's: it may be opened mid-reply
        elif isinstance(message, (ReplyComplete, ProviderRetrying)):
            so_far.forget(message.thread_id)  # that reply is done, or thrown away
        await self.show_live(message)

    async def show_live(self, message: HeldLive) -> None:
        """Show what the open thread's running turn reports (held while its history loads)."""
        if message.thread_id == self._chat.thread_id:
            await self._chat.view.show_live(message)

    def progressed(self, message: TurnProgress) -> None:
        """The open thread's turn moved on: another agent, another step, a gate's result."""
        chat = self._chat
        if message.thread_id != chat.thread_id:
            return
        if isinstance(message, AgentSwitched):
            chat.show_agent(message.agent)
        elif isinstance(message, StepUpdate):
            chat.show_agent(message.agent, step_text(message.step, message.detail, message.attempt))
        else:
            chat.panel.add_gate(message.gate, message.ok, message.detail)

    async def ended(self, message: TurnEnded) -> None:
        chat = self._chat
        chat.turns.over(message.thread_id)
        result = message.result
        if message.thread_id != chat.thread_id:
            chat.waiting.turn_ended_elsewhere(message.thread_id, result)
            return
        chat.notices.retry_over()
        await chat.view.turn_ended(message)
        if chat.view.reopen_after_turn:
            # The checks this turn reported stay in the side panel.
            gates = chat.panel.gates
            await chat.open_thread(chat.thread_id, chat.customer)
            chat.panel.show_gates(gates)
            return
        if result is None:
            chat.show_agent(chat.panel.agent, step_text("idle"))
            return
        chat.approvals.wait_for(result.pending, agent=result.active_agent)
