"""The ShopBot terminal app: paints first, then loads the engine in a worker.

Nothing imported here at module level pulls in LangChain or LangGraph (about a second):
the backend starts its engine in a worker once the first screen is on the terminal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import events, on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.theme import Theme

from agents.backend import (
    Backend,
    MessageRejected,
    Settings,
    open_backend,
    person_name,
    validate_thread_id,
)
from shopbot_tui.chat.messages import EngineFailed, EngineReady
from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.collector import resume_after_start_up, resume_collecting
from shopbot_tui.palette import ShopBotCommands
from shopbot_tui.preferences import Preferences, PreferencesFile, PreferencesUnreadable
from shopbot_tui.textual_private import mend_styles_cache_leak
from shopbot_tui.widgets.conversation import prepare_markdown

log = logging.getLogger("shopbot.tui")
BackendFactory = Callable[[], Backend]
# Visible streaming for a person; tests inject a backend with no delay.
OFFLINE_TOKEN_DELAY = 0.01
# Narrower or shorter than this (columns, rows), toasts are one full-width line (CSS).
SMALL_TOASTS_BELOW = (70, 20)
LIGHT_THEME = "textual-light"
DARK_THEME = "textual-dark"


class ShopBotApp(App[int]):
    """`ShopBotApp(settings, thread_id=None, customer=None, backend_factory=None)`; by
    default ShopBot runs in this process (`LocalBackend`)."""

    TITLE = "ShopBot"
    # The chat screen's stylesheet, here: Textual loads a screen's own CSS_PATH only when the
    # screen is pushed, and the chat is the default screen (see get_default_screen).
    CSS_PATH = Path(__file__).parent / "chat" / "chat.tcss"  # also for subclasses elsewhere
    # Every screen's toasts, in a small terminal (see on_resize).
    CSS = """
    ShopBotApp.-small Toast {
        width: 100%;
        max-width: 100%;
        padding: 0 1;
    }
    """
    COMMANDS: ClassVar = App.COMMANDS | {ShopBotCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
        # Only while the keys panel shows (check_action): esc closed nothing, and the panel
        # stayed until the palette's Keys was chosen a second time. Before the screen's own
        # esc (priority), which would go back or stop a reply instead.
        Binding(
            "escape",
            "hide_help_panel",
            "Close keys",
            show=False,
            priority=True,
            id="app.hide_keys",
        ),
    ]

    def __init__(
        self,
        settings: Settings,
        *,
        thread_id: str | None = None,
        customer: str | None = None,
        backend_factory: BackendFactory | None = None,
    ) -> None:
        super().__init__()
        mend_styles_cache_leak()
        self.settings = settings
        self._exit_code = 0
        thread_id, customer = checked_start(thread_id, customer)
        # Built now, started after the first frame (`_load_engine`): reads (the audit log)
        # work before it runs, and when it cannot start.
        self.backend: Backend = (backend_factory or self._default_backend)()
        self.chat = ChatScreen(
            settings,
            self.backend,
            thread_id=thread_id or self.backend.new_thread_id(),
            customer=customer,
        )
        self.preferences = PreferencesFile(settings.home)
        self._preferences_problem = self._apply_preferences()

    def _apply_preferences(self) -> str | None:
        """The theme chosen last time; what is wrong with the file, if something is.
        (Read before the loop runs: a few hundred bytes, and the first frame has its colours.)"""
        try:
            preferences = self.preferences.load()
        except PreferencesUnreadable as exc:
            log.warning("%s", exc)
            return str(exc)
        if preferences.theme in self.available_themes:
            self.theme = preferences.theme
        elif preferences.theme is not None:
            # (A theme of a newer Textual, say: nothing to tell a person about.)
            log.info("the saved theme %r is not available; the default is used", preferences.theme)
        return None

    def get_driver_class(self) -> type[Driver]:
        driver = super().get_driver_class()
        # By module, not by class: the Linux driver's module cannot be imported on Windows.
        if driver.__module__ == "textual.drivers.linux_driver":
            from shopbot_tui.terminal_input import WholePasteDriver

            return WholePasteDriver  # a paste arrives whole, escape sequences and all
        return driver

    def get_default_screen(self) -> ChatScreen:
        # The chat is the first screen itself, not pushed over Textual's blank one from
        # on_mount: that push fell inside Textual's start-up batch, where the first full
        # render of the chat was made and thrown away (80-100 ms before the first paint).
        return self.chat

    def on_resize(self, event: events.Resize) -> None:
        # A toast is at most half the terminal wide with a blank line above and below its
        # text: at 44x14 "Copied the last reply" stood five rows tall over the conversation
        # list or the message box. In a small terminal it is one full-width line instead.
        width, height = event.size
        self.set_class(width < SMALL_TOASTS_BELOW[0] or height < SMALL_TOASTS_BELOW[1], "-small")

    def on_mount(self) -> None:
        # After the first frame: the import thread would otherwise compete with it for the GIL.
        self.call_after_refresh(self._load_engine)
        self.theme_changed_signal.subscribe(self, self._save_theme)
        if self._preferences_problem is not None:
            self.notify(
                self._preferences_problem, title="Preferences", severity="warning", markup=False
            )

    def _save_theme(self, theme: Theme) -> None:
        self.preferences.want(Preferences(theme=theme.name))
        self._save_preferences()

    @work(thread=True, exit_on_error=False, group="preferences")
    def _save_preferences(self) -> None:
        """Off the event loop: a disk may be slow. A failure costs only the choice's keeping."""
        try:
            self.preferences.flush()
        except OSError as exc:
            log.warning("saving the preferences failed: %s", exc)
            self.call_from_thread(
                self.notify,
                f"Could not save the theme to {self.preferences.path} ({exc}); it is used "
                "until ShopBot closes.",
                title="Preferences",
                severity="warning",
                markup=False,
            )

    @work(exclusive=True, exit_on_error=False, group="engine")
    async def _load_engine(self) -> None:
        """Start the backend (locally: import and start the engine, off the event loop: the
        screen keeps painting)."""
        backend = self.backend
        try:
            await backend.start()
            resume_after_start_up()
        except Exception as exc:
            resume_collecting()
            # A store damaged past its first page fails mid-start (reconciling the refunds
            # reads the audit log): named, as everywhere.
            problem = await backend.describe_failure(exc)
            self.post_message(EngineFailed(problem))
        else:
            # For every backend, and before the first message can be sent: the first token of
            # the first reply would otherwise import and build the renderer on the event loop
            # (a 30-50 ms frame), or wait there for the import lock of a warm-up still going
            # (an 89 ms frame as the first reply began).
            await asyncio.to_thread(_warm_markdown)
            self.post_message(EngineReady())

    def _default_backend(self) -> Backend:
        return open_backend(
            self.settings,
            via="app",
            offline_token_delay=OFFLINE_TOKEN_DELAY,
        )

    @on(EngineReady)
    async def _engine_ready(self, message: EngineReady) -> None:
        await self.chat.attach_backend()

    @on(EngineFailed)
    async def _engine_failed(self, message: EngineFailed) -> None:
        self._exit_code = 1
        await self.chat.engine_failed(message.error)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A toast, or a line in the approval dialog while one is open or opening: a toast
        over the dialog hid its details or its options in a small terminal. Called on the
        event loop only (ShopBot notifies from no thread)."""
        dialog = self.chat.approvals.dialog
        if dialog is None:
            super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)
            return
        text = Content.from_markup(message) if markup else Content(message)
        dialog.show_notice(text, title=title, severity=severity, timeout=timeout)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "hide_help_panel":
            # By its name, as Textual's own App does: importing HelpPanel imports the Markdown
            # widget, markdown-it and Pygments (~70 ms before the first frame).
            return bool(self.screen.query("HelpPanel"))
        return True

    def action_show_help_panel(self) -> None:
        super().action_show_help_panel()
        self.screen.add_class("-keys-shown")  # chat.tcss: the side panel makes room

    def action_hide_help_panel(self) -> None:
        super().action_hide_help_panel()
        self.screen.remove_class("-keys-shown")

    async def on_unmount(self) -> None:
        if self.chat.backend is not None:
            # What was typed and not sent is there next time (before the registry closes).
            await self.chat.drafts.keep()
        await self.backend.close()

    async def action_quit(self) -> None:
        self.exit(self._exit_code)

    def action_toggle_dark(self) -> None:
        self.theme = LIGHT_THEME if self.current_theme.dark else DARK_THEME


def _warm_markdown() -> None:
    """Import and exercise the Markdown renderer; a failure is only logged."""
    try:
        prepare_markdown()
    except Exception:
        # Only a head start for the first reply: never a reason not to start.
        log.warning("warming up the Markdown renderer failed", exc_info=True)


class StartRefused(ValueError):
    """`--thread` or `--customer` cannot be used as given: the app does not start."""


def checked_start(thread_id: str | None, customer: str | None) -> tuple[str | None, str | None]:
    """The thread and customer to start with, or `StartRefused` saying what is wrong with
    each. Never a fallback: without the customer the ownership gate has no one to check
    orders against, and every order would be shown."""
    problems: list[str] = []
    if thread_id is not None:
        try:
            validate_thread_id(thread_id)
        except ValueError as exc:
            problems.append(f"--thread: {exc}")
    try:
        customer = person_name(customer)
    except MessageRejected as exc:
        problems.append(f"--customer: {exc}")
    if problems:
        raise StartRefused(f"{' '.join(problems)} Nothing was started.")
    return thread_id, customer


def run_tui(settings: Settings, *, thread_id: str | None, customer: str | None) -> int:
    """Run the app until the person quits; the exit code (1 when the engine never started)."""
    app = ShopBotApp(settings, thread_id=thread_id, customer=customer)
    result = app.run()
    return result if isinstance(result, int) else (app.return_code or 0)
