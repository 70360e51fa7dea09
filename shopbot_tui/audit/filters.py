"""The audit viewer's filter bar: thread, kind, period and free text, plus the count of matches.

It only turns the person's choices into an `AuditQuery` (`Changed`); the screen runs it.
Typing is debounced so a query runs once the person pauses, not on every key.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, tzinfo

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Select

from agents.backend import AUDIT_KINDS, AuditQuery
from shopbot_tui.audit.periods import PERIODS, period_since
from shopbot_tui.audit.table import fit_cell

SEARCH_DEBOUNCE_S = 0.25
# Narrower than this, four bordered filters in a row leave each too few columns to read:
# they go two a row, without borders (two lines instead of three).
STACK_BELOW = 78


class ThreadLabel:
    """A thread id that, cut to fit, keeps its end ("…-2b692c"), as the table's Thread column
    does: the app's ids begin with the date and time, the same for a day's threads. Textual's
    `text-overflow` cuts only the end, hence this renderable, laid out at the width it gets."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if cell_len(self.thread_id) > width:
            yield Text(fit_cell(self.thread_id, width, keep_end=True), no_wrap=True)
        else:
            yield Text(self.thread_id, no_wrap=True)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, cell_len(self.thread_id))


class AuditFilterBar(Horizontal):
    """Filters for the audit viewer; posts `Changed` whenever the query may have changed."""

    class Changed(Message):
        """The filters now read `audit_query` (possibly the same as before)."""

        def __init__(self, audit_query: AuditQuery) -> None:
            super().__init__()
            self.audit_query = audit_query

    def __init__(
        self,
        *,
        thread_id: str | None = None,
        tz: tzinfo | None = None,
        clock: Callable[[], datetime] | None = None,
        id: str | None = None,
    ) -> None:
        """`tz` is the zone "Today" starts in (None: local, as the table's times), `clock`
        what "now" is for a period (tests pin it)."""
        super().__init__(id=id)
        self._preset_thread = thread_id
        self._thread_ids: list[str] = [thread_id] if thread_id else []
        self._debounce: Timer | None = None
        self._tz = tz
        self._clock = clock or (lambda: datetime.now(UTC))
        # The chosen period's first moment, fixed when it was chosen (see audit_periods).
        self._since: str | None = None

    def compose(self) -> ComposeResult:
        preset = self._preset_thread
        # Not str prompts: thread ids come from users (`--thread`) and must not read as markup.
        yield Select[str](
            [(ThreadLabel(preset), preset)] if preset else [],
            prompt="All threads",
            value=preset or Select.NULL,
            id="audit-thread",
        )
        yield Select[str](
            [(Text(kind), kind) for kind in sorted(AUDIT_KINDS)],
            prompt="All kinds",
            id="audit-kind",
        )
        yield Select[str](
            [(Text(period.label), period.key) for period in PERIODS],
            prompt="Any time",
            id="audit-when",
        )
        yield Input(placeholder="Search text…", id="audit-search")
        yield Label("", id="audit-count")

    @property
    def audit_query(self) -> AuditQuery:
        """The query the filters describe."""
        thread = self.query_one("#audit-thread", Select).selection
        kind = self.query_one("#audit-kind", Select).selection
        text = self.query_one("#audit-search", Input).value.strip()
        return AuditQuery(
            thread_id=str(thread) if thread else None,
            kinds=(str(kind),) if kind else (),
            since=self._since,
            text=text or None,
        )

    def set_filters(self, query: AuditQuery, *, period: str | None) -> None:
        """Show the filters of `query` (one kind at most; `period` gave its `since`) without
        posting `Changed`: the caller runs it."""
        thread_id = query.thread_id
        kind = query.kinds[0] if query.kinds else None
        text = query.text or ""
        self._stop_debounce()
        with self.prevent(Select.Changed, Input.Changed):
            if thread_id and thread_id not in self._thread_ids:
                self._set_thread_options(self._thread_ids, thread_id)
            self.query_one("#audit-thread", Select).value = thread_id or Select.NULL
            self.query_one("#audit-kind", Select).value = kind or Select.NULL
            self.query_one("#audit-when", Select).value = period or Select.NULL
            self.query_one("#audit-search", Input).value = text
        self._since = query.since

    def since(self, period: str | None) -> str | None:
        """Where `period` starts if it ends now."""
        return period_since(period, self._clock(), self._tz) if period else None

    def restart_period(self) -> None:
        """Let the chosen period end now (choosing it, refreshing the results)."""
        period = self.query_one("#audit-when", Select).selection
        self._since = self.since(str(period) if period else None)

    def set_thread_ids(self, thread_ids: list[str]) -> None:
        """Offer these threads (most recent first), keeping the chosen one."""
        select = self.query_one("#audit-thread", Select)
        if select.expanded:
            return  # don't reshuffle a list the person is reading
        with self.prevent(Select.Changed):
            self._set_thread_options(thread_ids, select.selection)

    def _set_thread_options(self, thread_ids: list[str], value: object) -> None:
        # Callers hold `prevent(Select.Changed)`: set_options resets the value on its way.
        chosen = str(value) if value else None
        options = list(thread_ids)
        if chosen and chosen not in options:
            options.insert(0, chosen)
        self._thread_ids = options
        select = self.query_one("#audit-thread", Select)
        select.set_options([(ThreadLabel(thread_id), thread_id) for thread_id in options])
        select.value = chosen or Select.NULL

    def on_resize(self, event: events.Resize) -> None:
        stacked = event.size.width < STACK_BELOW
        if stacked == self.has_class("-stacked"):
            return
        self.set_class(stacked, "-stacked")
        for widget in self.query("Select, Input").results():
            if isinstance(widget, Select | Input):
                widget.compact = stacked

    def set_count_text(self, text: str) -> None:
        """Show `text` ("1,234 events") in the count slot."""
        # Fixed width in the .tcss, so a new number repaints the label, not the screen.
        self.query_one("#audit-count", Label).update(text, layout=False)

    def open_select(self, select_id: str) -> Select[str]:
        """Focus the Select `select_id` and open its list."""
        select: Select[str] = self.query_one(f"#{select_id}", Select)
        select.focus()
        select.action_show_overlay()
        return select

    def _stop_debounce(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None

    def _post_query(self) -> None:
        self._stop_debounce()
        self.post_message(self.Changed(self.audit_query))

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.select.id == "audit-when":
            self.restart_period()
        self._post_query()

    @on(Input.Changed, "#audit-search")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._stop_debounce()
        self._debounce = self.set_timer(SEARCH_DEBOUNCE_S, self._post_query)

    @on(Input.Submitted, "#audit-search")
    def _search_submitted(self) -> None:
        self._post_query()  # Submitted bubbles on: the screen moves focus to the results
