"""The main screen: the conversation, the message input and the side panel.

It owns the chat's state, as reactive attributes: the open conversation and its customer,
the decision it waits for, its escalation, the conversations answering here, and what the
footer's keys depend on. The footer follows them by itself (`key_state`, set anew by their
watchers). Backend work runs in async workers that only post messages (turn_workers.py,
thread_opening.py, conversation_reads.py); the handlers below hand them to the helpers that
do each part: opening a thread (thread_opening.py), what a turn reports (turn_reports.py),
the chat log (log_view.py), the approval modal (approval_flow.py), the notifications
(notices.py). The helpers see the chat through `ChatParts` (parts.py), never this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Header, Input, LoadingIndicator
from textual.worker import Worker, WorkerState

from agents.backend import OFFLINE_MODEL_LABEL, Settings, visible
from shopbot_tui.breakpoints import apply_breakpoints
from shopbot_tui.chat.approval_flow import ApprovalFlow
from shopbot_tui.chat.commands import ChatCommands
from shopbot_tui.chat.decisions_waiting import DecisionsRead, DecisionsWaiting
from shopbot_tui.chat.drafts import Drafts
from shopbot_tui.chat.keys import CHAT_BINDINGS, KeyState
from shopbot_tui.chat.log_view import ThreadView
from shopbot_tui.chat.messages import (
    AgentSwitched,
    ChatExported,
    EscalationClosed,
    GateReported,
    LiveReport,
    NoteAdded,
    ProviderRetrying,
    ReplyChunk,
    ReplyComplete,
    StepUpdate,
    ThreadLoaded,
    TurnAccepted,
    TurnEnded,
    TurnProblem,
    TurnProgress,
    TurnRefused,
)
from shopbot_tui.chat.notices import ChatNotices
from shopbot_tui.chat.thread_opening import ThreadOpener
from shopbot_tui.chat.turn_reports import TurnReports
from shopbot_tui.chat.turn_workers import TurnWorkers
from shopbot_tui.toasts import hide_covered_toasts
from shopbot_tui.widgets.conversation import ChatLog, SystemNote
from shopbot_tui.widgets.keys_footer import KeysFooter
from shopbot_tui.widgets.message_box import MessageBox
from shopbot_tui.widgets.side_panel import ENGINE_NOT_RUNNING, SidePanel
from shopbot_tui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from agents.backend import ApprovalRequest, Backend, Escalation

# A terminal narrower than this hides the side panel (see ChatScreen.HORIZONTAL_BREAKPOINTS).
NARROW_BELOW = 90
# The state the footer's keys follow (`ChatScreen.key_state`).
KEYS_FOLLOW = (
    "backend",
    "thread_id",
    "pending",
    "escalation",
    "answering",
    "last_reply",
    "waiting_elsewhere",
    "panel_hidden",
    "wide",
)


class ChatScreen(Screen[None]):
    """One conversation at a time; `open_thread` switches to another."""

    # Its stylesheet, chat.tcss, is the app's CSS_PATH: this is the app's default screen.
    AUTO_FOCUS = "#message"
    # Below this many columns the side panel (38 of them) is hidden, so a reply gets the
    # width; ctrl+b still shows it. (Not annotated ClassVar: see ThreadsScreen.)
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-narrow"),
        (NARROW_BELOW, "-wide"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = list(CHAT_BINDINGS)  # (keys.py)

    # --- the chat's state: setting any of these sets `key_state` anew (KEYS_FOLLOW) -------
    # The backend once started (None before, and when it could not start).
    backend: reactive[Backend | None] = reactive(None, init=False)
    # The open thread: the one messages go to, and its customer.
    thread_id: reactive[str] = reactive("", init=False)
    customer: reactive[str | None] = reactive(None, init=False)
    # The decision the open thread waits for.
    pending: reactive[ApprovalRequest | None] = reactive(None, init=False)
    # The open thread's escalation no person has handled yet, as last read (its thread may
    # be one left since: see `escalated_here`).
    escalation: reactive[Escalation | None] = reactive(None, init=False)
    # The threads whose turn runs here and is not being stopped (turn_workers.py).
    answering: reactive[frozenset[str]] = reactive(frozenset(), init=False)
    # The last whole reply on screen ("" for none).
    last_reply: reactive[str] = reactive("", init=False)
    # Other conversations wait for a decision (decisions_waiting.py).
    waiting_elsewhere: reactive[bool] = reactive(False, init=False)
    # The side panel is hidden (toggled, or a narrow terminal); the terminal is wide.
    panel_hidden: reactive[bool] = reactive(False, init=False)
    wide: reactive[bool] = reactive(True, init=False)
    # What the footer's keys depend on: the footer is refreshed only when it changes (a
    # refresh recomposes the whole Footer, 40 ms and a layout, and a turn changes the state
    # many times). Not a computed reactive: Textual calls its watcher at every read.
    key_state: reactive[KeyState] = reactive(KeyState(), init=False, bindings=True)

    def __init__(
        self, settings: Settings, backend: Backend, *, thread_id: str, customer: str | None
    ) -> None:
        super().__init__()
        self.settings = settings
        # What the chat reads and runs turns through: `backend` once it is started (None
        # before); `records`, the same, for what needs no engine (the audit log).
        self.records = backend
        # Why the engine could not start (then it never will): said instead of "loading".
        self.engine_error: str | None = None
        self.thread_id = thread_id
        self.customer = customer
        # The customer this conversation was opened for and is not (it is another's, or began
        # without one): the notice says ctrl+n starts one for them.
        self.customer_refused: str | None = None
        self.turns = TurnWorkers(self, answering=self._set_answering)
        self.notices = ChatNotices(self)
        self.view = ThreadView(
            lambda: self.chat_log, self.notices, reply_shown=self._set_last_reply
        )
        self.opener = ThreadOpener(self)
        self.reports = TurnReports(self)
        self.approvals = ApprovalFlow(self)
        self.commands = ChatCommands(self)
        self.drafts = Drafts(self)
        self.waiting = DecisionsWaiting(self)

    # --- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # What the first frame shows is set before the widgets are styled and mounted: set
        # once they were, each was restyled or laid out again, after the first frame.
        apply_breakpoints(self)
        self.set_reactive(ChatScreen.wide, self.app.size.width >= NARROW_BELOW)
        settings = self.settings
        panel = SidePanel(model_label=settings.model_label, offline=settings.offline)
        panel.show_session(self.thread_id, self.customer)
        self.sub_title = session_title(self.thread_id, self.customer)
        # The conversation and its customer, at every width (the side panel folds away).
        yield Header()
        with Horizontal(id="chat-body"):
            with Vertical(id="conversation"):
                with ChatLog(id="chat-log"), Vertical(id="loading"):
                    yield SystemNote("Loading the engine… (LangChain and LangGraph)")
                    yield LoadingIndicator()
                yield StatusLine(
                    agent=panel.agent,
                    step=panel.step,
                    model_label=settings.model_label,
                    offline=settings.offline,
                )
                yield MessageBox(placeholder="Message ShopBot, Enter to send", id="message")
            yield panel
        yield KeysFooter()

    def on_mount(self) -> None:
        for name in KEYS_FOLLOW:
            self.watch(self, name, self._keys_follow, init=False)
        self._keys_follow()

    # --- what the screen shows of the open conversation, in the panel and at every width ---

    def show_agent(self, agent: str, step: str | None = None) -> None:
        """`agent` answers, now at `step` (worded by `step_text`; None: the step shown)."""
        self.panel.show_agent(agent, step)
        self.query_one(StatusLine).show_agent(agent, self.panel.step)

    def show_session(self, thread_id: str, customer: str | None) -> None:
        self.panel.show_session(thread_id, customer)
        self.sub_title = session_title(thread_id, customer)

    def show_model(self, label: str, *, offline: bool) -> None:
        self.panel.show_model(label, offline=offline)
        self.query_one(StatusLine).show_model(label, offline=offline)

    def on_unmount(self) -> None:
        self.turns.release_all()

    def on_screen_suspend(self, _event: events.ScreenSuspend) -> None:
        hide_covered_toasts(self)

    @property
    def panel(self) -> SidePanel:
        return self.query_one(SidePanel)

    @property
    def chat_log(self) -> ChatLog:
        return self.query_one("#chat-log", ChatLog)

    @property
    def message_input(self) -> MessageBox:
        return self.query_one("#message", MessageBox)

    @property
    def busy(self) -> set[str]:
        """Threads with a turn in flight."""
        return self.turns.busy

    @property
    def thread_ready(self) -> bool:
        """The open thread's history is shown: a message can be sent."""
        return self.opener.ready

    def _set_answering(self, threads: frozenset[str]) -> None:
        self.answering = threads

    def _set_last_reply(self, text: str) -> None:
        self.last_reply = text

    # --- engine and threads -----------------------------------------------------------

    async def attach_backend(self) -> None:
        """The backend is up: show its model and open the start-up thread."""
        self.backend = backend = self.records
        label = backend.model_label
        self.show_model(label, offline=label == OFFLINE_MODEL_LABEL)
        await self.open_thread(self.thread_id, self.customer)
        self.waiting.start()

    async def engine_failed(self, error: str) -> None:
        self.engine_error = error
        self.commands.forget_waiting_message()
        await self.chat_log.remove_children()
        await self.chat_log.mount(SystemNote(f"⚠ The engine could not start: {error}"))
        self.show_agent(self.panel.agent, ENGINE_NOT_RUNNING)  # not "idle", as if ready
        self.notices.engine_failed(error)

    async def open_thread(
        self, thread_id: str, customer: str | None, *, at: str | None = None
    ) -> None:
        """Show `thread_id` (its whole stored history) and make it the one messages go to;
        `at` (a time, ISO-8601 UTC): scrolled to what was said then, not to its end."""
        await self.opener.open(thread_id, customer, at=at)

    @on(ThreadLoaded)
    async def _thread_loaded(self, message: ThreadLoaded) -> None:
        await self.opener.loaded(message)
        self.waiting.look()  # the open one is not counted, the one left may be

    @on(DecisionsRead)
    async def _decisions_read(self, message: DecisionsRead) -> None:
        await self.waiting.read(message)

    # --- sending -------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """Typing while the conversation has the focus (clicked or tabbed to, to scroll it)
        goes into the message box: those letters went nowhere, and were lost."""
        box = self.message_input
        if self.focused is not box and event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            box.focus()
            box.insert_text_at_cursor(event.character)

    @on(Input.Changed, "#message")
    def _typed(self, event: Input.Changed) -> None:
        self.drafts.typed(self.thread_id, event.value)

    @on(Input.Submitted, "#message")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        self.commands.send(event.value)

    # --- what a turn reports (turn_reports.py) -----------------------------------------

    @on(TurnRefused)
    async def _turn_refused(self, message: TurnRefused) -> None:
        await self.reports.refused(message)

    @on(TurnAccepted)
    async def _turn_accepted(self, message: TurnAccepted) -> None:
        await self.reports.accepted(message)

    @on(ReplyChunk)
    @on(ReplyComplete)
    @on(NoteAdded)
    @on(ProviderRetrying)
    async def _turn_wrote(self, message: LiveReport) -> None:
        await self.reports.wrote(message)

    @on(AgentSwitched)
    @on(StepUpdate)
    @on(GateReported)
    def _turn_progressed(self, message: TurnProgress) -> None:
        self.reports.progressed(message)

    @on(TurnProblem)
    def _turn_problem(self, message: TurnProblem) -> None:
        self.notices.turn_problem(message, open_thread=self.thread_id)

    @on(TurnEnded)
    async def _turn_ended(self, message: TurnEnded) -> None:
        await self.reports.ended(message)
        self.waiting.look()

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        self.turns.worker_changed(event)  # a turn worker cancelled or failed: its turn is over
        if event.state == WorkerState.ERROR:
            # Workers are started with exit_on_error=False: no failure may pass unseen.
            self.notices.worker_failed(event.worker.error)

    # --- actions (chat_commands.py, approval_flow.py) ---------------------------------

    def _keys_follow(self, *_changed: object) -> None:
        self.key_state = self._current_keys()

    def _current_keys(self) -> KeyState:
        return KeyState(
            engine=self.backend is not None,
            pending=self.pending is not None,
            escalated=self.escalated_here,
            reply_running=self.reply_running,
            reply=bool(self.last_reply),
            waiting_elsewhere=self.waiting_elsewhere,
            panel_hidden=self.panel_hidden,
            wide=self.wide,
        )

    @property
    def escalated_here(self) -> bool:
        """Whether the open conversation is escalated and no person has handled it yet."""
        return self.escalation is not None and self.escalation.thread_id == self.thread_id

    @property
    def reply_running(self) -> bool:
        """Whether the open conversation's turn runs and esc has not been pressed to stop it."""
        return self.thread_id in self.answering

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.key_state.check(action, parameters)

    async def action_new_thread(self) -> None:
        await self.commands.new_thread()

    def action_threads(self) -> None:
        self.commands.choose_thread()

    def action_decide(self) -> None:
        if self.pending is not None:
            self.approvals.ask(self.pending)

    def action_next_decision(self, _unshown: str = "") -> None:
        self.waiting.look(open_next=True)

    def action_escalation_handled(self) -> None:
        self.commands.close_escalation()

    @on(EscalationClosed)
    async def _escalation_closed(self, message: EscalationClosed) -> None:
        await self.commands.escalation_closed(message)

    def action_stop_reply(self) -> None:
        self.commands.stop_reply()

    def action_copy_reply(self, _unshown: str = "") -> None:
        self.commands.copy_reply()

    def action_export_chat(self, _unshown: str = "") -> None:
        self.commands.export()

    @on(ChatExported)
    def _exported(self, message: ChatExported) -> None:
        self.notices.exported(message)

    def action_audit_log(self) -> None:
        self.commands.open_audit_log()

    def action_toggle_panel(self, _unshown: str = "") -> None:
        # Set on the widget, so it outlasts the width breakpoints (CSS) until toggled again.
        self.panel.display = not self.panel.display
        self.panel_hidden = not self.panel.display  # "^b Panel" while it is hidden

    def on_resize(self, event: events.Resize) -> None:
        self.wide = event.size.width >= NARROW_BELOW

    @on(SidePanel.Shown)
    def _panel_shown(self, message: SidePanel.Shown) -> None:
        # Hidden by the breakpoints' classes, or making room for the keys panel.
        self.panel_hidden = not message.shown

    def action_scroll_chat(self, direction: int) -> None:
        if direction < 0:
            self.chat_log.scroll_page_up()
        else:
            self.chat_log.scroll_page_down()


def session_title(thread_id: str, customer: str | None) -> str:
    """The header's subtitle: whose conversation this is, and its id."""
    # (Header shows it as text: Content, never markup.)
    return f"{visible(customer) if customer else 'no customer'} · {thread_id}"
