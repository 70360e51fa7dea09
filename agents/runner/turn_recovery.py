"""Turns that did not finish — stopped by a person, cut off as the app closed, or left by a
process that died — noticed, said in the transcript and closed, so nothing is lost."""

from __future__ import annotations

import asyncio
import logging

from langchain_core.messages import AIMessage

from agents.audit.log import AuditLog, AuditQuery
from agents.audit.writer import AuditWriter
from agents.events import ApprovalRequest
from agents.graph.replies import TURN_CUT_NOTE, TURN_STOPPED_NOTE
from agents.names import DEFAULT_AGENT
from agents.runner.stored_threads import StoredThreads
from agents.runner.thread_state import active_in
from agents.runner.turn_closing import customer_message, lost_message
from agents.runner.turn_guard import TurnGuard
from agents.store.sqlite import StorageError
from agents.store.threads import ThreadInfo, ThreadRegistry

log = logging.getLogger("shopbot.engine")

# The audit trail of a decision asked for: the last of these says whether one is open.
_APPROVAL_KINDS = ("approval_requested", "approval_decided", "approval_withdrawn")


class TurnRecovery:
    def __init__(
        self,
        stored: StoredThreads,
        threads: ThreadRegistry,
        guard: TurnGuard,
        recorder: AuditWriter,
        audit: AuditLog,
    ) -> None:
        self._stored = stored
        self._threads = threads
        self._guard = guard
        self._recorder = recorder
        self._audit = audit

    async def close_abandoned_turns(self) -> None:
        """A turn whose process died (killed, a power cut) left its thread "answering": say
        so in its transcript now, not only when its next message comes (or, if it had reached
        its question, show it waiting). A decision cut off as the app closed left its thread
        "error" while the question still waits: show it waiting. Turns another live window
        runs are left alone."""
        for status in ("answering", "error"):
            for info in self._threads.with_status(status):
                if not self._guard.claim(info.thread_id):
                    continue
                try:
                    # Read again under the lease: the turn listed may have ended (and let go
                    # of its lease) between the listing and the claim.
                    now = self._threads.get(info.thread_id)
                    if now is None or now.status != status:
                        continue
                    state = await self._stored.snapshot(info.thread_id)
                    if self._stored.pending(info.thread_id, state):
                        self._threads.update(info.thread_id, status="awaiting_approval")
                        continue
                    await self._withdraw_unsaved_question(info.thread_id, active_in(state))
                    if status == "answering":
                        self._threads.append_line(info.thread_id, "note", TURN_CUT_NOTE)
                        self._threads.update(info.thread_id, status="error")
                except StorageError:  # (a thread that cannot be read says so when opened)
                    log.exception("checking the cut-off turn of %s failed", info.thread_id)
                finally:
                    self._guard.release(info.thread_id)

    async def where_it_stands(self, thread_id: str) -> tuple[str, ApprovalRequest | None]:
        """The thread's active agent and pending decision, before a new message.

        A thread the registry shows idle has nothing pending (every turn that pauses records
        it, see `ShopBotEngine._finish`), and reading the stored state costs milliseconds per
        turn (a dozen hops to the saver's thread); nor has a thread the registry does not
        know any state: an engine registers a thread (`open_turn`) before its first run
        saves anything, in the same database, and a LangGraph server keeps its checkpoints
        in its own store. (Were one there after all, the graph itself refuses a message while
        a decision waits: parent.py routes it to `decision_waits`.) Any other thread
        (awaiting a decision, after an error, cut off) is read from the checkpoint, and a
        turn cut off there is closed first.
        """
        info = self._threads.get(thread_id)
        if info is None:
            return DEFAULT_AGENT, None
        if info.status == "idle" and info.turns > 0:
            return info.active_agent, None
        state = await self._stored.snapshot(thread_id)
        pending = self._stored.pending(thread_id, state)
        if pending is None:
            await self._withdraw_unsaved_question(thread_id, active_in(state))
            # The last turn was cut off (closed, or the process died): its completed steps
            # were saved, and a hand-off among them ends the history on a tool answer; or,
            # killed before its run saved anything, the model never got its message.
            lost = lost_message(self._threads.last_line(thread_id, "customer"), state)
            note = self._cut_note(info)
            then = [customer_message(lost), AIMessage(content=note)] if lost else []
            await self._stored.mend_tail(thread_id, state, note, then=then)
            if lost and info.status == "answering":  # (a cut-off turn is noted already)
                self._threads.append_line(thread_id, "note", TURN_CUT_NOTE)
        return active_in(state), pending

    async def _withdraw_unsaved_question(self, thread_id: str, agent: str) -> None:
        """A turn cut off (the app closed, the process killed) after it asked for a decision
        but before the question was saved left `approval_requested` the last word in the
        audit log, while nothing waits: say that nobody can answer it."""

        def last_word() -> str | None:
            self._recorder.flush()  # (this process's own events, a withdrawal among them)
            query = AuditQuery(thread_id=thread_id, kinds=_APPROVAL_KINDS)
            events = self._audit.page(query, limit=1)
            return events[0].kind if events else None

        if await asyncio.to_thread(last_word) == "approval_requested":
            self._recorder.append(
                "approval_withdrawn",
                thread_id=thread_id,
                agent=agent,
                detail={
                    "reason": "the turn that asked it was cut off before its question was saved"
                },
            )

    def _cut_note(self, info: ThreadInfo) -> str:
        """What the model is told of a turn that did not finish: that a person stopped it,
        when that is how its thread was left (see `record_cut`); else that ShopBot closed."""
        if info.status == "error":
            last = self._threads.last_line(info.thread_id, "note")
            if last is not None and last.text == TURN_STOPPED_NOTE:
                return TURN_STOPPED_NOTE
        return TURN_CUT_NOTE

    def record_cut(self, thread_id: str, agent: str) -> None:
        """The turn was cancelled (stopped by a person, the app closed, Ctrl+C): say so in the
        transcript and the audit log. The thread is marked "error", so the next message reads
        its state back from the checkpoint (whatever the cut left there) instead of assuming
        it idle."""
        stopped = self._guard.was_stopped(thread_id)
        try:
            # Through the writer, after what the run had recorded (its lines are queued
            # there), then stored before the cancellation goes on: briefly blocking, on a
            # path that ends the turn anyway.
            self._recorder.line(thread_id, "note", TURN_STOPPED_NOTE if stopped else TURN_CUT_NOTE)
            self._recorder.finish(thread_id, status="error", agent=agent)
            self._recorder.append(
                "turn_finished",
                thread_id=thread_id,
                agent=agent,
                detail={"status": "stopped" if stopped else "cut off"},
            )
            self._recorder.flush()
        except Exception:
            log.exception("recording the cut-off turn of %s failed", thread_id)
