"""What the chat does when the person asks: send a message (Enter), and the commands of the
key bindings and the command palette (palette.py): start or switch conversations, copy the
last reply, export the chat, open the audit log, mark an escalation handled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents import backend as api
from shopbot_tui.chat.conversation_reads import export_transcript
from shopbot_tui.chat.messages import EscalationClosed
from shopbot_tui.chat.notices import (
    NO_ENGINE,
    STILL_ANSWERING,
    WAITS_FOR_DECISION,
)

if TYPE_CHECKING:
    from agents.backend import Backend
    from shopbot_tui.audit.screen import OpenAt
    from shopbot_tui.chat.parts import ChatParts
    from shopbot_tui.threads.views import ViewName


class ChatCommands:
    """What the person asks of `chat`; commands that need the engine say it is loading until
    it is up (their keys are off till then, but the command palette offers them)."""

    def __init__(self, chat: ChatParts) -> None:
        self._chat = chat
        # (thread id, text) of a message sent before its conversation could take it.
        self._when_ready: tuple[str, str] | None = None

    def send(self, text: str) -> None:
        """Start a turn on the open thread with `text`, or say why not (it stays in the box)."""
        chat = self._chat
        backend, thread_id, customer = chat.backend, chat.thread_id, chat.customer
        if not text:
            # Nothing typed (an Enter more, as after deciding in the dialog): nothing to say.
            return
        if backend is None and chat.engine_error is not None:
            chat.notices.not_sent(NO_ENGINE)
        elif backend is None or not chat.thread_ready:
            # Sent once the conversation can take it (`send_when_ready`): refused, it had to
            # be sent again, and the first thing a person does is type.
            self._when_ready = (thread_id, text)
            chat.notices.sending_when_ready(loading=backend is None)
        elif thread_id in chat.busy:
            chat.notices.not_sent(STILL_ANSWERING)
        elif chat.pending is not None:
            # Asked before the notice, so the dialog says it (a toast would hide under it).
            chat.approvals.ask(chat.pending)
            chat.notices.not_sent(WAITS_FOR_DECISION)
        else:
            chat.turns.start(
                thread_id,
                lambda: backend.send(thread_id, text, customer=customer),
                text=text,
            )

    def send_when_ready(self) -> None:
        """The open conversation can take a message: the one sent while the engine loaded or
        the conversation opened goes now, if it is still in the box (cleared or changed
        there, it was taken back). Another conversation opened meanwhile took it along as
        its draft, unsent."""
        chat = self._chat
        waiting = self._when_ready
        if waiting is None or chat.backend is None or not chat.thread_ready:
            return  # (opened again meanwhile: once that opening is done)
        self._when_ready = None
        thread_id, text = waiting
        if thread_id == chat.thread_id and chat.message_input.value.startswith(text):
            self.send(text)

    def forget_waiting_message(self) -> None:
        """The engine could not start: the message stays in the box, unsent."""
        self._when_ready = None

    def stop_reply(self) -> None:
        """Stop the open thread's running turn (esc): it ends with a note saying so, and
        whatever it streamed that no ReplyDone confirmed goes, as for any unfinished reply."""
        chat = self._chat
        backend, thread_id = chat.backend, chat.thread_id
        if backend is None:
            return
        if chat.turns.stop(thread_id, backend):
            chat.show_agent(chat.panel.agent, "stopping…")
        elif thread_id in chat.turns.busy and thread_id not in chat.turns.stopping:
            # Too late: said, or esc would seem broken.
            chat.notices.cannot_stop(paying=backend.paying_refund(thread_id))

    def _backend(self) -> Backend | None:
        """The backend, or None, said why (loading, or it could not start)."""
        chat = self._chat
        if chat.backend is None:
            if chat.engine_error is not None:
                chat.notices.engine_failed(chat.engine_error)
            else:
                chat.notices.engine_loading()
        return chat.backend

    async def new_thread(self) -> None:
        chat = self._chat
        if (backend := self._backend()) is None:
            return
        # The open conversation's customer (ctrl+n is "the same customer"), none for one begun
        # without: the customer named last in another conversation was a guess, and whose
        # orders a conversation may see is never guessed. Only the customer it was opened for
        # and is not (another's, or begun without one) comes first: the notice offered it.
        await chat.open_thread(backend.new_thread_id(), chat.customer_refused or chat.customer)
        chat.notices.new_conversation(chat.thread_id, chat.customer)

    def choose_thread(self, view: ViewName = "all") -> None:
        """The conversation list, showing `view` (what needs a person, or all)."""
        chat = self._chat
        if (backend := self._backend()) is None:
            return

        from shopbot_tui.threads.screen import ThreadChoice, ThreadsScreen  # not for first paint

        async def chosen(choice: ThreadChoice | None) -> None:
            # The open thread too: shown again as stored, with what another front (the
            # `shopbot` command) did to it meanwhile.
            if choice is not None:
                await chat.open_thread(choice.thread_id, choice.customer)

        chat.app.push_screen(
            ThreadsScreen(
                backend,
                drafts_now=chat.drafts.drafted,
                current_thread=chat.thread_id,
                view=view,
            ),
            callback=chosen,
        )

    def close_escalation(self) -> None:
        """A person handled the open conversation's escalation (ctrl+g): closed under their
        name, in a worker; `escalation_closed` shows how it went."""
        chat = self._chat
        if (backend := self._backend()) is None:
            return
        if not chat.escalated_here:
            chat.notices.not_escalated()
            return
        thread_id = chat.thread_id

        async def close() -> None:
            closed = await backend.mark_handled(thread_id)
            note = api.escalation_handled_note(backend.reviewer)
            chat.post_message(EscalationClosed(thread_id, closed, note))

        chat.run_worker(
            close(),
            group="escalation",
            description="mark an escalation handled",
            exit_on_error=False,
        )

    async def escalation_closed(self, message: EscalationClosed) -> None:
        chat = self._chat
        if message.closed is not None and message.thread_id == chat.thread_id:
            await chat.view.show_note(message.note)
        chat.notices.escalation_closed(message.thread_id, done=message.closed is not None)
        chat.waiting.look()

    def copy_reply(self) -> None:
        chat = self._chat
        if not chat.last_reply:
            chat.notices.nothing_to_copy()
            return
        chat.app.copy_to_clipboard(chat.last_reply)
        chat.notices.copied(len(chat.last_reply))

    def export(self) -> None:
        """Write the open thread's whole transcript to a Markdown file, in a worker."""
        chat = self._chat
        if (backend := self._backend()) is not None:
            chat.run_worker(
                self._export(backend, chat.thread_id),
                name=f"export {chat.thread_id}",
                group="export",
                description="export a conversation",
                exclusive=True,
                exit_on_error=False,
            )

    async def _export(self, backend: Backend, thread_id: str) -> None:
        chat = self._chat
        chat.post_message(await export_transcript(backend, chat.settings, thread_id))

    def open_audit_log(self) -> None:
        """The audit log viewer, on the open thread's events; it may come back with another
        conversation to open (`o` on one of its events)."""
        from shopbot_tui.audit.screen import AuditViewerScreen  # not for the first paint

        chat = self._chat
        viewer = AuditViewerScreen(
            chat.records,  # (readable before the engine runs, and when it cannot start)
            export_dir=chat.settings.home / "exports",
            thread_id=chat.thread_id,
        )
        chat.app.push_screen(
            viewer,
            callback=self._open_from_audit,
        )

    async def _open_from_audit(self, at: OpenAt | None) -> None:
        """Open the conversation of the event `o` was pressed on, scrolled to that moment
        (it opened at its end), the open one too."""
        chat = self._chat
        if at is None or (backend := self._backend()) is None:
            return
        info = await backend.thread(at.thread_id)
        if info is None:
            # Events outlive their conversation's listing (another ShopBot home's threads
            # file, a test run): opening it would start an empty conversation of that name.
            chat.notices.thread_not_listed(at.thread_id)
            return
        await chat.open_thread(at.thread_id, info.customer, at=at.ts)
