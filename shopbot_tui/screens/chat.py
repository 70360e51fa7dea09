"""The main screen: the conversation, the message input and the side panel.

Engine work runs in async workers (`drive_turn`) that only post messages; the handlers
below own every piece of UI state: the reply being streamed, the panel, the pending decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input, LoadingIndicator
from textual.worker import Worker, WorkerState

from agents.facade import (
    DEFAULT_AGENT,
    OFFLINE_MODEL_LABEL,
    ApprovalRequest,
    Settings,
    redact,
    visible,
)
from shopbot_tui.chat_export import export_chat
from shopbot_tui.collector import CollectorPause
from shopbot_tui.ids import new_thread_id
from shopbot_tui.messages import (
    AgentSwitched,
    ChatExported,
    GateReported,
    NoteAdded,
    ProviderRetrying,
    ReplyChunk,
    ReplyComplete,
    StepUpdate,
    ThreadLoaded,
    TurnAccepted,
    TurnEnded,
    TurnProblem,
    TurnRefused,
)
from shopbot_tui.replies_so_far import RepliesSoFar
from shopbot_tui.turn_stream import drive_turn
from shopbot_tui.widgets.conversation import (
    AssistantReply,
    ChatLog,
    CustomerMessage,
    ReplyWriter,
    SystemNote,
)
from shopbot_tui.widgets.message_box import MessageBox
from shopbot_tui.widgets.side_panel import SidePanel, step_text

if TYPE_CHECKING:
    from agents.facade import ChatLine, EngineEvent, ShopBotEngine

# Mounting thousands of widgets would make opening an old thread slow; the
# export (ctrl+s) always has the whole transcript.
HISTORY_LINES = 200
# What a thread's running turn sends while its history loads: held, then shown after it.
HeldLive = ReplyChunk | ReplyComplete | NoteAdded | ProviderRetrying | TurnEnded
# A terminal narrower than this hides the side panel (see ChatScreen.HORIZONTAL_BREAKPOINTS).
NARROW_BELOW = 90
# Said here rather than the engine's refusal, which names a `shopbot resume` command line.
WAITS_FOR_DECISION = (
    "This conversation waits for a decision first; your message is kept. "
    "Decide in the dialog (ctrl+r opens it again)."
)
WELCOME = "New conversation. Ask about an order (they look like ORD-001), a refund or a complaint."


def widget_for(line: ChatLine, customer: str | None) -> Widget:
    """The widget one stored transcript line is shown as."""
    if line.role == "customer":
        return CustomerMessage(line.text, customer)
    if line.role == "assistant":
        return AssistantReply(line.agent or DEFAULT_AGENT, line.text)
    return SystemNote(line.text)


class ChatScreen(Screen[None]):
    """One conversation at a time; `open_thread` switches to another."""

    # Its stylesheet, chat.tcss, is the app's CSS_PATH: this is the app's default screen.
    AUTO_FOCUS = "#message"
    # Below this many columns the side panel (38 of them) is hidden, so a reply gets the
    # width; ctrl+b still shows it. (Not a ClassVar: Textual declares it as an attribute.)
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-narrow"),
        (NARROW_BELOW, "-wide"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "new_thread", "New chat", id="chat.new_thread"),
        Binding("ctrl+t", "threads", "Threads", id="chat.threads"),
        Binding("ctrl+r", "decide", "Decide", id="chat.decide"),
        Binding("ctrl+y", "copy_reply", "Copy reply", id="chat.copy_reply"),
        Binding("ctrl+s", "export_chat", "Export", id="chat.export"),
        Binding("ctrl+l", "audit_log", "Audit log", id="chat.audit_log"),
        Binding("ctrl+b", "toggle_panel", "Side panel", show=False, id="chat.toggle_panel"),
        Binding("pageup", "scroll_chat(-1)", "Scroll up", show=False, id="chat.page_up"),
        Binding("pagedown", "scroll_chat(1)", "Scroll down", show=False, id="chat.page_down"),
    ]

    def __init__(self, settings: Settings, *, thread_id: str, customer: str | None) -> None:
        super().__init__()
        self.settings = settings
        self.engine: ShopBotEngine | None = None
        self.thread_id = thread_id
        self.customer = customer
        self.pending: ApprovalRequest | None = None
        self.last_reply = ""
        # Threads with a turn in flight: a second message there is refused, not queued.
        self.busy: set[str] = set()
        self._thread_ready = False
        # What the open thread's running turn wrote while its history was still loading
        # (shown after the history, not above it); and whether to show the thread again
        # from its transcript when that turn ends.
        self._held_live: list[HeldLive] | None = None
        self._reopen_after_turn = False
        self._approval_open = False
        self._reply: ReplyWriter | None = None
        self._replies_so_far = RepliesSoFar()
        self._partials: list[ReplyWriter] = []
        self._gates: list[tuple[str, bool, str]] = []
        self._binding_state: tuple[bool, bool] | None = None
        self._collector = CollectorPause()

    # --- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="chat-body"):
            with Vertical(id="conversation"):
                with ChatLog(id="chat-log"), Vertical(id="loading"):
                    yield SystemNote("Loading the engine… (LangChain and LangGraph)")
                    yield LoadingIndicator()
                yield MessageBox(placeholder="Message ShopBot, Enter to send", id="message")
            yield SidePanel(model_label=self.settings.model_label, offline=self.settings.offline)
        yield Footer()

    def on_mount(self) -> None:
        self.panel.show_session(self.thread_id, self.customer)

    def on_unmount(self) -> None:
        # The app may quit mid-turn: the collector must not stay off behind it.
        self._collector.release_all()

    @property
    def panel(self) -> SidePanel:
        return self.query_one(SidePanel)

    @property
    def chat_log(self) -> ChatLog:
        return self.query_one("#chat-log", ChatLog)

    @property
    def message_input(self) -> Input:
        return self.query_one("#message", Input)

    # --- engine and threads -----------------------------------------------------------

    async def attach_engine(self, engine: ShopBotEngine) -> None:
        """The engine is up: show its model and open the start-up thread."""
        self.engine = engine
        self.panel.show_model(engine.model_label, offline=engine.model_label == OFFLINE_MODEL_LABEL)
        await self.open_thread(self.thread_id, self.customer)

    async def engine_failed(self, error: str) -> None:
        await self.chat_log.remove_children()
        await self.chat_log.mount(SystemNote(f"⚠ The engine could not start: {error}"))
        self.notify(error, title="ShopBot could not start", severity="error", markup=False)

    async def open_thread(self, thread_id: str, customer: str | None) -> None:
        """Show `thread_id` (its whole stored history) and make it the one messages go to."""
        await self._finish_streaming()
        self.thread_id, self.customer = thread_id, customer
        self.pending, self.last_reply, self._thread_ready = None, "", False
        self._held_live, self._reopen_after_turn = [], False
        if (so_far := self._replies_so_far.chunk(thread_id)) is not None:
            # Its running turn is writing a reply: shown below the history, from its start.
            self._held_live.append(so_far)
        self._gates = []
        self.panel.show_gates([])
        self.panel.show_session(thread_id, customer)
        await self.chat_log.remove_children()
        self._sync_bindings()
        self._load_thread(thread_id)

    @work(exclusive=True, exit_on_error=False, group="thread-load")
    async def _load_thread(self, thread_id: str) -> None:
        engine = self.engine
        assert engine is not None
        try:
            # The registry is SQLite: read it off the event loop.
            info = await asyncio.to_thread(engine.thread, thread_id)
            lines = await asyncio.to_thread(engine.transcript, thread_id)
            agent = await engine.active_agent(thread_id)
            pending = await engine.pending_approval(thread_id)
        except Exception as exc:
            self.post_message(ThreadLoaded(thread_id, None, [], 0, DEFAULT_AGENT, None, str(exc)))
            return
        shown = lines[-HISTORY_LINES:]
        self.post_message(
            ThreadLoaded(thread_id, info, shown, len(lines) - len(shown), agent, pending)
        )

    @on(ThreadLoaded)
    async def _thread_loaded(self, message: ThreadLoaded) -> None:
        if message.thread_id != self.thread_id:
            return
        if message.error:
            self.notify(
                message.error,
                title="Could not open the conversation",
                severity="error",
                markup=False,
            )
        stored = message.info.customer if message.info is not None else None
        if stored:
            if self.customer and self.customer.casefold() != stored.casefold():
                self.notify(
                    f"Thread {self.thread_id} belongs to {stored}; "
                    f"start a new conversation (ctrl+n) for {self.customer}.",
                    title="Customer",
                    severity="warning",
                    markup=False,
                )
            self.customer = stored
        self.panel.show_session(self.thread_id, self.customer)
        widgets: list[Widget] = []
        if message.hidden_lines:
            widgets.append(
                SystemNote(f"… {message.hidden_lines} earlier lines (ctrl+s exports them all)")
            )
        widgets.extend(widget_for(line, self.customer) for line in message.lines)
        if not message.lines:
            widgets.append(SystemNote(WELCOME))
        await self.chat_log.mount_all(widgets)
        self.chat_log.scroll_end(animate=False, immediate=True)
        replies = [line.text for line in message.lines if line.role == "assistant"]
        self.last_reply = replies[-1] if replies else ""
        # While a turn of this app runs on the thread, its stored state lags behind (it is
        # saved when the run stops): a decision read there was already given. The running
        # turn announces any new one itself.
        pending = None if self.thread_id in self.busy else message.pending
        self.pending = pending
        if pending is not None:
            step = "waiting_for_approval"
        else:
            step = "answering" if self.thread_id in self.busy else "idle"
        self.panel.show_agent(message.agent, step_text(step))
        self._thread_ready = True
        self._sync_bindings()
        if pending is not None:
            self.show_approval(pending)
        await self._release_held_live()

    def _hold_live(self, message: HeldLive) -> bool:
        """Keep what the running turn writes while the history is loading: mounted now, it
        would land above the history."""
        if self._held_live is None:
            return False
        self._held_live.append(message)
        return True

    async def _release_held_live(self) -> None:
        held, self._held_live = self._held_live or [], None
        if not held:
            return
        # The transcript was read while this turn wrote: a reply it finished may be in both.
        # Shown as it streams for now, the thread is shown again from its transcript at the end.
        if self.thread_id not in self.busy:
            await self.open_thread(self.thread_id, self.customer)
            return
        self._reopen_after_turn = True
        for message in held:
            if isinstance(message, ReplyChunk):
                await self._show_chunk(message)
            elif isinstance(message, ReplyComplete):
                await self._show_complete(message)
            elif isinstance(message, ProviderRetrying):
                await self._show_retrying(message)
            elif isinstance(message, NoteAdded):
                await self._note_added(message)

    # --- sending -------------------------------------------------------------------------

    @on(Input.Submitted, "#message")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        if self.engine is None:
            self._refuse("ShopBot is still loading the engine; your message is kept.")
        elif not self._thread_ready:
            self._refuse("The conversation is still opening; your message is kept.")
        elif self.thread_id in self.busy:
            self._refuse(
                "ShopBot is still answering. Send this when the reply is done; "
                "your message is kept."
            )
        elif self.pending is not None:
            self._refuse(WAITS_FOR_DECISION)
            self.show_approval(self.pending)
        else:
            engine, thread_id, customer, text = (
                self.engine,
                self.thread_id,
                self.customer,
                event.value,
            )
            self._run(
                thread_id,
                lambda: engine.run_turn(thread_id, text, customer=customer),
                text=text,
            )

    def _refuse(self, reason: str) -> None:
        self.notify(reason, title="Not sent", severity="warning", markup=False)

    def _run(
        self,
        thread_id: str,
        events: Callable[[], AsyncIterator[EngineEvent]],
        *,
        text: str = "",
        decision: str | None = None,
    ) -> None:
        """Start the one turn worker of `thread_id`."""
        from agents.facade import InputError  # loaded by now: the engine is running

        self._turn_started(thread_id)
        self.run_worker(
            drive_turn(
                self.post_message,
                thread_id,
                events,
                input_error=InputError,
                text=text,
                decision=decision,
            ),
            name=f"turn {thread_id}",
            group=f"turn:{thread_id}",
            description="answer a customer message" if decision is None else "resume a decision",
            exclusive=True,
            exit_on_error=False,
        )

    # --- what a turn reports -------------------------------------------------------------

    @on(TurnRefused)
    async def _turn_refused(self, message: TurnRefused) -> None:
        self._turn_over(message.thread_id)
        if message.thread_id != self.thread_id:
            return
        # The text was never taken out of the input: the person can fix and resend it.
        self._refuse(WAITS_FOR_DECISION if message.pending is not None else message.reason)
        self.message_input.focus()
        if message.decision is not None or message.pending is not None:
            # Someone else answered the decision (`shopbot resume`), or asked for one (a
            # `shopbot chat` turn): show the thread as stored, and its question if any.
            await self.open_thread(self.thread_id, self.customer)

    @on(TurnAccepted)
    async def _turn_accepted(self, message: TurnAccepted) -> None:
        if message.thread_id != self.thread_id:
            return
        if message.decision is not None:
            self.pending = None
            self._sync_bindings()
        else:
            self._gates = []
            self.panel.show_gates([])
            box = self.message_input
            if box.value.startswith(message.text):
                # Sent: out of the box; what was typed since it was sent stays.
                box.value = box.value[len(message.text) :]
                box.cursor_position = len(box.value)
            await self._add(CustomerMessage(visible(message.text).strip(), self.customer))
        # A new turn brings the view back to the newest line, and keeps it there.
        self.chat_log.scroll_end(animate=False, immediate=True)

    @on(ReplyChunk)
    async def _reply_chunk(self, message: ReplyChunk) -> None:
        self._replies_so_far.add(message)  # every thread's: it may be opened mid-reply
        await self._show_chunk(message)

    async def _show_chunk(self, message: ReplyChunk) -> None:
        if message.thread_id != self.thread_id or self._hold_live(message):
            return
        if self._reply is not None and self._reply.agent != message.agent:
            self._park_reply()
        if self._reply is None:
            self._reply = ReplyWriter(self.chat_log, message.agent)
        await self._reply.write(message.text)

    @on(ReplyComplete)
    async def _reply_complete(self, message: ReplyComplete) -> None:
        self._replies_so_far.forget(message.thread_id)
        await self._show_complete(message)

    async def _show_complete(self, message: ReplyComplete) -> None:
        if message.thread_id != self.thread_id or self._hold_live(message):
            return
        if self._reply is None or self._reply.agent != message.agent:
            self._park_reply()
            self._reply = ReplyWriter(self.chat_log, message.agent)
        await self._reply.finish(message.text)
        self._reply = None
        await self._discard_partials()
        self.last_reply = message.text
        self._sync_bindings()

    @on(AgentSwitched)
    def _agent_switched(self, message: AgentSwitched) -> None:
        if message.thread_id == self.thread_id:
            self.panel.show_agent(message.agent)

    @on(StepUpdate)
    def _step_update(self, message: StepUpdate) -> None:
        if message.thread_id == self.thread_id:
            self.panel.show_agent(
                message.agent, step_text(message.step, message.detail, message.attempt)
            )

    @on(GateReported)
    def _gate_reported(self, message: GateReported) -> None:
        if message.thread_id == self.thread_id:
            self._gates.append((message.gate, message.ok, message.detail))
            self.panel.show_gates(self._gates)

    @on(NoteAdded)
    async def _note_added(self, message: NoteAdded) -> None:
        if message.thread_id == self.thread_id and not self._hold_live(message):
            await self._add(SystemNote(message.text))

    @on(ProviderRetrying)
    async def _provider_retrying(self, message: ProviderRetrying) -> None:
        self._replies_so_far.forget(message.thread_id)
        await self._show_retrying(message)

    async def _show_retrying(self, message: ProviderRetrying) -> None:
        if message.thread_id != self.thread_id or self._hold_live(message):
            return
        # Tokens of the failed attempt are not part of any reply.
        await self._finish_streaming()
        self.notify(
            f"{message.reason} Retrying in {message.delay:.1f}s (attempt {message.attempt}).",
            title="Model provider busy",
            severity="warning",
            markup=False,
        )

    @on(TurnProblem)
    async def _turn_problem(self, message: TurnProblem) -> None:
        where = "" if message.thread_id == self.thread_id else f" (thread {message.thread_id})"
        title = "Model provider unavailable" if message.kind == "provider" else "ShopBot error"
        self.notify(
            f"{message.message} The conversation is kept; try again.",
            title=title + where,
            severity="error",
            timeout=10,
            markup=False,
        )

    @on(TurnEnded)
    async def _turn_ended(self, message: TurnEnded) -> None:
        self._turn_over(message.thread_id)
        result = message.result
        if message.thread_id != self.thread_id:
            if result is not None and result.pending is not None:
                self.notify(
                    f"Thread {message.thread_id} waits for your decision: open it with ctrl+t.",
                    title="Decision needed",
                    severity="warning",
                    markup=False,
                )
            elif result is not None and result.status == "done":
                self.notify(f"Thread {message.thread_id} has a new reply.", markup=False)
            return
        # Ended while the history loads: what that read saw of the turn is unknown, so the
        # thread is shown again from its transcript once it has loaded.
        self._hold_live(message)
        # Only replies the engine confirmed (ReplyDone) stay on screen, as in the transcript.
        await self._finish_streaming()
        if self._reopen_after_turn:
            # The checks this turn reported stay in the side panel.
            gates = self._gates
            await self.open_thread(self.thread_id, self.customer)
            self._gates = gates
            self.panel.show_gates(gates)
            return
        if result is None:
            self.panel.show_agent(self.panel.agent, step_text("idle"))
            return
        self.pending = result.pending
        waiting = "waiting_for_approval" if result.pending else "idle"
        self.panel.show_agent(result.active_agent, step_text(waiting))
        self._sync_bindings()
        if result.pending is not None:
            self.show_approval(result.pending)

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        group = event.worker.group
        if event.state == WorkerState.CANCELLED and group.startswith("turn:"):
            self._turn_over(group.removeprefix("turn:"))
        if event.state != WorkerState.ERROR:
            return
        # Workers are started with exit_on_error=False: no failure may pass unseen.
        self._turn_over(group.removeprefix("turn:"))
        self.notify(
            f"Something stopped unexpectedly ({redact(str(event.worker.error))}).",
            title="ShopBot error",
            severity="error",
            markup=False,
        )

    # --- approval ----------------------------------------------------------------------

    def show_approval(self, request: ApprovalRequest) -> None:
        """Open the approval modal (once); its answer resumes the graph."""
        if not self._gates and request.thread_id == self.thread_id:
            # Reopened (after a restart, say): the checks that led here, from the request.
            self._gates = [
                (str(check.get("gate", "?")), bool(check.get("ok")), str(check.get("detail", "")))
                for check in request.payload.get("gates") or []
            ]
            self.panel.show_gates(self._gates)
        if self._approval_open:
            return
        self._approval_open = True

        # (Imported here: not needed for the first paint.)
        from shopbot_tui.screens.approval import ApprovalScreen

        screen = ApprovalScreen(request)

        def decided(decision: str | None) -> None:
            self._approval_open = False
            if screen.typed:
                self._keep_typed(screen.typed)
            if decision is None:
                self.notify("The decision is still pending: ctrl+r opens it again.")
            elif request.thread_id in self.busy:
                self.notify(
                    f"Not sent: ShopBot is still answering in {request.thread_id}; if the "
                    "decision is still needed when it stops, ctrl+r opens it again.",
                    severity="warning",
                    markup=False,
                )
            elif self.engine is not None:
                engine = self.engine
                self._run(
                    request.thread_id,
                    lambda: engine.resume(request.thread_id, decision),
                    decision=decision,
                )

        # After this screen's next refresh: what led to the question is painted behind it
        # (a screen under a modal is not laid out again).
        self.call_after_refresh(self.app.push_screen, screen, decided)

    def _keep_typed(self, typed: str) -> None:
        """What the person typed as the modal opened goes back into the message box."""
        self.message_input.insert_text_at_cursor(typed)
        self.notify("What you typed as the decision opened is back in the message box.")

    # --- helpers -------------------------------------------------------------------------

    async def _add(self, widget: Widget) -> None:
        await self.chat_log.mount(widget)

    def _turn_started(self, thread_id: str) -> None:
        self.busy.add(thread_id)
        self._collector.hold(thread_id)

    def _turn_over(self, thread_id: str) -> None:
        self.busy.discard(thread_id)
        self._replies_so_far.forget(thread_id)
        self._collector.release(thread_id)

    def _park_reply(self) -> None:
        """Stop streaming into the current reply; it stays only if ReplyDone confirms it."""
        if self._reply is not None:
            self._reply.pause()
            self._partials.append(self._reply)
            self._reply = None

    async def _discard_partials(self) -> None:
        partials, self._partials = self._partials, []
        for writer in partials:
            await writer.discard()

    async def _finish_streaming(self) -> None:
        """Drop whatever was streamed that no ReplyDone confirmed."""
        self._park_reply()
        await self._discard_partials()

    # --- actions -----------------------------------------------------------------------

    def _sync_bindings(self) -> None:
        """Refresh the footer only when what `check_action` looks at changed: a refresh
        recomposes the whole Footer (40 ms and a layout), and turns change state many times.
        So "copy reply" is always on (it says when there is nothing to copy): dimming it until
        the first reply cost that recompose at the end of the first reply's stream."""
        state = (self.engine is not None, self.pending is not None)
        if state != self._binding_state:
            self._binding_state = state
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "decide":
            return self.pending is not None
        if action in ("new_thread", "threads", "export_chat"):
            return True if self.engine is not None else None
        return True

    async def action_new_thread(self) -> None:
        if self.engine is None:
            return
        await self.open_thread(new_thread_id(), self.customer)
        self.notify(f"New conversation {self.thread_id}.", markup=False)

    def action_threads(self) -> None:
        if self.engine is None:
            return

        from shopbot_tui.screens.threads import ThreadChoice, ThreadsScreen  # as above

        async def chosen(choice: ThreadChoice | None) -> None:
            # The open thread too: shown again as stored, with what another front (the
            # `shopbot` command) did to it meanwhile.
            if choice is not None:
                await self.open_thread(choice.thread_id, choice.customer)

        self.app.push_screen(
            ThreadsScreen(
                self.engine.list_threads, current_thread=self.thread_id, customer=self.customer
            ),
            callback=chosen,
        )

    def action_decide(self) -> None:
        if self.pending is not None:
            self.show_approval(self.pending)

    def action_copy_reply(self) -> None:
        if not self.last_reply:
            self.notify("There is no reply to copy yet.", severity="warning")
            return
        self.app.copy_to_clipboard(self.last_reply)
        self.notify(f"Copied the last reply ({len(self.last_reply)} characters).")

    def action_export_chat(self) -> None:
        if self.engine is not None:
            self._export(self.engine, self.thread_id)

    @work(exclusive=True, exit_on_error=False, group="export")
    async def _export(self, engine: ShopBotEngine, thread_id: str) -> None:
        try:
            info = await asyncio.to_thread(engine.thread, thread_id)
            lines = await asyncio.to_thread(engine.transcript, thread_id)
            if not lines:
                self.post_message(ChatExported(error="Nothing to export yet: send a message."))
                return
            path = await asyncio.to_thread(
                export_chat,
                self.settings.home,
                thread_id,
                info,
                lines,
                now=datetime.now().astimezone(),
            )
        except Exception as exc:  # a full disk or a locked store: say so, keep the chat
            self.post_message(ChatExported(error=f"Could not export: {redact(str(exc))}"))
        else:
            self.post_message(ChatExported(path=str(path)))

    @on(ChatExported)
    def _exported(self, message: ChatExported) -> None:
        if message.error:
            self.notify(message.error, title="Export", severity="warning", markup=False)
        else:
            self.notify(f"Saved to {message.path}", title="Chat exported", markup=False)

    def action_audit_log(self) -> None:
        from shopbot_tui.screens.audit_viewer import AuditViewerScreen  # not for first paint

        self.app.push_screen(AuditViewerScreen(self.settings.audit_path, thread_id=self.thread_id))

    def action_toggle_panel(self) -> None:
        # Set on the widget, so it outlasts the width breakpoints (CSS) until toggled again.
        self.panel.display = not self.panel.display

    def action_scroll_chat(self, direction: int) -> None:
        if direction < 0:
            self.chat_log.scroll_page_up()
        else:
            self.chat_log.scroll_page_down()
