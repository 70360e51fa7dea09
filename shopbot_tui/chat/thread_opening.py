"""Opening a thread in the chat: the screen is emptied, the thread's history is read in a
worker (conversation_reads.py) and shown, then what its running turn reported meanwhile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shopbot_tui.chat.conversation_reads import read_history

# While another process answers on the open thread, whether it is done is looked at this
# often (nothing tells this app): then the thread is shown as that turn left it.
ELSEWHERE_POLL_SECONDS = 2.0

if TYPE_CHECKING:
    from textual.worker import Worker

    from shopbot_tui.chat.messages import ThreadLoaded
    from shopbot_tui.chat.parts import ChatParts


class ThreadOpener:
    """Makes a thread the one `chat` shows and sends messages to."""

    def __init__(self, chat: ChatParts) -> None:
        self._chat = chat
        # The open thread's history is on screen: a message can be sent.
        self.ready = False
        # Counts openings: the history read for each carries its number.
        self.opening = 0
        # The moment the opening is to show (an audit event's): None, the end.
        self._at: str | None = None

    async def open(self, thread_id: str, customer: str | None, *, at: str | None = None) -> None:
        chat = self._chat
        self._at = at
        await chat.view.leave()
        if thread_id != chat.thread_id:
            chat.drafts.leave(chat.thread_id, thread_id)
        chat.thread_id, chat.customer = thread_id, customer
        chat.customer_refused = None
        chat.pending, self.ready = None, False
        self.opening += 1
        chat.panel.show_gates([])
        # Until its state is read, not the step of the thread left behind ("answering").
        chat.show_agent(chat.panel.agent, "opening…")
        chat.show_session(thread_id, customer)
        await chat.view.start_loading(chat.turns.replies_so_far.chunk(thread_id))
        opening = self.opening

        async def read() -> None:
            await self._read(thread_id, opening)

        worker: Worker[None] = chat.run_worker(
            # A callable, not a coroutine: one cancelled before it starts (an opening right
            # after) is then never made, instead of left "never awaited".
            read,
            name=f"open {thread_id}",
            group="thread-load",
            description="read a thread's history",
            exclusive=True,
            exit_on_error=False,
        )
        del worker  # (named for its type only: mypy cannot infer it from a local function)

    async def _read(self, thread_id: str, opening: int) -> None:
        backend = self._chat.backend
        assert backend is not None
        loaded = await read_history(backend, thread_id)
        loaded.opening = opening
        self._chat.post_message(loaded)

    async def loaded(self, message: ThreadLoaded) -> None:
        """Show the history read for the open thread (a read for another one, or for an
        earlier opening of this one, already queued when it was opened again, is stale)."""
        chat = self._chat
        if message.thread_id != chat.thread_id or message.opening != self.opening:
            return
        if message.error:
            chat.notices.thread_unreadable(message.error)
        stored = message.info.customer if message.info is not None else None
        started = message.info is not None and message.info.turns > 0
        if stored:
            if chat.customer and chat.customer.casefold() != stored.casefold():
                chat.notices.thread_of_another_customer(chat.thread_id, stored, chat.customer)
                chat.customer_refused = chat.customer
            chat.customer = stored
        elif started and chat.customer:
            # Begun without a customer, it goes on without one (the engine names none now).
            chat.notices.thread_of_another_customer(chat.thread_id, None, chat.customer)
            chat.customer_refused, chat.customer = chat.customer, None
        chat.show_session(chat.thread_id, chat.customer)
        await chat.view.show_history(message.lines, message.hidden_lines, chat.customer)
        if self._at is not None:
            chat.view.show_moment(self._at)
        chat.drafts.loaded(
            chat.thread_id, message.draft, started=started, new_draft=message.new_draft
        )
        # While a turn of this app runs on the thread, its stored state lags behind (it is
        # saved when the run stops): a decision read there was already given. The running
        # turn announces any new one itself. So with a turn of another process (a window,
        # `shopbot resume`): the decision it shows may be being answered there, and asking
        # it here would only be refused; opened again after, the thread shows how it ended.
        answering = chat.thread_id in chat.busy
        elsewhere = message.answering_elsewhere and not answering
        self.ready = True
        pending = None if answering or elsewhere else message.pending
        chat.approvals.wait_for(
            pending, agent=message.agent, answering=answering, elsewhere=elsewhere
        )
        if elsewhere:
            self._watch_elsewhere()
        await self._catch_up()
        chat.commands.send_when_ready()

    def _watch_elsewhere(self) -> None:
        """Show the open thread again once the other process's turn on it has ended; the
        watch ends with that, or when another thread (or this one again) is opened."""
        chat = self._chat
        thread_id, opening = chat.thread_id, self.opening

        async def look() -> None:
            backend = chat.backend
            if chat.thread_id != thread_id or self.opening != opening or backend is None:
                timer.stop()
                return
            if await backend.answering_elsewhere(thread_id):
                return
            # Stopping a timer cancels its task, this one: the opening runs outside it.
            timer.stop()
            if chat.thread_id == thread_id and self.opening == opening:
                chat.call_next(self.open, thread_id, chat.customer)

        timer = chat.set_interval(ELSEWHERE_POLL_SECONDS, look, name="answering elsewhere")

    async def _catch_up(self) -> None:
        """Show what the thread's running turn reported while its history loaded."""
        chat = self._chat
        held = chat.view.take_held()
        if not held:
            return
        if chat.thread_id not in chat.busy:
            # The turn ended while the history loaded: shown again from its transcript.
            await self.open(chat.thread_id, chat.customer)
            return
        chat.view.reopen_when_turn_ends()
        for message in held:
            await chat.reports.show_live(message)
