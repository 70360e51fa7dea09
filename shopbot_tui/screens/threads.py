"""The thread list: open a past conversation (its history is shown) or start a new one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.theme import Theme
from textual.widgets import Button, DataTable, Footer, Input, Static

from agents.facade import (
    AGENT_TITLES,
    MessageRejected,
    Settings,
    ThreadInfo,
    failure_text,
    person_name,
    visible,
)
from shopbot_tui.ids import new_thread_id
from shopbot_tui.toasts import hide_covered_toasts
from shopbot_tui.widgets.audit_table import fit_cell
from shopbot_tui.widgets.message_box import one_line

# Theme colours ($name): plain yellow was 1.2:1 on the light theme's grey (theme_style).
STATUS_MARKS: dict[str, tuple[str, str]] = {
    "answering": ("…", "italic"),
    "awaiting_approval": ("●", "bold $text-warning"),
    "error": ("✗", "bold $text-error"),
    "idle": ("", ""),
}
# An idle conversation escalated to a person that no one has marked handled yet.
ESCALATED_MARK = ("▲", "bold $text-error")
TITLE_WIDTH = 30
# A terminal narrower than this lays the list out for its width: the full list needs 105
# columns of it with the app's thread ids, and at 80 Agent, Turns and Updated sat behind a
# horizontal scrollbar. Narrow, the list leaves out Agent and Turns (the conversation shows
# both), keeps the end of a long thread id (what tells the app's ids apart: they begin with
# the same date and time), the date without its year, and as much of the first message as
# the width leaves beside a scrollbar and a customer's name of 10 letters: 12 cells at 70
# columns, 22 at 80.
NARROW_BELOW = 115
NARROW_THREAD_WIDTH = 14
NARROW_LEAVES_OUT = frozenset({"agent", "turns"})


def title_width(terminal_width: int) -> int:
    """The first message's column, for a terminal this wide."""
    if terminal_width >= NARROW_BELOW:
        return TITLE_WIDTH
    return max(10, min(TITLE_WIDTH, terminal_width - 58))


# The list shows this many of the most recent threads; the filter searches all of them.
SHOWN = 200
# A terminal shorter than this (80x24 is not) compacts the dialog (threads.tcss): at 44x14 the
# filter, the new-conversation row and the hint left the list no row, at 70x20 two.
SHORT_BELOW = 24


# The customer's name on the new-conversation button, at most this many cells.
NAME_ON_BUTTON = 14


def new_label(customer: str | None) -> Content:
    """'New for Sam': the box beside the button holds no label, and a name typed over the
    list goes to the filter; ctrl+n started Sam's conversation when Jordan's was meant."""
    name = " ".join((customer or "").split())
    if not name:
        return Content("New conversation")
    return Content(f"New for {visible(name)}").truncate(
        len("New for ") + NAME_ON_BUTTON, ellipsis=True
    )


@dataclass(frozen=True)
class ThreadChoice:
    """What the person picked: an existing thread, or a new one for `customer`."""

    thread_id: str
    customer: str | None
    is_new: bool


@dataclass
class ThreadsLoaded(Message):
    threads: list[ThreadInfo]
    error: str = ""
    # The threads with a draft kept, as the registry has them.
    drafted: set[str] = field(default_factory=set)
    # The threads escalated and not handled yet.
    escalated: set[str] = field(default_factory=set)


@dataclass
class ThreadsFound(Message):
    """The threads of the whole registry that match `needle` (the list holds only some)."""

    needle: str
    threads: list[ThreadInfo]


class ListThreads(Protocol):
    def __call__(self, limit: int | None = ..., matching: str = ...) -> list[ThreadInfo]: ...


def theme_style(style: str, variables: Mapping[str, str]) -> str:
    """'bold $text-warning' -> 'bold #A86D1C' in the theme of `variables` (a DataTable cell is
    Rich text, which knows no theme variables)."""
    return " ".join(
        variables.get(word[1:], "") if word.startswith("$") else word for word in style.split()
    )


class ThreadsScreen(ModalScreen[ThreadChoice | None]):
    """Dismissed with the chosen thread, or None."""

    CSS_PATH = "threads.tcss"
    AUTO_FOCUS = "#threads"
    # (Not annotated ClassVar: mypy reads Textual's `ClassVar[...] | None` as an attribute.)
    VERTICAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-short"),
        (SHORT_BELOW, "-tall"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_screen", "Close", id="threads.close"),
        Binding("ctrl+n", "new_thread", "New conversation", id="threads.new"),
        Binding("ctrl+f", "focus_filter", "Filter", id="threads.filter"),
    ]

    def __init__(
        self,
        list_threads: ListThreads,
        *,
        current_thread: str | None,
        customer: str | None,
        settings: Settings | None = None,
        stored_drafts: Callable[[], set[str]] | None = None,
        drafts_now: Callable[[set[str]], set[str]] | None = None,
        escalated: Callable[[], set[str]] | None = None,
    ) -> None:
        """`stored_drafts`: the threads with a draft kept (read off the event loop);
        `drafts_now`: those as the chat has them now, given those (on the loop);
        `escalated`: the threads escalated and not handled yet (off the loop)."""
        super().__init__()
        self._list_threads = list_threads
        self._stored_drafts = stored_drafts
        self._drafts_now = drafts_now
        self._read_escalated = escalated
        self._escalated: set[str] = set()
        # Threads with a draft: marked ✎ before their first message.
        self._drafted: set[str] = set()
        self._settings = settings  # to name a damaged store, should the list fail
        self._current = current_thread
        self._customer = customer
        self._threads: list[ThreadInfo] = []
        # Whether the registry holds more than the SHOWN most recent; then what the filter
        # found in all of them, and the rows on screen now.
        self._more = False
        self._found: ThreadsFound | None = None
        self._shown: list[ThreadInfo] = []
        # Laid out for a narrow terminal (NARROW_BELOW), and the first message's width: set
        # on mount, changed on resize.
        self._narrow = False
        self._title_width = TITLE_WIDTH

    def compose(self) -> ComposeResult:
        with Vertical(id="threads-dialog") as dialog:
            dialog.border_title = Content("Conversations")
            # Not selected on focus: a letter typed over the list moves here (on_key), and a
            # selection would have the next letter replace it.
            yield Input(
                placeholder="Filter by thread, customer or first message",
                select_on_focus=False,
                id="filter",
            )
            table: DataTable[Text] = DataTable(id="threads", cursor_type="row", zebra_stripes=True)
            table.loading = True
            yield table
            yield Static(id="threads-empty")
            with Horizontal(id="new-thread"):
                yield Input(
                    value=self._customer or "",
                    placeholder="Customer name (optional)",
                    id="new-customer",
                )
                yield Button(new_label(self._customer), id="new", variant="primary")
            yield Static(
                Content.assemble(
                    ("●", STATUS_MARKS["awaiting_approval"][1]),
                    " waits for a decision · ",
                    ESCALATED_MARK,
                    " escalated · ",
                    ("enter", "bold"),
                    " open · ",
                    ("ctrl+n", "bold"),
                    " new · ",
                    ("esc", "bold"),
                    " close",
                ),
                id="threads-hint",
            )
        yield Footer()

    def on_screen_suspend(self, _event: events.ScreenSuspend) -> None:
        hide_covered_toasts(self)

    def on_key(self, event: events.Key) -> None:
        """Typing over the list or the New button filters the list: a letter used to do
        nothing there, and the next Enter opened whatever row the cursor was on, or started
        a conversation. (The boxes take their letters before this.)"""
        if not (event.is_printable and event.character):
            return
        if not isinstance(self.focused, DataTable | Button):
            return
        # Bindings run after this handler (Textual checks them once the key has bubbled up
        # unhandled): a key bound here, on the focused widget or on the app keeps its action.
        if event.key in self.active_bindings:
            return
        event.stop()
        event.prevent_default()
        box = self.query_one("#filter", Input)
        box.focus()
        box.insert_text_at_cursor(event.character)

    def on_paste(self, event: events.Paste) -> None:
        """A paste over the list or the New button filters it, as typing does: it went
        nowhere. One line, as the filter is (a message box's paste is joined the same way)."""
        if not isinstance(self.focused, DataTable | Button):
            return
        event.stop()
        box = self.query_one("#filter", Input)
        box.focus()
        box.insert_text_at_cursor(one_line(event.text))

    def on_mount(self) -> None:
        self._set_layout(self.app.size.width)
        self._add_columns()
        self.app.theme_changed_signal.subscribe(self, self._restyle)
        self._load()

    def _add_columns(self) -> None:
        table = self.query_one("#threads", DataTable)
        narrow = self._narrow
        table.add_column(Text(""), key="status", width=1)
        thread_width = NARROW_THREAD_WIDTH if narrow else None
        table.add_column(Text("Thread"), key="thread", width=thread_width)
        table.add_column(Text("Customer"), key="customer")
        table.add_column(Text("First message"), key="title", width=self._title_width)
        if not narrow:
            table.add_column(Text("Agent"), key="agent")
            table.add_column(Text("Turns"), key="turns")
        table.add_column(Text("Updated (UTC)"), key="updated")

    def _set_layout(self, terminal_width: int) -> bool:
        """Lay the list out for this width; whether that changed its columns."""
        layout = (terminal_width < NARROW_BELOW, title_width(terminal_width))
        changed = layout != (self._narrow, self._title_width)
        self._narrow, self._title_width = layout
        return changed

    def on_resize(self, event: events.Resize) -> None:
        if self._set_layout(event.size.width) and self.is_mounted:
            table = self.query_one("#threads", DataTable)
            row = table.cursor_row
            table.clear(columns=True)
            self._add_columns()
            self._fill(self.query_one("#filter", Input).value)
            table.move_cursor(row=row)

    def on_unmount(self) -> None:
        self.app.theme_changed_signal.unsubscribe(self)

    def _restyle(self, _theme: Theme) -> None:
        table = self.query_one("#threads", DataTable)
        row = table.cursor_row
        self._fill(self.query_one("#filter", Input).value)
        table.move_cursor(row=row)

    @work(exclusive=True, exit_on_error=False, group="threads-load")
    async def _load(self) -> None:
        # The registry is SQLite: read it off the event loop.
        try:
            threads = await asyncio.to_thread(self._list_threads, SHOWN + 1)
            drafted = await asyncio.to_thread(self._stored_drafts) if self._stored_drafts else set()
            escalated = (
                await asyncio.to_thread(self._read_escalated) if self._read_escalated else set()
            )
        except Exception as exc:
            problem = (
                await asyncio.to_thread(failure_text, self._settings, exc)
                if self._settings is not None
                else str(exc)
            )
            self.post_message(ThreadsLoaded([], error=problem))
        else:
            self.post_message(ThreadsLoaded(threads, drafted=drafted, escalated=escalated))

    @on(ThreadsLoaded)
    def _loaded(self, message: ThreadsLoaded) -> None:
        table = self.query_one("#threads", DataTable)
        table.loading = False
        if message.error:
            self.notify(message.error, title="Threads", severity="error", markup=False)
        self._more = len(message.threads) > SHOWN
        self._threads = message.threads[:SHOWN]
        drafted = message.drafted
        self._escalated = message.escalated
        self._drafted = self._drafts_now(drafted) if self._drafts_now else drafted
        if self._more:
            self.query_one("#threads-dialog").border_subtitle = Content(
                f"the {SHOWN} most recent · the filter searches all"
            )
        self._refilter(self.query_one("#filter", Input).value)
        if self.focused is None:  # a loading table cannot take the focus AUTO_FOCUS gave it
            table.focus()

    def _fill(self, needle: str) -> None:
        table: DataTable[Text] = self.query_one("#threads", DataTable)
        table.clear()
        variables = self.app.theme_variables
        needle = needle.strip()
        found = self._found
        if found is not None and found.needle == needle:
            self._shown = found.threads
        else:
            self._shown = [info for info in self._threads if info.matches(needle)]
        narrow = self._narrow
        for info in self._shown:
            mark, style = STATUS_MARKS.get(info.status, ("", ""))
            if not mark and info.thread_id in self._escalated:
                mark, style = ESCALATED_MARK
            current = info.thread_id == self._current
            thread = info.thread_id
            if narrow:
                thread = fit_cell(thread, NARROW_THREAD_WIDTH, keep_end=True).rstrip()
            updated = info.updated_at[:16].replace("T", " ")
            cells = {
                "status": Text(mark, style=theme_style(style, variables)),
                "thread": Text(thread, style="bold" if current else ""),
                "customer": Text(visible(info.customer or "")),
                "title": self._title(info),
                "agent": Text(
                    AGENT_TITLES.get(info.active_agent, info.active_agent).removesuffix(" agent")
                ),
                "turns": Text(str(info.turns), justify="right"),
                "updated": Text(updated[5:] if narrow else updated),
            }
            table.add_row(
                *(cell for key, cell in cells.items() if not (narrow and key in NARROW_LEAVES_OUT)),
                key=info.thread_id,
            )
        empty = self.query_one("#threads-empty", Static)
        empty.display = not table.row_count
        empty.update(
            Content("No conversations yet: start one below.")
            if not self._threads
            else Content("No conversation matches the filter.")
        )

    def _title(self, info: ThreadInfo) -> Text:
        """The first message, after ✎ when a draft waits in the conversation."""
        title = Text(overflow="ellipsis", no_wrap=True)
        if info.thread_id in self._drafted:
            title.append("✎ ", style="bold")
        title.append(visible(info.title))
        return title

    @on(Input.Changed, "#filter")
    def _filter(self, event: Input.Changed) -> None:
        self._refilter(event.value)

    def _refilter(self, needle: str) -> None:
        """The loaded threads that match, at once; all of them, once searched, if the list
        holds only the most recent."""
        self._fill(needle)
        if self._more and needle.strip():
            self._search(needle.strip())

    @work(exclusive=True, exit_on_error=False, group="threads-search")
    async def _search(self, needle: str) -> None:
        # (A newer keystroke cancels this worker; its thread's answer is then dropped.)
        threads = await asyncio.to_thread(self._list_threads, SHOWN, needle)
        self.post_message(ThreadsFound(needle, threads))

    @on(ThreadsFound)
    def _found_all(self, message: ThreadsFound) -> None:
        needle = self.query_one("#filter", Input).value.strip()
        if message.needle == needle:
            self._found = message
            self._fill(needle)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one("#threads", DataTable).focus()

    @on(DataTable.RowSelected, "#threads")
    def _open(self, event: DataTable.RowSelected) -> None:
        thread_id = event.row_key.value
        info = next((t for t in self._shown if t.thread_id == thread_id), None)
        if info is not None:
            self.dismiss(ThreadChoice(info.thread_id, info.customer, is_new=False))

    @on(Input.Changed, "#new-customer")
    def _customer_typed(self, event: Input.Changed) -> None:
        self.query_one("#new", Button).label = new_label(event.value)

    @on(Button.Pressed, "#new")
    @on(Input.Submitted, "#new-customer")
    def _new(self) -> None:
        try:
            customer = person_name(self.query_one("#new-customer", Input).value)
        except MessageRejected as exc:
            self.notify(str(exc), title="Customer", severity="warning", markup=False)
            return
        self.dismiss(ThreadChoice(new_thread_id(), customer, is_new=True))

    def action_new_thread(self) -> None:
        """A new conversation for the customer in the box; with none there yet, the box, to
        type one (only focusing it even with a name left text meant for the chat there)."""
        box = self.query_one("#new-customer", Input)
        if box.value.strip():
            self._new()
        else:
            box.focus()

    def action_focus_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.focus()
        box.select_all()  # ctrl+f: type over the old filter

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)
