"""The thread list: open a past conversation (its history is shown) or start a new one; all of
them, or only those that need a person (thread_views)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.theme import Theme
from textual.widgets import Button, DataTable, Footer, Input, Static, Tab, Tabs

from agents.backend import (
    MessageRejected,
    ThreadInfo,
    person_name,
    visible,
)
from shopbot_tui.breakpoints import apply_breakpoints
from shopbot_tui.threads.rows import RowLayout
from shopbot_tui.threads.views import (
    VIEW_NAMED,
    VIEW_OF_TAB,
    VIEWS,
    ThreadQueues,
    ViewName,
    empty_text,
    tab_label,
)
from shopbot_tui.toasts import hide_covered_toasts
from shopbot_tui.widgets.message_box import one_line

if TYPE_CHECKING:
    from agents.backend import Backend

# What typing or pasting over goes to the filter from: everything on the screen but the boxes.
TYPED_OVER = (DataTable, Button, Tabs)


class NewButton(Button):
    """Clicked, or ctrl+n: never focused, so that one shift+tab from the filter reaches the
    customer's name (it took two, the button coming first), and one tab from the list."""

    can_focus = False


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
    # Of the whole registry: the threads waiting for a decision, those escalated or with a
    # draft (here or kept), and how many there are.
    waiting: list[ThreadInfo] = field(default_factory=list)
    marked: list[ThreadInfo] = field(default_factory=list)
    total: int = 0


@dataclass
class ThreadsFound(Message):
    """The threads of the whole registry that match `needle` (the list holds only some)."""

    needle: str
    threads: list[ThreadInfo]


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
        # In the boxes, which have no use for them (the list takes them itself first).
        Binding("down", "move_cursor(1)", "Next", show=False, id="threads.next"),
        Binding("up", "move_cursor(-1)", "Previous", show=False, id="threads.previous"),
        # ctrl+t opened the list: again, it narrows it to what needs a person (a letter would
        # go to the filter, see on_key; the focused filter box keeps most other ctrl keys).
        Binding(
            "ctrl+t",
            "next_view",
            "Next view",
            tooltip="All, waiting for a decision, escalated, with a draft",
            id="threads.view",
        ),
    ]

    def __init__(
        self,
        backend: Backend,
        *,
        current_thread: str | None,
        drafts_now: Callable[[set[str]], set[str]] | None = None,
        view: ViewName = "all",
    ) -> None:
        """`backend`: where the conversations, their drafts, escalations and decisions
        waiting are read; `drafts_now`: the threads with a draft as the chat has them now,
        given those stored; `view`: the one shown first."""
        super().__init__()
        self._backend = backend
        self._view = view
        # Each view's threads and count, once read.
        self._queues: ThreadQueues | None = None
        self._drafts_now = drafts_now
        self._escalated: set[str] = set()
        # Threads with a draft: marked ✎ before their first message.
        self._drafted: set[str] = set()
        self._current = current_thread
        self._threads: list[ThreadInfo] = []
        # Whether the registry holds more than the SHOWN most recent; then what the filter
        # found in all of them, and the rows on screen now.
        self._more = False
        self._found: ThreadsFound | None = None
        self._shown: list[ThreadInfo] = []
        # Laid out for the terminal's width: set on mount, changed on resize.
        self._layout = RowLayout.for_width(0)

    def compose(self) -> ComposeResult:
        apply_breakpoints(self)  # (before the widgets below are styled)
        with Vertical(id="threads-dialog") as dialog:
            dialog.border_title = Content("Conversations")
            # Not selected on focus: a letter typed over the list moves here (on_key), and a
            # selection would have the next letter replace it.
            yield Input(
                placeholder="Filter by thread, customer or first message",
                select_on_focus=False,
                id="filter",
            )
            yield Tabs(
                *(Tab(view.label, id=view.tab_id) for view in VIEWS),
                active=VIEW_NAMED[self._view].tab_id,
                id="views",
            )
            table: DataTable[Text] = DataTable(id="threads", cursor_type="row", zebra_stripes=True)
            table.loading = True
            yield table
            yield Static(id="threads-empty")
            # Empty each time: the name of the customer served last was taken for the next
            # one's (ctrl+n in the chat is for the same customer).
            with Horizontal(id="new-thread"):
                yield Input(placeholder="Customer name (optional)", id="new-customer")
                yield NewButton(new_label(None), id="new", variant="primary")
            # (The views' tabs say what each mark means.)
            yield Static(
                Content.assemble(
                    ("enter", "bold"),
                    " open · ",
                    ("ctrl+t", "bold"),
                    " next view · ",
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
        if not isinstance(self.focused, TYPED_OVER):
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
        """A paste over the list, its tabs or the New button filters it, as typing does: it
        went nowhere. One line, as the filter is (a message box's paste is joined the same
        way)."""
        if not isinstance(self.focused, TYPED_OVER):
            return
        event.stop()
        box = self.query_one("#filter", Input)
        box.focus()
        box.insert_text_at_cursor(one_line(event.text))

    def on_mount(self) -> None:
        self._set_layout(self.app.size.width)
        self._label_views()
        self._add_columns()
        self.app.theme_changed_signal.subscribe(self, self._restyle)
        self._load()

    def _add_columns(self) -> None:
        self._layout.add_columns(self.query_one("#threads", DataTable))

    def _set_layout(self, terminal_width: int) -> bool:
        """Lay the list out for this width; whether that changed its columns."""
        layout = RowLayout.for_width(terminal_width)
        changed, self._layout = layout != self._layout, layout
        return changed

    def on_resize(self, event: events.Resize) -> None:
        changed = self._set_layout(event.size.width)
        if self.is_mounted:
            self._label_views()
        if changed and self.is_mounted:
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
        # Typed here and perhaps not kept yet: the threads `drafts_now` may add to those kept.
        typed = self._drafts_now(set()) if self._drafts_now else set()

        backend = self._backend
        try:
            threads = await backend.threads(limit=SHOWN + 1)
            drafted = await backend.drafted_threads()
            escalated = {e.thread_id for e in await backend.escalations()}
            waiting = await backend.waiting_for_decision()
            total = await backend.count_threads()
            # The marked ones read last, with the escalations read before: a thread escalated
            # meanwhile shows in the list at its next opening, never counted without a row.
            marked = await backend.threads(limit=None, among=escalated | drafted | typed)
        except Exception as exc:
            problem = await backend.describe_failure(exc)
            self.post_message(ThreadsLoaded([], error=problem))
        else:
            self.post_message(
                ThreadsLoaded(
                    threads,
                    drafted=drafted,
                    escalated=escalated,
                    waiting=waiting[::-1],  # the most recent first, as the list
                    marked=marked,
                    total=total or len(threads),
                )
            )

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
        self._queues = ThreadQueues.sorted_out(
            message.total,
            message.waiting,
            message.marked,
            escalated=self._escalated,
            drafted=self._drafted,
        )
        self._label_views()
        self._refilter(self.query_one("#filter", Input).value)
        if self.focused is None:  # a loading table cannot take the focus AUTO_FOCUS gave it
            table.focus()

    def _label_views(self) -> None:
        """Each view's tab, for this width, with its count once read."""
        queues, width = self._queues, self.app.size.width
        for view in VIEWS:
            count = queues.count(view.name) if queues is not None else None
            label = tab_label(view, count, narrow=self._layout.narrow, width=width)
            self.query_one(f"#{view.tab_id}", Tab).label = label

    def _rows(self, needle: str) -> list[ThreadInfo]:
        """The threads of the view that match `needle`, at most SHOWN."""
        if self._view != "all":
            threads = self._queues.threads(self._view) if self._queues else []
            return [info for info in threads if info.matches(needle)][:SHOWN]
        found = self._found
        if found is not None and found.needle == needle:
            return found.threads
        return [info for info in self._threads if info.matches(needle)]

    def _fill(self, needle: str) -> None:
        table: DataTable[Text] = self.query_one("#threads", DataTable)
        table.clear()
        variables = self.app.theme_variables
        needle = needle.strip()
        self._shown = self._rows(needle)
        for info in self._shown:
            cells = self._layout.cells(
                info,
                current=info.thread_id == self._current,
                escalated=info.thread_id in self._escalated,
                escalation_first=self._view == "escalated",  # what put it there
                drafted=info.thread_id in self._drafted,
                variables=variables,
            )
            table.add_row(*cells, key=info.thread_id)
        empty = self.query_one("#threads-empty", Static)
        empty.display = not table.row_count
        empty.update(empty_text(VIEW_NAMED[self._view], needle))
        # An empty view is its words, where the rows would be (threads.tcss): under a blank
        # table that filled the dialog, they were easy to miss at the bottom.
        self.query_one("#threads-dialog").set_class(not table.row_count, "-empty")
        self.query_one("#threads-dialog").border_subtitle = self._subtitle()

    def _subtitle(self) -> Content:
        """Said when the list holds only the most recent (a view holds all its own)."""
        if self._view == "all":
            return Content(
                f"the {SHOWN} most recent · the filter searches all" if self._more else ""
            )
        more = self._queues is not None and self._queues.count(self._view) > SHOWN
        return Content(f"the {SHOWN} most recent" if more else "")

    @on(Input.Changed, "#filter")
    def _filter(self, event: Input.Changed) -> None:
        self._refilter(event.value)

    def _refilter(self, needle: str) -> None:
        """The loaded threads that match, at once; all of them, once searched, if the list
        holds only the most recent (a view that needs a person holds all of its own)."""
        self._fill(needle)
        if self._view == "all" and self._more and needle.strip():
            self._search(needle.strip())

    @work(exclusive=True, exit_on_error=False, group="threads-search")
    async def _search(self, needle: str) -> None:
        # (A newer keystroke cancels this worker; its thread's answer is then dropped.)
        threads = await self._backend.threads(limit=SHOWN, matching=needle)
        self.post_message(ThreadsFound(needle, threads))

    @on(ThreadsFound)
    def _found_all(self, message: ThreadsFound) -> None:
        needle = self.query_one("#filter", Input).value.strip()
        if message.needle == needle:
            self._found = message
            self._fill(needle)

    @on(Tabs.TabActivated, "#views")
    def _view_chosen(self, event: Tabs.TabActivated) -> None:
        self._view = VIEW_OF_TAB[event.tab.id or ""].name
        if self._queues is None:
            return  # shown once loaded
        self._refilter(self.query_one("#filter", Input).value)
        self.query_one("#threads", DataTable).move_cursor(row=0)

    def action_next_view(self) -> None:
        self.query_one("#views", Tabs).action_next_tab()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        """Enter in the filter opens the match selected (the first, or the one the arrows
        moved to): a single match took two enters."""
        table = self.query_one("#threads", DataTable)
        if table.row_count:
            table.action_select_cursor()
        else:
            table.focus()

    def action_move_cursor(self, rows: int) -> None:
        """Up and down in a box move the list's selection, as in the list itself."""
        table = self.query_one("#threads", DataTable)
        table.move_cursor(row=max(table.cursor_row + rows, 0))

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
        self.dismiss(ThreadChoice(self._backend.new_thread_id(), customer, is_new=True))

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
