"""The chat as its helpers see it (approval_flow, commands, decisions_waiting, drafts,
thread_opening, turn_reports): its state and the parts they call each other through. The
chat screen (screen.py) is what has them; the helpers name this, never the screen, so no
helper module imports the screen back (an import contract in pyproject.toml keeps it so).

Each helper names only the part it uses (`DraftsChat`, `ApprovalChat`, ...). The state here
is the screen's reactive attributes: a helper that sets one (a decision now
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


# Each helper names the narrowest of the protocols below that it needs (mypy then refuses a
# use of anything else); the screen is all of them (`ChatParts`).


class Session(Protocol):
    """Which conversation is open, for whom, and what it waits for."""

    settings: Settings
    backend: Backend | None
    records: Backend
    thread_id: str
    customer: str | None
    pending: ApprovalRequest | None

    @property
    def busy(self) -> set[str]: ...


class Box(Protocol):
    @property
    def message_input(self) -> MessageBox: ...


class Shows(Box, Protocol):
    """What the screen shows."""

    notices: ChatNotices

    @property
    def panel(self) -> SidePanel: ...
    def show_agent(self, agent: str, step: str | None = None) -> None: ...
    async def open_thread(
        self, thread_id: str, customer: str | None, *, at: str | None = None
    ) -> None: ...


class Works(Protocol):
    """Textual's calls of the screen: workers, messages, timers."""

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


class DraftsChat(Session, Box, Works, Protocol):
    """What `Drafts` uses: the open conversation and its box, and whether a dialog is open."""

    approvals: ApprovalFlow


class ApprovalChat(Session, Shows, Works, Protocol):
    """What `ApprovalFlow` uses: the pending decision and the turns that answer it."""

    turns: TurnWorkers


class WaitingChat(Session, Shows, Works, Protocol):
    """What `DecisionsWaiting` uses: the escalation and the decision shown."""

    escalation: Escalation | None
    waiting_elsewhere: bool
    approvals: ApprovalFlow


class ReportsChat(Session, Shows, Protocol):
    """What `TurnReports` uses to show what a turn did."""

    turns: TurnWorkers
    view: ThreadView
    approvals: ApprovalFlow
    drafts: Drafts
    waiting: DecisionsWaiting


class ChatParts(ReportsChat, WaitingChat, Works, Protocol):
    """The whole chat: what the command and thread-opening helpers use (they run it)."""

    engine_error: str | None
    customer_refused: str | None

    @property
    def thread_ready(self) -> bool: ...
    @property
    def last_reply(self) -> str: ...
    @property
    def escalated_here(self) -> bool: ...

    opener: ThreadOpener
    reports: TurnReports
    commands: ChatCommands

    def show_session(self, thread_id: str, customer: str | None) -> None: ...
