"""The chat as its helpers see it (approval_flow, commands, decisions_waiting, drafts,
thread_opening, turn_reports): its state and the parts they call each other through. The
chat screen (screen.py) is what has them; the helpers name this, never the screen, so no
helper module imports the screen back (an import contract in pyproject.toml keeps it so).

The state here is the screen's reactive attributes: a helper that sets one (a decision now
pending, an escalation read) needs nothing else for the footer to follow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer
    from textual.worker import Worker

    from agents.backend import ApprovalRequest, Backend, Escalation, Settings
    from shopbot_tui.chat.approval_flow import ApprovalFlow
    from shopbot_tui.chat.commands import ChatCommands
    from shopbot_tui.chat.decisions_waiting import DecisionsWaiting
    from shopbot_tui.chat.drafts import Drafts
    from shopbot_tui.chat.log_view import ThreadView
    from shopbot_tui.chat.notices import ChatNotices
    from shopbot_tui.chat.thread_opening import ThreadOpener
    from shopbot_tui.chat.turn_reports import TurnReports
    from shopbot_tui.chat.turn_workers import TurnWorkers
    from shopbot_tui.widgets.message_box import MessageBox
    from shopbot_tui.widgets.side_panel import SidePanel


class ChatParts(Protocol):
    # --- the state (reactive on the screen) ----------------------------------------------
    settings: Settings
    records: Backend
    backend: Backend | None
    engine_error: str | None
    thread_id: str
    customer: str | None
    customer_refused: str | None
    pending: ApprovalRequest | None
    escalation: Escalation | None
    waiting_elsewhere: bool

    @property
    def busy(self) -> set[str]: ...
    @property
    def thread_ready(self) -> bool: ...
    @property
    def last_reply(self) -> str: ...
    @property
    def escalated_here(self) -> bool: ...

    # --- the helpers -----------------------------------------------------------------------
    turns: TurnWorkers
    notices: ChatNotices
    view: ThreadView
    opener: ThreadOpener
    reports: TurnReports
    approvals: ApprovalFlow
    commands: ChatCommands
    drafts: Drafts
    waiting: DecisionsWaiting

    # --- the widgets and what the screen shows -----------------------------------------
    @property
    def panel(self) -> SidePanel: ...
    @property
    def message_input(self) -> MessageBox: ...
    def show_agent(self, agent: str, step: str | None = None) -> None: ...
    def show_session(self, thread_id: str, customer: str | None) -> None: ...
    async def open_thread(
        self, thread_id: str, customer: str | None, *, at: str | None = None
    ) -> None: ...

    # --- Textual's, of the screen --------------------------------------------------------
    @property
    def app(self) -> App[Any]: ...
    @property
    def run_worker(self) -> Callable[..., Worker[Any]]: ...
    @property
    def post_message(self) -> Callable[..., bool]: ...
    @property
    def set_interval(self) -> Callable[..., Timer]: ...
    @property
    def call_next(self) -> Callable[..., None]: ...
    @property
    def call_after_refresh(self) -> Callable[..., bool]: ...
